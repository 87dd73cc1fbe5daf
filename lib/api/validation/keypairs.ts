// Keypair requests, checked without I/O: the create body per microversion (2.2 adds `type`, 2.10 an
// admin's `user_id`, 2.92 requires `public_key` and allows `@` and `.` in names), and the list
// query's paging (2.35).
import { z } from "zod";
import type { KeypairType } from "../../catalog/keypairs.js";
import type { AuthContext } from "../auth.js";
import { badRequest, policyForbidden } from "../errors.js";
import { type ApiVersion, forVersion, type Ranged } from "../microversion.js";
import { type Query, queryOne } from "../request.js";
import { MAX_LIMIT, novaName, validate } from "./common.js";

export const KEYPAIR_RULES = {
  create: "os_compute_api:os-keypairs:create",
  index: "os_compute_api:os-keypairs:index",
  show: "os_compute_api:os-keypairs:show",
  delete: "os_compute_api:os-keypairs:delete",
} as const;

// parameter_types.keypair_name_special_chars(_v292): a name, and these characters only
const name = novaName.pipe(z.string().regex(/^[_\- a-zA-Z0-9]+$/));
const nameV292 = novaName.pipe(z.string().regex(/^[_\-@. a-zA-Z0-9]+$/));
const type = z.enum(["ssh", "x509"]);

const createSchemas: Ranged<{ value: z.ZodType }>[] = [
  {
    max: "2.1",
    value: z.strictObject({ keypair: z.strictObject({ name, public_key: z.string().optional() }) }),
  },
  {
    min: "2.2",
    max: "2.9",
    value: z.strictObject({
      keypair: z.strictObject({ name, type: type.optional(), public_key: z.string().optional() }),
    }),
  },
  {
    min: "2.10",
    max: "2.91",
    value: z.strictObject({
      keypair: z.strictObject({
        name,
        type: type.optional(),
        public_key: z.string().optional(),
        user_id: z.string().optional(),
      }),
    }),
  },
  {
    min: "2.92",
    value: z.strictObject({
      keypair: z.strictObject({
        name: nameV292,
        type: type.optional(),
        public_key: z.string(),
        user_id: z.string().optional(),
      }),
    }),
  },
];

export interface KeypairCreate {
  name: string;
  type: KeypairType;
  /** absent: generate one (before 2.92 only) */
  public_key?: string;
  user_id: string;
}

/** Whose keypairs a request acts on: the caller's, or (2.10+) `user_id` if the policy allows. */
export function keypairOwner(asked: string | undefined, auth: AuthContext, rule: string): string {
  const owner = asked ?? auth.user_id;
  // Nova's keypair policies: admin or the owner
  if (owner !== auth.user_id && !auth.isAdmin) throw policyForbidden(rule);
  return owner;
}

export function parseCreateKeypair(raw: unknown, v: ApiVersion, auth: AuthContext): KeypairCreate {
  const { keypair: k } = validate(forVersion(createSchemas, v), raw) as {
    keypair: { name: string; type?: KeypairType; public_key?: string; user_id?: string };
  };
  return {
    name: k.name,
    type: k.type ?? "ssh",
    ...(k.public_key !== undefined ? { public_key: k.public_key } : {}),
    user_id: keypairOwner(k.user_id, auth, KEYPAIR_RULES.create),
  };
}

/** 2.10+: `?user_id=` (an admin's view of another user's keys). */
export function queryUserId(query: Query, v: ApiVersion): string | undefined {
  return v.atLeast("2.10") ? query.user_id?.[0] : undefined;
}

export interface KeypairPage {
  limit?: number;
  marker?: string;
}

/** 2.35+: limit (at most the API's max_limit) and marker (a keypair name). */
export function parseKeypairPage(query: Query, v: ApiVersion): KeypairPage {
  if (!v.atLeast("2.35")) return {};
  const page: KeypairPage = { limit: MAX_LIMIT };
  const limit = queryOne(query, "limit");
  if (limit !== undefined) {
    if (!/^[0-9]+$/.test(limit)) throw badRequest(`Invalid input received: limit must be an integer`);
    page.limit = Math.min(Number(limit), MAX_LIMIT);
  }
  const marker = queryOne(query, "marker");
  if (marker !== undefined) page.marker = marker;
  return page;
}

/**
 * From 2.75 a keypair request takes only the query parameters it knows (Nova's
 * additionalProperties: False): user_id, and limit and marker for the list.
 */
export function checkKeypairQuery(query: Query, v: ApiVersion, list: boolean): void {
  if (!v.atLeast("2.75")) return;
  const allowed = list ? ["user_id", "limit", "marker"] : ["user_id"];
  const extra = Object.keys(query).filter((k) => !allowed.includes(k));
  if (extra.length > 0) {
    const names = extra.map((k) => `'${k}'`).join(", ");
    throw badRequest(
      `Additional properties are not allowed (${names} ${extra.length > 1 ? "were" : "was"} unexpected)`,
    );
  }
}
