// Every scheduler option: Nova's names and defaults, one table, the environment round trip.
import { describe, expect, it } from "vitest";
import {
  parseSchedulerOption,
  SCHEDULER_DEFAULTS,
  SCHEDULER_OPTIONS,
  type SchedulerConfig,
  schedulerConfig,
  schedulerEnvironment,
  schedulerEnvName,
} from "../../../lib/config.js";

describe("scheduler options", () => {
  it("are Nova's, with Nova's (Zed) defaults", () => {
    const byName = Object.fromEntries(SCHEDULER_OPTIONS.map((o) => [`${o.group}.${o.name}`, o.default]));
    expect(byName).toMatchObject({
      "filter_scheduler.enabled_filters": [
        "ComputeFilter",
        "ComputeCapabilitiesFilter",
        "ImagePropertiesFilter",
        "ServerGroupAntiAffinityFilter",
        "ServerGroupAffinityFilter",
      ],
      "filter_scheduler.weight_classes": ["nova.scheduler.weights.all_weighers"],
      "filter_scheduler.host_subset_size": 1,
      "filter_scheduler.max_io_ops_per_host": 8,
      "filter_scheduler.max_instances_per_host": 50,
      "filter_scheduler.io_ops_weight_multiplier": -1,
      "filter_scheduler.build_failure_weight_multiplier": 1000000,
      "filter_scheduler.num_instances_weight_multiplier": 0,
      "filter_scheduler.shuffle_best_same_weighed_hosts": false,
      "filter_scheduler.restrict_isolated_hosts_to_isolated_images": true,
      "filter_scheduler.aggregate_image_properties_isolation_separator": ".",
      "scheduler.max_attempts": 3,
      "scheduler.query_placement_for_availability_zone": true,
      "metrics.required": true,
      "metrics.weight_of_unavailable": -10000,
      // Ours, not Nova's 10/60: a heartbeat is a paid write (see lib/config.ts).
      "DEFAULT.report_interval": 40,
      "DEFAULT.service_down_time": 120,
      "DEFAULT.default_availability_zone": "nova",
      "DEFAULT.cpu_allocation_ratio": null,
      "DEFAULT.initial_cpu_allocation_ratio": 16,
      "DEFAULT.initial_ram_allocation_ratio": 1.5,
      "DEFAULT.reserved_host_memory_mb": 512,
    });
  });

  it("the table declares every key of SchedulerConfig once, and the defaults derive from it", () => {
    const keys = SCHEDULER_OPTIONS.map((o) => o.key);
    expect(new Set(keys).size).toBe(keys.length);
    expect(Object.keys(SCHEDULER_DEFAULTS).sort()).toEqual([...keys].sort());
  });

  it("round-trip through the environment, nulls and empty lists included", () => {
    const custom: SchedulerConfig = {
      ...SCHEDULER_DEFAULTS,
      enabled_filters: [],
      isolated_hosts: ["a", "b"],
      cpu_allocation_ratio: 4,
      image_properties_default_architecture: "x86_64",
      shuffle_best_same_weighed_hosts: true,
      ram_weight_multiplier: -1.5,
    };
    const saved = { ...process.env };
    try {
      Object.assign(process.env, schedulerEnvironment(custom));
      expect(schedulerConfig()).toEqual(custom);
      Object.assign(process.env, schedulerEnvironment(SCHEDULER_DEFAULTS));
      expect(schedulerConfig()).toEqual(SCHEDULER_DEFAULTS);
    } finally {
      process.env = saved;
    }
  });

  it("fit comfortably in a Lambda's 4 KB of environment", () => {
    const all = {
      ...SCHEDULER_DEFAULTS,
      enabled_filters: Array.from({ length: 21 }, () => "AggregateInstanceExtraSpecsFilter"),
    };
    const bytes = Object.entries(schedulerEnvironment(all)).reduce((n, [k, v]) => n + k.length + v.length, 0);
    expect(bytes).toBeLessThan(2800);
  });

  it.each([
    ["max_attempts", "0", "is below its minimum 1"],
    ["max_attempts", "2.5", "is not an integer"],
    ["ram_weight_multiplier", "heavy", "is not a number"],
    ["shuffle_best_same_weighed_hosts", "maybe", "is not a boolean"],
  ])("rejects %s=%s", (key, raw, message) => {
    const o = SCHEDULER_OPTIONS.find((x) => x.key === key)!;
    expect(() => parseSchedulerOption(o, raw)).toThrow(`${schedulerEnvName(o)}=${raw} ${message}`);
  });
});
