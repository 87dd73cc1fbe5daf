// Nova's conductor claims a reschedule's alternates in order, without running the filters again:
// one loop for builds and moves.
import { getServerGroup } from "../catalog/server-groups.js";
import { getInstance } from "../instances/queries.js";
import { requestSpecOf } from "../instances/request-spec.js";
import type { Logger } from "../log.js";
import type { Destination } from "../messages/common.js";
import { type Scheduled, scheduledOf } from "../messages/scheduled.js";
import { claim, findClaim } from "../placement/claims.js";
import { type ClaimGroup, claimGroupOf } from "../placement/group-claims.js";
import type { Resources } from "../placement/types.js";
import { schedulerHint } from "../scheduler/hints.js";
import { type AlternatesExhaustedAnswer, alternatesExhausted } from "./types.js";

/**
 * Claim the first of `alternates` (skipping `exclude`) that takes `resources` for `consumer` at
 * attempt `n`. A re-run of the step keeps what it did: the host already `recorded` for this
 * attempt, or a claim made before its answer was lost (an earlier alternate may fit by now, and
 * claiming it would count twice). Answers AlternatesExhausted when none can be claimed (an
 * ordinary outcome: the state machine reschedules).
 */
export async function claimFirstAlternate(
  consumer: string,
  n: number,
  alternates: readonly Destination[],
  exclude: readonly string[],
  resources: Resources,
  log: Logger,
  opts: { recorded?: string } = {},
): Promise<Scheduled | AlternatesExhaustedAnswer> {
  const chosen = (i: number) =>
    scheduledOf([{ instance_uuid: consumer, selected: alternates[i]!, alternates: alternates.slice(i + 1) }]);
  if (opts.recorded) {
    const i = alternates.findIndex((a) => a.host === opts.recorded);
    if (i >= 0) return chosen(i);
  }
  const held = await findClaim(
    consumer,
    n,
    alternates.map((a) => a.host),
  );
  const start = held === undefined ? 0 : alternates.findIndex((a) => a.host === held);
  let group: Promise<ClaimGroup | undefined> | undefined;
  for (let i = start; i < alternates.length; i++) {
    const alt = alternates[i]!;
    if (exclude.includes(alt.host)) continue;
    // the group's late check holds for an alternate as for the scheduler's pick
    group ??= instanceClaimGroup(consumer);
    const r = await claim(alt.host, consumer, resources, n, { group: await group });
    log.info("conductor.claim_alternate", {
      host: alt.host,
      claimed: r.claimed,
      reason: r.claimed ? undefined : r.reason,
    });
    if (r.claimed) return chosen(i);
  }
  return alternatesExhausted(`no alternate could be claimed for instance ${consumer} (attempt ${n})`);
}

/**
 * The server group whose policy the instance's claims must hold (its request spec's `group`
 * hint), read when an alternate is claimed: a reschedule, never a build's first path.
 */
export async function instanceClaimGroup(instance: string): Promise<ClaimGroup | undefined> {
  const rec = await getInstance(instance);
  const hint = rec ? schedulerHint(requestSpecOf(rec, 1), "group") : undefined;
  return typeof hint === "string" && hint ? claimGroupOf(await getServerGroup(hint)) : undefined;
}
