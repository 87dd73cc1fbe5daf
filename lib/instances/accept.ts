// An action the API (or the watchdog) accepts and something else carries out: the instance's one
// conditional write that begins it, then its request sent (to the conductor, or cast to the
// host). A request that cannot be sent takes the begin back, so the server is not left in a task
// nobody carries out.
import { log } from "../log.js";
import type { InstanceRecord } from "./types.js";

/** The begin of an action: its write, and the write that takes it back. */
export interface Begin {
  instance_uuid: string;
  request_id: string;
  /** the one conditional write (beginAction's); undefined when the state changed meanwhile */
  write: () => Promise<InstanceRecord | undefined>;
  /** its undo, conditioned on the begin's own state, so repeating it (or racing a step) is harmless */
  abandon: () => Promise<unknown>;
}

/** The request of a begun action could not be sent (`cause` says why); the begin was taken back. */
export class ActionNotSent extends Error {
  override name = "ActionNotSent";
}

/**
 * Begin the action, then send its request; when the send fails, abandon the begin and throw
 * ActionNotSent. The record as begun, or undefined when the begin was refused (nothing sent).
 */
export async function acceptAction(
  begin: Begin,
  send: (begun: InstanceRecord) => Promise<void>,
): Promise<InstanceRecord | undefined> {
  const begun = await begin.write();
  if (!begun) return undefined;
  try {
    await send(begun);
  } catch (e) {
    // (an abandon that fails is logged: the caller still learns that nothing was sent)
    await begin.abandon().catch((error: unknown) =>
      log.error("instances.action_not_abandoned", {
        request_id: begin.request_id,
        instance_uuid: begin.instance_uuid,
        error,
      }),
    );
    throw new ActionNotSent(
      `the request of instance ${begin.instance_uuid}'s action could not be sent: ${(e as Error).message}`,
      { cause: e },
    );
  }
  return begun;
}
