// Host aggregate requests and Nova's rules for them, without I/O: the bodies of create, update
// and the three actions, and what each does to an aggregate given every aggregate (for names and
// availability zones). Errors carry Nova's messages and statuses.
import { z } from "zod";
import { AZ_METADATA_KEY } from "../../catalog/aggregates.js";
import type { Aggregate } from "../../catalog/types.js";
import { type ApiError, badRequest, conflict, MALFORMED_BODY, notFound } from "../errors.js";
import { novaName, validate, WHOLE } from "./common.js";

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it rejects
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Nova's az_name format: a name without ':' (it separates the zone from a forced host). */
export const INVALID_AZ_NAME =
  "An invalid 'name' value was provided. The name must be: printable characters except :. " +
  "Can not start or end with whitespace.";

export const azName = z
  .string()
  .min(1)
  .max(255)
  .refine((s) => !CONTROL.test(s) && !s.includes(":") && s.trim() === s, {
    message: INVALID_AZ_NAME,
    params: WHOLE,
  });

/** Nova's name_with_leading_trailing_spaces, stripped (update accepts and normalizes it). */
const lenientName = z
  .string()
  .min(1)
  .max(255)
  .refine((s) => !CONTROL.test(s) && s.trim() !== "", {
    message:
      "An invalid 'name' value was provided. The name must be: printable characters with at least one non space character",
    params: WHOLE,
  })
  .transform((s) => s.trim());

export const createAggregateSchema = z.strictObject({
  aggregate: z.strictObject({
    name: novaName,
    availability_zone: azName.nullable().optional(),
  }),
});

export const updateAggregateSchema = z.strictObject({
  aggregate: z
    .strictObject({
      name: lenientName.optional(),
      availability_zone: azName.nullable().optional(),
    })
    .refine((a) => a.name !== undefined || a.availability_zone !== undefined, {
      message: "is not valid under any of the given schemas",
    }),
});

/** parameter_types.fqdn, loosely: a host name as the compute service registered it. */
const hostName = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[a-zA-Z0-9._-]+$/);

const addHostSchema = z.strictObject({ add_host: z.strictObject({ host: hostName }) });
const removeHostSchema = z.strictObject({ remove_host: z.strictObject({ host: hostName }) });
/** parameter_types.metadata_with_null: a null value removes the key. */
const setMetadataSchema = z.strictObject({
  set_metadata: z.strictObject({
    metadata: z.record(z.string().regex(/^[a-zA-Z0-9-_:. ]{1,255}$/), z.string().max(255).nullable()),
  }),
});

export interface AggregateCreate {
  name: string;
  availabilityZone: string | null;
}

export function parseCreateAggregate(raw: unknown): AggregateCreate {
  const a = validate(createAggregateSchema, raw).aggregate;
  return { name: a.name, availabilityZone: a.availability_zone ?? null };
}

export interface AggregateUpdate {
  name?: string;
  /** present when asked for; null is refused by updateAggregate (Nova: no empty zone) */
  availabilityZone?: string | null;
}

export function parseUpdateAggregate(raw: unknown): AggregateUpdate {
  const a = validate(updateAggregateSchema, raw).aggregate;
  return {
    ...(a.name !== undefined ? { name: a.name } : {}),
    ...(a.availability_zone !== undefined ? { availabilityZone: a.availability_zone } : {}),
  };
}

export type AggregateAction =
  | { action: "add_host"; host: string }
  | { action: "remove_host"; host: string }
  | { action: "set_metadata"; metadata: Record<string, string | null> };

/** POST /os-aggregates/{id}/action: exactly one action key, as Nova's action dispatch. */
export function parseAggregateAction(raw: unknown): AggregateAction {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw) || Object.keys(raw).length !== 1) {
    throw badRequest(MALFORMED_BODY);
  }
  const name = Object.keys(raw)[0]!;
  switch (name) {
    case "add_host":
      return { action: "add_host", host: validate(addHostSchema, raw).add_host.host };
    case "remove_host":
      return { action: "remove_host", host: validate(removeHostSchema, raw).remove_host.host };
    case "set_metadata":
      return { action: "set_metadata", metadata: validate(setMetadataSchema, raw).set_metadata.metadata };
    default:
      throw badRequest(`There is no such action: ${name}`);
  }
}

// ── Nova's rules ──

export const aggregateNotFound = (id: string): ApiError => notFound(`Aggregate ${id} could not be found.`);
const nameExists = (name: string): ApiError => conflict(`Aggregate ${name} already exists.`);

/** Python's repr of a list of strings, as Nova's messages print it. */
function pyList(xs: string[]): string {
  return `[${xs.map((x) => `'${x}'`).join(", ")}]`;
}

type Verb = "add" | "update" | "update_meta";

/** Nova's InvalidAggregateAction* for an action: 409 for add_host, 400 otherwise. */
/** The id Nova's messages name: the integer one (the uuid of an aggregate without one). */
export const apiId = (agg: Aggregate): string => String(agg.number ?? agg.id);

function invalidAction(verb: Verb, id: string, reason: string): ApiError {
  if (verb === "add") return conflict(`Cannot add host to aggregate ${id}. Reason: ${reason}.`);
  if (verb === "update") return badRequest(`Cannot update aggregate ${id}. Reason: ${reason}.`);
  return badRequest(`Cannot update metadata of aggregate ${id}. Reason: ${reason}.`);
}

/**
 * Nova's is_safe_to_update_az: a zone may not be emptied, and no host of the aggregate (or the
 * host being added) may already be in another aggregate with another zone.
 */
export function checkZoneChange(
  agg: Aggregate,
  metadata: Record<string, string | null>,
  all: readonly Aggregate[],
  verb: Verb,
  hosts: readonly string[] = agg.hosts,
): void {
  if (!Object.hasOwn(metadata, AZ_METADATA_KEY)) return;
  const zone = metadata[AZ_METADATA_KEY];
  if (!zone) {
    throw invalidAction(
      verb,
      apiId(agg),
      `Aggregate ${agg.name} does not support empty named availability zone`,
    );
  }
  const conflicting = all
    .filter((other) => other.id !== agg.id)
    .filter((other) => other.metadata[AZ_METADATA_KEY] && other.metadata[AZ_METADATA_KEY] !== zone)
    .filter((other) => other.hosts.some((h) => hosts.includes(h)))
    .map((other) => other.metadata[AZ_METADATA_KEY]!);
  if (conflicting.length > 0) {
    throw invalidAction(
      verb,
      apiId(agg),
      `One or more hosts already in availability zone(s) ${pyList(conflicting)}`,
    );
  }
}

/** The new aggregate a create makes (the zone is metadata, as in Nova). */
export function newAggregate(input: AggregateCreate, id: string, now: Date): Aggregate {
  const at = now.toISOString();
  return {
    id,
    name: input.name,
    availability_zone: input.availabilityZone,
    hosts: [],
    metadata: input.availabilityZone ? { [AZ_METADATA_KEY]: input.availabilityZone } : {},
    created_at: at,
    updated_at: at,
  };
}

function withMetadata(agg: Aggregate, changes: Record<string, string | null>, now: Date): Aggregate {
  const metadata = { ...agg.metadata };
  for (const [k, v] of Object.entries(changes)) {
    if (v === null) delete metadata[k];
    else metadata[k] = v;
  }
  return {
    ...agg,
    metadata,
    availability_zone: metadata[AZ_METADATA_KEY] ?? null,
    updated_at: now.toISOString(),
  };
}

/** PUT: rename and/or move to another zone. */
export function updateAggregate(
  agg: Aggregate,
  update: AggregateUpdate,
  all: readonly Aggregate[],
  now: Date,
): Aggregate {
  let next: Aggregate = { ...agg, hosts: [...agg.hosts], metadata: { ...agg.metadata } };
  if (update.name !== undefined) {
    if (all.some((a) => a.id !== agg.id && a.name === update.name)) throw nameExists(update.name);
    next = { ...next, name: update.name, updated_at: now.toISOString() };
  }
  if (update.availabilityZone !== undefined) {
    const change = { [AZ_METADATA_KEY]: update.availabilityZone };
    checkZoneChange(next, change, all, "update");
    next = withMetadata(next, change, now);
  }
  return next;
}

/** set_metadata: merge, a null value removing its key. */
export function setAggregateMetadata(
  agg: Aggregate,
  metadata: Record<string, string | null>,
  all: readonly Aggregate[],
  now: Date,
): Aggregate {
  checkZoneChange(agg, metadata, all, "update_meta");
  return withMetadata(agg, metadata, now);
}

/** add_host: the host must exist (checked by the caller), be new here, and not change zone. */
export function addAggregateHost(
  agg: Aggregate,
  host: string,
  all: readonly Aggregate[],
  now: Date,
): Aggregate {
  if (agg.hosts.includes(host)) throw conflict(`Aggregate ${apiId(agg)} already has host ${host}.`);
  checkZoneChange(agg, agg.metadata, all, "add", [host]);
  return { ...agg, hosts: [...agg.hosts, host], updated_at: now.toISOString() };
}

/** remove_host: Nova answers 404 with one message for an unknown host or a non-member. */
export function removeAggregateHost(agg: Aggregate, host: string, now: Date): Aggregate {
  if (!agg.hosts.includes(host)) throw notFound(`Cannot remove host ${host} in aggregate ${apiId(agg)}`);
  return { ...agg, hosts: agg.hosts.filter((h) => h !== host), updated_at: now.toISOString() };
}

/** Nova refuses to delete an aggregate that still has hosts (400, InvalidAggregateActionDelete). */
export function checkAggregateDeletable(agg: Aggregate): void {
  if (agg.hosts.length > 0) {
    throw badRequest(`Cannot delete aggregate ${apiId(agg)}. Reason: Host aggregate is not empty.`);
  }
}
