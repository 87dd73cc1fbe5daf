// The watchdog's side of a build: the builds in flight (by-vm-state's `building`) and its fenced
// writes, the failure it records on a dead host's behalf and the deadline it extends.
import { batchGetAll } from "../aws/dynamo-batch.js";
import { WATCHED_ATTRIBUTES } from "../resources.js";
import { type AttemptWrite, failAttempt } from "./build.js";
import { buildDeadline, destinationFrom, instancesTable } from "./codec.js";
import { instanceIdsInVmState } from "./queries.js";
import { transition } from "./transition.js";
import type { WatchedBuild } from "./types.js";

/**
 * Every instance still in BUILD, with what the watchdog reads: the keys of the `building`
 * partition of by-vm-state, then the items by BatchGetItem. The index carries only its keys, so
 * a build's own writes (its placement, its spawn) do not rewrite the entry; it is written when the
 * build is created and when it leaves BUILD, as for any vm_state. Oldest deadline first.
 */
export async function listBuilding(): Promise<WatchedBuild[]> {
  const ids = await instanceIdsInVmState("building");
  const names = Object.fromEntries(WATCHED.map((a, i) => [`#w${i}`, a]));
  const items = await batchGetAll<WatchedBuild>(
    instancesTable(),
    ids.map((id) => ({ id })),
    { ProjectionExpression: Object.keys(names).join(", "), ExpressionAttributeNames: names },
  );
  const out: WatchedBuild[] = [];
  for (const b of items) {
    // Ended between the index read and this one: no longer a build to watch.
    if (b.vm_state !== "building" || b.deleted) continue;
    out.push(b.alternates ? { ...b, alternates: b.alternates.map(destinationFrom) } : b);
  }
  return out.sort((a, b) => (a.build_deadline ?? "").localeCompare(b.build_deadline ?? ""));
}

/** What the watchdog reads of a build in flight. */
const WATCHED = ["id", "build_deadline", ...WATCHED_ATTRIBUTES];

/**
 * Watchdog: attempt `attempt` on `host` is dead (its host stopped heartbeating, or it passed its
 * deadline). Record the failure on the host's behalf, exactly as compute would: afterwards
 * neither a late start nor a late finish of that attempt can succeed (spawn_attempt = n and
 * task_state = scheduling fence both), and the attempt counts.
 */
// Taken (spawning) or cast but not yet taken: either way the attempt is still live.
export const fenceAttempt: AttemptWrite = failAttempt("task_state = :spawning OR spawn_attempt < :n");

/**
 * Watchdog: give a build that is only waiting (queued, or rescheduling) a new deadline before
 * sending its request again; conditioned on nothing having moved since it was read.
 */
export async function extendDeadline(rec: WatchedBuild): Promise<boolean> {
  const done = await transition(rec.id, {
    set: ["build_deadline = :deadline"],
    condition: "deleted = :false AND vm_state = :building AND attempt = :n AND build_deadline = :was",
    values: {
      ":deadline": buildDeadline(),
      ":false": false,
      ":building": "building",
      ":n": rec.attempt,
      ":was": rec.build_deadline ?? "",
    },
  });
  return Boolean(done);
}
