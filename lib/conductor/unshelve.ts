// The conductor's unshelve of a SHELVED_OFFLOADED server (Nova's ComputeTaskManager
// unshelve_instance): the same state machine as a build, its steps here when the request is an
// unshelve. The scheduler claims a host for the instance at the unshelve's attempt
// (lib/conductor/select-destinations.ts); BuildInstances records it and casts unshelve_instance
// to it; the host's report comes back through compute-events (applyUnshelveReport), and a host
// that cannot spawn it sends it to its alternates, as a build's reschedule does (Nova itself
// does not reschedule an unshelve). When no host will take it, it is SHELVED_OFFLOADED again,
// every claim made for it released.
import { computeMessageBody } from "../aws/send.js";
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
import {
  type ConductorInput,
  NOTHING_SCHEDULED,
  type Scheduled,
  selectionIn,
} from "../messages/scheduled.js";
import { consumerAllocations } from "../placement/allocations.js";
import { release } from "../placement/claims.js";
import { resourcesFromFlavor } from "../scheduler/resources.js";
import { claimFirstAlternate } from "./alternates.js";
import { hostQueueUrl } from "./host-queues.js";
import { abortedFault } from "./tasks.js";
import type { AlternatesExhaustedAnswer, Cast, StatesError } from "./types.js";

export type UnshelveInput = ConductorInput & UnshelveRequest;

/** The record in this unshelve, or undefined (deleted, or the unshelve is over). */
export async function inUnshelve(req: UnshelveInput): Promise<InstanceRecord | undefined> {
  const rec = await getInstance(req.instance_uuids[0]!);
  if (!rec || rec.deleted || rec.unshelve?.uuid !== req.unshelve.unshelve_uuid) return undefined;
  if (rec.vm_state !== "shelved_offloaded") return undefined;
  return rec;
}

/** The conductor's steps for an unshelve. */
export async function unshelveStep(
  action: string,
  req: UnshelveInput,
  scheduled: Scheduled | undefined,
  error: StatesError | undefined,
  noValidHostDetails = "",
): Promise<unknown> {
  const id = req.instance_uuids[0]!;
  switch (action) {
    case "claim_alternate":
      return claimUnshelveAlternate(req);
    case "build_instances":
      return startUnshelve(req, scheduled ?? NOTHING_SCHEDULED);
    case "no_valid_host":
      // Nova: the server stays SHELVED_OFFLOADED with no task; the event says why
      await endUnshelve(req, null, `NoValidHost: ${noValidHostDetails}`);
      return {};
    case "max_retries_exceeded": {
      const f = maxRetriesFault(id, req.config.max_attempts, req.retry.last_fault, req.retry.hosts);
      await endUnshelve(req, f, `${f.message} (${f.details})`);
      return {};
    }
    case "build_failed": {
      const f = abortedFault("Unshelve", id, error);
      await endUnshelve(req, f, f.details);
      return {};
    }
    default:
      throw new Error(`unknown conductor action ${action}`);
  }
}

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
  for (const a of await consumerAllocations(id)) {
    if (a.attempt > req.unshelve.base_attempt && a.attempt <= upTo) await release(a.host, id, a.attempt);
  }
}

/** The image the guest comes back from: the shelve's snapshot, or its own when the driver kept none. */
async function shelvedImage(rec: InstanceRecord): Promise<InstanceRecord["image"] | undefined> {
  const id = rec.shelve?.image_id;
  if (!id) return rec.image;
  const image = await getImage(id);
  return image ? { id: image.id, name: image.name, properties: image.properties } : undefined;
}

/**
 * BuildInstances for an unshelve: record the claimed host (the unshelve's token) and cast
 * unshelve_instance to it. Nova: the shelved image must still exist, or the server goes to
 * ERROR. A re-run of the step casts again (the host's step is idempotent).
 */
export async function startUnshelve(req: UnshelveInput, scheduled: Scheduled): Promise<{ casts: Cast[] }> {
  const sel = scheduled.selections[0];
  if (!sel) return { casts: [] };
  const n = unshelveAttempt(req);
  const { instance_uuid: id, selected, alternates } = selectionIn(scheduled, sel);
  const log = rootLog.child({ request_id: req.request_id, instance_uuid: id, attempt: n });
  const rec = await inUnshelve(req);
  const image = rec ? await shelvedImage(rec) : undefined;
  if (rec && !image) {
    await release(selected.host, id, n);
    await endUnshelve(
      req,
      fault(`Unshelve attempted but the image ${rec.shelve?.image_id} cannot be found.`, ""),
      `image ${rec.shelve?.image_id} not found`,
    );
    return { casts: [] };
  }
  const placed = rec
    ? await placeUnshelve(
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
      )
    : ({ kind: "gone", record: undefined } as const);
  if (placed.kind === "gone" || !image) {
    // deleted, or the unshelve ended meanwhile: the claim made for it goes back
    await release(selected.host, id, n);
    log.info("conductor.unshelve_abandoned", { host: selected.host });
    return { casts: [] };
  }
  const queueUrl = await hostQueueUrl(selected.host);
  if (!queueUrl) throw new Error(`host ${selected.host} has no queue_url; cannot cast the unshelve of ${id}`);
  const msg: UnshelveInstance = {
    version: 1,
    kind: "unshelve_instance",
    request_id: placed.record.unshelve!.request_id,
    instance_uuid: id,
    host: selected.host,
    unshelve_uuid: req.unshelve.unshelve_uuid,
    attempt: n,
    guest: await guestSpecFor({ ...placed.record, image }),
  };
  log.info("conductor.cast_unshelve", { host: selected.host, alternates: alternates.map((a) => a.host) });
  return { casts: [{ queue_url: queueUrl, message_body: computeMessageBody(msg) }] };
}

/** ClaimAlternate for an unshelve: the next alternate that takes the flavor, without the filters. */
export async function claimUnshelveAlternate(
  req: UnshelveInput,
): Promise<Scheduled | AlternatesExhaustedAnswer> {
  const n = unshelveAttempt(req);
  const id = req.instance_uuids[0]!;
  const rec = await inUnshelve(req);
  if (!rec) return NOTHING_SCHEDULED;
  const log = rootLog.child({ request_id: req.request_id, instance_uuid: id, attempt: n });
  return claimFirstAlternate(
    id,
    n,
    req.alternates ?? [],
    req.retry.hosts,
    resourcesFromFlavor(rec.flavor),
    log,
    { recorded: rec.attempt === n && rec.host ? rec.host : undefined },
  );
}
