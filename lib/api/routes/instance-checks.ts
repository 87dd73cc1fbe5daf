// Nova's compute/api.py guards on a server action, in one place: check_instance_lock,
// check_instance_state (the vm_states and task_states each action allows, below as a table keyed
// by the compute API method that carries the decorator), check_instance_host, and the 409 after a
// refused conditional write. The API action a 409 names is the route's (Nova's
// raise_http_conflict_for_instance_invalid_state takes it from the API layer), so a rule may serve
// several API actions (resize serves resize and migrate). The texts are Nova's, byte for byte.
import { SHELVE_FROM } from "../../instances/shelve.js";
import type { InstanceRecord, TaskState, VmState } from "../../instances/types.js";
import type { HostRecord } from "../../placement/types.js";
import type { AuthContext } from "../auth.js";
import type { ApiDeps } from "../deps.js";
import { conflict, instanceNotFound } from "../errors.js";
import type { RouteCall } from "../request.js";

/** One action's guard: Nova's decorators on its compute API method. */
export interface InstanceCheck {
  /** check_instance_lock: a locked server refuses its owner, not an admin. */
  readonly lock: boolean;
  /** check_instance_state vm_state; absent: any (Nova's vm_state=None). */
  readonly vm_state?: readonly VmState[];
  /** check_instance_state task_state; absent: any (Nova's task_state=None). */
  readonly task_state?: readonly TaskState[];
}

/** Nova's default task_state=(None,): no task under way. */
const IDLE = [null] as const;

/** Nova's task_states.ALLOW_REBOOT: a hard reboot may take over these. */
const ALLOW_REBOOT: readonly TaskState[] = [
  null,
  "rebooting",
  "reboot_started",
  "rebooting_hard",
  "pausing",
  "unpausing",
  "suspending",
  "resuming",
];

/** Each compute API method's guard (nova/compute/api.py; the states this system has). */
export const INSTANCE_CHECKS = {
  // servers.py update and delete: the lock only
  update: { lock: true },
  delete: { lock: true },
  // deferred_delete.py: restore needs SOFT_DELETED and no task; force_delete any state, any task
  restore: { lock: true, vm_state: ["soft-delete"], task_state: IDLE },
  force_delete: { lock: true },
  stop: { lock: true, vm_state: ["active", "error"], task_state: IDLE },
  start: { lock: true, vm_state: ["stopped"], task_state: IDLE },
  // Nova's reboot narrows to _soft_reboot (ALLOW_SOFT_REBOOT) or _hard_reboot (ALLOW_HARD_REBOOT)
  soft_reboot: { lock: true, vm_state: ["active"], task_state: IDLE },
  hard_reboot: {
    lock: true,
    vm_state: ["active", "stopped", "paused", "suspended", "error"],
    task_state: ALLOW_REBOOT,
  },
  pause: { lock: true, vm_state: ["active"], task_state: IDLE },
  unpause: { lock: true, vm_state: ["paused"], task_state: IDLE },
  suspend: { lock: true, vm_state: ["active"], task_state: IDLE },
  resume: { lock: true, vm_state: ["suspended"], task_state: IDLE },
  // resize is also the cold migration (Nova's resize without a flavor)
  resize: { lock: true, vm_state: ["active", "stopped"], task_state: IDLE },
  confirm_resize: { lock: true, vm_state: ["resized"], task_state: IDLE },
  revert_resize: { lock: true, vm_state: ["resized"], task_state: IDLE },
  // evacuate has no lock check in Nova: the server's host is down, an admin moves it
  evacuate: { lock: false, vm_state: ["active", "stopped", "error"], task_state: IDLE },
  live_migrate: { lock: true, vm_state: ["active", "paused"], task_state: IDLE },
  live_migrate_force_complete: { lock: true, vm_state: ["active"], task_state: ["migrating"] },
  live_migrate_abort: { lock: true, task_state: ["migrating"] },
  rebuild: { lock: true, vm_state: ["active", "stopped", "error"], task_state: IDLE },
  // snapshot and backup: no lock check (Nova's NOTE: a locked server may still be snapshotted)
  snapshot: { lock: false, vm_state: ["active", "stopped", "paused", "suspended"], task_state: IDLE },
  backup: { lock: false, vm_state: ["active", "stopped", "paused", "suspended"], task_state: IDLE },
  shelve: { lock: true, vm_state: SHELVE_FROM, task_state: IDLE },
  shelve_offload: { lock: true, vm_state: ["shelved"], task_state: IDLE },
  unshelve: { lock: true, vm_state: ["shelved", "shelved_offloaded"], task_state: IDLE },
  // attach_interface and detach_interface: a hot-plug, or a stopped guest's definition
  attach_interface: { lock: true, vm_state: ["active", "paused", "stopped"], task_state: IDLE },
  detach_interface: { lock: true, vm_state: ["active", "paused", "stopped"], task_state: IDLE },
  // vm_states.ALLOW_TRIGGER_CRASH_DUMP (rescued: not a state this system has)
  trigger_crash_dump: { lock: true, vm_state: ["active", "paused", "resized", "error"], task_state: IDLE },
  // server_metadata.py: a change needs an active server, whatever its task
  update_instance_metadata: { lock: true, vm_state: ["active"] },
  delete_instance_metadata: { lock: true, vm_state: ["active"] },
  // server_tags.py _check_instance_in_valid_state: past its build, whatever its task
  server_tags: { lock: false, vm_state: ["active", "error"] },
} as const satisfies Record<string, InstanceCheck>;

/** A compute API method with a guard in INSTANCE_CHECKS. */
export type NovaAction = keyof typeof INSTANCE_CHECKS;

const guardOf = (action: NovaAction): InstanceCheck => INSTANCE_CHECKS[action];

/** What a server's state is checked as: its vm_state before its task_state, as Nova's decorator. */
type Attr = "vm_state" | "task_state" | "power state";

/** Nova's InstanceInvalidState, as the API words it (common.raise_http_conflict_for_instance_invalid_state). */
export const invalidState = (id: string, apiAction: string, attr: Attr, state: string | null) =>
  conflict(`Cannot '${apiAction}' instance ${id} while it is in ${attr} ${state ?? "None"}`);

/** Nova's InstanceNotReady; `why` says what it waited for, when it waited. */
export const instanceNotReady = (id: string, why?: string) =>
  conflict(why ? `Instance ${id} is not ready: ${why}` : `Instance ${id} is not ready`);

/** Nova's check_instance_lock: a locked server refuses its owner, not an admin. */
export function checkLock(rec: InstanceRecord, auth: AuthContext): void {
  if (rec.locked_by && !auth.isAdmin) throw conflict(`Instance ${rec.id} is locked`);
}

/** check_instance_state's first half: the vm_states `action` allows. */
export function checkVmState(rec: InstanceRecord, action: NovaAction, apiAction: string): void {
  const allowed = guardOf(action).vm_state;
  if (allowed && !allowed.includes(rec.vm_state))
    throw invalidState(rec.id, apiAction, "vm_state", rec.vm_state);
}

/** check_instance_state's second half: the task_states `action` allows. */
export function checkTaskState(rec: InstanceRecord, action: NovaAction, apiAction: string): void {
  const allowed = guardOf(action).task_state;
  if (allowed && !allowed.includes(rec.task_state))
    throw invalidState(rec.id, apiAction, "task_state", rec.task_state);
}

/**
 * Nova's decorators on `action` as they run: the lock (when it has one), then the vm_state, then
 * the task_state. `apiAction` is what a 409 calls the request ("os-stop", "migrate", ...).
 */
export function checkInstance(
  rec: InstanceRecord,
  auth: AuthContext,
  action: NovaAction,
  apiAction: string,
): void {
  if (guardOf(action).lock) checkLock(rec, auth);
  checkVmState(rec, action, apiAction);
  checkTaskState(rec, action, apiAction);
}

/** A server on no host (never built anywhere, or offloaded) has no one to act on it. */
export function checkHosted(rec: InstanceRecord): asserts rec is InstanceRecord & { host: string } {
  if (!rec.host) throw instanceNotReady(rec.id);
}

/**
 * Nova's check_instance_host: the server's host must be registered (its queue is what the action
 * is cast to): InstanceNotReady, a 409, otherwise. Reads the host's record.
 */
export async function checkInstanceHost(deps: ApiDeps, rec: InstanceRecord): Promise<HostRecord> {
  const host = rec.host ? await deps.getHost(rec.host) : undefined;
  if (!host) throw instanceNotReady(rec.id);
  return host;
}

/**
 * The state after a refused conditional write (the server changed since it was read): the 409 its
 * state now calls for. Reads the server again.
 */
export async function refusedBy(call: RouteCall, rec: InstanceRecord, apiAction: string): Promise<never> {
  const now = await call.deps.getInstance(rec.id);
  if (!now || now.deleted) throw instanceNotFound(rec.id);
  throw now.task_state !== rec.task_state
    ? invalidState(rec.id, apiAction, "task_state", now.task_state)
    : invalidState(rec.id, apiAction, "vm_state", now.vm_state);
}
