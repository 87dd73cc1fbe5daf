// Keystone's request bodies as zod schemas, checked at the front (front.ts jsonBody) so that
// lib/identity receives typed, well-formed input and keeps only the rules that need its data
// (a name taken, a domain or parent that must exist, a field a resource may not change).
// Each failure carries Keystone's own text (keystone/exception.py's ValidationError and
// SchemaValidationError, as lib/identity/errors.ts words them) and the first one is the answer,
// so each schema lists its properties in the order they have always been checked
// (test/integration/identity-bodies.test.ts holds the answers).
import { z } from "zod";
import { expecting, type IdentityError, invalidField, passwordTooLong } from "../../identity/errors.js";
import { type DomainRef, MAX_PASSWORD_LENGTH, type NamedRef } from "../../identity/inputs.js";
import { Refusal } from "../errors.js";
import type { Failure } from "../front.js";

/**
 * A failed check as Keystone's refusal: the issue's text, its status where it is no 400. A union
 * (a name by id or by name; a scope) is worded by its last option, the form the others are
 * exceptions to.
 */
export function keystoneRefusal(f: Failure): Refusal {
  let issue: z.core.$ZodIssue = f.issue;
  while (issue.code === "invalid_union" && issue.errors.length) issue = issue.errors.at(-1)![0]!;
  return new Refusal((issue as { params?: { status?: number } }).params?.status ?? 400, issue.message);
}

/** A schema's check of `value` after the route's lookups, with the same refusal. */
export function checked<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  throw keystoneRefusal({ issue: r.error.issues[0]!, input: value });
}

type Issue = { input?: unknown };
const message = (e: IdentityError) => ({ error: e.message, params: { status: e.status } });
/** "Invalid input for field/attribute <field>. Value: <v>. <v> is not of type '<type>'" */
const notOf = (field: string, type: string) => (iss: Issue) => {
  const v = iss.input ?? null;
  return invalidField(field, v, `${JSON.stringify(v)} is not of type '${type}'`).message;
};

/** The body's one object under `key`: "Expecting to find <key> in request body" otherwise. */
function envelope<K extends string, S extends z.ZodType>(key: K, inner: S) {
  return z.object({ [key]: inner } as Record<K, S>, { error: expecting(key, "request body").message });
}
/** An object, arrays refused (Keystone's "type": "object"), the properties it does not name kept. */
const object = <T extends z.core.$ZodLooseShape>(key: string, shape: T) =>
  z.looseObject(shape, { error: expecting(key, "request body").message });

const NAME_RULE = "is not a valid name (1 to 255 characters, not only spaces)";
const name = z
  .string({ error: notOf("name", "string") })
  .refine((n) => n.length >= 1 && n.length <= 255 && /\S/.test(n), {
    error: (iss) => invalidField("name", iss.input, `'${iss.input as string}' ${NAME_RULE}`).message,
  });
const bool = (field: string) => z.boolean({ error: notOf(field, "boolean") }).optional();
/** A string where given; null is none. */
const nullableString = (field: string) => z.string({ error: notOf(field, "string") }).nullish();
/** A string where given; null is refused. */
const presentString = (field: string) => z.string({ error: notOf(field, "string") }).optional();
/** Taken where it is a string, other values ignored (as the hand checks did). */
const stringIfAny = z.string().optional().catch(undefined);
/** A user's password where given, no longer than Keystone's max_password_length (a 403). */
const password = z
  .string({ error: notOf("password", "string") })
  .refine((p) => p.length <= MAX_PASSWORD_LENGTH, message(passwordTooLong(MAX_PASSWORD_LENGTH)))
  .nullish();

const TAGS_RULE = "tags must be a list of strings of 1 to 255 characters without '/' or ','";
const tagList = z.array(
  z
    .string()
    .min(1)
    .max(255)
    .regex(/^[^/,]*$/),
);
/** The whole list is the value Keystone names; duplicates dropped. */
const tags = z
  .custom<string[]>((t) => tagList.safeParse(t).success, {
    error: (iss) => invalidField("tags", iss.input, TAGS_RULE).message,
  })
  .optional()
  .transform((t) => (t ? [...new Set(t)] : undefined));

// ---- domains ----------------------------------------------------------------------------------

export const domainCreate = envelope(
  "domain",
  object("domain", {
    explicit_domain_id: presentString("explicit_domain_id"),
    name,
    description: nullableString("description"),
    enabled: bool("enabled"),
  }),
);
/** A PATCH's body before its resource is read: the one object under `key`, checked after. */
export const patchOf = <K extends string>(key: K) => envelope(key, object(key, {}));

export const domainUpdate = object("domain", {
  name: name.optional(),
  description: nullableString("description"),
  enabled: bool("enabled"),
});

// ---- projects ---------------------------------------------------------------------------------

const projectFields = {
  name: name.optional(),
  description: nullableString("description"),
  enabled: bool("enabled"),
  tags,
};
export const projectCreate = envelope(
  "project",
  object("project", {
    is_domain: bool("is_domain").refine((d) => !d, {
      error: "Projects acting as domains are not supported here.",
    }),
    domain_id: presentString("domain_id"),
    parent_id: nullableString("parent_id"),
    ...projectFields,
    name,
  }),
);
export const projectUpdate = object("project", projectFields);

// ---- users ------------------------------------------------------------------------------------

export const userCreate = envelope(
  "user",
  object("user", {
    domain_id: presentString("domain_id"),
    password,
    name,
    enabled: bool("enabled"),
    description: stringIfAny,
    default_project_id: stringIfAny,
  }),
);
export const userUpdate = object("user", {
  password,
  enabled: bool("enabled"),
  name: name.optional(),
  description: stringIfAny,
  // taken as given: null clears it
  default_project_id: z.custom<string | null>().optional(),
});
/** POST /v3/users/{id}/password (the new password's length is checked after the original's). */
export const passwordChange = envelope(
  "user",
  object("user", {
    original_password: z.string({ error: expecting("original_password", "user").message }),
    password: z.string({ error: expecting("password", "user").message }),
  }),
);

// ---- roles and application credentials --------------------------------------------------------

export const roleCreate = envelope(
  "role",
  object("role", {
    domain_id: z.null({ error: "Domain-specific roles are not supported here." }).optional(),
    name,
    description: nullableString("description"),
  }),
);

const credentialName = z
  .string({ error: notOf("name", "string") })
  .min(1, { error: notOf("name", "string") })
  .max(255, { error: notOf("name", "string") });
const NO_ACCESS_RULES = "Access rules are not supported here.";
export const applicationCredentialCreate = envelope(
  "application_credential",
  // an array is read as an object without properties (its name is then what is missing)
  z.preprocess(
    (v) => (Array.isArray(v) ? {} : v),
    object("application_credential", {
      name: credentialName,
      secret: nullableString("secret"),
      expires_at: z
        .string({ error: (iss) => invalidField("expires_at", iss.input, "is not a valid timestamp").message })
        .refine((t) => !Number.isNaN(Date.parse(t)), {
          error: (iss) => invalidField("expires_at", iss.input, "is not a valid timestamp").message,
        })
        .transform((t) => new Date(Date.parse(t)).toISOString())
        .nullish(),
      access_rules: z
        .array(z.unknown(), { error: NO_ACCESS_RULES })
        .max(0, { error: NO_ACCESS_RULES })
        .optional(),
      description: stringIfAny,
      // references to stored roles, resolved (and refused) by the domain; a non-list is none
      roles: z.array(z.unknown()).optional().catch(undefined),
      unrestricted: z.boolean().optional().catch(undefined),
    }),
  ),
);

// ---- tokens (POST /v3/auth/tokens) ------------------------------------------------------------

/** A value where it is an object, else an object without properties (as the hand checks read it). */
const orEmpty = <S extends z.ZodType<unknown, Record<string, unknown>>>(s: S) =>
  z.looseObject({}).catch({}).pipe(s);

const domainRef = (what: string) =>
  z
    .looseObject({ id: stringIfAny, name: stringIfAny }, { error: expecting("domain", what).message })
    .refine((d) => d.id !== undefined || d.name !== undefined, { error: expecting("domain", what).message })
    .transform((d): DomainRef => (d.id !== undefined ? { id: d.id } : { name: d.name! }));
/** By id, else by name and domain: the last option words a failure (see keystoneRefusal). */
const namedRef = (what: string) =>
  z.union([
    z.looseObject({ id: z.string() }).transform((r): NamedRef => ({ id: r.id })),
    z
      .looseObject({
        name: z.string({ error: expecting("id or name", what).message }),
        domain: domainRef(what),
      })
      .transform((r): NamedRef => ({ name: r.name, domain: r.domain })),
  ]);

const NO_PASSWORD = "Invalid input for field 'identity/password/user/password': None is not of type 'string'";
const passwordMethod = orEmpty(
  z.looseObject({
    user: z
      .looseObject({ password: z.string({ error: NO_PASSWORD }) }, { error: NO_PASSWORD })
      .pipe(z.looseObject({ password: z.string() }).and(namedRef("user"))),
  }),
);
const credentialMethod = orEmpty(
  z.looseObject({ secret: z.string({ error: expecting("secret", "application_credential").message }) }).pipe(
    z.union([
      z.looseObject({ secret: z.string(), id: z.string() }),
      z.looseObject({
        secret: z.string(),
        name: z.string({ error: expecting("id or name", "application_credential").message }),
        // (a list is an object naming no user, as the hand check read it)
        user: z
          .union([
            z.array(z.unknown()).transform(() => ({})),
            z.looseObject({}, { error: expecting("user", "application_credential").message }),
          ])
          .pipe(namedRef("user")),
      }),
    ]),
  ),
);

const NO_IDENTITY = expecting("identity", "auth").message;
const METHODS = ["password", "application_credential", "token"] as const;
const methods = z.array(z.unknown());
const identity = z
  .looseObject(
    { methods: z.array(z.unknown(), { error: NO_IDENTITY }).min(1, { error: NO_IDENTITY }) },
    {
      error: NO_IDENTITY,
    },
  )
  .transform((i) => ({ ...i, method: METHODS.find((m) => i.methods.includes(m)) ?? ("other" as const) }))
  .pipe(
    z.discriminatedUnion("method", [
      z.looseObject({ methods, method: z.literal("password"), password: passwordMethod }),
      z.looseObject({
        methods,
        method: z.literal("application_credential"),
        application_credential: credentialMethod,
      }),
      z.looseObject({
        methods,
        method: z.literal("token"),
        token: orEmpty(z.looseObject({ id: z.unknown().optional() })),
      }),
      z.looseObject({ methods, method: z.literal("other") }),
    ]),
  );

/** The body of POST /v3/auth/tokens; its scope is checked after the caller is authenticated. */
export const tokenRequest = z.object(
  { auth: z.looseObject({ identity, scope: z.unknown().optional() }, { error: NO_IDENTITY }) },
  { error: NO_IDENTITY },
);

const ONLY_PROJECT = "Only project scope is supported.";
export const scopeRequest = z.union([
  z.undefined(),
  z.literal("unscoped"),
  z.looseObject(
    { project: z.looseObject({}, { error: ONLY_PROJECT }).pipe(namedRef("project")) },
    { error: ONLY_PROJECT },
  ),
]);
