import { describe, expect, it } from "vitest";
import { SchedulerHostFilterNotFound } from "../../../lib/scheduler/errors.js";
import { filterAndWeigh } from "../../../lib/scheduler/pipeline.js";
import type { HostState } from "../../../lib/scheduler/types.js";
import { config, flavor, host, inventory, spec } from "./fixtures.js";

const names = (hosts: { host: HostState }[]) => hosts.map((w) => w.host.host);

describe("filterAndWeigh", () => {
  const fleet = () => [
    host("h1", { free_ram_mb: 8000 }),
    host("h2", { free_ram_mb: 16000, availability_zone: "az2" }),
    host("h3", { free_ram_mb: 4000, service: { disabled: true, disabled_reason: "maintenance" } }),
    host("h4", {
      free_ram_mb: 2000,
      resources: { ...host("x").resources, MEMORY_MB: inventory(8192, { used: 4096 }) },
    }),
    host("h5", { free_ram_mb: 12000 }),
  ];

  it("runs resource fit, then filters in order, then weighs", () => {
    const { weighed, explanation } = filterAndWeigh(fleet(), spec({ flavor: flavor({ memory_mb: 8192 }) }), {
      index: 0,
      config: config(),
    });
    expect(names(weighed)).toEqual(["h2", "h5", "h1"]);
    expect(explanation.requested).toEqual({ VCPU: 1, MEMORY_MB: 8192, DISK_GB: 20 });
    expect(
      explanation.stages.map((s) => [s.stage, s.hosts_in, s.hosts_passed, s.rejected.map((r) => r.host)]),
    ).toEqual([
      ["resource_fit", 5, 4, ["h4"]],
      ["AvailabilityZoneFilter", 4, 4, []],
      ["ComputeFilter", 4, 3, ["h3"]],
    ]);
    expect(explanation.stages[0]!.rejected[0]).toMatchObject({
      reason: "insufficient MEMORY_MB: needs 8192, free 4096",
      fit: { resource_class: "MEMORY_MB", violation: "capacity", requested: 8192, free: 4096 },
    });
    expect(explanation.stages[2]!.rejected[0]!.reason).toBe("compute service is disabled (maintenance)");
    expect(explanation.order).toEqual([
      { host: "h2", nodename: "h2", weight: 1 },
      { host: "h5", nodename: "h5", weight: 0.75 },
      { host: "h1", nodename: "h1", weight: 0.5 },
    ]);
    expect(explanation.weighers[0]!.hosts.find((h) => h.host === "h5")).toEqual({
      host: "h5",
      nodename: "h5",
      raw: 12000,
      normalized: 0.75,
      multiplier: 1,
    });
  });

  it("applies the requested availability zone", () => {
    const { weighed } = filterAndWeigh(fleet(), spec({ availability_zone: "az2" }), {
      index: 0,
      config: config(),
    });
    expect(names(weighed)).toEqual(["h2"]);
  });

  it("stops explaining once no host is left", () => {
    const { weighed, explanation } = filterAndWeigh(fleet(), spec({ availability_zone: "az9" }), {
      index: 0,
      config: config(),
    });
    expect(weighed).toEqual([]);
    expect(explanation.stages.map((s) => s.stage)).toEqual(["resource_fit", "AvailabilityZoneFilter"]);
    expect(explanation.order).toEqual([]);
  });

  it("skips run-once-per-request filters for the 2nd+ instance", () => {
    const hosts = [host("up"), host("down", { service: { up: false } })];
    const first = filterAndWeigh(hosts, spec(), { index: 0, config: config() });
    expect(names(first.weighed)).toEqual(["up"]);
    const second = filterAndWeigh(hosts, spec(), { index: 1, config: config() });
    expect(names(second.weighed)).toEqual(["down", "up"]);
    expect(second.explanation.stages.filter((s) => s.skipped).map((s) => [s.stage, s.skipped])).toEqual([
      ["AvailabilityZoneFilter", "run_filter_once_per_request"],
      ["ComputeFilter", "run_filter_once_per_request"],
    ]);
  });

  it("still runs resource fit for the 2nd+ instance", () => {
    const hosts = [host("full", { resources: { VCPU: inventory(1, { used: 1 }) } }), host("ok")];
    const { weighed } = filterAndWeigh(hosts, spec(), { index: 1, config: config() });
    expect(names(weighed)).toEqual(["ok"]);
  });

  it("excludes hosts already tried or selected", () => {
    const { weighed, explanation } = filterAndWeigh(fleet(), spec(), {
      index: 0,
      config: config(),
      excludeHosts: new Set(["h2", "h5"]),
    });
    expect(names(weighed)).toEqual(["h1", "h4"]);
    expect(explanation.stages[0]).toMatchObject({ stage: "exclude_hosts", hosts_in: 5, hosts_passed: 3 });
  });

  it("ignore_hosts compares host names case-insensitively", () => {
    const { weighed } = filterAndWeigh([host("h1"), host("h2")], spec({ ignore_hosts: ["H1"] }), {
      index: 0,
      config: config(),
    });
    expect(names(weighed)).toEqual(["h2"]);
  });

  it("requested_destination narrows to that host (and node), filters still run", () => {
    const hosts = [host("h1"), host("h2", { service: { disabled: true } }), host("h3")];
    const toH1 = filterAndWeigh(hosts, spec({ requested_destination: { host: "h1" } }), {
      index: 0,
      config: config(),
    });
    expect(names(toH1.weighed)).toEqual(["h1"]);
    const toH2 = filterAndWeigh(hosts, spec({ requested_destination: { host: "h2", node: "h2" } }), {
      index: 0,
      config: config(),
    });
    expect(toH2.weighed).toEqual([]);
    expect(toH2.explanation.stages.at(-1)!.stage).toBe("ComputeFilter");
  });

  describe("forced hosts", () => {
    const hosts = () => [
      host("h1", { service: { disabled: true }, availability_zone: "az9" }),
      host("h2"),
      host("h3", { resources: { VCPU: inventory(1, { used: 1 }) }, service: { up: false } }),
    ];

    it("force_hosts skips the filters", () => {
      const { weighed, explanation } = filterAndWeigh(
        hosts(),
        spec({ force_hosts: ["H1"], availability_zone: "nova" }),
        { index: 0, config: config() },
      );
      expect(names(weighed)).toEqual(["h1"]);
      expect(explanation.stages.map((s) => [s.stage, s.skipped])).toEqual([
        ["force_hosts", undefined],
        ["resource_fit", undefined],
        ["AvailabilityZoneFilter", "forced host"],
        ["ComputeFilter", "forced host"],
      ]);
    });

    it("force_nodes skips the filters too", () => {
      const { weighed } = filterAndWeigh(hosts(), spec({ force_nodes: ["h1"] }), {
        index: 0,
        config: config(),
      });
      expect(names(weighed)).toEqual(["h1"]);
    });

    it("a forced host must still fit (Placement is still asked)", () => {
      const { weighed, explanation } = filterAndWeigh(hosts(), spec({ force_hosts: ["h3"] }), {
        index: 0,
        config: config(),
      });
      expect(weighed).toEqual([]);
      expect(explanation.stages.at(-1)!.rejected[0]!.reason).toBe("insufficient VCPU: needs 1, free 0");
    });

    it("_nova_check_type makes forced hosts go through the filters", () => {
      const { weighed } = filterAndWeigh(
        hosts(),
        spec({ force_hosts: ["h1"], scheduler_hints: { _nova_check_type: "rebuild" } }),
        { index: 0, config: config() },
      );
      expect(weighed).toEqual([]);
    });
  });

  it("throws on an unknown enabled filter even with no hosts", () => {
    expect(() =>
      filterAndWeigh([], spec(), {
        index: 0,
        config: config({ enabled_filters: ["ComputeFilter", "Bogus"] }),
      }),
    ).toThrow(SchedulerHostFilterNotFound);
  });

  it("runs filters in config order", () => {
    const hosts = [host("h1", { availability_zone: "az9", service: { disabled: true } })];
    const { explanation } = filterAndWeigh(hosts, spec({ availability_zone: "nova" }), {
      index: 0,
      config: config({ enabled_filters: ["ComputeFilter", "AvailabilityZoneFilter"] }),
    });
    expect(explanation.stages.map((s) => s.stage)).toEqual(["resource_fit", "ComputeFilter"]);
  });
});
