// Nova's security group proxy APIs (nova/api/openstack/compute/security_groups.py):
// os-security-groups and os-security-group-rules, up to microversion 2.35 and 404 after (Nova's
// MAX_PROXY_API_SUPPORT_VERSION), over the Networking front's own operations as the caller (Nova
// calls Neutron with the user's token); a server's groups (GET /servers/{id}/os-security-groups,
// every version); and the addSecurityGroup / removeSecurityGroup actions. Neutron's refusals come
// back as Nova turns them: its text, Nova's status.
import { z } from "zod";
import {
  addToInstance,
  instanceSecurityGroups,
  removeFromInstance,
  SecurityGroupRefused,
} from "../../instances/security-groups.js";
import { NetworkingError } from "../../network/cidr.js";
import type { SecurityGroup } from "../../network/security-groups.js";
import { getSecurityGroup, listSecurityGroups } from "../../network/store/security-groups.js";
import type { AuthContext } from "../auth.js";
import { ApiError, badRequest, conflict, forbidden, notFound, Refusal } from "../errors.js";
import {
  createGroup,
  createRule,
  deleteGroup,
  deleteRule,
  ensureDefaultGroup,
  seesGroup,
  updateGroup,
  visibleGroup,
  visibleRule,
} from "../network/security-groups.js";
import type { ApiResult, Query, Route, RouteCall } from "../request.js";
import { queryOne } from "../request.js";
import { MAX_LIMIT, parseJsonBody, UUID_RE, validate } from "../validation/common.js";
import {
  byTenantAndName,
  novaGroupView,
  novaRule,
  novaRuleView,
  type RemoteGroupData,
} from "../views/security-groups.js";
import { findServer } from "./servers.js";

/** Nova's MAX_PROXY_API_SUPPORT_VERSION: the proxies are 404 after it. */
const MAX_PROXY = "2.35";

/** How Nova's proxy turns Neutron's refusal (neutronclient's exception, its text kept). */
function neutronRefusal(e: unknown, as: { 400?: "bad"; 404?: "notFound"; 409?: "bad" | "forbidden" }): never {
  const r =
    e instanceof NetworkingError
      ? { status: e.status as number, message: e.message }
      : e instanceof Refusal && !(e instanceof ApiError)
        ? { status: e.status, message: e.message }
        : undefined;
  if (!r) throw e;
  if (r.status === 404 && as[404]) throw notFound(r.message);
  if (r.status === 409 && as[409] === "forbidden") throw forbidden(r.message);
  if ((r.status === 409 && as[409]) || (r.status === 400 && as[400])) throw badRequest(r.message);
  throw e;
}

/** security_group_api.validate_id */
function groupId(id: string): string {
  if (!UUID_RE.test(id)) throw badRequest("Security group id should be uuid");
  return id;
}

/** security_group_api.get: the group as the caller sees it, or Nova's 404 with Neutron's text. */
async function getGroup(auth: AuthContext, id: string): Promise<SecurityGroup> {
  try {
    return await visibleGroup(auth, id);
  } catch (e) {
    neutronRefusal(e, { 404: "notFound" });
  }
}

/**
 * The `group` of rules naming a remote group: its name and project, read once per group the
 * caller sees (_get_group_rule_data_by_rule_group_id); a group it cannot see, or gone, leaves
 * the rule out.
 */
async function remoteData(auth: AuthContext, groups: readonly SecurityGroup[]): Promise<RemoteGroupData> {
  const known = new Map<string, { name: string; tenant_id: string } | undefined>(
    groups.map((g) => [g.id, { name: g.name, tenant_id: g.project_id }]),
  );
  for (const g of groups)
    for (const r of g.rules) {
      const id = r.remote_group_id;
      if (!id || known.has(id)) continue;
      const remote = await getSecurityGroup(id);
      known.set(
        id,
        remote && seesGroup(auth, remote) ? { name: remote.name, tenant_id: remote.project_id } : undefined,
      );
    }
  return (id) => known.get(id);
}

function nonNegative(query: Query, name: string): number | undefined {
  const v = queryOne(query, name);
  if (v === undefined) return undefined;
  if (!/^[0-9]+$/.test(v))
    throw badRequest(
      `Invalid input for query parameters ${name}. Value: ${v}. '${v}' does not match '^[0-9]*$'`,
    );
  return Number(v);
}

/** GET /os-security-groups: the project's groups (an admin's all_tenants: every group). */
async function listGroups({ ctx, deps, query }: RouteCall): Promise<ApiResult> {
  const { auth } = ctx;
  const all = auth.isAdmin && "all_tenants" in query;
  await ensureDefaultGroup(auth, auth.project_id, deps.now(), true);
  const groups = (await listSecurityGroups())
    .filter((g) => seesGroup(auth, g) && (all || g.project_id === auth.project_id))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  // common.limited: offset, then at most limit (max_limit 1000)
  const offset = nonNegative(query, "offset") ?? 0;
  const limit = Math.min(nonNegative(query, "limit") ?? MAX_LIMIT, MAX_LIMIT);
  const page = groups.slice(offset, offset + limit);
  const remote = await remoteData(auth, page);
  return {
    status: 200,
    body: { security_groups: page.map((g) => novaGroupView(g, remote)).sort(byTenantAndName) },
  };
}

async function showGroup({ ctx, params }: RouteCall): Promise<ApiResult> {
  const g = await getGroup(ctx.auth, groupId(params.id!));
  return { status: 200, body: { security_group: novaGroupView(g, await remoteData(ctx.auth, [g])) } };
}

/** create and update: both name and description, strings of at most 255 characters. */
const groupBody = z.looseObject({
  security_group: z.looseObject({ name: z.string().max(255), description: z.string().max(255) }),
});

async function createGroupRoute({ ctx, deps, body }: RouteCall): Promise<ApiResult> {
  const { security_group: sg } = validate(groupBody, parseJsonBody(body));
  let g: SecurityGroup;
  try {
    g = await createGroup(ctx.auth, { name: sg.name, description: sg.description }, deps.now());
  } catch (e) {
    // a 409 (over quota, a second `default`) is Nova's SecurityGroupLimitExceeded
    neutronRefusal(e, { 400: "bad", 409: "forbidden" });
  }
  return { status: 200, body: { security_group: novaGroupView(g, await remoteData(ctx.auth, [g])) } };
}

async function updateGroupRoute({ ctx, deps, params, body }: RouteCall): Promise<ApiResult> {
  const id = groupId(params.id!);
  await getGroup(ctx.auth, id);
  const { security_group: sg } = validate(groupBody, parseJsonBody(body));
  let g: SecurityGroup;
  try {
    g = await updateGroup(ctx.auth, id, { name: sg.name, description: sg.description }, deps.now());
  } catch (e) {
    // (Nova lets Neutron's 409 through as a 500; a 400 says what Neutron said)
    neutronRefusal(e, { 400: "bad", 404: "notFound", 409: "bad" });
  }
  return { status: 200, body: { security_group: novaGroupView(g, await remoteData(ctx.auth, [g])) } };
}

async function deleteGroupRoute({ ctx, params }: RouteCall): Promise<ApiResult> {
  const id = groupId(params.id!);
  await getGroup(ctx.auth, id);
  try {
    await deleteGroup(ctx.auth, id);
  } catch (e) {
    // in use, or the default group: Nova's Invalid
    neutronRefusal(e, { 404: "notFound", 409: "bad" });
  }
  return { status: 202 };
}

const uuid = z.string().refine((s) => UUID_RE.test(s), { message: "is not a 'uuid'" });
const ruleBody = z.looseObject({
  security_group_rule: z.looseObject({
    group_id: uuid.nullable().optional(),
    parent_group_id: uuid,
    to_port: z.unknown().optional(),
    from_port: z.unknown().optional(),
    ip_protocol: z.unknown().optional(),
    cidr: z.unknown().optional(),
  }),
});

/** Python's int() of what Nova's API passes along unvalidated; undefined when it raises ValueError. */
function pyInt(v: unknown): number | undefined {
  if (typeof v === "number") return Math.trunc(v);
  if (typeof v === "string" && /^\s*[+-]?\d+\s*$/.test(v)) return Number.parseInt(v, 10);
  return undefined;
}

/** Nova's new ingress rule (security_group_api._new_ingress_rule); undefined: too little to build one. */
function novaNewRule(
  protocol: unknown,
  fromPort: unknown,
  toPort: unknown,
  groupId: string | undefined,
  cidr: string | undefined,
): { group_id?: string; cidr?: string; protocol?: string; from_port?: number; to_port?: number } | undefined {
  const values: {
    group_id?: string;
    cidr?: string;
    protocol?: string;
    from_port?: number;
    to_port?: number;
  } = {};
  let from = fromPort ?? null;
  let to = toPort ?? null;
  if (groupId) {
    values.group_id = groupId;
    // everything open when a source group gives no range
    const upper = typeof protocol === "string" ? protocol.toUpperCase() : "";
    if (upper === "ICMP" && from === null && to === null) [from, to] = [-1, -1];
    else if ((upper === "TCP" || upper === "UDP") && from === null && to === null) [from, to] = [1, 65535];
  } else if (cidr) values.cidr = cidr;
  if (protocol && from !== null && to !== null) {
    const p = String(protocol);
    const f = pyInt(from);
    const t = pyInt(to);
    if (f === undefined || t === undefined)
      throw badRequest(
        p.toUpperCase() === "ICMP"
          ? "Invalid input received: Type and Code must be integers for ICMP protocol type"
          : "Invalid input received: To and From ports must be integers",
      );
    const upper = p.toUpperCase();
    if (!["TCP", "UDP", "ICMP"].includes(upper)) throw badRequest(`Invalid IP protocol ${p}.`);
    const range = (msg: string) => badRequest(`Invalid port range ${f}:${t}. ${msg}`);
    if ((upper === "TCP" || upper === "UDP") && f > t)
      throw range("Former value cannot be greater than the later");
    if ((upper === "TCP" || upper === "UDP") && (f < 1 || t > 65535))
      throw range(`Valid ${upper} ports should be between 1-65535`);
    if (upper === "ICMP" && (f < -1 || f > 255 || t < -1 || t > 255))
      throw range("For ICMP, the type:code must be valid");
    return { ...values, protocol: p, from_port: f, to_port: t };
  }
  // a cidr rule needs a protocol and its ports
  return cidr ? undefined : values;
}

/** parse_cidr: none is 0.0.0.0/0; anything else a valid network (netutils.is_valid_cidr). */
function parseCidr(cidr: unknown): string {
  if (cidr === undefined || cidr === null || cidr === "") return "0.0.0.0/0";
  const text = decodeURIComponent(String(cidr));
  const m = /^([^/]+)\/(\d{1,3})$/.exec(text);
  const valid =
    m &&
    ((/^\d{1,3}(\.\d{1,3}){3}$/.test(m[1]!) &&
      m[1]!.split(".").every((o) => Number(o) <= 255) &&
      Number(m[2]) <= 32) ||
      (m[1]!.includes(":") && Number(m[2]) <= 128 && /^[0-9a-f:.]+$/i.test(m[1]!)));
  if (!valid) throw badRequest(`${text} is not a valid IP network.`);
  return text;
}

/** POST /os-security-group-rules: an ingress rule, checked in Nova's words, made by Neutron. */
async function createRuleRoute({ ctx, deps, body }: RouteCall): Promise<ApiResult> {
  const { auth } = ctx;
  const { security_group_rule: r } = validate(ruleBody, parseJsonBody(body));
  const parent = await getGroup(auth, r.parent_group_id);
  const source = r.group_id ? await getGroup(auth, r.group_id) : undefined;
  const rule = novaNewRule(
    r.ip_protocol,
    r.from_port,
    r.to_port,
    r.group_id ?? undefined,
    r.group_id ? undefined : parseCidr(r.cidr),
  );
  if (!rule) throw badRequest("Not enough parameters to build a valid rule.");
  if (rule.cidr) {
    const [net, len] = rule.cidr.split("/");
    if (net !== "0.0.0.0" && net !== "::" && len === "0")
      throw badRequest(`Bad prefix for network in cidr ${rule.cidr}`);
  }
  // _rule_exists: Nova compares its own form of the group's (ingress) rules
  const exists = parent.rules
    .filter((x) => x.direction === "ingress")
    .map(novaRule)
    .some(
      (x) =>
        x.group_id === (rule.group_id ?? null) &&
        x.cidr === (rule.cidr ?? null) &&
        x.from_port === (rule.from_port ?? null) &&
        x.to_port === (rule.to_port ?? null) &&
        x.protocol === (rule.protocol ?? null),
    );
  if (exists) throw badRequest(`This rule already exists in group ${parent.id}`);
  const v6 = rule.cidr?.includes(":");
  let made: Awaited<ReturnType<typeof createRule>>;
  try {
    made = await createRule(
      auth,
      {
        direction: "ingress",
        protocol: rule.protocol ?? null,
        ethertype: v6 ? "IPv6" : "IPv4",
        remote_ip_prefix: rule.cidr ?? null,
        security_group_id: parent.id,
        remote_group_id: rule.group_id ?? null,
        ...(rule.from_port !== undefined && rule.from_port !== -1 ? { port_range_min: rule.from_port } : {}),
        ...(rule.to_port !== undefined && rule.to_port !== -1 ? { port_range_max: rule.to_port } : {}),
      },
      deps.now(),
    );
  } catch (e) {
    // Neutron's 409 (a duplicate, the quota) is Nova's SecurityGroupLimitExceeded
    neutronRefusal(e, { 400: "bad", 404: "notFound", 409: "forbidden" });
  }
  const view = novaRuleView(novaRule(made), (id) =>
    source && id === source.id ? { name: source.name, tenant_id: source.project_id } : undefined,
  );
  return { status: 200, body: { security_group_rule: view } };
}

async function deleteRuleRoute({ ctx, params }: RouteCall): Promise<ApiResult> {
  const id = groupId(params.id!);
  try {
    await visibleRule(ctx.auth, id);
    await deleteRule(ctx.auth, id);
  } catch (e) {
    neutronRefusal(e, { 404: "notFound", 409: "bad", 400: "bad" });
  }
  return { status: 202 };
}

/** GET /servers/{id}/os-security-groups: the groups of the server's ports, in full. */
async function serverGroups({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  const rec = await findServer(deps, params.id!, ctx.auth);
  const groups = await instanceSecurityGroups(rec, ctx.auth);
  const remote = await remoteData(ctx.auth, groups);
  return {
    status: 200,
    body: { security_groups: groups.map((g) => novaGroupView(g, remote)).sort(byTenantAndName) },
  };
}

/** The action's body: {"name": "<group>"} (schemas/security_groups.py), then Nova's own check. */
function actionGroupName(action: string, arg: unknown): string {
  const { [action]: a } = validate(z.looseObject({ [action]: z.strictObject({ name: z.string().min(1) }) }), {
    [action]: arg,
  }) as Record<string, { name: string }>;
  if (a!.name.trim() === "") throw badRequest("Security group name cannot be empty");
  return a!.name;
}

function securityGroupRefusal(e: unknown): never {
  if (!(e instanceof SecurityGroupRefused)) throw e;
  if (e.status === 404) throw notFound(e.message);
  if (e.status === 409) throw conflict(e.message);
  throw badRequest(e.message);
}

/** addSecurityGroup: the group on every port of the server; 202. */
export async function addSecurityGroup(
  call: RouteCall,
  rec: Parameters<typeof addToInstance>[0],
  arg: unknown,
) {
  const name = actionGroupName("addSecurityGroup", arg);
  try {
    await addToInstance(rec, name, call.ctx.auth, call.ctx.requestId);
  } catch (e) {
    securityGroupRefusal(e);
  }
  return { status: 202 } satisfies ApiResult;
}

/** removeSecurityGroup: the group off every port of the server that has it; 202. */
export async function removeSecurityGroup(
  call: RouteCall,
  rec: Parameters<typeof removeFromInstance>[0],
  arg: unknown,
) {
  const name = actionGroupName("removeSecurityGroup", arg);
  try {
    await removeFromInstance(rec, name, call.ctx.auth, call.ctx.requestId);
  } catch (e) {
    securityGroupRefusal(e);
  }
  return { status: 202 } satisfies ApiResult;
}

export const securityGroupRoutes: Route[] = [
  { method: "GET", pattern: "/os-security-groups", handler: listGroups, max: MAX_PROXY },
  { method: "POST", pattern: "/os-security-groups", handler: createGroupRoute, max: MAX_PROXY },
  { method: "GET", pattern: "/os-security-groups/:id", handler: showGroup, max: MAX_PROXY },
  { method: "PUT", pattern: "/os-security-groups/:id", handler: updateGroupRoute, max: MAX_PROXY },
  { method: "DELETE", pattern: "/os-security-groups/:id", handler: deleteGroupRoute, max: MAX_PROXY },
  { method: "POST", pattern: "/os-security-group-rules", handler: createRuleRoute, max: MAX_PROXY },
  { method: "DELETE", pattern: "/os-security-group-rules/:id", handler: deleteRuleRoute, max: MAX_PROXY },
  { method: "GET", pattern: "/servers/:id/os-security-groups", handler: serverGroups },
];
