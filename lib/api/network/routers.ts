// Neutron's routers, as a cloud offering none answers them: the list is empty in Neutron's shape
// (its filters, fields and paging checked as for any resource) and every router is RouterNotFound.
// What reads them is the SDK's auto_ip path and Ansible's (openstacksdk's
// _find_floating_network_by_router lists routers for an external gateway when no network is
// external): an empty list tells them there is none, where a 404 only happens to be tolerated. No
// router is ever made, so the `router` extension is not advertised and a POST stays Neutron's
// 404 for a resource it does not serve (tempest gates its router tests on the extension).
import type { Hono } from "hono";
import { Refusal } from "../errors.js";
import { listed, listParams } from "./listing.js";
import type { NetEnv } from "./request.js";

/** neutron-lib's l3 router attributes, with the standard attributes this front's resources carry. */
const ROUTER_ATTRIBUTES = [
  "id",
  "name",
  "admin_state_up",
  "status",
  "project_id",
  "tenant_id",
  "external_gateway_info",
  "description",
  "revision_number",
  "created_at",
  "updated_at",
] as const;

/** neutron-lib's l3 RouterNotFound. */
const routerNotFound = (id: string) => new Refusal(404, `Router ${id} could not be found.`, "RouterNotFound");

export function routerRoutes(app: Hono<NetEnv>): void {
  app.get("/v2.0/routers", listParams(ROUTER_ATTRIBUTES), (c) =>
    listed<{ id: string }>(c, "routers", [], () => ({}), c.req.valid("query"), routerNotFound),
  );
  // a router by any id, and its interfaces: none is there
  const none = (c: { req: { param: (name: "id") => string } }) => {
    throw routerNotFound(c.req.param("id"));
  };
  app.on(["GET", "PUT", "DELETE"], "/v2.0/routers/:id", none);
  app.put("/v2.0/routers/:id/add_router_interface", none);
  app.put("/v2.0/routers/:id/remove_router_interface", none);
}
