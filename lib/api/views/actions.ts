// Nova's os-instance-actions views.
import type { ActionEvent, InstanceAction, InstanceRecord } from "../../instances/types.js";
import { type ApiVersion, viewFields } from "../microversion.js";
import { hostId, isoMicro } from "./format.js";

/** Nova sets an action's message to "Error" once any of its events failed. */
export function actionMessage(a: InstanceAction): string | null {
  return Object.values(a.events ?? {}).some((e) => e.result === "Error") ? "Error" : a.message;
}

export function lastUpdate(a: InstanceAction): string {
  let last = a.start_time;
  for (const e of Object.values(a.events ?? {})) {
    const t = e.finish_time ?? e.start_time;
    if (t > last) last = t;
  }
  return last;
}

export interface ActionViewContext {
  instanceUuid: string;
  projectId: string;
  isAdmin: boolean;
}

/** Nova's action (instance_actions.py ACTION_KEYS); updated_at from 2.58. */
const summaryView = viewFields<InstanceAction, ActionViewContext>([
  {
    fields: (a, c) => ({
      action: a.action,
      instance_uuid: c.instanceUuid,
      request_id: a.request_id,
      user_id: a.user_id,
      project_id: a.project_id,
      start_time: isoMicro(a.start_time),
      message: actionMessage(a),
    }),
  },
  { min: "2.58", fields: (a) => ({ updated_at: isoMicro(lastUpdate(a)) }) },
]);

/** Oldest first (then by name), so a build reads top to bottom, reschedules included. */
export function sortedEvents(a: InstanceAction): ActionEvent[] {
  return Object.values(a.events ?? {}).sort(
    (x, y) =>
      x.start_time.localeCompare(y.start_time) || x.attempt - y.attempt || x.event.localeCompare(y.event),
  );
}

/**
 * Nova's event (EVENT_KEYS): traceback for admins; hostId from 2.62. Nova shows an admin the host
 * from 2.62 and everyone the details from 2.84; here the host and the details (which name hosts,
 * the reasons a build was rescheduled) are an admin's at every version and never a member's.
 */
const eventView = viewFields<ActionEvent, ActionViewContext>([
  {
    fields: (e, c) => ({
      event: e.event,
      start_time: isoMicro(e.start_time),
      finish_time: isoMicro(e.finish_time),
      result: e.result,
      ...(c.isAdmin
        ? { host: e.host ?? "", traceback: e.result === "Error" ? e.details : null, details: e.details }
        : {}),
    }),
  },
  { min: "2.62", fields: (e, c) => ({ hostId: hostId(c.projectId, e.host) }) },
]);

/** Events: an admin's at every version, everyone's from 2.51 (Nova's events policy). */
const showsEvents = (c: ActionViewContext, v: ApiVersion) => c.isAdmin || v.atLeast("2.51");

export function actionDetailView(
  a: InstanceAction,
  rec: Pick<InstanceRecord, "id" | "project_id">,
  isAdmin: boolean,
  v: ApiVersion,
): Record<string, unknown> {
  const c = { instanceUuid: rec.id, projectId: rec.project_id, isAdmin };
  const view = summaryView(a, c, v);
  if (showsEvents(c, v)) view.events = sortedEvents(a).map((e) => eventView(e, c, v));
  return view;
}

/** Newest first, as Nova lists them. */
export function sortedActions(rec: Pick<InstanceRecord, "actions">): InstanceAction[] {
  return Object.values(rec.actions ?? {}).sort(
    (x, y) => y.start_time.localeCompare(x.start_time) || y.request_id.localeCompare(x.request_id),
  );
}

export function actionsListView(
  rec: Pick<InstanceRecord, "id" | "project_id">,
  actions: InstanceAction[],
  isAdmin: boolean,
  v: ApiVersion,
): Record<string, unknown>[] {
  const c = { instanceUuid: rec.id, projectId: rec.project_id, isAdmin };
  return actions.map((a) => summaryView(a, c, v));
}
