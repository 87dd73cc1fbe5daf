// Explanations as sentences (kube-scheduler style), and bounded whatever the fleet's size.
import { describe, expect, it } from "vitest";
import { noValidHostAnswer } from "../../../lib/conductor/types.js";
import { NO_VALID_HOST_MESSAGE } from "../../../lib/scheduler/errors.js";
import {
  compactExplanation,
  summarizeNoValidHost,
  summarizeSelection,
} from "../../../lib/scheduler/explain.js";
import { filterAndWeigh } from "../../../lib/scheduler/pipeline.js";
import type { HostState, RequestSpec } from "../../../lib/scheduler/types.js";
import { aggregate, config, flavor, fleet, host, inventory, spec } from "./fixtures.js";

function explain(
  hosts: HostState[],
  s: RequestSpec = spec(),
  filters = ["ComputeFilter", "AvailabilityZoneFilter"],
) {
  return filterAndWeigh(fleet(hosts), s, {
    index: 0,
    config: config({ enabled_filters: filters, weight_classes: ["RAMWeigher", "CPUWeigher"] }),
  });
}

const az1 = aggregate("agg-az1", { availability_zone: "az1" });

describe("summarizeNoValidHost", () => {
  it("counts rejections by kind, largest first, with the largest free amount", () => {
    const hosts = [
      ...[1024, 4096, 2048, 0, 512].map((free, i) =>
        host(`small${i}`, {
          resources: { ...host("x").resources, MEMORY_MB: inventory(8192, { used: 8192 - free }) },
        }),
      ),
      ...[0, 1, 2].map((i) => host(`far${i}`, { aggregates: [az1] })),
    ];
    const d = explain(hosts, spec({ flavor: flavor({ memory_mb: 8192 }), availability_zone: "nova" }));
    expect(summarizeNoValidHost(d.compact())).toBe(
      "0/8 hosts are available: 5 lacked MEMORY_MB (needs 8192 MB, largest free 4096 MB), " +
        "3 are not in availability zone nova.",
    );
  });

  it("uses the singular for one host and keeps pipeline order on ties", () => {
    const hosts = [
      host("a", { service: { disabled: true } }),
      host("b", { service: { up: false } }),
      host("c", { resources: { VCPU: inventory(2, { used: 2 }) } }),
    ];
    expect(summarizeNoValidHost(explain(hosts).compact())).toBe(
      "0/3 hosts are available: 1 lacked VCPU (needs 1, largest free 0), 1 is disabled, 1 is down.",
    );
  });

  it("counts available hosts when the shortage is elsewhere (multi-create), and says which instance", () => {
    const d = explain([host("a"), host("b", { service: { up: false } })]);
    expect(summarizeNoValidHost(d.compact(), "for instance 2 of 2")).toBe(
      "1/2 hosts are available for instance 2 of 2: 1 is down.",
    );
  });

  it("no hosts at all", () => {
    expect(summarizeNoValidHost(explain([]).compact())).toBe("0/0 hosts are available.");
  });
});

describe("summarizeSelection", () => {
  it("says why this host: its weight and the weighers behind it, and what was turned away", () => {
    const hosts = [
      host("h1", { free_ram_mb: 4000, vcpus_used: 128 }),
      host("h2", { free_ram_mb: 8000, vcpus_used: 0 }),
      host("h3", { aggregates: [az1] }),
    ];
    const d = explain(hosts, spec({ availability_zone: "nova" }));
    expect(summarizeSelection(d.compact({ chosen: { host: "h2", nodename: "h2" } }))).toBe(
      "h2 chosen among 2 of 3 hosts: highest weight 2 (RAMWeigher 1 × 1, CPUWeigher 1 × 1); " +
        "1 rejected: 1 is not in availability zone nova.",
    );
    expect(summarizeSelection(d.compact({ chosen: { host: "h1", nodename: "h1" } }))).toBe(
      "h1 chosen among 2 of 3 hosts: weight 1, ranked #2 (RAMWeigher 1 × 0.5, CPUWeigher 1 × 0.5); " +
        "1 rejected: 1 is not in availability zone nova.",
    );
  });

  it("the only host left is not weighed", () => {
    const d = explain([host("h1"), host("h2", { service: { up: false } })]);
    expect(summarizeSelection(d.compact({ chosen: { host: "h1", nodename: "h1" } }))).toBe(
      "h1 chosen among 1 of 2 hosts: the only host left; 1 rejected: 1 is down.",
    );
  });
});

describe("compact explanations", () => {
  it("stay small on a 10,000-host fleet while every count stays exact", () => {
    const hosts = Array.from({ length: 10_000 }, (_, i) =>
      host(`host-${i}`, {
        aggregates: [aggregate(`az${i % 4}`, { availability_zone: `az${i % 4}` })],
        free_ram_mb: i,
        service: { up: i % 11 !== 0 },
        resources: {
          ...host("x").resources,
          MEMORY_MB: inventory(65536, { used: i % 3 === 0 ? 65000 : 0 }),
        },
      }),
    );
    const d = explain(hosts, spec({ availability_zone: "az1" }));
    const c = d.compact({ chosen: { host: "host-9997", nodename: "host-9997" } });
    const size = JSON.stringify(c).length;
    expect(size).toBeLessThan(6000);
    const rejected = c.stages.reduce((n, s) => n + s.rejected.reduce((m, g) => m + g.count, 0), 0);
    expect(rejected + c.candidates).toBe(10_000);
    expect(c.stages[0]!.rejected.find((g) => g.summary === "are not in availability zone az1")!.count).toBe(
      7500,
    );
    expect(c.chosen).toMatchObject({ host: "host-9997", rank: 0 });
    // The same as compacting the full account of every host, which is a hundred times larger.
    const detailed = d.detailed();
    expect(c).toEqual(compactExplanation(detailed, { chosen: { host: "host-9997", nodename: "host-9997" } }));
    expect(JSON.stringify(detailed).length).toBeGreaterThan(100 * size);
  });
});

describe("NoValidHost", () => {
  it("is an answer that carries the operator detail and schedules nothing (a full fleet is no function error)", () => {
    const answer = noValidHostAnswer("0/1 hosts are available: 1 is down.");
    expect(answer).toEqual({
      hosts: [],
      selections: [],
      no_valid_host: { details: "0/1 hosts are available: 1 is down." },
    });
    expect(NO_VALID_HOST_MESSAGE).toBe("No valid host was found. There are not enough hosts available.");
  });
});
