// A warm scheduler keeps one Fleet and applies each refresh's changed hosts to it: over random
// refresh sequences (usage, services, traits, aggregates, metrics, inventories changing; hosts
// joining and leaving; an aggregate's metadata edited) the updated fleet must decide exactly as
// a fleet built fresh from the same host states in the same order, explanations included.
import { describe, expect, it } from "vitest";
import type { SchedulerConfig } from "../../../lib/config.js";
import { Fleet, HOST_NUMBERS } from "../../../lib/scheduler/fleet.js";
import { runSchedule, type ScheduleResult, schedule } from "../../../lib/scheduler/select.js";
import type { HostAggregate, HostState } from "../../../lib/scheduler/types.js";
import {
  busyConfig,
  driftHost,
  REALISTIC_MIX,
  Rng,
  type SyntheticFleet,
  seeded,
  syntheticFleet,
  syntheticRequest,
} from "./synthetic.js";

const exact = (v: unknown) => JSON.stringify(v, (_k, x) => (Object.is(x, -0) ? "-0" : x));

/** What a decision sequence produced, as comparable text. */
function outcome(result: ScheduleResult): string {
  const decisions = [...result.placements.map((p) => p.decision), ...(result.ok ? [] : [result.decision])];
  return exact({
    ok: result.ok,
    placed: result.placements.map((p) => [p.instance_uuid, p.selected.host, p.position]),
    alternates: result.ok ? result.alternates : [],
    detailed: decisions.map((d) => d.detailed()),
    compact: decisions.map((d, k) => {
      const p = result.placements[k];
      return d.compact(p ? { chosen: p.selected } : {});
    }),
  });
}

/** The fleets' indexes agree: every number and inventory column, position by position. */
function expectSameIndexes(warm: Fleet, fresh: Fleet, label: string): void {
  expect(
    warm.hosts.map((h) => `${h.host}/${h.nodename}`),
    label,
  ).toEqual(fresh.hosts.map((h) => `${h.host}/${h.nodename}`));
  for (const f of HOST_NUMBERS) expect([...warm.column(f)], `${label}: ${f}`).toEqual([...fresh.column(f)]);
  for (const rc of ["VCPU", "MEMORY_MB", "DISK_GB", "CUSTOM_GPU"]) {
    const a = warm.resourceColumn(rc);
    const b = fresh.resourceColumn(rc);
    if (!b) {
      // A class no host has any more: its column may stay, empty.
      expect(a === undefined || a.has.every((v) => v === 0), `${label}: ${rc}`).toBe(true);
      continue;
    }
    expect(a, `${label}: ${rc}`).toBeDefined();
    for (const k of ["has", "capacity", "used", "min_unit", "max_unit", "step_size"] as const) {
      expect([...a![k]], `${label}: ${rc}.${k}`).toEqual([...b[k]]);
    }
    expect([a!.everywhere, a!.highestMin, a!.lowestMax, a!.anyStep], `${label}: ${rc} bounds`).toEqual([
      b.everywhere,
      b.highestMin,
      b.lowestMax,
      b.anyStep,
    ]);
  }
}

interface Refresh {
  changed: HostState[];
  removed: string[];
  aggregates?: HostAggregate[];
}

/** One refresh over `current` (host states in fleet order), applied to it as the fleet must. */
function drawRefresh(rng: Rng, current: HostState[], synthetic: SyntheticFleet, round: number): Refresh {
  const changed: HostState[] = [];
  const picked = new Set<number>();
  const k = rng.int(1, Math.max(1, Math.floor(current.length / 5)));
  for (let j = 0; j < k; j++) picked.add(rng.int(0, current.length - 1));
  for (const i of picked) changed.push(driftHost(rng, current[i]!, synthetic.aggregates, rng.chance(0.5)));
  // Hosts joining (a copy of another under a new name) and leaving: rarer.
  if (rng.chance(0.2)) {
    const joining = driftHost(rng, rng.pick(current), synthetic.aggregates, true);
    joining.host = `new-${round}`;
    joining.nodename = joining.host;
    changed.push(joining);
  }
  const removed: string[] = [];
  if (rng.chance(0.15)) {
    const gone = rng.pick(current).host;
    if (!changed.some((h) => h.host === gone)) removed.push(gone);
  }
  let aggregates: HostAggregate[] | undefined;
  if (rng.chance(0.1)) {
    // An operator edits an aggregate's metadata: every member's aggregates say so.
    const edited = rng.pick(synthetic.aggregates);
    const value = String(rng.pick([1, 2, 3, 5]));
    aggregates = synthetic.aggregates.map((a) =>
      a.id === edited.id ? { ...a, metadata: { ...a.metadata, max_io_ops_per_host: value } } : a,
    );
    synthetic.aggregates = aggregates;
    const edit = (h: HostState) => {
      h.aggregates = h.aggregates.map((a) =>
        a.id === edited.id ? structuredClone(aggregates!.find((x) => x.id === a.id)!) : a,
      );
    };
    for (const h of changed) edit(h);
    for (const h of current) {
      if (changed.some((c) => c.host === h.host) || !h.aggregates.some((a) => a.id === edited.id)) continue;
      const copy = structuredClone(h);
      edit(copy);
      changed.push(copy);
    }
  }
  return { changed, removed, ...(aggregates ? { aggregates } : {}) };
}

/** `current` after the refresh: replaced in place, new hosts at the end, removed ones dropped. */
function applied(current: HostState[], r: Refresh): HostState[] {
  const byName = new Map(r.changed.map((h) => [`${h.host}/${h.nodename}`, h]));
  const out = current.map((h) => byName.get(`${h.host}/${h.nodename}`) ?? h);
  const known = new Set(current.map((h) => `${h.host}/${h.nodename}`));
  for (const h of r.changed) if (!known.has(`${h.host}/${h.nodename}`)) out.push(h);
  return out.filter((h) => !r.removed.includes(h.host));
}

function compare(seed: number, size: number, rounds: number): number {
  const rng = new Rng(seeded(seed));
  const synthetic = syntheticFleet(size, seed);
  const base = busyConfig();
  const config: SchedulerConfig = busyConfig({
    host_subset_size: rng.pick([1, 2]),
    max_attempts: 3,
    // Without MetricsFilter, hosts missing a metric reach MetricsWeigher (which then weighs them
    // weight_of_unavailable rather than failing the request).
    metrics_required: false,
    enabled_filters: rng.chance(0.5)
      ? base.enabled_filters
      : base.enabled_filters.filter((f) => f !== "MetricsFilter"),
  });
  const warm = new Fleet(structuredClone(synthetic.hosts), synthetic.aggregates);
  let current: HostState[] = structuredClone(synthetic.hosts);
  const located = new Map(synthetic.hostOf);
  let decisions = 0;
  for (let round = 0; round < rounds; round++) {
    const refresh = drawRefresh(rng, current, synthetic, round);
    warm.update(structuredClone(refresh.changed), {
      removed: refresh.removed,
      ...(refresh.aggregates ? { aggregates: refresh.aggregates } : {}),
    });
    current = applied(current, refresh);
    const fresh = new Fleet(structuredClone(current), synthetic.aggregates);
    const label = `seed ${seed}, round ${round}`;
    expectSameIndexes(warm, fresh, label);

    for (let r = 0; r < 3; r++) {
      const req = syntheticRequest(rng, synthetic, { ...REALISTIC_MIX, group: 0.3, multi: 0.3 });
      const run = (fleet: Fleet) =>
        runSchedule(
          schedule({
            fleet,
            spec: req.spec,
            instanceUuids: req.uuids,
            config,
            random: seeded(seed * 1000 + round * 10 + r),
            excludeHosts: req.exclude,
            instanceHosts: located,
          }),
        );
      const a = run(warm);
      const b = run(fresh);
      const mine = outcome(a);
      const theirs = outcome(b);
      if (mine !== theirs) expect(JSON.parse(mine), `${label}, request ${r}`).toEqual(JSON.parse(theirs));
      decisions += a.placements.length + (a.ok ? 0 : 1);
      for (const p of a.placements) located.set(p.instance_uuid, p.selected.host);
    }
    // Both consumed the same: the warm fleet's states are the next round's "current".
    expectSameIndexes(warm, fresh, `${label}, after its requests`);
    current = structuredClone([...warm.hosts]);
  }
  return decisions;
}

describe("Fleet.update: an updated fleet decides exactly as one built fresh", () => {
  it("over 12 random fleets and refresh sequences", () => {
    let decisions = 0;
    for (let seed = 1; seed <= 12; seed++) decisions += compare(seed, 30 + ((seed * 29) % 90), 8);
    expect(decisions).toBeGreaterThan(150);
  });

  it("keeps positions: a replaced host stays where it was, a new one comes last", () => {
    const synthetic = syntheticFleet(10, 7);
    const fleet = new Fleet(structuredClone(synthetic.hosts), synthetic.aggregates);
    const rng = new Rng(seeded(7));
    const changed = driftHost(rng, synthetic.hosts[3]!, synthetic.aggregates);
    const joining = {
      ...driftHost(rng, synthetic.hosts[0]!, synthetic.aggregates),
      host: "x",
      nodename: "x",
    };
    const joinedLater = { ...joining, num_io_ops: 9 };
    fleet.update([changed, joining, joinedLater]);
    expect(fleet.hosts[3]).toBe(changed);
    expect(fleet.positionOf("x", "x")).toBe(10);
    expect(fleet.size).toBe(11);
    expect(fleet.column("num_io_ops")[10]).toBe(9);
    fleet.update([], { removed: [synthetic.hosts[0]!.host] });
    expect(fleet.size).toBe(10);
    expect(fleet.positionOf("x", "x")).toBe(9);
  });

  it("consume and a refresh of the consumed host: the refresh's state wins, columns follow", () => {
    const synthetic = syntheticFleet(5, 3);
    const fleet = new Fleet(structuredClone(synthetic.hosts), synthetic.aggregates);
    fleet.consume(2, { VCPU: 2, MEMORY_MB: 4096, DISK_GB: 20 });
    expect(fleet.column("num_io_ops")[2]).toBe(synthetic.hosts[2]!.num_io_ops + 1);
    const stored = structuredClone(synthetic.hosts[2]!);
    stored.num_io_ops = 7;
    fleet.update([stored]);
    expect(fleet.column("num_io_ops")[2]).toBe(7);
    expect(fleet.resourceColumn("VCPU")!.used[2]).toBe(stored.resources.VCPU!.used);
    fleet.consume(2, { VCPU: 1 });
    fleet.unconsume(2, { VCPU: 1 });
    expect(fleet.resourceColumn("VCPU")!.used[2]).toBe(stored.resources.VCPU!.used);
    expect(fleet.column("num_io_ops")[2]).toBe(7);
  });
});
