// Nova's power actions and power-state sync on the instance record: the API begins an action
// (a task state and an instance action, in one conditional write), compute-events applies what
// the host reports (the action's event, the new vm_state and power_state). Every write is
// conditioned on the state it expects, so a duplicated or late report changes nothing.
import { randomUUID } from "node:crypto";
import { inState } from "../aws/dynamo-conditions.js";
import type { ActionDoneReport, ActionStartedReport } from "../messages/reports.js";
import { eventKey, storedEvent } from "./codec.js";
import { readHostAnswer, storeHostAnswer } from "./host-answers.js";
import { getInstance } from "./queries.js";
import { beginAction, endAction, eventFinished, eventStarted, transition } from "./transition.js";
import type { ActionName, InstanceAction, InstanceRecord, TaskState, VmState } from "./types.js";

export type PowerActionName =
  | "stop"
  | "start"
  | "reboot"
  | "pause"
  | "unpause"
  | "suspend"
  | "resume"
  // Nova's soft_delete_instance and restore_instance: the guest powered off (hard, as Nova's
  // fallback when the driver has no soft_delete) and on again (lib/instances/soft-delete.ts)
  | "soft_delete"
  | "restore";
export type RebootType = "SOFT" | "HARD";

/** Nova's event names (nova/compute/manager.py's wrap_instance_event). */
export const POWER_EVENTS: Record<PowerActionName, string> = {
  stop: "compute_stop_instance",
  start: "compute_start_instance",
  reboot: "compute_reboot_instance",
  pause: "compute_pause_instance",
  unpause: "compute_unpause_instance",
  suspend: "compute_suspend_instance",
  resume: "compute_resume_instance",
  soft_delete: "compute_soft_delete_instance",
  restore: "compute_restore_instance",
};

/** The instance action each is recorded under (a soft delete is Nova's delete action). */
export const POWER_ACTION_NAMES: Record<PowerActionName, ActionName> = {
  stop: "stop",
  start: "start",
  reboot: "reboot",
  pause: "pause",
  unpause: "unpause",
  suspend: "suspend",
  resume: "resume",
  soft_delete: "delete",
  restore: "restore",
};

/**
 * The actions whose cast carries the guest: a host whose driver lost it (a guest gone with a host
 * reboot) creates it again, as Nova's hard reboot and start recreate the domain from the database.
 */
export function carriesGuest(action: PowerActionName): boolean {
  return action === "start" || action === "reboot" || action === "resume" || action === "restore";
}

/** The task state an action sets when the API accepts it (Nova's compute/api.py). */
export function taskStateOf(action: PowerActionName, rebootType?: RebootType): Exclude<TaskState, null> {
  if (action === "reboot") return rebootType === "HARD" ? "rebooting_hard" : "rebooting";
  return ACTION_TASKS[action][0]!;
}

/** The task states an action may be in while the host works on it. */
const ACTION_TASKS: Record<PowerActionName, TaskState[]> = {
  stop: ["powering-off"],
  start: ["powering-on"],
  reboot: ["rebooting", "reboot_started", "rebooting_hard", "reboot_started_hard"],
  pause: ["pausing"],
  unpause: ["unpausing"],
  suspend: ["suspending"],
  resume: ["resuming"],
  soft_delete: ["soft-deleting"],
  restore: ["restoring"],
};

/** The task states `action` may be in while the host works on it. */
export function tasksOf(action: PowerActionName): readonly TaskState[] {
  return ACTION_TASKS[action];
}

/** The vm_state each action ends in when the host did it (Nova's compute manager). */
const DONE_VM_STATE: Record<PowerActionName, VmState> = {
  stop: "stopped",
  start: "active",
  reboot: "active",
  pause: "paused",
  unpause: "active",
  suspend: "suspended",
  resume: "active",
  soft_delete: "soft-delete",
  restore: "active",
};

/** The vm_state `action` ends in when the host did it. */
export function doneVmState(action: PowerActionName): VmState {
  return DONE_VM_STATE[action];
}

/** The task state a host's lost power action was in → the action to send again (compute-events' reconcile). */
export function actionOfTask(task: TaskState): PowerActionName {
  for (const [action, tasks] of Object.entries(ACTION_TASKS))
    if (tasks.includes(task)) return action as PowerActionName;
  return "reboot";
}

/**
 * API: accept a power action: the task state and Nova's instance action in one write,
 * conditioned on the state the API checked (vm_state and task_state as read), so two concurrent
 * requests give one 202 and one 409. Undefined when the state changed meanwhile.
 */
export async function beginPowerAction(
  rec: InstanceRecord,
  action: PowerActionName,
  rebootType: RebootType | undefined,
  a: InstanceAction,
): Promise<InstanceRecord | undefined> {
  return beginAction(rec, taskStateOf(action, rebootType), a);
}

/**
 * compute-events: the host began the action. A reboot's task state moves on (Nova's
 * reboot_started, reboot_started_hard) and the action's event starts, naming the host. False
 * when fenced (deleted, moved, or the action is over).
 */
export async function actionStarted(r: ActionStartedReport): Promise<boolean> {
  const values: Record<string, unknown> = { ":false": false, ":h": r.host, ":now": r.sent_at };
  const set = ["updated_at = :now", "actions.#rid.events.#ev = :ev"];
  if (r.action === "reboot") {
    set.push("task_state = :next");
    values[":next"] = r.reboot_type === "HARD" ? "reboot_started_hard" : "reboot_started";
  }
  const rec = await getInstance(r.instance_uuid);
  if (!rec) return false;
  const ev = eventStarted(POWER_EVENTS[r.action], rec.attempt, r);
  values[":ev"] = storedEvent(ev);
  const updated = await transition(r.instance_uuid, {
    set,
    condition: `deleted = :false AND host = :h AND attribute_exists(actions.#rid) AND ${inState(values, "task_state", ACTION_TASKS[r.action], "t")}`,
    names: { "#rid": r.request_id, "#ev": eventKey(ev.event, ev.attempt) },
    values,
  });
  return updated !== undefined;
}

/**
 * compute-events: the host finished the action. ok: stop → stopped, start and reboot → active.
 * Not ok: Nova's reverts_task_state (the task state goes back to none; a failed reboot leaves
 * the instance in ERROR, as Nova's reboot_instance does). The event finishes with the result.
 */
export async function finishPowerAction(r: ActionDoneReport): Promise<"applied" | "duplicate" | "fenced"> {
  const rec = await getInstance(r.instance_uuid);
  if (!rec || rec.deleted || rec.host !== r.host) return "fenced";
  const ev = eventFinished(POWER_EVENTS[r.action], rec.attempt, r);
  // pause, unpause, suspend and resume revert only their task state on failure (reverts_task_state)
  const vm = r.ok ? DONE_VM_STATE[r.action] : r.action === "reboot" ? "error" : undefined;
  const updated = await endAction(r, ev, ACTION_TASKS[r.action], vm);
  if (updated) return "applied";
  const now = await getInstance(r.instance_uuid);
  const done = now?.actions[r.request_id]?.events[`${ev.event}#${ev.attempt}`];
  return done?.finish_time ? "duplicate" : "fenced";
}

const POWER = { NOSTATE: 0, RUNNING: 1, PAUSED: 3, SHUTDOWN: 4, CRASHED: 6, SUSPENDED: 7 } as const;

/**
 * What Nova's _sync_instance_power_state does for a vm_state and the guest's power state, beyond
 * recording the power state: "stop" marks the instance SHUTOFF (its stop API), "stop-guest" has
 * the host power the guest off as well (force_stop of a stopped instance whose guest is not off;
 * the stop of an active one whose guest is suspended). A guest missing from its host (NOSTATE,
 * a host that lost it) stops an active or paused instance here, which Nova ignores, so that
 * start recreates it. A suspended instance keeps its state whatever the guest says (Nova passes).
 */
export function syncOutcome(vm: VmState, power: number): "none" | "stop" | "stop-guest" {
  const off = power === POWER.SHUTDOWN || power === POWER.CRASHED || power === POWER.NOSTATE;
  if (vm === "active") {
    if (off) return "stop";
    // Nova: "Instance is suspended unexpectedly. Calling the stop API."; paused unexpectedly: ignored
    return power === POWER.SUSPENDED ? "stop-guest" : "none";
  }
  if (vm === "paused") return off ? "stop" : "none";
  if (vm === "stopped") return off ? "none" : "stop-guest";
  return "none";
}

/** Why the sync stopped an instance, as its stop action says. */
function syncStopMessage(vm: VmState, power: number): string {
  if (power === POWER.SUSPENDED) return "The instance's guest was suspended unexpectedly (power state sync)";
  if (vm === "paused") return "The paused instance's guest shut down by itself (power state sync)";
  return "The instance's guest is not running on its host (power state sync)";
}

/**
 * compute-events: Nova's _sync_instance_power_state for one guest the host reported. Ignored for
 * an instance deleted, on another host, in a task (the task's own end will say), still
 * building, or when the report is older than the last one applied. Then as syncOutcome says: an
 * active or paused instance whose guest is off goes SHUTOFF (Nova stops it); a stopped one whose
 * guest is not off, or an active one whose guest is suspended, is stopped by the host too
 * ("stop-guest").
 */
export async function syncPowerState(
  instanceUuid: string,
  host: string,
  powerState: number,
  observedAt: string,
): Promise<"updated" | "ignored" | "stop-guest"> {
  const rec = await getInstance(instanceUuid);
  if (!rec || rec.deleted || rec.host !== host || rec.task_state !== null) return "ignored";
  if (rec.vm_state === "building") return "ignored";
  if (rec.power_state_at && observedAt <= rec.power_state_at) return "ignored";
  const outcome = syncOutcome(rec.vm_state, powerState);
  const values: Record<string, unknown> = {
    ":false": false,
    ":h": host,
    ":null": null,
    ":vm": rec.vm_state,
    ":power": powerState,
    ":at": observedAt,
  };
  const set = ["power_state = :power", "power_state_at = :at"];
  const names: Record<string, string> = {};
  if (outcome === "stop" || (outcome === "stop-guest" && rec.vm_state !== "stopped")) {
    // Nova's sync calls the stop API: the instance is SHUTOFF, with a stop action saying why.
    const requestId = `req-${randomUUID()}`;
    set.push("vm_state = :stopped", "updated_at = :at", "actions.#rid = :action");
    values[":stopped"] = "stopped";
    names["#rid"] = requestId;
    values[":action"] = {
      action: "stop",
      request_id: requestId,
      user_id: rec.user_id,
      project_id: rec.project_id,
      start_time: observedAt,
      message: syncStopMessage(rec.vm_state, powerState),
      events: {},
    } satisfies InstanceAction;
  }
  const updated = await transition(instanceUuid, {
    set,
    condition:
      "deleted = :false AND host = :h AND task_state = :null AND vm_state = :vm AND " +
      "(attribute_not_exists(power_state_at) OR power_state_at < :at)",
    names,
    values,
  });
  if (!updated) return "ignored";
  return outcome === "stop-guest" ? "stop-guest" : "updated";
}

/** The host's answer to os-getConsoleOutput, kept for the API (host-answers.ts). */
export async function storeConsoleOutput(
  instanceUuid: string,
  requestId: string,
  output: string,
  error: string | null,
): Promise<void> {
  await storeHostAnswer("console", instanceUuid, requestId, { output, error });
}

export async function readConsoleOutput(
  instanceUuid: string,
  requestId: string,
): Promise<{ output: string; error: string | null } | undefined> {
  const a = await readHostAnswer("console", instanceUuid, requestId);
  return a ? { output: String(a.output ?? ""), error: (a.error as string | null) ?? null } : undefined;
}
