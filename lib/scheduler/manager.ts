// Nova's SchedulerManager.select_destinations, the deciding part: over the host states it is
// given, it runs the scheduler (filters, weighers, select.ts) for the instances still to place,
// asks the caller to claim each host it picks, and says what the decision came to, in plain data.
// It reads and writes nothing itself: lib/conductor/select-destinations.ts loads the request,
// answers the claims with Placement's conditional writes and records the outcome. Every decision
// is explained (os-scheduling).
import type { SchedulerConfig } from "../config.js";
import { type Destination, destinationOf } from "../messages/common.js";
import { summarizeNoValidHost, summarizeSelection } from "./explain.js";
import type { Fleet } from "./fleet.js";
import { resourcesFromFlavor } from "./resources.js";
import {
  type ClaimAnswer,
  type ClaimRequest,
  runSchedule,
  runScheduleAsync,
  type ScheduleResult,
  schedule,
  selectionOf,
} from "./select.js";
import type { DecisionExplanation, RequestSpec, Selection } from "./types.js";

/** A host an earlier run of this step holds for an instance, and where it is. */
export interface HeldHost {
  host: string;
  node?: string | null;
  availability_zone?: string | null;
}

/** What one decision works on, read before it. */
export interface SchedulingRequest {
  /** every instance of the request, in order */
  instance_uuids: readonly string[];
  /** the attempt the claims are made for */
  attempt: number;
  /** host names this request already tried (retry.hosts) */
  excludeHosts: readonly string[];
  /** the request spec, its server group resolved */
  spec: RequestSpec;
  /** where the instances the request names run (its hints' and its group's) */
  instanceHosts: Map<string, string>;
  /** instances a re-run of this step keeps on the host an earlier run placed or claimed */
  held: Map<string, HeldHost>;
  /** the instances to place now, in order */
  toPlace: readonly string[];
}

export interface DecisionRecord {
  id: string;
  attempt: number;
  host: string | null;
  summary: string;
  explanation: DecisionExplanation;
}

/** What one decision came to, in plain data (no reference into the warm fleet). */
export type Outcome =
  | {
      ok: true;
      selections: { instance_uuid: string; selected: Destination; alternates: Destination[] }[];
      decisions: DecisionRecord[];
    }
  | { ok: false; instance_uuid: string; details: string; explanation: DecisionExplanation };

/**
 * Place `request.toPlace` on `fleet`, claiming each pick through `claim`, and keep what is held.
 * Explanations name hosts by their place in the warm fleet: they are made here, before another
 * decision may move it on.
 */
export async function decide(
  fleet: Fleet,
  request: SchedulingRequest,
  config: SchedulerConfig,
  random: () => number,
  claim: (c: ClaimRequest) => Promise<ClaimAnswer>,
): Promise<Outcome> {
  const requested = resourcesFromFlavor(request.spec.flavor);
  const kept = new Map(
    [...request.held].map(([id, held]) => [id, keptSelection(fleet, held, requested)] as const),
  );
  const result = await runScheduleAsync(
    schedule({
      fleet,
      spec: request.spec,
      instanceUuids: request.toPlace,
      config,
      random,
      excludeHosts: request.excludeHosts,
      instanceHosts: request.instanceHosts,
      explanation: "compact",
    }),
    claim,
  );
  if (!result.ok) {
    return {
      ok: false,
      instance_uuid: result.instance_uuid,
      details: noValidHostDetails(result, request.toPlace.length),
      explanation: result.decision.compact(),
    };
  }
  const placed = new Map(
    result.placements.map((p, k) => [p.instance_uuid, { p, alternates: result.alternates[k]! }]),
  );
  const outcome: Outcome & { ok: true } = { ok: true, selections: [], decisions: [] };
  for (const id of request.instance_uuids) {
    const keptSel = kept.get(id);
    if (keptSel)
      outcome.selections.push({ instance_uuid: id, selected: destinationOf(keptSel), alternates: [] });
    const got = placed.get(id);
    if (!got) continue;
    outcome.selections.push({
      instance_uuid: id,
      selected: destinationOf(got.p.selected),
      alternates: got.alternates.map(destinationOf),
    });
    const explanation = got.p.decision.compact({ chosen: got.p.selected });
    // a host ranked before it refused the claim: say why (a race, a server group's late check)
    const lost = got.p.conflicts?.length ? ` Claims lost to races: ${got.p.conflicts.join("; ")}.` : "";
    const summary = `${summarizeSelection(explanation)}${lost}`;
    outcome.decisions.push({ id, attempt: request.attempt, host: got.p.selected.host, summary, explanation });
  }
  return outcome;
}

/** PlanResult: what the dry run (POST /os-scheduler/plan) answers. */
export interface PlanResult {
  selections: { host: string; nodename: string; alternates: { host: string; nodename: string }[] }[];
  /** one per decision made, the failing one last */
  explanations: DecisionExplanation[];
  summary: string;
  no_valid_host: boolean;
}

/**
 * The dry run's decisions for `uuids`, as if every claim succeeded. What they consumed in the warm
 * host states is given back before it answers.
 */
export function plan(
  fleet: Fleet,
  spec: RequestSpec,
  uuids: readonly string[],
  instanceHosts: Map<string, string>,
  config: SchedulerConfig,
): PlanResult {
  const result = runSchedule(
    schedule({ fleet, spec, instanceUuids: uuids, config, instanceHosts, explanation: "compact" }),
  );
  for (const p of result.placements) fleet.unconsume(p.position, p.decision.requested);
  const explanations = result.placements.map((p) => p.decision.compact({ chosen: p.selected }));
  if (!result.ok) {
    explanations.push(result.decision.compact());
    return {
      selections: [],
      explanations,
      summary: noValidHostDetails(result, uuids.length),
      no_valid_host: true,
    };
  }
  return {
    selections: result.placements.map((p, k) => ({
      host: p.selected.host,
      nodename: p.selected.nodename,
      alternates: result.alternates[k]!.map((a) => ({ host: a.host, nodename: a.nodename })),
    })),
    explanations,
    summary: explanations.map((e) => summarizeSelection(e)).join(" "),
    no_valid_host: false,
  };
}

function noValidHostDetails(result: Extract<ScheduleResult, { ok: false }>, count: number): string {
  const which = count > 1 ? `for instance ${result.placements.length + 1} of ${count}` : undefined;
  const summary = summarizeNoValidHost(result.decision.compact(), which);
  return result.conflicts.length
    ? `${summary} Claims lost to races: ${result.conflicts.join("; ")}.`
    : summary;
}

/** This attempt's claim, made by an earlier run of this step. */
function keptSelection(fleet: Fleet, held: HeldHost, resources: Selection["resources"]): Selection {
  const h = fleet.hosts.find((s) => s.host === held.host);
  if (h) return selectionOf(h, resources);
  return {
    host: held.host,
    nodename: held.node ?? held.host,
    availability_zone: held.availability_zone ?? "",
    resources,
  };
}
