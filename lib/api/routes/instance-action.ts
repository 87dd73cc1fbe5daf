// The instance action a server action records (Nova's os-instance-actions entry), as the caller
// begins it: its events are added by whoever carries it out.
import type { ActionName, InstanceAction } from "../../instances/types.js";
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
