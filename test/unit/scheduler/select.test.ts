// Nova's _schedule: the claim order (host_subset_size, shuffle_best_same_weighed_hosts), the claim
// loop, consumption between instances, server groups across a multi-create, alternates.
import { describe, expect, it } from "vitest";
import type { SchedulerConfig } from "../../../lib/config.js";
import type { Fleet } from "../../../lib/scheduler/fleet.js";
import { filterAndWeigh } from "../../../lib/scheduler/pipeline.js";
import {
  type ClaimAnswer,
  type ClaimRequest,
  claimOrder,
  runSchedule,
  type ScheduleResult,
  schedule,
  shuffle,
} from "../../../lib/scheduler/select.js";
import type { HostState, RequestSpec } from "../../../lib/scheduler/types.js";
import { config, flavor, fleet, host, spec } from "./fixtures.js";

const ram = (name: string, free_ram_mb: number, extra: Partial<HostState> = {}) =>
  host(name, { free_ram_mb, ...extra });
const uuids = (n: number) => Array.from({ length: n }, (_, i) => `i${i + 1}`);

function run(
  f: Fleet,
  s: RequestSpec,
  cfg: Partial<SchedulerConfig> = {},
  opts: {
    n?: number;
    random?: () => number;
    claim?: (c: ClaimRequest) => ClaimAnswer;
    exclude?: string[];
    instanceHosts?: ReadonlyMap<string, string>;
  } = {},
): ScheduleResult {
  return runSchedule(
    schedule({
      fleet: f,
      spec: s,
      instanceUuids: uuids(opts.n ?? 1),
      config: config({ enabled_filters: ["ComputeFilter"], weight_classes: ["RAMWeigher"], ...cfg }),
      random: opts.random ?? (() => 0),
      ...(opts.exclude ? { excludeHosts: opts.exclude } : {}),
      ...(opts.instanceHosts ? { instanceHosts: opts.instanceHosts } : {}),
    }),
    opts.claim,
  );
}

const placed = (r: ScheduleResult) => r.placements.map((p) => p.selected.host);

describe("claimOrder", () => {
  const decision = (cfg: Partial<SchedulerConfig> = {}) =>
    filterAndWeigh(fleet([ram("a", 4000), ram("b", 3000), ram("c", 2000), ram("d", 1000)]), spec(), {
      index: 0,
      config: config({ enabled_filters: [], weight_classes: ["RAMWeigher"], ...cfg }),
    });
  const order = (cfg: Partial<SchedulerConfig>, r: number) => {
    const d = decision(cfg);
    return [...claimOrder(d, config(cfg), () => r)].map((i) => d.fleet.hosts[i]!.host);
  };

  it.each([
    ["subset 1 always takes the best", 1, 0.99, ["a", "b", "c", "d"]],
    ["subset 3, random picks the 2nd", 3, 0.4, ["b", "a", "c", "d"]],
    ["subset 3, random picks the 3rd", 3, 0.99, ["c", "a", "b", "d"]],
    ["subset larger than the list", 10, 0.99, ["d", "a", "b", "c"]],
    ["random() of 1 stays in the subset", 2, 1, ["b", "a", "c", "d"]],
  ])("%s", (_name, size, r, expected) => {
    expect(order({ host_subset_size: size }, r)).toEqual(expected);
  });

  it("shuffle_best_same_weighed_hosts shuffles the hosts tied for the best weight only", () => {
    const d = filterAndWeigh(
      fleet([ram("a", 4000), ram("b", 4000), ram("c", 4000), ram("d", 1000)]),
      spec(),
      {
        index: 0,
        config: config({ enabled_filters: [], weight_classes: ["RAMWeigher"] }),
      },
    );
    const cfg = config({ shuffle_best_same_weighed_hosts: true });
    const draws = [0.1, 0.1, 0];
    const names = [...claimOrder(d, cfg, () => draws.shift() ?? 0)].map((i) => d.fleet.hosts[i]!.host);
    const best = ["a", "b", "c"];
    shuffle(
      best,
      (() => {
        const again = [0.1, 0.1];
        return () => again.shift() ?? 0;
      })(),
    );
    expect(names).toEqual([...best, "d"]);
  });

  it("Python's shuffle: Fisher–Yates from the end", () => {
    const items = [1, 2, 3, 4];
    shuffle(items, () => 0);
    expect(items).toEqual([2, 3, 4, 1]);
  });
});

describe("schedule: one instance", () => {
  it("claims the best host and offers max_attempts − 1 alternates in weighed order", () => {
    const r = run(fleet([ram("a", 1000), ram("b", 4000), ram("c", 3000), ram("d", 2000)]), spec());
    expect(placed(r)).toEqual(["b"]);
    expect(r.ok && r.alternates[0]!.map((s) => s.host)).toEqual(["c", "d"]);
  });

  it("max_attempts 1: no alternates", () => {
    const r = run(fleet([ram("a", 1000), ram("b", 4000)]), spec(), { max_attempts: 1 });
    expect(r.ok && r.alternates).toEqual([[]]);
  });

  it("a lost claim moves on to the next host (Nova's claim loop); the loser stays an alternate", () => {
    const r = run(
      fleet([ram("a", 4000), ram("b", 3000), ram("c", 2000)]),
      spec(),
      {},
      {
        claim: (c) =>
          c.host.host === "a" ? { claimed: false, reason: "concurrent update on a" } : { claimed: true },
      },
    );
    expect(placed(r)).toEqual(["b"]);
    expect(r.ok && r.alternates[0]!.map((s) => s.host)).toEqual(["a", "c"]);
  });

  it("no host: NoValidHost with the decision and the races lost", () => {
    const r = run(
      fleet([ram("a", 4000)]),
      spec(),
      {},
      { claim: () => ({ claimed: false, reason: "raced" }) },
    );
    expect(r.ok).toBe(false);
    expect(!r.ok && r.conflicts).toEqual(["raced"]);
  });

  it("hosts already tried are left out", () => {
    const r = run(fleet([ram("a", 4000), ram("b", 3000)]), spec(), {}, { exclude: ["a"] });
    expect(placed(r)).toEqual(["b"]);
  });
});

describe("schedule: multi-create", () => {
  const roomFor = (name: string, instances: number, free_ram_mb = 8192) =>
    host(name, {
      free_ram_mb,
      resources: {
        ...host("x").resources,
        MEMORY_MB: { capacity: 2048 * instances, used: 0, min_unit: 1, max_unit: 65536, step_size: 1 },
      },
    });

  it("each instance consumes its host before the next is placed", () => {
    const f = fleet([roomFor("a", 1, 9000), roomFor("b", 2, 8000)]);
    const r = run(f, spec(), {}, { n: 3 });
    expect(placed(r)).toEqual(["a", "b", "b"]);
    expect(f.hosts.map((h) => [h.num_instances, h.num_io_ops, h.resources.MEMORY_MB!.used])).toEqual([
      [1, 1, 2048],
      [2, 2, 4096],
    ]);
  });

  it("all or nothing: the placements made so far come back with the failure, to be released", () => {
    const r = run(fleet([roomFor("a", 1), roomFor("b", 1)]), spec(), {}, { n: 3 });
    expect(r.ok).toBe(false);
    expect(!r.ok && [r.instance_uuid, r.placements.map((p) => p.selected.host)]).toEqual(["i3", ["a", "b"]]);
  });

  it("alternates are re-weighed after the last instance and never a selected host", () => {
    const r = run(
      fleet([ram("a", 9000), ram("b", 8000), ram("c", 7000), ram("d", 6000)]),
      spec(),
      {},
      { n: 2 },
    );
    expect(placed(r)).toEqual(["a", "b"]);
    expect(r.ok && r.alternates.map((alts) => alts.map((s) => s.host))).toEqual([
      ["c", "d"],
      ["c", "d"],
    ]);
  });

  const group = (
    policy: "affinity" | "anti-affinity",
    rules = {},
    members: string[] = [],
    hosts: string[] = [],
  ) => spec({ instance_group: { policy, rules, members: [...members, ...uuids(3)], hosts } });
  const groupCfg = {
    enabled_filters: ["ComputeFilter", "ServerGroupAntiAffinityFilter", "ServerGroupAffinityFilter"],
  };

  it("anti-affinity spreads the instances of one request, one per host", () => {
    const r = run(
      fleet([ram("a", 9000), ram("b", 8000), ram("c", 7000), ram("d", 6000)]),
      group("anti-affinity"),
      groupCfg,
      {
        n: 3,
      },
    );
    expect(placed(r)).toEqual(["a", "b", "c"]);
  });

  it("anti-affinity with too few hosts: NoValidHost for the instance that finds none", () => {
    const r = run(fleet([ram("a", 9000), ram("b", 8000)]), group("anti-affinity"), groupCfg, { n: 3 });
    expect(!r.ok && r.instance_uuid).toBe("i3");
  });

  it("anti-affinity keeps away from members already placed", () => {
    const hosts = [ram("a", 9000, { num_instances: 1 }), ram("b", 8000), ram("c", 7000)];
    const r = run(fleet(hosts), group("anti-affinity", {}, ["old"], ["a"]), groupCfg, {
      n: 2,
      instanceHosts: new Map([["old", "a"]]),
    });
    expect(placed(r)).toEqual(["b", "c"]);
  });

  it("max_server_per_host 2 lets two members share a host", () => {
    const r = run(
      fleet([ram("a", 9000), ram("b", 1000)]),
      group("anti-affinity", { max_server_per_host: 2 }),
      groupCfg,
      {
        n: 3,
      },
    );
    expect(placed(r)).toEqual(["a", "a", "b"]);
  });

  it("affinity keeps every instance on the first one's host", () => {
    const r = run(fleet([ram("a", 9000), ram("b", 8000)]), group("affinity"), groupCfg, { n: 3 });
    expect(placed(r)).toEqual(["a", "a", "a"]);
  });

  it("affinity to a group already placed", () => {
    const r = run(fleet([ram("a", 9000), ram("b", 8000)]), group("affinity", {}, ["old"], ["b"]), groupCfg, {
      n: 2,
    });
    expect(placed(r)).toEqual(["b", "b"]);
  });

  it("the caller's group is not modified", () => {
    const s = group("affinity");
    run(fleet([ram("a", 9000)]), s, groupCfg, { n: 2 });
    expect(s.instance_group!.hosts).toEqual([]);
  });

  it("a host filled by the first instance drops out for the second (Placement)", () => {
    const f = fleet([roomFor("a", 1, 9000), roomFor("b", 1, 1000)]);
    const r = run(f, spec({ flavor: flavor() }), {}, { n: 2 });
    expect(placed(r)).toEqual(["a", "b"]);
  });
});
