import { describe, expect, it } from "vitest";
import { SchedulerWeigherNotFound } from "../../../lib/scheduler/errors.js";
import type { Weigher } from "../../../lib/scheduler/types.js";
import { normalize, weighHosts } from "../../../lib/scheduler/weigh.js";
import { enabledWeighers } from "../../../lib/scheduler/weighers/index.js";
import { RAMWeigher } from "../../../lib/scheduler/weighers/ram.js";
import { config, host, spec } from "./fixtures.js";

describe("normalize (nova/weights.py)", () => {
  it.each([
    ["empty", [], undefined, undefined, []],
    ["observed bounds", [10, 20, 30], undefined, undefined, [0, 0.5, 1]],
    ["ties with observed bounds are all 0", [5, 5, 5], undefined, undefined, [0, 0, 0]],
    ["minval 0: value ÷ max", [1024, 2048, 4096], 0, undefined, [0.25, 0.5, 1]],
    ["minval 0 ties are all 1", [2048, 2048], 0, undefined, [1, 1]],
    ["minval 0, all zero: all 0", [0, 0], 0, undefined, [0, 0]],
    ["maxval caps the range", [0, 50], undefined, 100, [0, 0.5]],
    ["negative values", [-10, 0, 10], undefined, undefined, [0, 0.5, 1]],
  ])("%s", (_name, values, minval, maxval, expected) => {
    expect(normalize(values, minval, maxval)).toEqual(expected);
  });
});

describe("RAMWeigher", () => {
  const hosts = [
    host("a", { free_ram_mb: 1024 }),
    host("b", { free_ram_mb: 4096 }),
    host("c", { free_ram_mb: 2048 }),
  ];

  it.each([
    ["spreads by default (multiplier 1)", 1, ["b", "c", "a"], [1, 0.5, 0.25]],
    ["stacks with a negative multiplier", -1, ["a", "c", "b"], [-0.25, -0.5, -1]],
    ["multiplier scales the weight", 2.5, ["b", "c", "a"], [2.5, 1.25, 0.625]],
    ["multiplier 0 leaves name order", 0, ["a", "b", "c"], [0, 0, 0]],
  ])("%s", (_name, multiplier, order, weights) => {
    const { weighed } = weighHosts(
      hosts,
      spec(),
      [RAMWeigher],
      config({ ram_weight_multiplier: multiplier }),
    );
    expect(weighed.map((w) => w.host.host)).toEqual(order);
    expect(weighed.map((w) => w.weight)).toEqual(weights);
  });

  it("clamps negative free RAM (overcommitted host) to minval 0", () => {
    const { explanations } = weighHosts(
      [host("a", { free_ram_mb: -512 }), host("b", { free_ram_mb: 1024 })],
      spec(),
      [RAMWeigher],
      config(),
    );
    expect(explanations[0]!.hosts).toEqual([
      { host: "a", nodename: "a", raw: -512, normalized: 0, multiplier: 1 },
      { host: "b", nodename: "b", raw: 1024, normalized: 1, multiplier: 1 },
    ]);
  });
});

describe("weighHosts", () => {
  it("does not weigh a single candidate", () => {
    const { weighed, explanations } = weighHosts(
      [host("only", { free_ram_mb: 999 })],
      spec(),
      [RAMWeigher],
      config(),
    );
    expect(weighed).toEqual([{ host: expect.objectContaining({ host: "only" }), weight: 0 }]);
    expect(explanations).toEqual([]);
  });

  it("breaks ties by host name, then node", () => {
    const hosts = [host("c"), host("a", { nodename: "n2" }), host("b"), host("a", { nodename: "n1" })];
    const { weighed } = weighHosts(hosts, spec(), [RAMWeigher], config());
    expect(weighed.map((w) => `${w.host.host}/${w.host.nodename}`)).toEqual(["a/n1", "a/n2", "b/b", "c/c"]);
  });

  it("sums multiplier × normalized over weighers, each normalized on its own", () => {
    // A weigher with no minval: normalized over the observed range.
    const instances: Weigher = {
      name: "Instances",
      multiplier: () => -1,
      weigh: (h) => h.num_instances,
    };
    const hosts = [
      host("a", { free_ram_mb: 1000, num_instances: 10 }),
      host("b", { free_ram_mb: 500, num_instances: 0 }),
    ];
    const { weighed, explanations } = weighHosts(hosts, spec(), [RAMWeigher, instances], config());
    // a: 1×1 + −1×1 = 0; b: 1×0.5 + −1×0 = 0.5
    expect(weighed.map((w) => [w.host.host, w.weight])).toEqual([
      ["b", 0.5],
      ["a", 0],
    ]);
    expect(explanations.map((e) => e.weigher)).toEqual(["RAMWeigher", "Instances"]);
    expect(explanations[1]!.hosts.map((h) => h.normalized)).toEqual([1, 0]);
  });
});

describe("weigher registry", () => {
  it.each([
    [["RAMWeigher"], ["RAMWeigher"]],
    [["nova.scheduler.weights.ram.RAMWeigher"], ["RAMWeigher"]],
    [["nova.scheduler.weights.all_weighers"], ["RAMWeigher"]],
    [["RAMWeigher", "all_weighers"], ["RAMWeigher"]],
  ])("%j", (names, expected) => {
    expect(enabledWeighers(names).map((w) => w.name)).toEqual(expected);
  });

  it("names every unknown weigher", () => {
    expect(() => enabledWeighers(["RAMWeigher", "GPUWeigher"])).toThrow(
      new SchedulerWeigherNotFound(["GPUWeigher"]),
    );
    expect(() => enabledWeighers(["GPUWeigher"])).toThrow("Scheduler weigher GPUWeigher could not be found.");
  });
});
