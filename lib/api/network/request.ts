// What every Networking resource shares, as Neutron's one controller (api/v2/base.py) serves every
// resource from its declaration: the list, show and create routes (`resourceRoutes`), the request
// body ({"<resource>": {...}}, or a bulk create's list) checked with zod as Neutron's
// prepare_request_body checks it, neutron-lib's attribute validators as zod schemas with their
// texts, and the refusals Neutron words.
import type { Context, Hono } from "hono";
import { z } from "zod";
import type { AuthContext } from "../auth.js";
import type { BodyRules } from "../body.js";
import { Refusal } from "../errors.js";
import { type FrontEnv, jsonBody, readJson } from "../front.js";
import { byId, type ListQuery, listed, listParams } from "./listing.js";
import { type AttributeRule, policyRefused, pretendNotFound } from "./policy.js";
import { selectFields } from "./views.js";

export type NetEnv = FrontEnv;
export type C = Context<NetEnv>;
export type Body = Record<string, unknown>;

export const badRequest = (message: string) => new Refusal(400, message, "HTTPBadRequest");
export const notFound = (kind: "Network" | "Subnet" | "Port", id: string) =>
  new Refusal(404, `${kind} ${id} could not be found.`, `${kind}NotFound`);
/** Neutron's texts for security groups' 404s (extensions/securitygroup.py). */
export const securityGroupNotFound = (id: string) =>
  new Refusal(404, `Security group ${id} does not exist`, "SecurityGroupNotFound");
export const securityGroupRuleNotFound = (id: string) =>
  new Refusal(404, `Security group rule ${id} does not exist`, "SecurityGroupRuleNotFound");

/** Neutron's timestamps: seconds, UTC, a Z. */
export const stamp = (d: Date) => d.toISOString().replace(/\.\d+Z$/, "Z");

/** How Neutron reads a body: an empty one is null ("Resource body required"), neutron/api/wsgi.py. */
export const NEUTRON_BODY: BodyRules = {
  // webob's HTTPBadRequest with its own text
  malformedBody: () => badRequest("Malformed request body"),
  emptyBody: "null",
};

/** A zod issue that carries Neutron's text. */
const refusedWith = (ctx: z.RefinementCtx, message: string) => ctx.addIssue({ code: "custom", message });

const plainObject = (v: unknown): v is Body => !!v && typeof v === "object" && !Array.isArray(v);

/** One resource's attributes under its key, none but the allowed (api/v2/base.py's texts). */
function resourceOf(parsed: unknown, resource: string, allowed: readonly string[], ctx: z.RefinementCtx) {
  const body = plainObject(parsed) ? parsed[resource] : undefined;
  if (!plainObject(body)) return refusedWith(ctx, `Unable to find '${resource}' in request body`);
  const unknown = Object.keys(body).filter((k) => !allowed.includes(k));
  if (unknown.length) return refusedWith(ctx, `Unrecognized attribute(s) '${unknown.join(", ")}'`);
  return body;
}

/**
 * A PUT's body, or a POST's: one resource ({"network": {...}}) or several, Neutron's bulk create
 * ({"networks": [...]}, each item its attributes or {"network": {...}}): its items, and whether
 * it was a bulk one.
 */
const resourceRequest = (resource: string, allowed: readonly string[], bulk: boolean) =>
  z.unknown().transform((parsed, ctx) => {
    const collection = `${resource}s`;
    if (!parsed || typeof parsed !== "object") return refusedWith(ctx, "Resource body required") ?? z.NEVER;
    if (!bulk || !(collection in parsed)) {
      const one = resourceOf(parsed, resource, allowed, ctx);
      return one ? { items: [one], bulk: false } : z.NEVER;
    }
    const items = (parsed as Body)[collection];
    if (!Array.isArray(items) || items.length === 0) return refusedWith(ctx, "Resources required") ?? z.NEVER;
    const bodies: Body[] = [];
    for (const item of items) {
      const wrapped = item && typeof item === "object" && resource in item ? item : { [resource]: item };
      const one = resourceOf(wrapped, resource, allowed, ctx);
      if (!one) return z.NEVER;
      bodies.push(one);
    }
    return { items: bodies, bulk: true };
  });

/** A create's body (one resource, or a bulk create's), for c.req.valid("json"). */
const createBody = (resource: string, allowed: readonly string[]) =>
  jsonBody<ReturnType<typeof resourceRequest>, NetEnv>(
    NEUTRON_BODY,
    resourceRequest(resource, allowed, true),
    (f) => badRequest(f.issue.message),
  );

/**
 * A PUT's {"<resource>": {...}}, read where the route reads it (after the resource is found, so an
 * unknown one stays a 404 whatever the body).
 */
export async function updateBody(c: C, resource: string, allowed: readonly string[]): Promise<Body> {
  const r = resourceRequest(resource, allowed, false).safeParse(await readJson(c, NEUTRON_BODY));
  if (!r.success) throw badRequest(r.error.issues[0]!.message);
  return r.data.items[0]!;
}

/** A resource made by a POST, and how to take it back when a bulk create is refused later on. */
export type Made = { view: Body; undo: () => Promise<unknown> };

/**
 * Create what a POST asked for. A bulk create is all or nothing, as Neutron's: when an item is
 * refused, those made before it are deleted and the refusal answered.
 */
async function createResources(
  c: Context<NetEnv, string, { out: { json: { items: Body[]; bulk: boolean } } }>,
  resource: string,
  create: (body: Body) => Promise<Made>,
  /** checks a bulk create's items together before any is made (Neutron's native bulk) */
  checkBulk?: (items: Body[]) => void,
) {
  const { items, bulk } = c.req.valid("json");
  if (!bulk) return c.json({ [resource]: (await create(items[0]!)).view }, 201);
  checkBulk?.(items);
  const made: Made[] = [];
  try {
    for (const item of items) made.push(await create(item));
  } catch (e) {
    for (const m of made.reverse()) await m.undo().catch(() => undefined);
    throw e;
  }
  return c.json({ [`${resource}s`]: made.map((m) => m.view) }, 201);
}

/** neutron-lib's validators' "Invalid input for <attr>. Reason: …." */
export const invalidAttr = (attr: string, reason: string) =>
  badRequest(`Invalid input for ${attr}. Reason: ${reason}.`);

/** An attribute's zod schema and neutron-lib's reason when the value fails it. */
export interface Attr<T> {
  schema: z.ZodType<T>;
  reason: (value: unknown, issue: z.core.$ZodIssue) => string;
}

/** The attribute's value checked by its schema; undefined when the body does not set it. */
export function attr<T>(body: Body, name: string, a: Attr<T>): T | undefined {
  const v = body[name];
  if (v === undefined) return undefined;
  const r = a.schema.safeParse(v);
  if (!r.success) throw invalidAttr(name, a.reason(v, r.error.issues[0]!));
  return r.data;
}

/** A value as neutron-lib's reasons quote it. */
export const json = (v: unknown) => JSON.stringify(v);

/** validate_string, at most `max` characters. */
const stringOf = (max = 255): Attr<string> => ({
  schema: z.string().max(max),
  reason: (v, issue) =>
    issue.code === "too_big"
      ? `'${v}' exceeds maximum length of ${max}`
      : `'${json(v)}' is not a valid string`,
});
const STRING = stringOf();

/** convert_to_boolean: a boolean, or "true"/"false" in any case. */
const BOOLEAN: Attr<boolean> = {
  schema: z.union([z.boolean(), z.stringbool({ truthy: ["true"], falsy: ["false"], case: "insensitive" })]),
  reason: (v) => `'${json(v)}' cannot be converted to boolean`,
};

/** A list (validate_list's text); its items are each attribute's own. */
export const LIST: Attr<unknown[]> = {
  schema: z.array(z.unknown()),
  reason: (v) => `'${json(v)}' is not a list`,
};

export const stringAttr = (body: Body, name: string, max?: number) =>
  attr(body, name, max === undefined ? STRING : stringOf(max));
export const boolAttr = (body: Body, name: string) => attr(body, name, BOOLEAN);

/** The project a new resource goes to: the caller's, another's for admins only (base.py). */
export function projectOf(auth: AuthContext, body: Body): string {
  const asked = (body.project_id ?? body.tenant_id) as string | undefined;
  if (asked === undefined || asked === auth.project_id) return auth.project_id;
  if (!auth.isAdmin)
    throw badRequest(
      "Specifying 'project_id' or 'tenant_id' other than the authenticated project in request requires admin privileges",
    );
  return asked;
}

/** A required attribute a create does not give (base.py's text). */
export function required(body: Body, name: string, present = body[name] !== undefined): void {
  if (!present) throw badRequest(`Failed to parse request. Required attribute '${name}' not specified`);
}

/**
 * Refuse an action the caller may not take on a resource it sees: Neutron's 403 on its own
 * project's, a 404 on another's (api/v2/base.py hides what is not the caller's).
 */
export function refuse(auth: AuthContext, owner: string, action: string, attrs: AttributeRule[] = []): never {
  if (auth.project_id === owner) throw policyRefused(action, attrs);
  throw pretendNotFound();
}

/** One resource as its routes need it declared (the rest of Neutron's attribute map is its file's). */
export interface Resource<T extends { id: string }> {
  /** its body's key (`network`, `security_group`): its collection's is the plural */
  name: string;
  /** its collection's path when it is not the plural (`security-groups`) */
  path?: string;
  /** its 404: NetworkNotFound… */
  notFound: (id: string) => Refusal;
  /** the attributes a list may filter on */
  attributes: readonly string[];
  /** the attributes a create may set */
  createAttributes: readonly string[];
  view: (item: T, auth: AuthContext) => Record<string, unknown>;
  /**
   * every item the caller sees; or only those among them a list's filters may match, where the
   * store can narrow them by an index (the listing filters them all the same)
   */
  visible: (auth: AuthContext, filters: ListQuery["filters"]) => Promise<T[]>;
  /** the one the caller asks for, or its 404 */
  find: (auth: AuthContext, id: string) => Promise<T>;
  create: (auth: AuthContext, body: Body) => Promise<Made>;
  /** a bulk create's items checked together first */
  checkBulk?: (items: Body[]) => void;
  /** what a list does before it reads (Neutron makes the project's default security group) */
  beforeList?: (auth: AuthContext, filters: [string, string[]][]) => Promise<void>;
}

/** A resource's list (filters, fields, paging), show (fields) and create (one, or bulk). */
export function resourceRoutes<T extends { id: string }>(app: Hono<NetEnv>, r: Resource<T>): void {
  const collection = `${r.name}s`;
  const path = r.path ?? collection;
  app.get(`/v2.0/${path}`, listParams(r.attributes), async (c) => {
    const q = c.req.valid("query");
    await r.beforeList?.(c.get("auth"), q.filters);
    const items = (await r.visible(c.get("auth"), q.filters)).sort(byId);
    return listed(c, collection, items, r.view, q, r.notFound);
  });
  app.get(`/v2.0/${path}/:id`, async (c) => {
    const auth = c.get("auth");
    const item = await r.find(auth, c.req.param("id"));
    return c.json({ [r.name]: selectFields(r.view(item, auth), c.req.queries("fields") ?? []) });
  });
  app.post(`/v2.0/${path}`, createBody(r.name, r.createAttributes), (c) =>
    createResources(c, r.name, (body) => r.create(c.get("auth"), body), r.checkBulk),
  );
}
