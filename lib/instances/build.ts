// A build's transitions, each fenced on the attempt and host it is for: the conductor places the
// instance, compute takes the build, finishes it or fails it back to scheduling, and the conductor
// ends it in ERROR.
import type { Destination } from "../messages/common.js";
import { buildDeadline, storedDestination } from "./codec.js";
import { changeShard, getInstance } from "./queries.js";
import { type InstanceRef, transitionWithEvent, type Update } from "./transition.js";
import type { ActionEvent, Fault, InstanceRecord, Vif } from "./types.js";

/** A write by the attempt `attempt` on `host`, of a build still live. */
const FENCE = "deleted = :false AND vm_state = :building AND host = :h AND attempt = :n";

/** The values FENCE names: attempt `attempt` on `host`, of a build still live. */
function fenced(host: string, attempt: number): Record<string, unknown> {
  return { ":false": false, ":building": "building", ":h": host, ":n": attempt };
}

/** A write by attempt `attempt` on `host`, with its event; undefined when fenced. */
export type AttemptWrite = (
  rec: InstanceRef,
  host: string,
  attempt: number,
  ev: ActionEvent,
) => Promise<InstanceRecord | undefined>;

/** What the conductor's placement of an instance came to (a build's attempt, a move's). */
export type PlaceOutcome =
  | { kind: "placed"; record: InstanceRecord }
  | { kind: "already-placed"; record: InstanceRecord }
  | { kind: "gone"; record: InstanceRecord | undefined };

/**
 * The instance pointed at `dest` for attempt `attempt` (the fencing token its host's writes are
 * conditioned on), with the alternates a reschedule of this attempt goes to (so no cast carries
 * them): a build's placement, and an unshelve's, which is scheduled as a build is.
 */
export function placedOn(
  attempt: number,
  dest: Destination,
  alternates: readonly unknown[],
): Pick<Update, "set" | "values"> {
  return {
    set: ["attempt = :n", "host = :h", "node = :node", "availability_zone = :az", "alternates = :alts"],
    values: {
      ":n": attempt,
      ":h": dest.host,
      ":node": dest.nodename,
      ":az": dest.availability_zone,
      ":alts": alternates,
    },
  };
}

/**
 * Conductor: point the instance at its host for attempt `attempt` (the fencing token every later
 * compute write is conditioned on), with the alternates a reschedule of this attempt goes to
 * (so no cast carries them) and the network info of the ports bound to that host for it (Nova's
 * instance_info_caches), all in one write. Succeeds only from the previous attempt; a re-run for
 * the same attempt and host is `already-placed`; anything else (deleted, a newer attempt, placed
 * on another host by a concurrent run) is `gone`.
 */
export async function placeInstance(
  rec: InstanceRef,
  attempt: number,
  { host, nodename, availability_zone }: Destination,
  alternates: readonly Destination[],
  ev: ActionEvent,
  networkInfo?: readonly Vif[],
): Promise<PlaceOutcome> {
  const now = new Date().toISOString();
  const at = placedOn(attempt, { host, nodename, availability_zone }, alternates.map(storedDestination));
  const placed = await transitionWithEvent(rec, ev, {
    set: [
      ...at.set,
      ...(networkInfo ? ["network_info = :vifs"] : []),
      "updated_at = :now",
      // The first attempt keeps the deadline it was created with (instance_build_timeout
      // counts from creation, as Nova's does); a reschedule gets a whole timeout again.
      ...(attempt > 1 ? ["build_deadline = :deadline"] : []),
    ],
    condition: "deleted = :false AND vm_state = :building AND attempt = :prev",
    values: {
      ...(attempt > 1 ? { ":deadline": buildDeadline() } : {}),
      ...(networkInfo ? { ":vifs": networkInfo } : {}),
      ...at.values,
      ":prev": attempt - 1,
      ":now": now,
      ":false": false,
      ":building": "building",
    },
  });
  if (placed) return { kind: "placed", record: placed };
  const current = await getInstance(rec.id);
  if (current && !current.deleted && current.attempt === attempt && current.host === host) {
    return { kind: "already-placed", record: current };
  }
  return { kind: "gone", record: current };
}

export type SpawnOutcome =
  | { outcome: "started" | "in-progress" | "failure-recorded" | "finished"; record: InstanceRecord }
  | { outcome: "fenced"; record: InstanceRecord | undefined };

/**
 * Compute: take the build for `attempt` on `host`. `in-progress` means this attempt was already
 * taken (a duplicate delivery or an agent restarted mid-build); `failure-recorded` means it
 * already failed and only the reschedule may be unfinished; `finished` means it ran its course
 * on this host (a late duplicate).
 */
export async function startSpawn(
  rec: InstanceRef,
  host: string,
  attempt: number,
  ev: ActionEvent,
): Promise<SpawnOutcome> {
  const started = await transitionWithEvent(rec, ev, {
    set: ["task_state = :spawning", "spawn_attempt = :n", "updated_at = :now"],
    condition: `${FENCE} AND spawn_attempt < :n`,
    values: { ":spawning": "spawning", ":now": new Date().toISOString(), ...fenced(host, attempt) },
  });
  if (started) return { outcome: "started", record: started };
  const current = await getInstance(rec.id);
  const mine =
    current &&
    !current.deleted &&
    current.vm_state === "building" &&
    current.host === host &&
    current.attempt === attempt &&
    current.spawn_attempt === attempt;
  if (!mine) {
    // This attempt already ran its course here (ACTIVE, or ERROR keeping its guest): a late
    // duplicate, not a build to undo.
    const finished =
      current &&
      !current.deleted &&
      current.vm_state !== "building" &&
      current.host === host &&
      current.attempt === attempt;
    return finished ? { outcome: "finished", record: current } : { outcome: "fenced", record: current };
  }
  return { outcome: current.task_state === "spawning" ? "in-progress" : "failure-recorded", record: current };
}

/** Compute: the build succeeded. False when fenced (deleted or moved meanwhile). */
export const markActive: AttemptWrite = (rec, host, attempt, ev) => {
  const now = new Date().toISOString();
  return transitionWithEvent(rec, ev, {
    set: [
      "vm_state = :active",
      "task_state = :null",
      "launched_at = :now",
      "updated_at = :now",
      // out of BUILD: into the listings' changes index (lib/instances/queries.ts)
      "change_shard = :cs",
    ],
    // The alternates were for a reschedule of this attempt: the build is over. A fault from an
    // earlier attempt goes (absent reads as null: lib/instances/codec.ts).
    remove: ["build_deadline", "alternates", "fault"],
    condition: `${FENCE} AND task_state = :spawning`,
    values: {
      ":cs": changeShard(rec.id),
      ":active": "active",
      ":null": null,
      ":now": now,
      ":spawning": "spawning",
      ...fenced(host, attempt),
    },
  });
};

/**
 * Compute: the build failed on `host`; record it and hand the instance back to scheduling (Nova's
 * reschedule sets task_state back to scheduling). Keeps host and attempt, so the failure path is
 * resumable if the agent dies before it re-enqueues.
 */
export const recordBuildFailure: AttemptWrite = failAttempt("task_state = :spawning");

/**
 * An attempt ends in failure on `host`: back to scheduling, the host added to those tried, and
 * spawn_attempt = n so no late start of this attempt can succeed. `guard` says from which states.
 */
export function failAttempt(guard: string): AttemptWrite {
  return (rec, host, attempt, ev) =>
    transitionWithEvent(rec, ev, {
      set: [
        "task_state = :scheduling",
        "spawn_attempt = :n",
        "retry_hosts = list_append(if_not_exists(retry_hosts, :empty), :host)",
        "updated_at = :now",
        "build_deadline = :deadline",
      ],
      condition: `${FENCE} AND (${guard})`,
      values: {
        ":deadline": buildDeadline(),
        ":scheduling": "scheduling",
        ":spawning": "spawning",
        ":empty": [],
        ":host": [host],
        ":now": new Date().toISOString(),
        ...fenced(host, attempt),
      },
    });
}

/**
 * Conductor: the build ends in ERROR (NoValidHost, MaxRetriesExceeded, an unexpected failure).
 * Only from `attempt` (the last one made), so a stale message cannot fail a newer build.
 */
export async function setError(
  rec: InstanceRef,
  attempt: number,
  fault: Fault,
  ev: ActionEvent,
): Promise<InstanceRecord | undefined> {
  return transitionWithEvent(rec, ev, {
    // out of BUILD: into the listings' changes index (lib/instances/queries.ts)
    set: [
      "vm_state = :error",
      "task_state = :null",
      "fault = :fault",
      "updated_at = :now",
      "change_shard = :cs",
    ],
    remove: ["build_deadline", "alternates"],
    condition: "deleted = :false AND vm_state = :building AND attempt = :n",
    values: {
      ":cs": changeShard(rec.id),
      ":error": "error",
      ":null": null,
      ":fault": fault,
      ":now": new Date().toISOString(),
      ":false": false,
      ":building": "building",
      ":n": attempt,
    },
  });
}
