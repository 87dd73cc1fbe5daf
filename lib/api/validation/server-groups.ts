// Server group requests, checked without I/O: the create body per microversion (a one-element
// `policies` list until 2.63, soft policies from 2.15, `policy` and `rules` from 2.64), the list
// query, and who sees a group.
import { z } from "zod";
import type { ServerGroup, ServerGroupPolicy } from "../../catalog/types.js";
import type { AuthContext } from "../auth.js";
import { type ApiError, badRequest, notFound } from "../errors.js";
import { type ApiVersion, forVersion, type Ranged } from "../microversion.js";
import { type Query, queryOne } from "../request.js";
import { MAX_LIMIT, novaName, positiveInt, validate } from "./common.js";

export const SERVER_GROUP_POLICIES = [
  "anti-affinity",
  "affinity",
  "soft-anti-affinity",
  "soft-affinity",
] as const satisfies readonly ServerGroupPolicy[];

const policy = z.enum(SERVER_GROUP_POLICIES);
// soft policies arrived with 2.15
const hardPolicy = z.enum(["anti-affinity", "affinity"]);

/** 2.64+: one policy, and rules (max_server_per_host, anti-affinity only). */
export const createServerGroupSchema = z.strictObject({
  server_group: z.strictObject({
    name: novaName,
    policy,
    rules: z.strictObject({ max_server_per_host: positiveInt().optional() }).optional(),
  }),
});

// before 2.64: a list of exactly one policy
const legacySchema = (p: typeof policy | typeof hardPolicy) =>
  z.strictObject({ server_group: z.strictObject({ name: novaName, policies: z.array(p).min(1).max(1) }) });

const createSchemas: Ranged<{ value: z.ZodType }>[] = [
  { max: "2.14", value: legacySchema(hardPolicy) },
  { min: "2.15", max: "2.63", value: legacySchema(policy) },
  { min: "2.64", value: createServerGroupSchema },
];

/** Nova's InstanceGroupNotFound text; a create with an unusable `group` hint answers it as 400. */
export const groupNotFoundMessage = (id: string): string => `Instance group ${id} could not be found.`;
export const serverGroupNotFound = (id: string): ApiError => notFound(groupNotFoundMessage(id));

/** The group a POST /os-server-groups body describes (per microversion), for the caller's project. */
export function parseCreateServerGroup(
  raw: unknown,
  auth: AuthContext,
  id: string,
  now: Date,
  v: ApiVersion,
): ServerGroup {
  const { server_group: g } = validate(forVersion(createSchemas, v), raw) as {
    server_group: {
      name: string;
      policy?: ServerGroupPolicy;
      policies?: ServerGroupPolicy[];
      rules?: { max_server_per_host?: number };
    };
  };
  const chosen = (g.policy ?? g.policies?.[0])!;
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
