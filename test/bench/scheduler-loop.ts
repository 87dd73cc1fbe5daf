// The scheduler benchmark's request loop, shared by bench:scheduler (which times it) and
// scheduler-decisions.ts (which records what it decided), so the decisions compared across
// commits are exactly the ones the benchmark times. As a warm scheduler Lambda, one Fleet serves
// every request: before each, the refresh's `changed` host states are applied with Fleet.update().
import { performance } from "node:perf_hooks";
import { summarizeNoValidHost, summarizeSelection } from "../../lib/scheduler/explain.js";
import { Fleet } from "../../lib/scheduler/fleet.js";
import { runSchedule, type ScheduleResult, schedule } from "../../lib/scheduler/select.js";
import type { DecisionExplanation, HostState, InstanceLocator } from "../../lib/scheduler/types.js";
import {
  busyConfig,
  driftHost,
  REALISTIC_MIX,
  Rng,
  type SyntheticRequest,
  seeded,
  syntheticFleet,
  syntheticRequest,
} from "../unit/scheduler/synthetic.js";

/** The command-line options of the benches that run this loop (parseArgs' form, its defaults). */
export const LOOP_ARGS = {
  sizes: { type: "string", default: "1000,10000,50000" },
  requests: { type: "string", default: "3000" },
  warmup: { type: "string", default: "300" },
  changed: { type: "string", default: "20" },
  seed: { type: "string", default: "7" },
} as const;

export interface LoopOptions {
  seed: number;
  requests: number;
  warmup: number;
  /** host states changed by each request's refresh */
  changed: number;
  /**
   * The explanation asked for up front: the scheduler Lambda keeps the compact one ("compact", the
   * default here as there); "detailed" keeps every candidate's weigher values, for detailed().
   */
  explanation?: "compact" | "detailed";
}

/** One request as the loop ran it. */
export interface Step {
  /** 0-based, warm-up requests included */
  n: number;
  warmup: boolean;
  result: ScheduleResult;
  /** what the Lambda keeps per decision: the compact explanation and its summary */
  kept: { explanation: DecisionExplanation; summary: string }[];
  /** the decision and its explanations, wall and CPU */
  elapsedMs: number;
  cpuMs: number;
  refreshMs: number;
}

export interface LoopRun {
  fleet: Fleet;
  buildMs: number;
  aggregates: ReturnType<typeof syntheticFleet>["aggregates"];
}

export function runLoop(size: number, opts: LoopOptions, onStep: (step: Step) => void): LoopRun {
  const { seed, requests, warmup } = opts;
  const synthetic = syntheticFleet(size, seed);
  const rng = new Rng(seeded(seed + size));
  const pending: SyntheticRequest[] = Array.from({ length: warmup + requests }, () =>
    syntheticRequest(rng, synthetic, REALISTIC_MIX),
  );
  const config = busyConfig();
  const random = seeded(seed);
  globalThis.gc?.();
  const built = performance.now();
  const fleet = new Fleet(synthetic.hosts, synthetic.aggregates);
  const buildMs = performance.now() - built;

  const drift = new Rng(seeded(seed * 31 + size));
  // Where the instances hints and groups name run: the caller reads them per request; here they
  // are every instance placed since over the fleet's (not a copy of its million entries: the
  // scheduler holds none of them, and a heap that big only slows its garbage collections).
  const placed = new Map<string, string>();
  const located: InstanceLocator = { get: (uuid) => placed.get(uuid) ?? synthetic.hostOf.get(uuid) };
  for (const [n, req] of pending.entries()) {
    // What this invocation's refresh brings (drawn outside the timing: DynamoDB's part).
    const changed: HostState[] = [];
    for (let k = 0; k < opts.changed; k++) {
      changed.push(driftHost(drift, fleet.hosts[drift.int(0, fleet.size - 1)]!, synthetic.aggregates));
    }
    const refreshStart = performance.now();
    fleet.update(changed);
    const refreshMs = performance.now() - refreshStart;
    const cpuStart = process.cpuUsage();
    const start = performance.now();
    const result = runSchedule(
      schedule({
        fleet,
        spec: req.spec,
        instanceUuids: req.uuids,
        config,
        random,
        excludeHosts: req.exclude,
        instanceHosts: located,
        explanation: opts.explanation ?? "compact",
      }),
    );
    const kept: Step["kept"] = [];
    if (result.ok) {
      for (const p of result.placements) {
        placed.set(p.instance_uuid, p.selected.host);
        const explanation = p.decision.compact({ chosen: p.selected });
        kept.push({ explanation, summary: summarizeSelection(explanation) });
      }
    } else {
      const explanation = result.decision.compact();
      kept.push({ explanation, summary: summarizeNoValidHost(explanation) });
    }
    const elapsedMs = performance.now() - start;
    const used = process.cpuUsage(cpuStart);
    onStep({
      n,
      warmup: n < warmup,
      result,
      kept,
      elapsedMs,
      cpuMs: (used.user + used.system) / 1000,
      refreshMs,
    });
  }
  return { fleet, buildMs, aggregates: synthetic.aggregates };
}
