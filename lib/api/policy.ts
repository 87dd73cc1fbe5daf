// Nova's default policies for each route of the compute API (nova/policies/*.py as Nova 2023.2+
// enforces them: enforce_new_defaults and enforce_scope on, project scope only), and Glance's
// (glance/policies/image.py) for /image. A project's `reader` reads, its `member` writes, `admin`
// does both anywhere; the roles a token holds count with those they imply (lib/identity/roles.ts:
// admin → member → reader), so an admin-token or a member passes every reader rule.
//
// The routes' project match (Nova's `project_id:%(project_id)s`) stays where it was: findServer and
// the other lookups answer 404 for another project's resource. Routes whose handler enforces an
// admin rule already (requireAdmin, the rules the body picks) are named here and left to it.
import { withImplied } from "../identity/roles.js";
import type { AuthContext } from "./auth.js";
import { type ApiError, badRequest, forbidden, notFound, policyForbidden } from "./errors.js";
import type { Route } from "./request.js";

/**
 * Who passes a rule:
 * - any: every project-scoped token, whatever its roles (Nova's `@`, or a rule on the user only)
 * - reader: PROJECT_READER_OR_ADMIN
 * - member: PROJECT_MEMBER_OR_ADMIN
 * - admin: ADMIN, SERVICE_ROLE or PROJECT_MANAGER_OR_ADMIN (novaless has no manager role: its
 *   admin's) — enforced by the route's handler, not here
 */
export type Need = "any" | "reader" | "member" | "admin";

export interface Policy {
  /** Nova's rule name, as its 403 says it */
  rule: string;
  need: Need;
  /** the refusal when it is not Nova's policy 403 (the image proxy answers as Glance makes it) */
  refuse?: (roles: readonly string[]) => ApiError;
}

/** A route's policy: one rule, or (POST …/action) one per action, named by the body's key. */
export type RoutePolicy = Policy | { actions: Readonly<Record<string, Policy>> };

const p = (need: Need, rule: string): Policy => ({ need, rule });
const any = (rule: string) => p("any", rule);
const reader = (rule: string) => p("reader", rule);
const member = (rule: string) => p("member", rule);
const admin = (rule: string) => p("admin", rule);

const N = "os_compute_api";
/** oslo.policy's "anyone": for the routes Nova checks no rule on */
const NO_RULE = "@";

/** POST /servers/{id}/action, per action (nova/policies: the operation "(action)" each names). */
export const SERVER_ACTION_POLICIES: Readonly<Record<string, Policy>> = {
  lock: member(`${N}:os-lock-server:lock`),
  unlock: member(`${N}:os-lock-server:unlock`),
  "os-stop": member(`${N}:servers:stop`),
  "os-start": member(`${N}:servers:start`),
  reboot: member(`${N}:servers:reboot`),
  pause: member(`${N}:os-pause-server:pause`),
  unpause: member(`${N}:os-pause-server:unpause`),
  suspend: member(`${N}:os-suspend-server:suspend`),
  resume: member(`${N}:os-suspend-server:resume`),
  // reading the console log is a POST action in Nova, and PROJECT_MEMBER_OR_ADMIN: a reader may not
  "os-getConsoleOutput": member(`${N}:os-console-output`),
  resize: member(`${N}:servers:resize`),
  confirmResize: member(`${N}:servers:confirm_resize`),
  revertResize: member(`${N}:servers:revert_resize`),
  rebuild: member(`${N}:servers:rebuild`),
  createImage: member(`${N}:servers:create_image`),
  createBackup: member(`${N}:os-create-backup`),
  shelve: member(`${N}:os-shelve:shelve`),
  unshelve: member(`${N}:os-shelve:unshelve`),
  trigger_crash_dump: member(`${N}:servers:trigger_crash_dump`),
  // Nova: PROJECT_MANAGER_OR_ADMIN (migrate, live migrate) or ADMIN; novaless keeps them admin's
  migrate: admin(`${N}:os-migrate-server:migrate`),
  "os-migrateLive": admin(`${N}:os-migrate-server:migrate_live`),
  evacuate: admin(`${N}:os-evacuate`),
  shelveOffload: admin(`${N}:os-shelve:shelve_offload`),
  "os-resetState": admin(`${N}:os-admin-actions:reset_state`),
  injectNetworkInfo: admin(`${N}:os-admin-actions:inject_network_info`),
  // Nova removed it (and its rule) with nova-network; the handler answers 501 as for the others
  resetNetwork: admin(`${N}:os-admin-actions:reset_network`),
  // what novaless cannot do yet (501): a reader is refused first, as Nova's policy would
  "os-getVNCConsole": member(`${N}:os-remote-consoles`),
  "os-getSPICEConsole": member(`${N}:os-remote-consoles`),
  "os-getSerialConsole": member(`${N}:os-remote-consoles`),
  "os-getRDPConsole": member(`${N}:os-remote-consoles`),
  rescue: member(`${N}:os-rescue`),
  unrescue: member(`${N}:os-unrescue`),
  changePassword: member(`${N}:os-admin-password`),
  addFixedIp: member(`${N}:os-multinic:add`),
  removeFixedIp: member(`${N}:os-multinic:remove`),
  addFloatingIp: member(`${N}:os-floating-ips:add`),
  removeFloatingIp: member(`${N}:os-floating-ips:remove`),
  addSecurityGroup: member(`${N}:os-security-groups:add`),
  removeSecurityGroup: member(`${N}:os-security-groups:remove`),
  forceDelete: member(`${N}:os-deferred-delete:force`),
  restore: member(`${N}:os-deferred-delete:restore`),
};

const IMAGE_NOT_FOUND = () => notFound("Image not found.");

/**
 * Every route, keyed `<METHOD> <pattern>` as lib/api/routes declares it. The proxy's /images
 * follow Glance's rules (Nova has none of its own there) and Nova's translations of Glance's
 * answers: a refused get_image is Glance's 404, a delete the reader sees but may not do Nova's 403.
 */
export const COMPUTE_POLICIES: Readonly<Record<string, RoutePolicy>> = {
  // servers (servers.py)
  "GET /servers": reader(`${N}:servers:index`),
  "POST /servers": member(`${N}:servers:create`),
  "GET /servers/detail": reader(`${N}:servers:detail`),
  "GET /servers/:id": reader(`${N}:servers:show`),
  "PUT /servers/:id": member(`${N}:servers:update`),
  "DELETE /servers/:id": member(`${N}:servers:delete`),
  "POST /servers/:id/action": { actions: SERVER_ACTION_POLICIES },
  // server_metadata.py, server_tags.py
  "GET /servers/:id/metadata": reader(`${N}:server-metadata:index`),
  "PUT /servers/:id/metadata": member(`${N}:server-metadata:update_all`),
  "POST /servers/:id/metadata": member(`${N}:server-metadata:create`),
  "GET /servers/:id/metadata/:key": reader(`${N}:server-metadata:show`),
  "PUT /servers/:id/metadata/:key": member(`${N}:server-metadata:update`),
  "DELETE /servers/:id/metadata/:key": member(`${N}:server-metadata:delete`),
  "GET /servers/:id/tags": reader(`${N}:os-server-tags:index`),
  "PUT /servers/:id/tags": member(`${N}:os-server-tags:update_all`),
  "DELETE /servers/:id/tags": member(`${N}:os-server-tags:delete_all`),
  "GET /servers/:id/tags/:tag": reader(`${N}:os-server-tags:show`),
  "PUT /servers/:id/tags/:tag": member(`${N}:os-server-tags:update`),
  "DELETE /servers/:id/tags/:tag": member(`${N}:os-server-tags:delete`),
  // server_password.py: reading is PROJECT_READER_OR_ADMIN, clearing PROJECT_MEMBER_OR_ADMIN
  "GET /servers/:id/os-server-password": reader(`${N}:os-server-password:show`),
  "DELETE /servers/:id/os-server-password": member(`${N}:os-server-password:clear`),
  // attach_interfaces.py and ips.py: reading is PROJECT_READER_OR_ADMIN, changing PROJECT_MEMBER_OR_ADMIN
  "GET /servers/:id/os-interface": reader(`${N}:os-attach-interfaces:list`),
  "GET /servers/:id/os-interface/:port_id": reader(`${N}:os-attach-interfaces:show`),
  "POST /servers/:id/os-interface": member(`${N}:os-attach-interfaces:create`),
  "DELETE /servers/:id/os-interface/:port_id": member(`${N}:os-attach-interfaces:delete`),
  "GET /servers/:id/ips": reader(`${N}:ips:index`),
  // security_groups.py (the proxies until 2.35, a server's groups at every version)
  "GET /os-security-groups": reader(`${N}:os-security-groups:get`),
  "POST /os-security-groups": member(`${N}:os-security-groups:create`),
  "GET /os-security-groups/:id": reader(`${N}:os-security-groups:show`),
  "PUT /os-security-groups/:id": member(`${N}:os-security-groups:update`),
  "DELETE /os-security-groups/:id": member(`${N}:os-security-groups:delete`),
  "POST /os-security-group-rules": member(`${N}:os-security-groups:rule:create`),
  "DELETE /os-security-group-rules/:id": member(`${N}:os-security-groups:rule:delete`),
  "GET /servers/:id/os-security-groups": reader(`${N}:os-security-groups:list`),
  "GET /servers/:id/ips/:network_label": reader(`${N}:ips:show`),
  "GET /servers/:id/diagnostics": admin(`${N}:os-server-diagnostics`),
  "GET /servers/:id/os-instance-actions": reader(`${N}:os-instance-actions:list`),
  "GET /servers/:id/os-instance-actions/:request_id": reader(`${N}:os-instance-actions:show`),
  // migrations.py, servers_migrations.py, migrate_server.py
  "GET /os-migrations": admin(`${N}:os-migrations:index`),
  "GET /servers/:id/migrations": admin(`${N}:servers:migrations:index`),
  "GET /servers/:id/migrations/:migration_id": admin(`${N}:servers:migrations:show`),
  "POST /servers/:id/migrations/:migration_id/action": admin(`${N}:servers:migrations:force_complete`),
  "DELETE /servers/:id/migrations/:migration_id": admin(`${N}:servers:migrations:delete`),
  // novaless's explained decisions (lib/api/routes/scheduling.ts)
  "GET /servers/:id/os-scheduling": admin(`${N}:os-scheduling:show`),
  "POST /os-scheduler/plan": admin(`${N}:os-scheduler:plan`),
  // flavors.py checks no rule to list or show: any project's token reads them
  "GET /flavors": any(NO_RULE),
  "POST /flavors": admin(`${N}:os-flavor-manage:create`),
  "GET /flavors/detail": any(NO_RULE),
  "GET /flavors/:id": any(NO_RULE),
  "PUT /flavors/:id": admin(`${N}:os-flavor-manage:update`),
  "DELETE /flavors/:id": admin(`${N}:os-flavor-manage:delete`),
  "POST /flavors/:id/action": admin(`${N}:os-flavor-access:add_tenant_access`),
  "GET /flavors/:id/os-flavor-access": admin(`${N}:os-flavor-access`),
  "GET /flavors/:id/os-extra_specs": reader(`${N}:os-flavor-extra-specs:index`),
  "POST /flavors/:id/os-extra_specs": admin(`${N}:os-flavor-extra-specs:create`),
  "GET /flavors/:id/os-extra_specs/:key": reader(`${N}:os-flavor-extra-specs:show`),
  "PUT /flavors/:id/os-extra_specs/:key": admin(`${N}:os-flavor-extra-specs:update`),
  "DELETE /flavors/:id/os-extra_specs/:key": admin(`${N}:os-flavor-extra-specs:delete`),
  // images.py proxies Glance: get_images, get_image (reader), delete_image (member)
  "GET /images": { ...reader("get_images"), refuse: () => forbidden(glanceRefusal("get_images")) },
  "GET /images/detail": { ...reader("get_images"), refuse: () => forbidden(glanceRefusal("get_images")) },
  "GET /images/:id": { ...reader("get_image"), refuse: IMAGE_NOT_FOUND },
  "DELETE /images/:id": {
    ...member("delete_image"),
    refuse: (roles) =>
      roles.includes("reader") ? forbidden("You are not allowed to delete the image.") : IMAGE_NOT_FOUND(),
  },
  // names no image: the handler's 404 for anyone, as Nova's
  "DELETE /images": any("delete_image"),
  // image_metadata.py has no rule of its own: Glance's get_image reads (its 404), and its
  // modify_image, asked by the handler on the image's owner, changes (Nova's 403)
  "GET /images/:id/metadata": { ...reader("get_image"), refuse: IMAGE_NOT_FOUND },
  "GET /images/:id/metadata/:key": { ...reader("get_image"), refuse: IMAGE_NOT_FOUND },
  "POST /images/:id/metadata": any("modify_image"),
  "PUT /images/:id/metadata": any("modify_image"),
  "PUT /images/:id/metadata/:key": any("modify_image"),
  "DELETE /images/:id/metadata/:key": any("modify_image"),
  // keypairs.py: `(rule:context_is_admin) or user_id:%(user_id)s`, no role at all — a key pair is
  // its user's, not its project's, so Nova lets a reader (any project-scoped user) make and delete
  // its own; the handlers check the user (validation/keypairs.ts keypairOwner)
  "GET /os-keypairs": any(`${N}:os-keypairs:index`),
  "POST /os-keypairs": any(`${N}:os-keypairs:create`),
  "GET /os-keypairs/:name": any(`${N}:os-keypairs:show`),
  "DELETE /os-keypairs/:name": any(`${N}:os-keypairs:delete`),
  // hypervisors.py; novaless's placement and inventory views of a hypervisor are admin's too
  "GET /os-hypervisors": admin(`${N}:os-hypervisors:list`),
  "GET /os-hypervisors/detail": admin(`${N}:os-hypervisors:list-detail`),
  "GET /os-hypervisors/statistics": admin(`${N}:os-hypervisors:statistics`),
  "GET /os-hypervisors/:id": admin(`${N}:os-hypervisors:show`),
  "GET /os-hypervisors/:id/uptime": admin(`${N}:os-hypervisors:uptime`),
  "GET /os-hypervisors/:pattern/search": admin(`${N}:os-hypervisors:search`),
  "GET /os-hypervisors/:pattern/servers": admin(`${N}:os-hypervisors:servers`),
  "GET /os-hypervisors/:id/placement": admin(`${N}:os-hypervisors:show`),
  "GET /os-hypervisors/:id/inventories": admin("placement:resource_providers:inventories:list"),
  "PUT /os-hypervisors/:id/inventories/:resource_class": admin(
    "placement:resource_providers:inventories:update",
  ),
  "DELETE /os-hypervisors/:id/inventories/:resource_class": admin(
    "placement:resource_providers:inventories:delete",
  ),
  // novaless's operator views (placement-audit.ts, fleet.ts, dead-letters.ts)
  "GET /os-placement-audit": admin("placement:audit"),
  "POST /os-placement-audit": admin("placement:audit:repair"),
  "GET /os-fleet": admin("novaless:fleet:show"),
  "GET /os-dead-letters": admin("novaless:dead-letters:list"),
  "POST /os-dead-letters/:name/action": admin("novaless:dead-letters:redrive"),
  // services.py
  "GET /os-services": admin(`${N}:os-services:list`),
  "PUT /os-services/:action": admin(`${N}:os-services:update`),
  "PUT /os-services/:id": admin(`${N}:os-services:update`),
  "DELETE /os-services/:id": admin(`${N}:os-services:delete`),
  // aggregates.py, availability_zone.py: the zone list is `@`
  "GET /os-aggregates": admin(`${N}:os-aggregates:index`),
  "POST /os-aggregates": admin(`${N}:os-aggregates:create`),
  "GET /os-aggregates/:id": admin(`${N}:os-aggregates:show`),
  "PUT /os-aggregates/:id": admin(`${N}:os-aggregates:update`),
  "DELETE /os-aggregates/:id": admin(`${N}:os-aggregates:delete`),
  "POST /os-aggregates/:id/action": admin(`${N}:os-aggregates:add_host`),
  "GET /os-availability-zone": any(`${N}:os-availability-zone:list`),
  "GET /os-availability-zone/detail": admin(`${N}:os-availability-zone:detail`),
  // server_groups.py
  "GET /os-server-groups": reader(`${N}:os-server-groups:index`),
  "POST /os-server-groups": member(`${N}:os-server-groups:create`),
  "GET /os-server-groups/:id": reader(`${N}:os-server-groups:show`),
  "DELETE /os-server-groups/:id": member(`${N}:os-server-groups:delete`),
  // quota_sets.py, quota_class_sets.py: a project's defaults are `@`
  "GET /os-quota-sets/:project/defaults": any(`${N}:os-quota-sets:defaults`),
  "GET /os-quota-sets/:project/detail": reader(`${N}:os-quota-sets:detail`),
  "GET /os-quota-sets/:project": reader(`${N}:os-quota-sets:show`),
  "PUT /os-quota-sets/:project": admin(`${N}:os-quota-sets:update`),
  "DELETE /os-quota-sets/:project": admin(`${N}:os-quota-sets:delete`),
  "GET /os-quota-class-sets/:id": admin(`${N}:os-quota-class-sets:show`),
  "PUT /os-quota-class-sets/:id": admin(`${N}:os-quota-class-sets:update`),
  // limits.py: `@` (another project's limits are admin's: the handler's other_project rule)
  "GET /limits": any(`${N}:limits`),
  // simple_tenant_usage.py, instance_usage_audit_log.py
  "GET /os-simple-tenant-usage": admin(`${N}:os-simple-tenant-usage:list`),
  "GET /os-simple-tenant-usage/:tenant_id": reader(`${N}:os-simple-tenant-usage:show`),
  "GET /os-instance_usage_audit_log": admin(`${N}:os-instance-usage-audit-log:list`),
  "GET /os-instance_usage_audit_log/:id": admin(`${N}:os-instance-usage-audit-log:show`),
  // server_external_events.py: SERVICE_ROLE (service or admin), the handler's check
  "POST /os-server-external-events": admin(`${N}:os-server-external-events:create`),
};

/** A token's roles with those they imply (admin → member → reader). */
export function effectiveRoles(auth: Pick<AuthContext, "roles">): string[] {
  return withImplied(auth.roles);
}

/** Whether a token passes a rule's roles (admin passes every one; `admin` rules are the handlers'). */
export function passes(roles: readonly string[], need: Need): boolean {
  if (need === "any" || need === "admin" || roles.includes("admin")) return true;
  return roles.includes(need);
}

/**
 * The one policy question every front asks (Compute's routes, Glance's rules, Neutron's): does the
 * token pass a rule's roles — on the project owning the target, when the rule is scoped to one
 * (`project_id:%(project_id)s`)? An admin passes everywhere; `admin` rules are their handlers'.
 */
export function allows(
  auth: Pick<AuthContext, "roles" | "isAdmin" | "project_id">,
  need: Need,
  project?: string,
): boolean {
  if (auth.isAdmin) return true;
  if (project !== undefined && auth.project_id !== project) return false;
  return passes(effectiveRoles(auth), need);
}

export const routeKey = (route: Pick<Route, "method" | "pattern">): string =>
  `${route.method} ${route.pattern}`;

/** The action a POST …/action body names (its one key), or undefined when the body is not one. */
function actionOf(body: string | undefined): string | undefined {
  if (body === undefined) return undefined;
  try {
    const json: unknown = JSON.parse(body);
    if (json === null || typeof json !== "object" || Array.isArray(json)) return undefined;
    const keys = Object.keys(json);
    return keys.length === 1 ? keys[0] : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Nova's context.can for a route, before its handler runs: a 403 `Policy doesn't allow <rule> to
 * be performed.` when the token's roles do not pass. A route missing from the table is refused
 * (test/unit/policy.test.ts keeps the table whole), and an action the table does not know is
 * Nova's 400 for a non-member, without reaching the handler.
 */
export function enforceRoute(route: Route, auth: AuthContext, body: string | undefined): void {
  const policy = COMPUTE_POLICIES[routeKey(route)];
  if (!policy) throw policyForbidden(routeKey(route));
  if (!("actions" in policy)) {
    check(policy, auth);
    return;
  }
  const name = actionOf(body);
  // a malformed body is the handler's 400, whoever asks
  if (name === undefined) return;
  const action = Object.hasOwn(policy.actions, name) ? policy.actions[name] : undefined;
  if (action) check(action, auth);
  else if (!allows(auth, "member")) throw badRequest(`There is no such action: ${name}`);
}

function check(policy: Policy, auth: AuthContext): void {
  if (allows(auth, policy.need)) return;
  throw policy.refuse ? policy.refuse(effectiveRoles(auth)) : policyForbidden(policy.rule);
}

/** glance.common.exception.Forbidden's text, which Glance's policy refusals carry. */
export const glanceRefusal = (rule: string): string => `You are not authorized to complete ${rule} action.`;

/** Glance's image rules as their defaults grant them (glance/policies/image.py, base.py). */
export const GLANCE_POLICIES = {
  get_images: "reader",
  get_image: "reader",
  // ADMIN_OR_PROJECT_MEMBER_DOWNLOAD_IMAGE: Glance lets a reader see an image, not download it
  download_image: "member",
  add_image: "member",
  modify_image: "member",
  delete_image: "member",
  upload_image: "member",
  // a visibility's own rules, on a create or a change that sets it
  publicize_image: "admin",
  communitize_image: "member",
} as const satisfies Record<string, Need>;

export type GlanceRule = keyof typeof GLANCE_POLICIES;

/**
 * The rules Glance scopes to the image's owner: ADMIN_OR_PROJECT_MEMBER's project_id:%(project_id)s
 * (the image's owner), add_image's project_id:%(owner)s (the owner a create proposes).
 */
const OWNER_SCOPED: ReadonlySet<GlanceRule> = new Set([
  "add_image",
  "modify_image",
  "delete_image",
  "upload_image",
  "communitize_image",
]);

/** What a rule is asked of: an image (its owner, null for the catalog's own), or one a create proposes. */
export interface GlanceTarget {
  owner: string | null;
  proposed?: true;
}

/**
 * Glance's ImageAPIPolicy: "allow", or how Glance refuses. A refused get_image hides the image
 * (404), and so does any refused rule on an image the caller could not get either; a rule refused
 * on an image it may see, or with no image (a list, a create), is a 403.
 */
export function glanceDecision(
  auth: Pick<AuthContext, "roles" | "isAdmin" | "project_id">,
  rule: GlanceRule,
  target?: GlanceTarget,
): "allow" | 403 | 404 {
  const need = GLANCE_POLICIES[rule];
  const project = target && OWNER_SCOPED.has(rule) ? (target.owner ?? "") : undefined;
  if (need === "admin" ? auth.isAdmin : allows(auth, need, project)) return "allow";
  if (!target || target.proposed) return 403;
  return rule === "get_image" || !allows(auth, GLANCE_POLICIES.get_image) ? 404 : 403;
}
