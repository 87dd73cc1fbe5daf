// The optimized scheduler (fleet indexes, verdicts shared per aggregate list, arrays, lazy
// ordering, compact explanations) against the straightforward reference, on seeded random fleets
// and request sequences: the same selections, alternates and explanations, to the last bit.
import { describe, expect, it } from "vitest";
import type { SchedulerConfig } from "../../../lib/config.js";
import { compactExplanation } from "../../../lib/scheduler/explain.js";
import { Fleet } from "../../../lib/scheduler/fleet.js";
import { runSchedule, schedule } from "../../../lib/scheduler/select.js";
import type { HostState } from "../../../lib/scheduler/types.js";
import { referenceSchedule } from "./reference.js";
import {
  busyConfig,
  REALISTIC_MIX,
  type RequestMix,
  Rng,
  seeded,
  syntheticFleet,
  syntheticRequest,
} from "./synthetic.js";

/** Exact text of a value (-0 kept apart from 0): a fast, bit-exact comparison of big explanations. */
const exact = (v: unknown) => JSON.stringify(v, (_k, x) => (Object.is(x, -0) ? "-0" : x));

/** A claim that loses its race for some (host, instance) pairs, the same on both sides. */
function flakyClaim(host: string, uuid: string): boolean {
  let h = 0;
  for (const c of `${host}/${uuid}`) h = (h * 31 + c.charCodeAt(0)) | 0;
  return h % 11 !== 0;
}

function configFor(rng: Rng): SchedulerConfig {
  return busyConfig({
    host_subset_size: rng.pick([1, 1, 2, 3]),
    shuffle_best_same_weighed_hosts: rng.chance(0.3),
    max_attempts: rng.pick([1, 3, 4]),
    metrics_required: rng.chance(0.5),
    enable_isolated_aggregate_filtering: rng.chance(0.5),
    limit_tenants_to_placement_aggregate: rng.chance(0.5),
    query_placement_for_availability_zone: rng.chance(0.8),
    restrict_isolated_hosts_to_isolated_images: rng.chance(0.7),
  });
}

function compareRun(seed: number, size: number, requests: number, mix: RequestMix = REALISTIC_MIX): number {
  const rng = new Rng(seeded(seed));
  const synthetic = syntheticFleet(size, seed);
  const config = configFor(rng);
  const fleet = new Fleet(structuredClone(synthetic.hosts), synthetic.aggregates);
  const refHosts: HostState[] = structuredClone(synthetic.hosts);
  // Where instances run: the fleet's, then each request's placements, the same on both sides.
  const located = new Map(synthetic.hostOf);
  const refLocated = new Map(synthetic.hostOf);
  let decisions = 0;
  for (let r = 0; r < requests; r++) {
    const req = syntheticRequest(rng, synthetic, mix);
    const fast = seeded(seed * 1000 + r);
    const slow = seeded(seed * 1000 + r);
    const label = `seed ${seed}, request ${r}`;

    const ref = referenceSchedule(refHosts, synthetic.aggregates, req.spec, req.uuids, config, slow, {
      exclude: req.exclude,
      claim: (h, uuid) => flakyClaim(h.host, uuid),
      instances: refLocated,
    });
    const result = runSchedule(
      schedule({
        fleet,
        spec: req.spec,
        instanceUuids: req.uuids,
        config,
        random: fast,
        excludeHosts: req.exclude,
        instanceHosts: located,
      }),
      (c) =>
        flakyClaim(c.host.host, c.instance_uuid) ? { claimed: true } : { claimed: false, reason: "lost" },
    );

    for (const p of result.placements) located.set(p.instance_uuid, p.selected.host);
    const placed = result.placements.map((p) => ({
      instance_uuid: p.instance_uuid,
      host: p.selected.host,
      nodename: p.selected.nodename,
    }));
    expect({ ok: result.ok, placed }, label).toEqual({ ok: ref.ok, placed: ref.placements });
    if (result.ok) {
      expect(
        result.alternates.map((alts) => alts.map((a) => ({ host: a.host, nodename: a.nodename }))),
        label,
      ).toEqual(ref.alternates);
    }
    const engineDecisions = [
      ...result.placements.map((p) => p.decision),
      ...(result.ok ? [] : [result.decision]),
    ];
    expect(engineDecisions.length, label).toBe(ref.explanations.length);
    for (const [k, d] of engineDecisions.entries()) {
      const detailed = ref.explanations[k]!;
      const mine = exact(d.detailed());
      if (mine !== exact(detailed)) expect(d.detailed(), `${label}, instance ${k}`).toEqual(detailed);
      const chosen = ref.placements[k];
      const opts = chosen ? { chosen: { host: chosen.host, nodename: chosen.nodename } } : {};
      expect(d.compact(opts), `${label}, instance ${k} (compact)`).toEqual(
        compactExplanation(detailed, opts),
      );
      decisions++;
    }
    // Both sides consumed the same hosts the same way.
    expect(
      fleet.hosts.map((h) => [h.free_ram_mb, h.num_instances, h.num_io_ops]),
      label,
    ).toEqual(refHosts.map((h) => [h.free_ram_mb, h.num_instances, h.num_io_ops]));
    expect([...located].sort(), label).toEqual([...refLocated].sort());
  }
  return decisions;
}

/**
 * Gives the worker's event loop a turn between fleets: a test that holds it for a minute (these
 * loops on a loaded machine) makes vitest's worker time out its own reports ("Timeout calling
 * onTaskUpdate") and the run exit 1 with every test passed.
 */
const yieldToWorker = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("the optimized scheduler decides exactly as the reference", () => {
  it("on 30 random fleets and request sequences", async () => {
    let decisions = 0;
    for (let seed = 1; seed <= 30; seed++) {
      decisions += compareRun(seed, 20 + ((seed * 37) % 140), 6);
      await yieldToWorker();
    }
    expect(decisions).toBeGreaterThan(150);
  });

  it("on requests heavy with server groups, hints and multi-creates", async () => {
    const mix = {
      group: 0.7,
      multi: 0.6,
      different_host: 0.4,
      same_host: 0.1,
      query: 0.2,
      cidr: 0.2,
      force: 0.05,
    };
    let decisions = 0;
    for (let seed = 101; seed <= 125; seed++) {
      decisions += compareRun(seed, 10 + ((seed * 13) % 60), 6, mix);
      await yieldToWorker();
    }
    expect(decisions).toBeGreaterThan(150);
  });

  it("on a fleet large enough for the partial ordering (600 hosts)", () => {
    expect(compareRun(4242, 600, 4)).toBeGreaterThan(0);
  });
});
