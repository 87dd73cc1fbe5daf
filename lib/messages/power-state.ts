// Nova's power_state (nova/compute/power_state.py): a guest's power state as drivers read it,
// hosts report it and the API and the conductor word it. One home for the values and their names.

/** Nova's power_state values. */
export const POWER_STATE = {
  NOSTATE: 0,
  RUNNING: 1,
  PAUSED: 3,
  SHUTDOWN: 4,
  CRASHED: 6,
  SUSPENDED: 7,
} as const;
export type PowerState = (typeof POWER_STATE)[keyof typeof POWER_STATE];

/** Nova's power_state.STATE_MAP, as InstanceInvalidState prints a power state. */
const STATE_MAP: Record<number, string> = {
  [POWER_STATE.NOSTATE]: "pending",
  [POWER_STATE.RUNNING]: "running",
  [POWER_STATE.PAUSED]: "paused",
  [POWER_STATE.SHUTDOWN]: "shutdown",
  [POWER_STATE.CRASHED]: "crashed",
  [POWER_STATE.SUSPENDED]: "suspended",
};

/** The power state's name, or its number when Nova has no name for it. */
export function powerStateName(state: number): string {
  return STATE_MAP[state] ?? String(state);
}
