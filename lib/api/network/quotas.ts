// Neutron's quotas (GET /v2.0/quotas/{project}, its /default and /details), which `openstack
// quota show` reads whenever the catalog has a network service. Security groups and their rules
// are limited as Neutron limits them ([quotas] quota_security_group, quota_security_group_rule:
// 10 and 100), counted per project as they are made and deleted
// (lib/network/store/security-groups.ts). No other Neutron quota is enforced (a server's port is
// bounded by the compute quotas): their limits are -1, unlimited, as Neutron shows an unlimited
// one; the details count what the project holds. Setting one is not supported: PUT falls through
// to Neutron's 404.
import type { Hono } from "hono";
import { securityGroupQuota, securityGroupUsage } from "../../network/store/security-groups.js";
import { listNetworks, listPorts, listSubnets } from "../../network/store/table.js";
import type { AuthContext } from "../auth.js";
import { policyRefused, readerOf } from "./policy.js";
import type { NetEnv } from "./request.js";

/** The resources Neutron's quota extension names (quota_driver's defaults). */
const RESOURCES = [
  "network",
  "subnet",
  "port",
  "router",
  "floatingip",
  "security_group",
  "security_group_rule",
  "subnetpool",
  "rbac_policy",
] as const;

function visible(auth: AuthContext, project: string): void {
  // get_quota: ADMIN_OR_PROJECT_READER
  if (!auth.isAdmin && !readerOf(auth, project)) throw policyRefused("get_quota");
}

export function quotaRoutes(app: Hono<NetEnv>): void {
  const limits = (): Record<string, number> => ({
    ...Object.fromEntries(RESOURCES.map((r) => [r, -1])),
    ...securityGroupQuota(),
  });
  app.get("/v2.0/quotas/:project/default", (c) => {
    visible(c.get("auth"), c.req.param("project"));
    return c.json({ quota: limits() });
  });
  app.get("/v2.0/quotas/:project/details", async (c) => {
    const project = c.req.param("project");
    visible(c.get("auth"), project);
    const [networks, subnets, ports, groups] = await Promise.all([
      listNetworks(),
      listSubnets(),
      listPorts(),
      securityGroupUsage(project),
    ]);
    const used: Record<string, number> = {
      network: networks.filter((n) => n.project_id === project).length,
      subnet: subnets.filter((s) => s.project_id === project).length,
      port: ports.filter((p) => p.project_id === project).length,
      security_group: groups.groups,
      security_group_rule: groups.rules,
    };
    const limit = limits();
    return c.json({
      quota: Object.fromEntries(
        RESOURCES.map((r) => [r, { limit: limit[r] ?? -1, used: used[r] ?? 0, reserved: 0 }]),
      ),
    });
  });
  app.get("/v2.0/quotas/:project", (c) => {
    visible(c.get("auth"), c.req.param("project"));
    return c.json({ quota: limits() });
  });
}
