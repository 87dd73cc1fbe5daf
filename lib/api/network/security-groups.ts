// Neutron's security groups and their rules (neutron/extensions/securitygroup.py,
// neutron/db/securitygroups_db.py) over lib/network/store/security-groups.ts, with Neutron's
// default policies (neutron/conf/policies/security_group.py: a group's project's readers see it
// and its rules, its members change them, an admin everything). Each project's `default` group is
// made on its first list (and its first port, and its first server). A change that moves what a
// port lets through is cast to the hosts of the servers it concerns
// (lib/instances/security-group-refresh.ts). Shared with Nova's os-security-groups proxy
// (lib/api/routes/security-groups.ts), which calls Neutron as its caller.
import { randomUUID } from "node:crypto";
import type { Hono } from "hono";
import { refreshPortFilters } from "../../instances/security-group-refresh.js";
import { NetworkingError } from "../../network/cidr.js";
import {
  ruleKey,
  ruleSpecOf,
  type SecurityGroup,
  type SecurityGroupRule,
} from "../../network/security-groups.js";
import {
  addSecurityGroupRule,
  createSecurityGroup,
  deleteSecurityGroup,
  deleteSecurityGroupRule,
  ensureDefaultSecurityGroup,
  getSecurityGroup,
  getSecurityGroupRule,
  listSecurityGroups,
  memberCount,
  securityGroupQuota,
  updateSecurityGroup,
} from "../../network/store/security-groups.js";
import type { AuthContext, AuthDeps } from "../auth.js";
import { Refusal } from "../errors.js";
import { memberOf, policyRefused, readerOf } from "./policy.js";
import {
  type Body,
  badRequest,
  type Made,
  type NetEnv,
  projectOf,
  refuse,
  required,
  resourceRoutes,
  securityGroupNotFound,
  securityGroupRuleNotFound,
  stamp,
  stringAttr,
  updateBody,
} from "./request.js";
import {
  SECURITY_GROUP_ATTRIBUTES,
  SECURITY_GROUP_RULE_ATTRIBUTES,
  securityGroupRuleView,
  securityGroupView,
} from "./views.js";

/** get_security_group: an admin, or the group's project's readers. */
export const seesGroup = (auth: AuthContext, g: { project_id: string }) => readerOf(auth, g.project_id);

/** A group the caller sees, or Neutron's SecurityGroupNotFound. */
export async function visibleGroup(auth: AuthContext, id: string): Promise<SecurityGroup> {
  const g = await getSecurityGroup(id);
  if (!g || !seesGroup(auth, g)) throw securityGroupNotFound(id);
  return g;
}

/**
 * _ensure_default_security_group: the project's default group made on its first use, by the
 * project itself or an admin (another project's member makes none for it, Neutron's bug 1987410).
 */
export async function ensureDefaultGroup(
  auth: AuthContext,
  project: string,
  now: Date,
  /** read the table whatever this container saw (a list shows what is there) */
  fresh = false,
): Promise<string | undefined> {
  if (project !== auth.project_id && !auth.isAdmin) return undefined;
  return ensureDefaultSecurityGroup(project, stamp(now), fresh);
}

/** The name validator of a group's name (_validate_name_not_default): no second `default`. */
function nameOf(body: Body): string | undefined {
  const name = stringAttr(body, "name");
  if (name !== undefined && name.toLowerCase() === "default")
    throw new Refusal(409, "Default security group already exists.", "SecurityGroupDefaultAlreadyExists");
  return name;
}

const newRequestId = () => `req-${randomUUID()}`;

/** A new group in the caller's project (an admin's: any), with Neutron's egress rules. */
export async function createGroup(auth: AuthContext, body: Body, now: Date): Promise<SecurityGroup> {
  const project = projectOf(auth, body);
  if (!memberOf(auth, auth.project_id)) throw policyRefused("create_security_group");
  const name = nameOf(body) ?? "";
  const description = stringAttr(body, "description") ?? "";
  // Neutron makes the project's default group before its first other one
  await ensureDefaultSecurityGroup(project, stamp(now));
  return createSecurityGroup(
    { id: randomUUID(), name, description, project_id: project, now: stamp(now) },
    securityGroupQuota(),
  );
}

/** PUT: name and description (the default group keeps its name). */
export async function updateGroup(
  auth: AuthContext,
  id: string,
  body: Body,
  now: Date,
): Promise<SecurityGroup> {
  const g = await visibleGroup(auth, id);
  if (!memberOf(auth, g.project_id)) refuse(auth, g.project_id, "update_security_group");
  const name = nameOf(body);
  if (name !== undefined && g.name === "default")
    throw new Refusal(
      409,
      "Updating default security group not allowed.",
      "SecurityGroupCannotUpdateDefault",
    );
  const description = stringAttr(body, "description");
  const updated = await updateSecurityGroup(id, {
    ...(name === undefined ? {} : { name }),
    ...(description === undefined ? {} : { description }),
    updated_at: stamp(now),
  });
  if (!updated) throw securityGroupNotFound(id);
  return updated;
}

/**
 * DELETE: refused while a port is in it (SecurityGroupInUse, 409), and the default group to all
 * but admins; the rules of other groups naming it as remote go with it, and the servers of those
 * groups' members are told.
 */
export async function deleteGroup(auth: AuthContext, id: string): Promise<void> {
  const g = await visibleGroup(auth, id);
  if (!memberOf(auth, g.project_id)) refuse(auth, g.project_id, "delete_security_group");
  if (((await memberCount(id)) ?? 0) > 0)
    throw new Refusal(409, `Security Group ${id} in use.`, "SecurityGroupInUse");
  if (g.name === "default" && !auth.isAdmin)
    throw new Refusal(
      409,
      "Insufficient rights for removing default security group.",
      "SecurityGroupCannotRemoveDefault",
    );
  const deleted = await deleteSecurityGroup(id);
  if (!deleted) throw securityGroupNotFound(id);
  await refreshPortFilters({ rulesOf: deleted.referrers }, newRequestId());
}

/** The attributes a rule's create may give (the attribute map's, with standard attributes). */
const RULE_CREATE = [
  "security_group_id",
  "remote_group_id",
  "direction",
  "protocol",
  "port_range_min",
  "port_range_max",
  "ethertype",
  "remote_ip_prefix",
  "tenant_id",
  "project_id",
  "description",
];

/**
 * A new rule: the body converted and checked as Neutron does (ruleSpecOf), the group's owner's
 * member or an admin, the remote group one the rule's project sees, no duplicate, within the
 * project's rules quota. The group's members' servers are told.
 */
export async function createRule(auth: AuthContext, body: Body, now: Date): Promise<SecurityGroupRule> {
  required(body, "security_group_id");
  required(body, "direction");
  stringAttr(body, "security_group_id", 36);
  const spec = ruleSpecOf(body);
  const project = projectOf(auth, body);
  const group = await getSecurityGroup(spec.security_group_id);
  if (!group || !seesGroup(auth, group)) throw securityGroupNotFound(spec.security_group_id);
  if (!memberOf(auth, group.project_id)) refuse(auth, group.project_id, "create_security_group_rule");
  // _check_security_group with the rule's project: an admin's rule may name any group
  const asRuleProject: AuthContext = project === auth.project_id ? auth : { ...auth, project_id: project };
  if (spec.remote_group_id !== null) {
    const remote = spec.remote_group_id === group.id ? group : await getSecurityGroup(spec.remote_group_id);
    if (!remote || !seesGroup(asRuleProject, remote)) throw securityGroupNotFound(spec.remote_group_id);
  }
  const at = stamp(now);
  const rule = await addSecurityGroupRule(
    { ...spec, id: randomUUID(), project_id: project, created_at: at, updated_at: at, revision_number: 0 },
    securityGroupQuota(),
  );
  await refreshPortFilters({ rulesOf: [group.id] }, newRequestId());
  return rule;
}

/** A rule the caller sees (get_security_group_rule: its group's readers), or Neutron's 404. */
export async function visibleRule(
  auth: AuthContext,
  id: string,
): Promise<{ rule: SecurityGroupRule; group: SecurityGroup }> {
  const found = await getSecurityGroupRule(id);
  if (!found || !seesGroup(auth, found.group)) throw securityGroupRuleNotFound(id);
  return found;
}

/** DELETE a rule: its group's members' servers are told. */
export async function deleteRule(auth: AuthContext, id: string): Promise<void> {
  const { group } = await visibleRule(auth, id);
  if (!memberOf(auth, group.project_id)) refuse(auth, group.project_id, "delete_security_group_rule");
  try {
    await deleteSecurityGroupRule(id);
  } catch (e) {
    if (e instanceof NetworkingError && e.type === "SecurityGroupRuleNotFound")
      throw securityGroupRuleNotFound(id);
    throw e;
  }
  await refreshPortFilters({ rulesOf: [group.id] }, newRequestId());
}

/** Every rule the caller sees, with whether its group is its project's default. */
async function visibleRules(
  auth: AuthContext,
): Promise<(SecurityGroupRule & { belongs_to_default: boolean })[]> {
  return (await listSecurityGroups())
    .filter((g) => seesGroup(auth, g))
    .flatMap((g) => g.rules.map((r) => ({ ...r, belongs_to_default: g.is_default })));
}

/** The project a list makes the default group of: its project filter's first, or the caller's. */
function listedProject(auth: AuthContext, filters: [string, string[]][]): string {
  const f = new Map(filters);
  return f.get("project_id")?.[0] ?? f.get("tenant_id")?.[0] ?? auth.project_id;
}

/**
 * Neutron's native bulk create of rules (create_security_group_rule_bulk_native): one group and
 * one project, and no rule twice in the POST.
 */
function checkBulkRules(items: Body[]): void {
  if (new Set(items.map((i) => String(i.security_group_id))).size > 1)
    throw badRequest("Only allowed to update rules for one security profile at a time");
  if (new Set(items.map((i) => String(i.project_id ?? i.tenant_id ?? ""))).size > 1)
    throw badRequest("Multiple project_ids in bulk security group rule create not allowed");
  const keys = new Set<string>();
  for (const i of items) {
    let key: string;
    try {
      key = ruleKey(ruleSpecOf(i));
    } catch {
      continue; // refused when it is created, with its own reason
    }
    if (keys.has(key))
      throw new Refusal(409, "Duplicate Security Group Rule in POST.", "DuplicateSecurityGroupRuleInPost");
    keys.add(key);
  }
}

export function securityGroupRoutes(app: Hono<NetEnv>, deps: AuthDeps): void {
  resourceRoutes<SecurityGroup>(app, {
    name: "security_group",
    path: "security-groups",
    notFound: securityGroupNotFound,
    attributes: SECURITY_GROUP_ATTRIBUTES,
    createAttributes: ["name", "description", "tenant_id", "project_id"],
    view: (g) => securityGroupView(g),
    beforeList: async (auth, filters) => {
      await ensureDefaultGroup(auth, listedProject(auth, filters), deps.now(), true);
    },
    visible: async (auth) => (await listSecurityGroups()).filter((g) => seesGroup(auth, g)),
    find: visibleGroup,
    create: async (auth, body): Promise<Made> => {
      const g = await createGroup(auth, body, deps.now());
      return { view: securityGroupView(g), undo: () => deleteSecurityGroup(g.id) };
    },
  });
  app.put("/v2.0/security-groups/:id", async (c) => {
    const auth = c.get("auth");
    const id = c.req.param("id");
    await visibleGroup(auth, id);
    const body = await updateBody(c, "security_group", ["name", "description"]);
    return c.json({ security_group: securityGroupView(await updateGroup(auth, id, body, deps.now())) });
  });
  app.delete("/v2.0/security-groups/:id", async (c) => {
    await deleteGroup(c.get("auth"), c.req.param("id"));
    return c.body(null, 204);
  });

  resourceRoutes<SecurityGroupRule & { belongs_to_default: boolean }>(app, {
    name: "security_group_rule",
    path: "security-group-rules",
    notFound: securityGroupRuleNotFound,
    attributes: SECURITY_GROUP_RULE_ATTRIBUTES,
    createAttributes: RULE_CREATE,
    view: (r) => securityGroupRuleView(r, r.belongs_to_default),
    beforeList: async (auth, filters) => {
      await ensureDefaultGroup(auth, listedProject(auth, filters), deps.now(), true);
    },
    visible: visibleRules,
    find: async (auth, id) => {
      const { rule, group } = await visibleRule(auth, id);
      return { ...rule, belongs_to_default: group.is_default };
    },
    create: async (auth, body): Promise<Made> => {
      const rule = await createRule(auth, body, deps.now());
      const group = await getSecurityGroup(rule.security_group_id);
      return {
        view: securityGroupRuleView(rule, group?.is_default ?? false),
        undo: () => deleteSecurityGroupRule(rule.id),
      };
    },
    checkBulk: checkBulkRules,
  });
  app.delete("/v2.0/security-group-rules/:id", async (c) => {
    await deleteRule(c.get("auth"), c.req.param("id"));
    return c.body(null, 204);
  });
}
