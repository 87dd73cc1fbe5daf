// Nova's libvirt power states, from the words virsh prints, and novaless's domains in a listing.
import { POWER_STATE, type PowerState } from "./driver.js";

/** Nova's LIBVIRT_POWER_STATE, by the words `virsh domstate` and `virsh list` print. */
const POWER_OF_STATE: Record<string, PowerState> = {
  "no state": POWER_STATE.NOSTATE,
  running: POWER_STATE.RUNNING,
  // blocked on a resource: Nova counts it as running
  idle: POWER_STATE.RUNNING,
  blocked: POWER_STATE.RUNNING,
  paused: POWER_STATE.PAUSED,
  "in shutdown": POWER_STATE.SHUTDOWN,
  "shut off": POWER_STATE.SHUTDOWN,
  crashed: POWER_STATE.CRASHED,
  pmsuspended: POWER_STATE.SUSPENDED,
  // `virsh list --managed-save`: shut off with a managed save image, i.e. suspended (Nova's suspend)
  saved: POWER_STATE.SUSPENDED,
};

/** A state as `virsh list --managed-save` or `virsh domstate [--reason]` prints it. */
export function powerStateOf(word: string): PowerState {
  const state = word
    .trim()
    .toLowerCase()
    .replace(/\s*\(.*\)$/, "");
  return POWER_OF_STATE[state] ?? POWER_STATE.NOSTATE;
}

const DOMAIN = /^instance-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** novaless's domains (instance-<uuid>) in `virsh list --all --managed-save`, with their power states; others are not ours. */
export function ourDomains(out: string): Map<string, PowerState> {
  const found = new Map<string, PowerState>();
  for (const line of out.split("\n")) {
    const m = /^\s*(\S+)\s+(\S+)\s+(.+?)\s*$/.exec(line);
    const id = m ? DOMAIN.exec(m[2]!)?.[1] : undefined;
    if (id) found.set(id, powerStateOf(m![3]!));
  }
  return found;
}
