// os-resetState (Nova's admin_actions.py _reset_state): an admin forces a server's vm_state to
// active or error and clears its task state, recorded as the instance action "resetState". Nova
// checks nothing else: no lock, no state, no host; the server is whatever the admin says.
import { z } from "zod";
import { resetInstanceState } from "../../instances/soft-delete.js";
import type { InstanceRecord } from "../../instances/types.js";
import { requireAdmin } from "../auth.js";
import { instanceNotFound } from "../errors.js";
import type { ApiResult, RouteCall } from "../request.js";
import { validate } from "../validation/common.js";
import { actionRecord } from "./instance-action.js";

/** Nova's policy rule (nova/policies/admin_actions.py): admin only. */
export const RESET_STATE_RULE = "os_compute_api:os-admin-actions:reset_state";

/** Nova's schemas/admin_actions.py reset_state. */
const resetStateSchema = z.strictObject({ state: z.enum(["active", "error"]) });

export async function resetState(call: RouteCall, rec: InstanceRecord, arg: unknown): Promise<ApiResult> {
  // Nova's order: the body's schema (400), the instance (404, found already), the policy (403)
  const { state } = validate(resetStateSchema, arg);
  requireAdmin(call.ctx.auth, RESET_STATE_RULE);
  const action = actionRecord("resetState", call);
  // (a SOFT_DELETED server made active or error counts in its quota again, in the same write)
  const updated = await resetInstanceState(rec.id, state, action);
  if (!updated) throw instanceNotFound(rec.id);
  return { status: 202 };
}
