// Nova's power_state.STATE_MAP: a guest's power state by name, as InstanceInvalidState prints it
// (the API's diagnostics refusal and the conductor's live migration check both word it so).

const STATE_MAP: Record<number, string> = {
  0: "pending",
  1: "running",
  3: "paused",
  4: "shutdown",
  6: "crashed",
  7: "suspended",
};

/** The power state's name, or its number when Nova has no name for it. */
export function powerStateName(state: number): string {
  return STATE_MAP[state] ?? String(state);
}
