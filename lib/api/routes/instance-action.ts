// The instance action a server action records (Nova's os-instance-actions entry), as the caller
// begins it: its events are added by whoever carries it out.
import { ActionNotSent, acceptAction, type Begin } from "../../instances/accept.js";
import type { ActionName, InstanceAction, InstanceRecord } from "../../instances/types.js";
import { ApiError } from "../errors.js";
import type { RouteCall } from "../request.js";

export function actionRecord(name: ActionName, call: RouteCall): InstanceAction {
  const { auth, requestId } = call.ctx;
  return {
    action: name,
    request_id: requestId,
    user_id: auth.user_id,
    project_id: auth.project_id,
    start_time: call.deps.now().toISOString(),
    message: null,
    events: {},
  };
}

/**
 * acceptAction for a route: a begun action whose request could not be sent (taken back) is Nova's
 * computeFault, `text` saying what could not be done, and its cause is logged with the request.
 * The record as begun, or undefined when the begin was refused.
 */
export async function acceptOrFault(
  call: RouteCall,
  begin: Begin,
  send: (begun: InstanceRecord) => Promise<void>,
  text = "The request could not be sent to the server's host. Please try again.",
): Promise<InstanceRecord | undefined> {
  try {
    return await acceptAction(begin, send);
  } catch (e) {
    if (!(e instanceof ActionNotSent)) throw e;
    call.ctx.logFields.error = e.cause;
    throw new ApiError("computeFault", text);
  }
}
