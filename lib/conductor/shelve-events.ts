// compute-events for shelve, shelve offload and unshelve: the hosts' shelve_done and
// unshelve_done reports applied with fenced writes (lib/instances/shelve.ts), claims given back
// once a guest is gone, and an unshelve that a host could not spawn sent to its alternates, as a
// build's reschedule is.

import { sendBuildRequest } from "../aws/send.js";
import { fault, rescheduledText, withoutHosts } from "../instances/faults.js";
import { rebindPorts } from "../instances/networking.js";
import { getInstance } from "../instances/queries.js";
import { conductorRequest } from "../instances/request-spec.js";
import {
  EVENT_SHELVE,
  EVENT_SHELVE_OFFLOAD,
  EVENT_START,
  EVENT_UNSHELVE,
  shelveDone,
  unshelveAttemptFailed,
  unshelved,
} from "../instances/shelve.js";
import { deleteServerImage, imageUploaded } from "../instances/snapshot.js";
import { event } from "../instances/transition.js";
import type { Logger } from "../log.js";
import type { ComputeMessage } from "../messages/compute.js";
import type { ShelveDoneReport, UnshelveDoneReport } from "../messages/reports.js";
import { release } from "../placement/claims.js";

type CastToHost = (host: string, msg: ComputeMessage, log: Logger) => Promise<void>;

/** The host's event of each op (Nova's compute manager method of it). */
const OP_EVENT = { shelve: EVENT_SHELVE, offload: EVENT_SHELVE_OFFLOAD, start: EVENT_START } as const;

/**
 * A shelve, offload or start done on its host. A guest gone from its host gives its claim back
 * first (Nova's order: destroy, then the allocation), fenced by the report's attempt so that a
 * later placement's claim is never touched; then the record, fenced by host, attempt and state.
 */
export async function applyShelveReport(r: ShelveDoneReport, log: Logger): Promise<void> {
  const id = r.instance_uuid;
  const slog = log.child({ request_id: r.request_id, instance_uuid: id, op: r.op });
  if (r.ok && r.offloaded) await release(r.host, id, r.attempt);
  const started = new Date(r.started_at);
  const finished = new Date(r.sent_at);
  const ev = event(
    OP_EVENT[r.op],
    r.attempt,
    r.ok ? "Success" : "Error",
    r.host,
    r.details,
    started,
    finished,
  );
  const f = r.ok
    ? null
    : fault(`${r.op === "start" ? "Unshelve" : "Shelve"} of instance ${id} failed`, r.details ?? "");
  const done = await shelveDone(
    { id, request_id: r.request_id },
    {
      op: r.op,
      host: r.host,
      attempt: r.attempt,
      ok: r.ok,
      offloaded: r.offloaded,
      power_state: r.power_state,
      at: r.sent_at,
    },
    r.image_id,
    f,
    ev,
  );
  // offloaded: the ports stay the server's, bound to no host until it is unshelved
  if (done && r.ok && r.offloaded) await rebindPorts(done);
  if (r.op === "shelve" && r.image_id) {
    // the snapshot the shelve took: active with its data's figures, or gone when it failed
    if (r.ok) await imageUploaded(r.image_id, r.image, r.sent_at);
    else await deleteServerImage(r.image_id, { unlessActive: true });
  }
  if (done && r.op === "start" && r.ok) {
    // Nova's start of a SHELVED server deletes the shelve's snapshot (the cast named it)
    if (r.image_id) await deleteServerImage(r.image_id);
  }
  slog.info("compute_events.shelve_done", {
    ok: r.ok,
    offloaded: r.offloaded,
    applied: Boolean(done),
    vm_state: done?.vm_state,
  });
}

/**
 * An unshelve spawned (or not) on the host the conductor chose. Fenced by the unshelve's uuid,
 * its attempt and the host: a late or zombie success gives back what it took (its claim, and
 * the guest it spawned), a failure is recorded once and sent to the alternates.
 */
export async function applyUnshelveReport(
  r: UnshelveDoneReport,
  log: Logger,
  castToHost: CastToHost,
): Promise<void> {
  const { instance_uuid: id, attempt: n, host } = r;
  const ulog = log.child({ request_id: r.request_id, instance_uuid: id, attempt: n });
  const rec = await getInstance(id);
  const ours = rec?.unshelve?.uuid === r.unshelve_uuid ? rec : undefined;
  const ref = { id, request_id: r.request_id };
  const started = new Date(r.started_at);
  const finished = new Date(r.sent_at);
  if (r.ok) {
    const image = ours?.shelve?.image_id;
    const done = ours
      ? await unshelved(
          ref,
          r.unshelve_uuid,
          host,
          n,
          r.power_state,
          r.sent_at,
          event(EVENT_UNSHELVE, n, "Success", host, null, started, finished),
        )
      : undefined;
    if (done) {
      await rebindPorts(done);
      // Nova's _unshelve_instance deletes the shelve's snapshot once the server runs
      if (image) await deleteServerImage(image);
      ulog.info("compute_events.unshelved", { host });
      return;
    }
    const now = await getInstance(id);
    // a duplicate: ACTIVE here at this attempt already
    if (now && !now.deleted && now.host === host && now.attempt === n && now.vm_state !== "shelved_offloaded")
      return;
    // deleted, or the unshelve moved on: what this attempt took goes
    await release(host, id, n);
    await castToHost(
      host,
      {
        version: 1,
        kind: "terminate_instance",
        request_id: r.request_id,
        instance_uuid: id,
        host,
        attempt: n,
      },
      ulog,
    );
    ulog.info("compute_events.unshelve_fenced", { current_host: now?.host, current_attempt: now?.attempt });
    return;
  }
  const details = r.details ?? "unshelve failed";
  const failed = ours
    ? await unshelveAttemptFailed(
        ref,
        r.unshelve_uuid,
        host,
        n,
        event(EVENT_UNSHELVE, n, "Error", host, details, started, finished),
      )
    : undefined;
  const now = failed ?? (await getInstance(id));
  // given back in any case (idempotent, fenced by the attempt)
  await release(host, id, n);
  const recorded =
    now?.unshelve?.uuid === r.unshelve_uuid &&
    now.task_state === "unshelving" &&
    now.attempt === n &&
    now.host === host;
  if (!now || !recorded || !now.unshelve) {
    ulog.info("compute_events.unshelve_failure_fenced", { current_attempt: now?.attempt });
    return;
  }
  // the reschedule (sent again by a repeated report until the conductor places the next attempt)
  const ctx = now.unshelve;
  const tried = [...new Set([...ctx.tried.filter((h) => h !== host), host])];
  const alternates = (now.alternates ?? []).filter((a) => a.host !== host);
  await sendBuildRequest({
    ...conductorRequest(now, ctx.request_id, {
      num_attempts: n - ctx.base_attempt + 1,
      hosts: tried,
      last_fault: rescheduledText(id, withoutHosts(details, [...tried, ...alternates.map((a) => a.host)])),
    }),
    alternates,
    unshelve: { unshelve_uuid: ctx.uuid, base_attempt: ctx.base_attempt },
  });
  ulog.info("compute_events.unshelve_rescheduled", {
    next_attempt: n + 1,
    alternates: alternates.map((a) => a.host),
  });
}
