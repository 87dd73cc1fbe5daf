// The conductor's steps (Nova's ComputeTaskManager), each called by the state machine and each
// safe to run twice: every write is a fenced, idempotent transition.
import { EVENT_SCHEDULE, event, getInstance, placeInstance, setError } from "../instances/repo.js";
import type { Fault } from "../instances/types.js";
import { log } from "../log.js";
import { metrics } from "../metrics.js";
import { claim, findClaim, release } from "../placement/claims.js";
import { getHost } from "../placement/hosts.js";
import { computeMessageBody } from "./queues.js";
import {
  AlternatesExhausted,
  type Cast,
  type ConductorInput,
  type InstanceSelection,
  NO_VALID_HOST_MESSAGE,
  type Scheduled,
  type StatesError,
} from "./types.js";

function fault(message: string, details: string, code = 500): Fault {
  return { code, message, details, created: new Date().toISOString() };
}

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
 * Past max_attempts: ERROR with Nova's MaxRetriesExceeded text. Claims were released by whoever
 * failed the last attempt.
 */
export async function maxRetriesExceeded(req: ConductorInput): Promise<void> {
  const n = req.retry.num_attempts;
  const last = n - 1;
  for (const id of req.instance_uuids) {
    const reason =
      `Exceeded max scheduling attempts ${req.config.max_attempts} for instance ${id}. ` +
      `Last exception: ${req.retry.last_fault ?? "unknown"}`;
    const message = `Exceeded maximum number of retries. ${reason}`;
    const details = `hosts tried: ${req.retry.hosts.join(", ") || "none"}`;
    const done = await setError(
      { id, request_id: req.request_id },
      last,
      fault(message, details),
      event(EVENT_SCHEDULE, n, "Error", null, `${message} (${details})`, new Date()),
    );
    if (done) metrics.buildsError("MaxRetriesExceeded");
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
export async function noValidHost(req: ConductorInput, err: StatesError): Promise<void> {
  const n = req.retry.num_attempts;
  const { details } = causeOf(err);
  for (const id of req.instance_uuids) {
    await setError(
      { id, request_id: req.request_id },
      n - 1,
      fault(NO_VALID_HOST_MESSAGE, details),
      event(EVENT_SCHEDULE, n, "Error", null, `NoValidHost: ${details}`, new Date()),
    );
    metrics.buildsError("NoValidHost");
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
 * conductor does. Throws AlternatesExhausted when none can be claimed.
 */
export async function claimAlternate(req: ConductorInput): Promise<Scheduled> {
  const n = req.retry.num_attempts;
  const id = req.instance_uuids[0]!;
  const rec = await getInstance(id);
  if (!rec || rec.deleted || rec.vm_state !== "building" || rec.attempt > n) return { selections: [] };
  const alternates = req.alternates ?? [];
  if (rec.attempt === n && rec.host) {
    // A re-run of this step: the alternate was claimed and recorded already.
    const i = alternates.findIndex((a) => a.host === rec.host);
    if (i >= 0)
      return {
        selections: [{ instance_uuid: id, selected: alternates[i]!, alternates: alternates.slice(i + 1) }],
      };
  }
  // A re-run after an alternate was claimed but before the answer reached the state machine:
  // keep that claim (an earlier alternate may fit by now, and claiming it would count twice).
  const held = await findClaim(
    alternates.map((a) => a.host),
    id,
    n,
  );
  const start = held === undefined ? 0 : alternates.findIndex((a) => a.host === held);
  for (let i = start; i < alternates.length; i++) {
    const alt = alternates[i]!;
    if (req.retry.hosts.includes(alt.host)) continue;
    const r = await claim(alt.host, id, alt.resources, n);
    log.info("conductor.claim_alternate", {
      request_id: req.request_id,
      instance_uuid: id,
      attempt: n,
      host: alt.host,
      claimed: r.claimed,
      reason: r.claimed ? undefined : r.reason,
    });
    if (r.claimed)
      return { selections: [{ instance_uuid: id, selected: alt, alternates: alternates.slice(i + 1) }] };
  }
  throw new AlternatesExhausted(`no alternate could be claimed for instance ${id} (attempt ${n})`);
}

/**
 * Record each instance's placement (host, node and the attempt, the fencing token) and produce
 * one cast per instance for the Map state to send to that host's queue. An instance deleted (or
 * moved by a concurrent run) in the meantime gets its claim back instead of a build.
 */
export async function buildInstances(req: ConductorInput, scheduled: Scheduled): Promise<{ casts: Cast[] }> {
  const n = req.retry.num_attempts;
  const queueUrls = new Map<string, string>();
  const casts: Cast[] = [];
  for (const sel of scheduled.selections) {
    const cast = await buildOne(req, n, sel, queueUrls);
    if (cast) casts.push(cast);
  }
  return { casts };
}

async function buildOne(
  req: ConductorInput,
  n: number,
  sel: InstanceSelection,
  queueUrls: Map<string, string>,
): Promise<Cast | undefined> {
  const id = sel.instance_uuid;
  const { host, nodename, availability_zone } = sel.selected;
  const placed = await placeInstance(
    { id, request_id: req.request_id },
    n,
    host,
    nodename,
    availability_zone,
    event(EVENT_SCHEDULE, n, "Success", host, `scheduled to ${host} (attempt ${n})`, new Date()),
  );
  const fields = { request_id: req.request_id, instance_uuid: id, attempt: n, host };
  if (placed.kind === "gone") {
    await release(host, id, n);
    log.info("conductor.placement_abandoned", {
      ...fields,
      reason: placed.record?.deleted ? "deleted" : "fenced",
    });
    return undefined;
  }
  let queueUrl = queueUrls.get(host);
  if (!queueUrl) {
    queueUrl = (await getHost(host))?.queue_url;
    if (!queueUrl) throw new Error(`host ${host} has no queue_url; cannot cast build of ${id}`);
    queueUrls.set(host, queueUrl);
  }
  log.info("conductor.cast_build", { ...fields, alternates: sel.alternates.map((a) => a.host) });
  return {
    queue_url: queueUrl,
    message_body: computeMessageBody({
      version: 1,
      kind: "build_and_run_instance",
      request_id: req.request_id,
      reservation_id: req.reservation_id,
      project_id: req.project_id,
      user_id: req.user_id,
      instance_uuid: id,
      host,
      node: nodename,
      attempt: n,
      resources: sel.selected.resources,
      request_spec: { ...req.request_spec, num_instances: 1 },
      retry: req.retry,
      alternates: sel.alternates,
    }),
  };
}

/**
 * Anything unexpected in the workflow: release whatever this attempt claimed and put the
 * instances in ERROR (Nova's BuildAbortException), rather than leave them in BUILD.
 */
export async function buildFailed(req: ConductorInput, err: StatesError | undefined): Promise<void> {
  const n = req.retry.num_attempts;
  const { message } = causeOf(err);
  // Claims the scheduler made that BuildInstances may not have recorded yet.
  for (const sel of req.scheduled?.selections ?? []) await release(sel.selected.host, sel.instance_uuid, n);
  for (const id of req.instance_uuids) {
    const rec = await getInstance(id);
    if (!rec || rec.deleted || rec.vm_state !== "building") continue;
    if (rec.attempt === n && rec.host) await release(rec.host, id, n);
    const text = `Build of instance ${id} aborted: ${err?.Error ?? "error"}: ${message}`;
    await setError(
      { id, request_id: req.request_id },
      rec.attempt,
      fault(text, text),
      event(EVENT_SCHEDULE, n, "Error", rec.attempt === n ? rec.host : null, text, new Date()),
    );
    metrics.buildsError("BuildAborted");
    log.error("conductor.build_failed", {
      request_id: req.request_id,
      instance_uuid: id,
      attempt: n,
      error: err,
    });
  }
}
