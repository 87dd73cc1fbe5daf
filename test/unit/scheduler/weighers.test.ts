// Every weigher, and Nova's weighing: normalization, multipliers from the options and from the
// aggregates (their minimum), a single candidate not weighed, ties broken by name.
import { describe, expect, it } from "vitest";
import type { SchedulerConfig } from "../../../lib/config.js";
import { SchedulerWeigherNotFound } from "../../../lib/scheduler/errors.js";
import { filterAndWeigh } from "../../../lib/scheduler/pipeline.js";
import type { HostState, RequestSpec } from "../../../lib/scheduler/types.js";
import { normalize } from "../../../lib/scheduler/weigh.js";
import { enabledWeighers, WEIGHERS } from "../../../lib/scheduler/weighers/index.js";
import { ComputeHostMetricNotFound } from "../../../lib/scheduler/weighers/metrics.js";
import { aggregate, config, fleet, host, spec } from "./fixtures.js";

/** Weigh `hosts` with only `weigher`; returns [host, weight] best first and the weigher's values. */
function weigh(
  weigher: string,
  hosts: HostState[],
  cfg: Partial<SchedulerConfig> = {},
  s: RequestSpec = spec(),
  instances: ReadonlyMap<string, string> = new Map(),
) {
  const d = filterAndWeigh(fleet(hosts), s, {
    index: 0,
    config: config({ enabled_filters: [], weight_classes: [weigher], ...cfg }),
    instances,
  });
  const detailed = d.detailed();
  return {
    order: detailed.order.map((o) => [o.host, o.weight]),
    values: detailed.weighers[0]?.hosts.map((h) => [h.host, h.raw, h.normalized, h.multiplier]),
  };
}

describe("normalize (nova/weights.py)", () => {
  it.each([
    ["observed bounds", [1, 2, 3], undefined, undefined, [0, 0.5, 1]],
    ["minval 0: value ÷ max", [10, 20, 40], 0, undefined, [0.25, 0.5, 1]],
    ["all equal, observed bounds: all 0", [5, 5, 5], undefined, undefined, [0, 0, 0]],
    ["all equal with minval 0: all 1", [5, 5], 0, undefined, [1, 1]],
    ["all 0 with minval 0: all 0", [0, 0], 0, undefined, [0, 0]],
    ["maxval given", [1, 2], 0, 4, [0.25, 0.5]],
    ["empty", [], undefined, undefined, []],
  ])("%s", (_name, values, minval, maxval, expected) => {
    expect(normalize(values, minval, maxval)).toEqual(expected);
  });
});

describe("enabledWeighers", () => {
  it("all_weighers is every weigher, in Nova's module order", () => {
    expect(enabledWeighers(["nova.scheduler.weights.all_weighers"]).map((w) => w.name)).toEqual([
      "ServerGroupSoftAffinityWeigher",
      "ServerGroupSoftAntiAffinityWeigher",
      "BuildFailureWeigher",
      "CPUWeigher",
      "DiskWeigher",
      "IoOpsWeigher",
      "MetricsWeigher",
      "NumInstancesWeigher",
      "RAMWeigher",
    ]);
  });

  it("takes class names or dotted paths, once each", () => {
    expect(
      enabledWeighers(["RAMWeigher", "nova.scheduler.weights.ram.RAMWeigher", "CPUWeigher"]).map(
        (w) => w.name,
      ),
    ).toEqual(["RAMWeigher", "CPUWeigher"]);
  });

  it("reports unknown weighers", () => {
    expect(() => enabledWeighers(["RAMWeigher", "PCIWeigher"])).toThrow(SchedulerWeigherNotFound);
  });

  it("knows the nine weighers", () => expect(WEIGHERS.size).toBe(9));
});

describe("RAMWeigher / DiskWeigher / CPUWeigher", () => {
  const hosts = () => [
    host("a", { free_ram_mb: 1000, free_disk_mb: 4000, vcpus_total: 8, vcpus_used: 64 }),
    host("b", { free_ram_mb: 4000, free_disk_mb: 1000, vcpus_total: 8, vcpus_used: 0 }),
    host("c", { free_ram_mb: 2000, free_disk_mb: 2000, vcpus_total: 8, vcpus_used: 96 }),
  ];

  it("RAM: free_ram_mb ÷ max, spreading by default", () => {
    expect(weigh("RAMWeigher", hosts())).toEqual({
      order: [
        ["b", 1],
        ["c", 0.5],
        ["a", 0.25],
      ],
      values: [
        ["b", 4000, 1, 1],
        ["c", 2000, 0.5, 1],
        ["a", 1000, 0.25, 1],
      ],
    });
  });

  it("RAM: a negative multiplier stacks", () => {
    expect(weigh("RAMWeigher", hosts(), { ram_weight_multiplier: -1 }).order.map(([h]) => h)).toEqual([
      "a",
      "c",
      "b",
    ]);
  });

  it("RAM: overcommitted (negative) free RAM is clamped to minval 0 for normalization", () => {
    const r = weigh("RAMWeigher", [host("a", { free_ram_mb: -500 }), host("b", { free_ram_mb: 1000 })]);
    expect(r.values).toEqual([
      ["b", 1000, 1, 1],
      ["a", -500, 0, 1],
    ]);
  });

  it("Disk: free_disk_mb", () => {
    expect(weigh("DiskWeigher", hosts()).order.map(([h]) => h)).toEqual(["a", "c", "b"]);
  });

  it("CPU: vcpus_total × cpu_allocation_ratio − vcpus_used", () => {
    expect(weigh("CPUWeigher", hosts()).values).toEqual([
      ["b", 128, 1, 1],
      ["a", 64, 0.5, 1],
      ["c", 32, 0.25, 1],
    ]);
  });
});

describe("IoOpsWeigher / NumInstancesWeigher / BuildFailureWeigher", () => {
  it("IoOps: busier hosts weigh less (multiplier −1)", () => {
    expect(
      weigh("IoOpsWeigher", [
        host("a", { num_io_ops: 4 }),
        host("b", { num_io_ops: 0 }),
        host("c", { num_io_ops: 2 }),
      ]).order,
    ).toEqual([
      ["b", 0],
      ["c", -0.5],
      ["a", -1],
    ]);
  });

  it("NumInstances: nothing by default (multiplier 0), spreading when negative", () => {
    const hs = () => [host("a", { num_instances: 9 }), host("b", { num_instances: 1 })];
    expect(weigh("NumInstancesWeigher", hs()).order).toEqual([
      ["a", 0],
      ["b", 0],
    ]);
    expect(weigh("NumInstancesWeigher", hs(), { num_instances_weight_multiplier: -1 }).order).toEqual([
      ["b", 0],
      ["a", -1],
    ]);
  });

  it("BuildFailure: failures sink a host by the (negated) multiplier", () => {
    expect(weigh("BuildFailureWeigher", [host("a", { failed_builds: 3 }), host("b")]).order).toEqual([
      ["b", 0],
      ["a", -1000000],
    ]);
  });
});

describe("MetricsWeigher", () => {
  const hs = () => [
    host("a", { metrics: { cpu: 80, mem: 10 } }),
    host("b", { metrics: { cpu: 20, mem: 50 } }),
    host("c", { metrics: { cpu: 20 } }),
  ];
  const cfg = { metrics_weight_setting: ["cpu=-1.0", "mem=0.5"], metrics_required: false };

  it("Σ metric × ratio; a missing metric weighs weight_of_unavailable", () => {
    expect(weigh("MetricsWeigher", hs(), cfg).values).toEqual([
      ["b", 5, 1, 1],
      ["a", -75, (-75 + 10000) / (5 + 10000), 1],
      ["c", -10000, 0, 1],
    ]);
  });

  it("a missing metric whose ratio is 0 is skipped", () => {
    const r = weigh("MetricsWeigher", hs(), { ...cfg, metrics_weight_setting: ["cpu=-1.0", "mem=0"] });
    expect(r.values).toEqual([
      ["b", -20, 1, 1],
      ["c", -20, 1, 1],
      ["a", -80, 0, 1],
    ]);
  });

  it("required (the default): a missing metric fails the request, as Nova's ComputeHostMetricNotFound", () => {
    expect(() => weigh("MetricsWeigher", hs(), { metrics_weight_setting: ["mem=1"] })).toThrow(
      ComputeHostMetricNotFound,
    );
  });

  it("no weight_setting: nothing to weigh", () => {
    expect(weigh("MetricsWeigher", hs()).order).toEqual([
      ["a", 0],
      ["b", 0],
      ["c", 0],
    ]);
  });
});

describe("ServerGroupSoftAffinityWeigher / ServerGroupSoftAntiAffinityWeigher", () => {
  const hs = () => [host("a"), host("b"), host("c")];
  const running = new Map([
    ["m1", "a"],
    ["m2", "a"],
    ["m3", "b"],
  ]);
  const group = (policy: "soft-affinity" | "soft-anti-affinity") =>
    spec({ instance_group: { policy, rules: {}, members: ["m1", "m2", "m3"], hosts: ["a", "b"] } });

  it("soft-affinity: more members on the host weigh more", () => {
    expect(weigh("ServerGroupSoftAffinityWeigher", hs(), {}, group("soft-affinity"), running).order).toEqual([
      ["a", 1],
      ["b", 0.5],
      ["c", 0],
    ]);
  });

  it("soft-anti-affinity: fewer members weigh more", () => {
    expect(
      weigh("ServerGroupSoftAntiAffinityWeigher", hs(), {}, group("soft-anti-affinity"), running).order,
    ).toEqual([
      ["c", 1],
      ["b", 0.5],
      ["a", 0],
    ]);
  });

  it("another policy weighs nothing", () => {
    expect(
      weigh("ServerGroupSoftAffinityWeigher", hs(), {}, group("soft-anti-affinity"), running).order,
    ).toEqual([
      ["a", 0],
      ["b", 0],
      ["c", 0],
    ]);
  });
});

describe("weighing", () => {
  it("a single candidate is not weighed (weight 0, no weigher values)", () => {
    expect(weigh("RAMWeigher", [host("only", { free_ram_mb: 123 })])).toEqual({
      order: [["only", 0]],
      values: undefined,
    });
  });

  it("ties are broken by host name, the same on every run", () => {
    expect(weigh("RAMWeigher", [host("c"), host("a"), host("b")]).order).toEqual([
      ["a", 1],
      ["b", 1],
      ["c", 1],
    ]);
  });

  it("an aggregate's <weigher>_weight_multiplier overrides the option, the minimum of several", () => {
    const r = weigh("RAMWeigher", [
      host("a", {
        free_ram_mb: 1000,
        aggregates: [
          aggregate("x", { ram_weight_multiplier: "3" }),
          aggregate("y", { ram_weight_multiplier: "2.5" }),
        ],
      }),
      host("b", { free_ram_mb: 1000, aggregates: [aggregate("bad", { ram_weight_multiplier: "lots" })] }),
      host("c", { free_ram_mb: 1000 }),
    ]);
    expect(r.values).toEqual([
      ["a", 1000, 1, 2.5],
      ["b", 1000, 1, 1],
      ["c", 1000, 1, 1],
    ]);
  });

  it("sums multiplier × normalized over the weighers, in order", () => {
    const d = filterAndWeigh(
      fleet([host("a", { free_ram_mb: 1000, failed_builds: 1 }), host("b", { free_ram_mb: 500 })]),
      spec(),
      {
        index: 0,
        config: config({
          enabled_filters: [],
          weight_classes: ["RAMWeigher", "BuildFailureWeigher"],
          build_failure_weight_multiplier: 10,
        }),
      },
    );
    expect(d.detailed().order).toEqual([
      { host: "b", nodename: "b", weight: 0.5 },
      { host: "a", nodename: "a", weight: 1 - 10 },
    ]);
  });
});
