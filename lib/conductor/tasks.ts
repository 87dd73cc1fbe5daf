// The build's task (Nova's ComputeTaskManager.build_instances) through the shared steps of
// task.ts, and what every task's rollback reads (causeOf, abortedFault). Each step is safe to
// run twice: every write is a fenced, idempotent transition.
import { placeInstance, setError } from "../instances/build.js";
import { EVENT_SCHEDULE } from "../instances/codec.js";
import { fault, maxRetriesFault } from "../instances/faults.js";
import {
  allocateForInstance,
  deallocateForInstance,
  NetworkAllocationFailed,
  rebindPorts,
  recordNetworkInfo,
} from "../instances/networking.js";
import { getInstance, getSettledInstance } from "../instances/queries.js";
import { event } from "../instances/transition.js";
import type { Fault, InstanceRecord, Vif } from "../instances/types.js";
import { log } from "../log.js";
import type { Destination } from "../messages/common.js";
import type { ConductorInput, Scheduled } from "../messages/scheduled.js";
import { metrics } from "../metrics.js";
import { release, revertClaims } from "../placement/claims.js";
import { resourcesFromFlavor } from "../scheduler/resources.js";
import { type ConductorTask, claimAlternateStep, type Placed, startStep } from "./task.js";
import {
  type AlternatesExhaustedAnswer,
  type Cast,
  NO_VALID_HOST_MESSAGE,
  type StatesError,
} from "./types.js";

/** The cause text of a Lambda error as Step Functions reports it (a JSON errorMessage or text). */
export function causeOf(err: StatesError | undefined): { message: string; details: string } {
  if (!err) return { message: "unknown error", details: "" };
  try {
    const parsed = JSON.parse(err.Cause ?? "") as { errorMessage?: string; details?: string };
    return {
      message: parsed.errorMessage ?? err.Error,
      details: parsed.details ?? parsed.errorMessage ?? "",
    };
  } catch {
    return { message: err.Cause || err.Error, details: err.Cause || "" };
  }
}

/**
 * An error in a move's, a rebuild's or an unshelve's workflow (Nova's conductor aborting the
 * task): which error it was in the message, its cause (for admins) in the details.
 */
export function abortedFault(
  action: "Migration" | "Rebuild" | "Unshelve",
  id: string,
  error: StatesError | undefined,
): Fault {
  const { message } = causeOf(error);
  const text = `${action} of instance ${id} aborted: ${error?.Error ?? "error"}`;
  return fault(text, `${text}: ${message}`);
}

/**
 * Past max_attempts: ERROR with Nova's MaxRetriesExceeded text (the hosts tried in its details,
 * for admins). Claims were released by whoever failed the last attempt.
 */
export async function maxRetriesExceeded(req: ConductorInput): Promise<void> {
  const n = req.retry.num_attempts;
  const last = n - 1;
  for (const id of req.instance_uuids) {
    const f = maxRetriesFault(id, req.config.max_attempts, req.retry.last_fault, req.retry.hosts);
    const done = await setError(
      { id, request_id: req.request_id },
      last,
      f,
      event(EVENT_SCHEDULE, n, "Error", null, `${f.message} (${f.details})`, new Date()),
    );
    if (done) metrics.buildsError("MaxRetriesExceeded");
    await freePorts(id, done);
    log.warn("conductor.max_retries_exceeded", {
      request_id: req.request_id,
      instance_uuid: id,
      attempt: n,
      hosts_tried: req.retry.hosts,
      applied: Boolean(done),
    });
  }
}

/** No host fits: ERROR with Nova's generic message; the operator detail goes to `details`. */
export async function noValidHost(req: ConductorInput, details: string): Promise<void> {
  const n = req.retry.num_attempts;
  for (const id of req.instance_uuids) {
    const done = await setError(
      { id, request_id: req.request_id },
      n - 1,
      fault(NO_VALID_HOST_MESSAGE, details),
      event(EVENT_SCHEDULE, n, "Error", null, `NoValidHost: ${details}`, new Date()),
    );
    metrics.buildsError("NoValidHost");
    // a reschedule's: the ports its earlier attempts bound
    await freePorts(id, done);
    log.warn("conductor.no_valid_host", {
      request_id: req.request_id,
      instance_uuid: id,
      attempt: n,
      details,
    });
  }
}

/**
 * Reschedule onto the next alternate, claiming it without running the filters again, as Nova's
 * conductor does. Answers AlternatesExhausted when none can be claimed.
 */
export function claimAlternate(req: ConductorInput): Promise<Scheduled | AlternatesExhaustedAnswer> {
  return claimAlternateStep(buildTask, req);
}

/**
 * Record each instance's placement (host, node and the attempt, the fencing token) and produce
 * one cast per instance for the Map state to send to that host's queue. An instance deleted (or
 * moved by a concurrent run) in the meantime gets its claim back instead of a build.
 */
export function buildInstances(req: ConductorInput, scheduled: Scheduled): Promise<{ casts: Cast[] }> {
  return startStep(buildTask, req, scheduled);
}

/** A build (Nova's ComputeTaskManager.build_instances): every instance of the request at once. */
export const buildTask: ConductorTask = {
  name: "build",
  many: true,
  claims: true,
  attempt: (req) => req.retry.num_attempts,
  async load(req) {
    const rec = await getInstance(req.instance_uuids[0]!);
    const n = req.retry.num_attempts;
    return rec && !rec.deleted && rec.vm_state === "building" && rec.attempt <= n ? rec : undefined;
  },
  alternate: (req, rec, n) => ({
    // the amounts the scheduler claimed for it on its first host: its flavor's
    resources: resourcesFromFlavor(rec.flavor),
    exclude: req.retry.hosts,
    // a re-run of this step: the alternate was claimed and recorded already
    recorded: rec.attempt === n && rec.host ? rec.host : undefined,
  }),
  async place(req, { instance_uuid: id, selected, alternates }, n) {
    const { host } = selected;
    const ref = { id, request_id: req.request_id };
    // Nova's compute allocates the network once the host is chosen (allocate_for_instance); here
    // the conductor does, as hosts read no database, and before it places the instance, so that
    // the placement and its network info are one write. The record as settled is enough to
    // begin: the placement is conditioned on the attempt, and a refusal is read again.
    const rec = await getSettledInstance(id);
    let vifs: Vif[] | undefined;
    if (rec?.requested_networks?.length && placeable(rec, n)) {
      const allocated = await allocateBeforePlacing(req, rec, selected, n);
      if (allocated.kind !== "allocated") return allocated.placed;
      vifs = allocated.vifs;
    }
    // The host's name is for admins only: the event's `host` and `details` are theirs. The
    // alternates stay with the placement, for compute's reschedule and the watchdog's resend.
    const placed = await placeInstance(
      ref,
      n,
      selected,
      alternates,
      event(EVENT_SCHEDULE, n, "Success", host, `scheduled to ${host} (attempt ${n})`, new Date()),
      vifs,
    );
    if (placed.kind !== "gone") return { kind: "placed", record: placed.record };
    if (rec && vifs) await portsOfUnplaced(rec, placed.record);
    return { kind: "gone", deleted: Boolean(placed.record?.deleted) };
  },
  async cast(req, rec, { selected }, n) {
    const { host, nodename } = selected;
    // A placement recorded without its network info (by a run of an earlier release) binds the
    // ports now, as that release did. A reschedule finds the same ports and rebinds them.
    if (!rec.network_info?.length && !(await bindNetwork(req, n, rec, host))) return undefined;
    return {
      version: 3,
      kind: "build_and_run_instance",
      request_id: req.request_id,
      instance_uuid: rec.id,
      host,
      ...(nodename === host ? {} : { node: nodename }),
      attempt: n,
      resources: resourcesFromFlavor(rec.flavor),
    };
  },
  rollback(req, f) {
    if (f.action === "no_valid_host") return noValidHost(req, f.details);
    if (f.action === "max_retries_exceeded") return maxRetriesExceeded(req);
    return buildFailed(req, f.error);
  },
};

/** The record is still waiting for attempt `n`'s placement (a build, not deleted, one attempt before). */
const placeable = (rec: InstanceRecord, n: number) =>
  !rec.deleted && rec.vm_state === "building" && rec.attempt === n - 1;

/**
 * The ports of attempt `n`, bound to its host before the placement that records them. A Networking
 * refusal (no free address, a port or address taken since the API looked) is no fault of the
 * host: the build is aborted (Nova's BuildAbortException), its claim released and what it made
 * freed, unless the record (read again, consistently) has moved on meanwhile: then the ports are
 * a later attempt's or a delete's, and this attempt has nothing to place.
 */
async function allocateBeforePlacing(
  req: ConductorInput,
  rec: InstanceRecord,
  dest: Destination,
  n: number,
): Promise<{ kind: "allocated"; vifs: Vif[] } | { kind: "refused"; placed: Placed }> {
  const { host } = dest;
  try {
    return { kind: "allocated", vifs: await allocateForInstance(rec, { ...dest, attempt: n }) };
  } catch (e) {
    if (!(e instanceof NetworkAllocationFailed)) throw e;
    const now = await getInstance(rec.id);
    if (now && !now.deleted && now.attempt === n && now.host === host)
      return { kind: "refused", placed: { kind: "placed", record: now } };
    if (!now || !placeable(now, n))
      return { kind: "refused", placed: { kind: "gone", deleted: Boolean(now?.deleted) } };
    await abortBuild(req, now, n, host, e, now.attempt);
    return { kind: "refused", placed: { kind: "gone" } };
  }
}

/**
 * Ports bound for a placement that did not happen: a delete meanwhile may have looked for them
 * before they were made (they go); a concurrent run that placed this attempt on another host has
 * them follow it (bound to the host the record names). A later attempt binds them itself.
 */
async function portsOfUnplaced(rec: InstanceRecord, current: InstanceRecord | undefined): Promise<void> {
  if (!current || current.deleted) await deallocateForInstance({ ...rec, deleted: true });
  else if (current.attempt === rec.attempt + 1 && current.network_info?.length) await rebindPorts(current);
}

/**
 * Bind the instance's ports to its host, after its placement (a placement recorded without them).
 * False when there is nothing to cast (aborted, or deleted meanwhile).
 */
async function bindNetwork(
  req: ConductorInput,
  n: number,
  rec: InstanceRecord,
  host: string,
): Promise<boolean> {
  if (!rec.requested_networks?.length) return true;
  try {
    const vifs = await allocateForInstance(rec, {
      host,
      attempt: rec.attempt,
      availability_zone: rec.availability_zone,
    });
    if (await recordNetworkInfo(rec.id, vifs)) return true;
    // deleted meanwhile: its delete may have looked for ports before these were made
    await deallocateForInstance({ ...rec, deleted: true });
    log.info("conductor.placement_abandoned", {
      request_id: req.request_id,
      instance_uuid: rec.id,
      attempt: n,
      host,
      reason: "deleted",
    });
    return false;
  } catch (e) {
    if (!(e instanceof NetworkAllocationFailed)) throw e;
    await abortBuild(req, rec, n, host, e, n);
    return false;
  }
}

/**
 * A Networking refusal ends the build (Nova's BuildAbortException): its claim released, what it
 * made freed before the ERROR shows (nothing of an aborted build outlives it), then ERROR from
 * attempt `from` (the record's: placed or not yet).
 */
async function abortBuild(
  req: ConductorInput,
  rec: InstanceRecord,
  n: number,
  host: string,
  e: NetworkAllocationFailed,
  from: number,
): Promise<void> {
  const message = `Build of instance ${rec.id} aborted: ${e.message}`;
  await release(host, rec.id, n);
  await deallocateForInstance(rec);
  await setError(
    { id: rec.id, request_id: req.request_id },
    from,
    fault(message, message),
    event(EVENT_SCHEDULE, n, "Error", host, message, new Date()),
  );
  metrics.buildsError("BuildAborted");
  log.warn("conductor.network_allocation_failed", {
    request_id: req.request_id,
    instance_uuid: rec.id,
    attempt: n,
    host,
    error: e.message,
  });
}

/**
 * A build ended in ERROR: the ports Nova made for it go, the user's are unbound. `done` is the
 * record setError answered; undefined on a re-run, when the record is read to see it is ERROR.
 */
async function freePorts(id: string, done: InstanceRecord | undefined): Promise<void> {
  const rec = done ?? (await getInstance(id));
  if (rec?.requested_networks?.length && (rec.vm_state === "error" || rec.deleted))
    await deallocateForInstance(rec);
}

/**
 * Anything unexpected in the workflow: release whatever this attempt claimed and put the
 * instances in ERROR (Nova's BuildAbortException), rather than leave them in BUILD. The owner
 * reads which error it was; its cause (which may name hosts, queues, roles) is for admins, as
 * Nova keeps an unexpected exception's text out of the fault's message.
 */
export async function buildFailed(req: ConductorInput, err: StatesError | undefined): Promise<void> {
  const n = req.retry.num_attempts;
  const { message: cause } = causeOf(err);
  const error = err?.Error ?? "error";
  // Claims the scheduler made that BuildInstances may not have recorded yet.
  if (req.scheduled) {
    const scheduledHosts = req.scheduled.hosts;
    for (const sel of req.scheduled.selections) {
      const host = scheduledHosts[sel.host]?.host;
      if (host) await release(host, sel.instance_uuid, n);
    }
  }
  const building = (await Promise.all(req.instance_uuids.map((id) => getInstance(id)))).filter(
    (rec): rec is InstanceRecord => Boolean(rec && !rec.deleted && rec.vm_state === "building"),
  );
  for (const rec of building) {
    const id = rec.id;
    // Its claims for this attempt, wherever they are: the scheduler's answer may be lost (it timed
    // out, or failed after claiming; $.scheduled then holds nothing, or ClaimAlternate's
    // exhausted answer), and BuildInstances may have recorded one.
    const released = await revertClaims(id, { above: n - 1, upTo: n });
    if (released.length && !req.scheduled?.selections.length)
      log.warn("conductor.unanswered_claims_released", { request_id: req.request_id, attempt: n, released });
    const message = `Build of instance ${id} aborted: ${error}`;
    const details = `${message}: ${cause}`;
    const done = await setError(
      { id, request_id: req.request_id },
      rec.attempt,
      fault(message, details),
      event(EVENT_SCHEDULE, n, "Error", rec.attempt === n ? rec.host : null, details, new Date()),
    );
    await freePorts(id, done);
    metrics.buildsError("BuildAborted");
    log.error("conductor.build_failed", {
      request_id: req.request_id,
      instance_uuid: id,
      attempt: n,
      error: err,
    });
  }
}
