// Neutron's Networking v2 API on DevStack's path, /networking: networks (./networks.ts), subnets
// (./subnets.ts) and ports (./ports.ts) over lib/network/store/, Neutron's quotas
// (./quotas.ts), security groups and their rules (./security-groups.ts), with Neutron's shapes,
// its errors ({"NeutronError": {type, message, detail}}) and its default policies (./policy.ts).
// Routers are an empty list (./routers.ts); floating IPs' paths are Neutron's 404 for an unknown
// resource. A missing or unknown token is Keystone's 401, as keystonemiddleware answers in front
// of Neutron.
import type { Hono } from "hono";
import { NetworkingError } from "../../network/cidr.js";
import type { AuthDeps } from "../auth.js";
import { Refusal } from "../errors.js";
import { createFront, type Service } from "../front.js";
import { networkRoutes } from "./networks.js";
import { portRoutes } from "./ports.js";
import { quotaRoutes } from "./quotas.js";
import { NEUTRON_BODY, type NetEnv } from "./request.js";
import { routerRoutes } from "./routers.js";
import { securityGroupRoutes } from "./security-groups.js";
import { subnetRoutes } from "./subnets.js";
import { extensionsDocument, resourcesDocument, versionsDocument } from "./views.js";

/** How Neutron's front differs from the others. */
const NEUTRON: Service<NetEnv> = {
  ...NEUTRON_BODY,
  errorBody: (r) => ({ json: { NeutronError: { type: r.type, message: r.message, detail: "" } } }),
  // the store's refusals (lib/network), Neutron's exceptions by name
  refusalOf: (e) => (e instanceof NetworkingError ? new Refusal(e.status, e.message, e.type) : undefined),
  versions: [{ path: "/", document: versionsDocument }],
  tokenPaths: ["/v2.0", "/v2.0/*"],
  // floating IPs, a router's create and anything else: Neutron's answer to a resource it
  // does not serve (no such extension loaded)
  notFound: () => new Refusal(404, "The resource could not be found.", "HTTPNotFound"),
};

export function networkApp(deps: AuthDeps): Hono<NetEnv> {
  return createFront(NEUTRON, deps, (app) => {
    app.get("/v2.0", (c) => c.json(resourcesDocument(c.get("baseUrl"))));
    app.get("/v2.0/extensions", (c) => c.json(extensionsDocument()));
    app.get("/v2.0/extensions/:alias", (c) => {
      const alias = c.req.param("alias");
      const extension = extensionsDocument().extensions.find((e) => e.alias === alias);
      // neutron/api/extensions.py ExtensionController.show
      if (!extension) throw new Refusal(404, `Extension with alias ${alias} does not exist`, "HTTPNotFound");
      return c.json({ extension });
    });
    networkRoutes(app, deps);
    subnetRoutes(app, deps);
    portRoutes(app, deps);
    routerRoutes(app);
    securityGroupRoutes(app, deps);
    quotaRoutes(app);
  });
}
