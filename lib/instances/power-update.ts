// The power-update external event (2.76): the power of a server changed outside Nova (Ironic
// says so), and Nova follows. The API records the instance action (start for POWER_ON, stop for
// POWER_OFF) and the compute manager's power_update records its event, compute_power_update,
// changing the state only when it is one the event can apply to
// (_is_state_valid_for_power_update_event); otherwise the event is a no-op that still succeeds.
// Nothing is asked of the host: the event reports what the hypervisor did already, and the
// state is the control plane's to write (Nova's driver step, power_update_event, only saves it).
import { eventKey, storedEvent } from "./codec.js";
import { event, transition } from "./transition.js";
import type { InstanceAction, InstanceRecord } from "./types.js";

export type PowerUpdateTag = "POWER_ON" | "POWER_OFF";

const RUNNING = 1;
const SHUTDOWN = 4;
export const EVENT_POWER_UPDATE = "compute_power_update";

/** From → to, for each tag: Nova's valid states and what its power_update_event saves. */
const UPDATES = {
  POWER_ON: { vm: "stopped", power: SHUTDOWN, toVm: "active", toPower: RUNNING },
  POWER_OFF: { vm: "active", power: RUNNING, toVm: "stopped", toPower: SHUTDOWN },
} as const;

/** A record from before hosts reported power states: what its vm_state implies. */
function powerOf(rec: InstanceRecord): number {
  return rec.power_state ?? (rec.vm_state === "active" ? RUNNING : SHUTDOWN);
}

/**
 * Apply one power-update to `rec` as read: the action and its finished event, and the state when
 * valid, in one write conditioned on the state seen. False when the server changed meanwhile or
 * is gone (the caller reads it again).
 */
export async function applyPowerUpdate(
  rec: InstanceRecord,
  tag: PowerUpdateTag,
  action: InstanceAction,
): Promise<{ written: boolean; changed: boolean }> {
  const u = UPDATES[tag];
  const valid = rec.task_state === null && rec.vm_state === u.vm && powerOf(rec) === u.power;
  const start = new Date(action.start_time);
  const ev = event(EVENT_POWER_UPDATE, rec.attempt, "Success", rec.host, null, start, start);
  const set = ["updated_at = :now", "actions.#rid = :action"];
  const values: Record<string, unknown> = {
    ":now": action.start_time,
    ":action": { ...action, events: { [eventKey(ev.event, ev.attempt)]: storedEvent(ev) } },
    ":false": false,
    ":vm": rec.vm_state,
    ":seen": rec.updated_at,
  };
  if (valid) {
    set.push("vm_state = :to", "power_state = :power", "power_state_at = :now");
    values[":to"] = u.toVm;
    values[":power"] = u.toPower;
  }
  const updated = await transition(rec.id, {
    set,
    condition: "deleted = :false AND vm_state = :vm AND updated_at = :seen",
    names: { "#rid": action.request_id },
    values,
  });
  return { written: updated !== undefined, changed: valid && updated !== undefined };
}
