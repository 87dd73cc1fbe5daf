// The conductor's unshelve of a SHELVED_OFFLOADED server (Nova's ComputeTaskManager
// unshelve_instance): the same state machine as a build, its steps here when the request is an
// unshelve. The scheduler claims a host for the instance at the unshelve's attempt
// (lib/conductor/select-destinations.ts); BuildInstances records it and casts unshelve_instance
// to it (unshelveTask); the host's report comes back through compute-events (applyUnshelveReport), and a host
// that cannot spawn it sends it to its alternates, as a build's reschedule does (Nova itself
// does not reschedule an unshelve). When no host will take it, it is SHELVED_OFFLOADED again,
// every claim made for it released.
import { getImage } from "../catalog/repo.js";
import { storedDestination } from "../instances/codec.js";
import { fault, maxRetriesFault } from "../instances/faults.js";
import { guestSpecFor } from "../instances/guest.js";
import { getInstance } from "../instances/queries.js";
import { EVENT_UNSHELVE_SCHEDULE, placeUnshelve, unshelveEnded } from "../instances/shelve.js";
import { event } from "../instances/transition.js";
import type { Fault, InstanceRecord } from "../instances/types.js";
import { log as rootLog } from "../log.js";
import { type UnshelveRequest, unshelveAttempt } from "../messages/build-request.js";
import type { UnshelveInstance } from "../messages/compute.js";
import type { ConductorInput } from "../messages/scheduled.js";
import { revertClaims } from "../placement/claims.js";
import { resourcesFromFlavor } from "../scheduler/resources.js";
import type { ConductorTask, Placed, Placement } from "./task.js";
import { abortedFault } from "./tasks.js";

export type UnshelveInput = ConductorInput & UnshelveRequest;

/** The record in this unshelve, or undefined (deleted, or the unshelve is over). */
export async function inUnshelve(req: UnshelveInput): Promise<InstanceRecord | undefined> {
  const rec = await getInstance(req.instance_uuids[0]!);
  if (!rec || rec.deleted || rec.unshelve?.uuid !== req.unshelve.unshelve_uuid) return undefined;
  if (rec.vm_state !== "shelved_offloaded") return undefined;
  return rec;
}

/**
 * An unshelve's task: the claims at the unshelve's attempt (above every attempt the instance had,
 * as a move's), an alternate that takes its flavor, and a rollback that leaves it
 * SHELVED_OFFLOADED (Nova: with no task; a NoValidHost says why in the event only).
 */
export const unshelveTask: ConductorTask<UnshelveInput> = {
  name: "unshelve",
  claims: true,
  attempt: unshelveAttempt,
  load: inUnshelve,
  alternate: (req, rec, n) => ({
    resources: resourcesFromFlavor(rec.flavor),
    exclude: req.retry.hosts,
    recorded: rec.attempt === n && rec.host ? rec.host : undefined,
  }),
  place: placeUnshelveStep,
  async cast(req, now, { selected }, n) {
    const msg: UnshelveInstance = {
      version: 1,
      kind: "unshelve_instance",
      request_id: now.unshelve!.request_id,
      instance_uuid: now.id,
      host: selected.host,
      unshelve_uuid: req.unshelve.unshelve_uuid,
      attempt: n,
      guest: await guestSpecFor(now),
    };
    return msg;
  },
  async rollback(req, failure) {
    const id = req.instance_uuids[0]!;
    if (failure.action === "no_valid_host") {
      await endUnshelve(req, null, `NoValidHost: ${failure.details}`);
    } else if (failure.action === "max_retries_exceeded") {
      const f = maxRetriesFault(id, req.config.max_attempts, req.retry.last_fault, req.retry.hosts);
      await endUnshelve(req, f, `${f.message} (${f.details})`);
    } else {
      const f = abortedFault("Unshelve", id, failure.error);
      await endUnshelve(req, f, f.details);
    }
  },
};

/**
 * The unshelve ends without a host: the record first (so an unshelve that finished meanwhile is
 * never undone), then every claim made for it released (each idempotent, so a re-run finishes
 * what a dead one began). An offloaded server holds no claim, so every allocation above the
 * attempt it was accepted at is the unshelve's.
 */
async function endUnshelve(req: UnshelveInput, f: Fault | null, details: string): Promise<void> {
  const id = req.instance_uuids[0]!;
  const rec = await getInstance(id);
  const log = rootLog.child({ request_id: req.request_id, instance_uuid: id });
  // it runs (this unshelve finished after all, or a later one did): its claims are its own now
  if (rec && !rec.deleted && rec.vm_state !== "shelved_offloaded") return;
  const current = rec?.unshelve;
  if (rec && current?.uuid === req.unshelve.unshelve_uuid) {
    const done = await unshelveEnded(
      { id, request_id: current.request_id },
      current.uuid,
      f,
      event(EVENT_UNSHELVE_SCHEDULE, unshelveAttempt(req), "Error", null, details, new Date()),
    );
    log.warn("conductor.unshelve_failed", { details, applied: Boolean(done) });
    if (!done) return;
  }
  // (ended already, or deleted: only the releases may be unfinished) This unshelve's claims are
  // above its base attempt, and a later unshelve's are above that one's base: never released here.
  const upTo = current && current.uuid !== req.unshelve.unshelve_uuid ? current.base_attempt : Infinity;
  await revertClaims(id, { above: req.unshelve.base_attempt, upTo });
}

/** The image the guest comes back from: the shelve's snapshot, or its own when the driver kept none. */
async function shelvedImage(rec: InstanceRecord): Promise<InstanceRecord["image"] | undefined> {
  const id = rec.shelve?.image_id;
  if (!id) return rec.image;
  const image = await getImage(id);
  return image ? { id: image.id, name: image.name, properties: image.properties } : undefined;
}

/**
 * Record the claimed host (the unshelve's token). Nova: the shelved image must still exist, or
 * the unshelve ends (with a fault) and its claims go back. A re-run of the step finds it placed
 * and casts again (the host's step is idempotent).
 */
async function placeUnshelveStep(
  req: UnshelveInput,
  { selected, alternates }: Placement,
  n: number,
): Promise<Placed> {
  const rec = await inUnshelve(req);
  if (!rec) return { kind: "gone" };
  const image = await shelvedImage(rec);
  if (!image) {
    await endUnshelve(
      req,
      fault(`Unshelve attempted but the image ${rec.shelve?.image_id} cannot be found.`, ""),
      `image ${rec.shelve?.image_id} not found`,
    );
    return { kind: "gone" };
  }
  const placed = await placeUnshelve(
    rec,
    req.unshelve.unshelve_uuid,
    n,
    selected,
    alternates.map(storedDestination),
    event(
      EVENT_UNSHELVE_SCHEDULE,
      n,
      "Success",
      selected.host,
      `scheduled to ${selected.host} (attempt ${req.retry.num_attempts})`,
      new Date(),
    ),
  );
  // the guest comes back from that image: the cast's record carries it
  return placed.kind === "gone" ? { kind: "gone" } : { kind: "placed", record: { ...placed.record, image } };
}
