// Nova's os-instance-actions views.
import type { ActionEvent, InstanceAction, InstanceRecord } from "../../instances/types.js";
import { hostId, isoMicro } from "./format.js";

/** Nova sets an action's message to "Error" once any of its events failed. */
export function actionMessage(a: InstanceAction): string | null {
  return Object.values(a.events ?? {}).some((e) => e.result === "Error") ? "Error" : a.message;
}

function lastUpdate(a: InstanceAction): string {
  let last = a.start_time;
  for (const e of Object.values(a.events ?? {})) {
    const t = e.finish_time ?? e.start_time;
    if (t > last) last = t;
  }
  return last;
}

export function actionSummaryView(a: InstanceAction, instanceUuid: string): Record<string, unknown> {
  return {
    action: a.action,
    instance_uuid: instanceUuid,
    request_id: a.request_id,
    user_id: a.user_id,
    project_id: a.project_id,
    start_time: isoMicro(a.start_time),
    message: actionMessage(a),
    updated_at: isoMicro(lastUpdate(a)),
  };
}

/** Oldest first (then by name), so a build reads top to bottom, reschedules included. */
export function sortedEvents(a: InstanceAction): ActionEvent[] {
  return Object.values(a.events ?? {}).sort(
    (x, y) =>
      x.start_time.localeCompare(y.start_time) || x.attempt - y.attempt || x.event.localeCompare(y.event),
  );
}

export function eventView(e: ActionEvent, projectId: string, isAdmin: boolean): Record<string, unknown> {
  const v: Record<string, unknown> = {
    event: e.event,
    start_time: isoMicro(e.start_time),
    finish_time: isoMicro(e.finish_time),
    result: e.result,
    hostId: hostId(projectId, e.host),
  };
  if (isAdmin) {
    v.host = e.host ?? "";
    v.traceback = e.result === "Error" ? e.details : null;
    v.details = e.details;
  }
  return v;
}

export function actionDetailView(
  a: InstanceAction,
  rec: Pick<InstanceRecord, "id" | "project_id">,
  isAdmin: boolean,
): Record<string, unknown> {
  return {
    ...actionSummaryView(a, rec.id),
    events: sortedEvents(a).map((e) => eventView(e, rec.project_id, isAdmin)),
  };
}

/** Newest first, as Nova lists them. */
export function actionsListView(rec: Pick<InstanceRecord, "id" | "actions">): Record<string, unknown>[] {
  return Object.values(rec.actions ?? {})
    .sort((x, y) => y.start_time.localeCompare(x.start_time) || y.request_id.localeCompare(x.request_id))
    .map((a) => actionSummaryView(a, rec.id));
}
