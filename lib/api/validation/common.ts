// Request validation with zod, reported as Nova reports its JSON-schema failures:
//   "Invalid input for field/attribute <field>. Value: <value>. <jsonschema-style message>"
// Nova names only the last element of the failing path; here <field> is the whole path below the
// body's envelope ("server"/"flavor"), so "flavorRef" stays "flavorRef" but a bad metadata value
// is "metadata.key" rather than a bare "key". Only the first problem is reported.
import { z } from "zod";
import { type BodyRules, parseBody } from "../body.js";
import { ApiError, badRequest, MALFORMED_BODY } from "../errors.js";
import { type Query, queryOne } from "../request.js";

export const UUID_RE = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
export const MAX_INT = 2147483647;

/** Custom checks whose message is the whole detail (Nova's InvalidName and friends). */
export const WHOLE = { whole: true } as const;

/** Python-ish repr, as jsonschema's messages print values: strings quoted, the rest as JSON. */
export function repr(v: unknown): string {
  if (typeof v === "string") return `'${v}'`;
  if (v === undefined) return "None";
  return JSON.stringify(v);
}

/** `%s` of the value in Nova's template: strings bare, the rest as JSON. */
function str(v: unknown): string {
  if (typeof v === "string") return v;
  if (v === undefined) return "None";
  return JSON.stringify(v);
}

function at(input: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = input;
  for (const k of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[k as string];
  }
  return cur;
}

const TYPE_NAMES: Record<string, string> = {
  int: "integer",
  number: "number",
  string: "string",
  boolean: "boolean",
  object: "object",
  record: "object",
  array: "array",
  null: "null",
};

function typeName(expected: string): string {
  return TYPE_NAMES[expected] ?? expected;
}

/** Every type a union's branches expected, for "is not of type 'string', 'integer'". */
function unionTypes(errors: z.core.$ZodIssue[][]): string[] {
  const out: string[] = [];
  for (const branch of errors) {
    for (const i of branch) {
      if (i.path.length === 0 && i.code === "invalid_type") {
        const t = `'${typeName(i.expected)}'`;
        if (!out.includes(t)) out.push(t);
      }
    }
  }
  return out;
}

const ENVELOPES = new Set([
  "server",
  "flavor",
  "keypair",
  "rebuild",
  "security_group",
  "security_group_rule",
]);

function fieldName(path: readonly PropertyKey[]): string {
  const names = path.map(String);
  if (names.length > 1 && ENVELOPES.has(names[0]!)) names.shift();
  return names.join(".");
}

function template(path: readonly PropertyKey[], value: unknown, message: string): string {
  if (path.length === 0) return message;
  return `Invalid input for field/attribute ${fieldName(path)}. Value: ${str(value)}. ${message}`;
}

function isAbsent(input: unknown, path: readonly PropertyKey[]): boolean {
  if (path.length === 0) return false;
  const parent = at(input, path.slice(0, -1));
  return (
    parent !== null &&
    typeof parent === "object" &&
    !Array.isArray(parent) &&
    !Object.hasOwn(parent, path[path.length - 1] as string)
  );
}

/** The Nova-style detail for one zod issue, given the whole input. */
export function describeIssue(issue: z.core.$ZodIssue, input: unknown): string {
  const path = [...issue.path];
  let value = at(input, path);
  if (isAbsent(input, path) && issue.code !== "custom" && issue.code !== "unrecognized_keys") {
    // an absent property: jsonschema reports it on the parent object
    const key = path.pop();
    return template(path, at(input, path), `'${String(key)}' is a required property`);
  }
  let message: string;
  switch (issue.code) {
    case "invalid_type":
      message = `${repr(value)} is not of type '${typeName(issue.expected)}'`;
      break;
    case "too_small":
      if (issue.origin === "number" || issue.origin === "int" || issue.origin === "bigint") {
        message = issue.inclusive
          ? `${repr(value)} is less than the minimum of ${issue.minimum}`
          : `${repr(value)} is less than or equal to the minimum of ${issue.minimum}`;
      } else if (issue.origin === "array" && issue.minimum === 1) {
        message = `${repr(value)} should be non-empty`;
      } else {
        message = `${repr(value)} is too short`;
      }
      break;
    case "too_big":
      if (issue.origin === "number" || issue.origin === "int" || issue.origin === "bigint") {
        message = `${repr(value)} is greater than the maximum of ${issue.maximum}`;
      } else {
        message = `${repr(value)} is too long`;
      }
      break;
    case "invalid_format":
      message =
        issue.format === "regex" && "pattern" in issue
          ? `${repr(value)} does not match '${String(issue.pattern).replace(/^\/|\/[a-z]*$/g, "")}'`
          : `${repr(value)} is not a '${issue.format}'`;
      break;
    case "unrecognized_keys": {
      const keys = issue.keys.map((k) => `'${k}'`).join(", ");
      message = `Additional properties are not allowed (${keys} ${issue.keys.length > 1 ? "were" : "was"} unexpected)`;
      break;
    }
    case "invalid_key": {
      // a record key outside the allowed pattern: jsonschema's additionalProperties failure
      const key = path.pop();
      value = at(input, path);
      message = `Additional properties are not allowed ('${String(key)}' was unexpected)`;
      break;
    }
    case "invalid_value":
      message = `${repr(value)} is not one of [${issue.values.map((v) => repr(v)).join(", ")}]`;
      break;
    case "invalid_union": {
      const types = unionTypes(issue.errors);
      message = types.length
        ? `${repr(value)} is not of type ${types.join(", ")}`
        : `${repr(value)} is not valid under any of the given schemas`;
      break;
    }
    case "custom":
      if (issue.params?.whole) return issue.message;
      message = `${repr(value)} ${issue.message}`;
      break;
    default:
      message = issue.message;
  }
  return template(path, value, message);
}

/** Parse `input` with `schema`, or throw 400 with the first problem in Nova's words. */
export function validate<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const first = r.error.issues[0];
  throw badRequest(first ? describeIssue(first, input) : "Invalid input");
}

/** How Compute reads a body: an empty one is `{}` (the schema then names what is missing). */
export const NOVA_BODY: BodyRules = { malformedBody: () => badRequest(MALFORMED_BODY), emptyBody: "object" };

/** The request body as JSON, by Compute's rules. */
export const parseJsonBody = (body: string | undefined): unknown => parseBody(body, NOVA_BODY);

export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}

// ── Nova's parameter_types, as zod schemas ──

/** positive_integer: an integer ≥ 1, or a string of digits (Nova accepts both). */
export function positiveInt(max = MAX_INT) {
  return z
    .union([z.int(), z.string().regex(/^[0-9]+$/)])
    .transform((v) => Number(v))
    .pipe(z.int().min(1).max(max));
}

/** non_negative_integer: an integer ≥ 0, or a string of digits. */
export function nonNegativeInt(max = MAX_INT) {
  return z
    .union([z.int(), z.string().regex(/^[0-9]+$/)])
    .transform((v) => Number(v))
    .pipe(z.int().min(0).max(max));
}

const TRUE_STRINGS = ["1", "t", "true", "on", "y", "yes"];
const FALSE_STRINGS = ["0", "f", "false", "off", "n", "no"];

/** parameter_types.boolean: true/false, or the strings oslo's bool_from_string knows. */
export const novaBoolean = z.union([
  z.boolean(),
  z
    .string()
    .refine((s) => [...TRUE_STRINGS, ...FALSE_STRINGS].includes(s.toLowerCase()), {
      message: "is not a valid boolean",
    })
    .transform((s) => TRUE_STRINGS.includes(s.toLowerCase())),
]);

/** oslo's bool_from_string(strict=True) for query parameters; undefined when unparseable. */
export function boolFromString(s: string): boolean | undefined {
  const l = s.trim().toLowerCase();
  if (TRUE_STRINGS.includes(l)) return true;
  if (FALSE_STRINGS.includes(l)) return false;
  return undefined;
}

/** The message Nova's 'name' format gives (nova.exception.InvalidName). */
export const INVALID_NAME =
  "An invalid 'name' value was provided. The name must be: printable characters. " +
  "Can not start or end with whitespace.";

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it rejects
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** parameter_types.name: 1–255 printable characters, no leading or trailing whitespace. */
export const novaName = z
  .string()
  .min(1)
  .max(255)
  .refine((s) => !CONTROL.test(s) && s.trim() === s, { message: INVALID_NAME, params: WHOLE });

/**
 * An id, or a link to one (`http://…/flavors/1` → `1`), as Nova's get_id_from_href. Only URLs
 * and absolute paths are links: an image name such as "ubuntu/24.04" stays whole.
 */
export function idFromHref(ref: string): string {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(ref) && !ref.startsWith("/")) return ref;
  const parts = ref.split("?")[0]!.split("/").filter(Boolean);
  return parts[parts.length - 1] ?? ref;
}

// ── what every list's query shares ──

/** Nova's osapi_max_limit. */
export const MAX_LIMIT = 1000;

/** A changes-since/changes-before value: an ISO 8601 date-time, as Nova's schema. */
export function parseChangeTime(query: Query, name: string): string | undefined {
  const raw = queryOne(query, name);
  if (raw === undefined) return undefined;
  const t = /^\d{4}-\d{2}-\d{2}T/.test(raw) ? Date.parse(raw.replace(" ", "+")) : Number.NaN;
  if (Number.isNaN(t)) {
    throw badRequest(
      `Invalid input for query parameters ${name}. Value: ${raw}. '${raw}' is not a 'date-time'`,
    );
  }
  return new Date(t).toISOString();
}
