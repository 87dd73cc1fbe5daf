// Server group requests, checked without I/O: the create body (microversion 2.64's `policy` and
// `rules`, or the older one-element `policies` list), the list query, and who sees a group.
import { z } from "zod";
import type { ServerGroup, ServerGroupPolicy } from "../../catalog/types.js";
import type { AuthContext } from "../auth.js";
import { type ApiError, badRequest, notFound } from "../errors.js";
import { type Query, queryOne } from "../request.js";
import { novaName, positiveInt, validate } from "./common.js";
import { MAX_LIMIT } from "./servers.js";

export const SERVER_GROUP_POLICIES = [
  "anti-affinity",
  "affinity",
  "soft-anti-affinity",
  "soft-affinity",
] as const satisfies readonly ServerGroupPolicy[];

const policy = z.enum(SERVER_GROUP_POLICIES);

export const createServerGroupSchema = z.strictObject({
  server_group: z.strictObject({
    name: novaName,
    policy: policy.optional(),
    rules: z.strictObject({ max_server_per_host: positiveInt().optional() }).optional(),
    /** before 2.64: a list of exactly one policy */
    policies: z.array(policy).min(1).max(1).optional(),
  }),
});

/** Nova's InstanceGroupNotFound text; a create with an unusable `group` hint answers it as 400. */
export const groupNotFoundMessage = (id: string): string => `Instance group ${id} could not be found.`;
export const serverGroupNotFound = (id: string): ApiError => notFound(groupNotFoundMessage(id));

/** The group a POST /os-server-groups body describes, for the caller's project. */
export function parseCreateServerGroup(raw: unknown, auth: AuthContext, id: string, now: Date): ServerGroup {
  const g = validate(createServerGroupSchema, raw).server_group;
  const envelope = (raw as { server_group: unknown }).server_group;
  if (g.policy !== undefined && g.policies !== undefined) {
    throw badRequest(
      `Invalid input for field/attribute server_group. Value: ${JSON.stringify(envelope)}. ` +
        "Additional properties are not allowed ('policies' was unexpected)",
    );
  }
  const chosen = g.policy ?? g.policies?.[0];
  if (chosen === undefined) {
    throw badRequest(
      `Invalid input for field/attribute server_group. Value: ${JSON.stringify(envelope)}. ` +
        "'policy' is a required property",
    );
  }
  const rules =
    g.rules?.max_server_per_host !== undefined ? { max_server_per_host: g.rules.max_server_per_host } : {};
  if (chosen !== "anti-affinity" && Object.keys(rules).length > 0) {
    throw badRequest("Only anti-affinity policy supports rules.");
  }
  return {
    id,
    name: g.name,
    policy: chosen,
    rules,
    members: [],
    project_id: auth.project_id,
    user_id: auth.user_id,
    created_at: now.toISOString(),
  };
}

export interface ServerGroupListQuery {
  /** an admin's all_projects: every project's groups */
  allProjects: boolean;
  limit: number;
  offset: number;
}

function nonNegative(query: Query, name: string): number | undefined {
  const v = queryOne(query, name);
  if (v === undefined) return undefined;
  if (!/^[0-9]+$/.test(v)) throw badRequest(`${name} param must be an integer`);
  return Number(v);
}

/** Nova ignores all_projects from a non-admin (it lists their own groups). */
export function parseServerGroupListQuery(query: Query, auth: AuthContext): ServerGroupListQuery {
  return {
    allProjects: auth.isAdmin && "all_projects" in query,
    limit: Math.min(nonNegative(query, "limit") ?? MAX_LIMIT, MAX_LIMIT),
    offset: nonNegative(query, "offset") ?? 0,
  };
}

/** A member sees their project's groups; an admin every group. */
export function canSeeServerGroup(g: ServerGroup, auth: AuthContext): boolean {
  return auth.isAdmin || g.project_id === auth.project_id;
}

/** Nova's quota answer for a create into a full group. */
export const GROUP_MEMBERS_OVER_QUOTA = "Quota exceeded, too many servers in group";
/** Nova's quota answer for one server group too many. */
export const SERVER_GROUPS_OVER_QUOTA = "Quota exceeded, too many server groups.";
