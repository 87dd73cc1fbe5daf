// GET and DELETE /servers/{id}/os-server-password (Nova's server_password.py). Nova keeps the
// encrypted password a guest posted to its metadata service in the instance's system metadata,
// answers it (or "") to the server's owner, and DELETE blanks it without touching the guest.
// novaless has no metadata service, so no guest can post one: GET answers "" and DELETE has
// nothing to blank (Nova's save of an unchanged system metadata writes nothing either). Both
// still find the server first, so another project's or a deleted one is 404, as in Nova.
import type { ApiResult, Route, RouteCall } from "../request.js";
import { findServer } from "./servers.js";

async function showPassword(call: RouteCall): Promise<ApiResult> {
  call.ctx.logFields.instance_uuid = call.params.id;
  await findServer(call.deps, call.params.id!, call.ctx.auth);
  return { status: 200, body: { password: "" } };
}

async function clearPassword(call: RouteCall): Promise<ApiResult> {
  call.ctx.logFields.instance_uuid = call.params.id;
  await findServer(call.deps, call.params.id!, call.ctx.auth);
  return { status: 204 };
}

export const serverPasswordRoutes: Route[] = [
  { method: "GET", pattern: "/servers/:id/os-server-password", handler: showPassword },
  { method: "DELETE", pattern: "/servers/:id/os-server-password", handler: clearPassword },
];
