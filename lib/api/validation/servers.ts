// What a server request may say, checked without I/O: the create body, the availability-zone
// forms, multi-create names, the update, metadata, tags and lock bodies. The list filters are
// ./server-list.ts.
import { z } from "zod";
import type { RequestedNetworks } from "../../instances/networking.js";
import { parseAvailabilityZone, type RequestedAz } from "../../messages/availability-zone.js";
import type { AuthContext } from "../auth.js";
import { RULES } from "../auth.js";
import { badRequest, forbidden, policyForbidden } from "../errors.js";
import { type ApiVersion, forVersion, type Ranged } from "../microversion.js";
import { idFromHref, novaBoolean, novaName, positiveInt, repr, UUID_RE, validate } from "./common.js";

const uuid = z.string().refine((s) => UUID_RE.test(s), { message: "is not a 'uuid'" });

/** Nova's scheduler-hints schema: the known hints are typed, anything else passes through. */
export const schedulerHintsSchema = z.looseObject({
  group: uuid.optional(),
  different_host: z.union([uuid, z.array(uuid)]).optional(),
  same_host: z.union([uuid, z.array(uuid)]).optional(),
  query: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
  target_cell: novaName.optional(),
  different_cell: z.union([z.string(), z.array(z.string())]).optional(),
  build_near_host_ip: z.string().optional(),
  cidr: z
    .string()
    .regex(/^\/[0-9a-f.:]+$/)
    .optional(),
});

/** parameter_types.metadata: keys of [a-zA-Z0-9-_:. ]{1,255}, string values of ≤ 255. */
export const metadataSchema = z.record(z.string().regex(/^[a-zA-Z0-9-_:. ]{1,255}$/), z.string().max(255));

/** Nova's server tag (parameter_types.tag): 1–60 characters, no comma or slash. */
export const tagSchema = z
  .string()
  .min(1)
  .max(60)
  .regex(/^[^,/]*$/);
/** Nova's instance.MAX_TAG_COUNT */
export const MAX_TAGS = 50;

/** Nova's parameter_types.accessIPv4/6: strings in the ipv4/ipv6 formats. */
export const accessIPv4 = z.ipv4();
// kept in the canonical (compressed) form, as Nova's netaddr writes it
export const accessIPv6 = z.ipv6().transform((ip) => new URL(`http://[${ip}]`).hostname.slice(1, -1));

/** Nova's user_data: base64 (format "base64"), at most 65535 characters. */
export const userData = z
  .string()
  .max(65535)
  .refine((s) => /^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(s) && s.replace(/\s/g, "").length % 4 === 0, {
    message: "is not a 'base64'",
  });

/** Nova's format "uuid" (oslo's is_uuid_like: 32 hex digits, dashes anywhere). */
export const uuidLike = z.string().refine((v) => /^[0-9a-f]{32}$/i.test(v.replaceAll("-", "")), {
  message: "is not a 'uuid'",
});
const fixedIp = z.union([z.ipv4(), z.ipv6()]);
/** One network of a create: before 2.37 the uuid is any string (servers.py checks it). */
const networkItem = (uuid: z.ZodType, tag: boolean) =>
  z.strictObject({
    fixed_ip: fixedIp.optional(),
    port: uuidLike.nullable().optional(),
    uuid: uuid.optional(),
    ...(tag ? { tag: tagSchema.optional() } : {}),
  });
function networksBefore237(tag: boolean) {
  return z.array(networkItem(z.string(), tag)).optional();
}
/** 2.37: required, a list (uuids checked) or "auto"/"none"; 2.42 brings the tag back. */
const networksFrom237 = (tag: boolean) =>
  z.union([z.array(networkItem(uuidLike, tag)), z.enum(["none", "auto"])]);

const baseServer = {
  name: novaName,
  // an image id, or (a novaless convenience) an image name, or a link ending in the id
  imageRef: z.string().optional(),
  // Nova's flavor_ref: a non-empty string or an integer, or a link ending in the id
  flavorRef: z.union([z.string().min(1), z.int()]),
  min_count: positiveInt().optional(),
  max_count: positiveInt().optional(),
  // "az", "az:host", "az::node" or "az:host:node"; the host forms are admin-only
  availability_zone: novaName.optional(),
  metadata: metadataSchema.optional(),
  return_reservation_id: novaBoolean.optional(),
  key_name: z.string().min(1).max(255).optional(),
  user_data: userData.nullable().optional(),
  // config_drive and the access IPs are recorded and shown; networks (by version, below) and
  // security groups are checked against the Networking store by lib/instances/networking.ts and
  // lib/instances/security-groups.ts; block device mappings are checked below; disk config is
  // type-checked and ignored. `adminPass` is not
  // applied to anything either; it is only echoed in the create answer.
  networks: networksBefore237(false),
  security_groups: z.array(z.looseObject({ name: z.string() })).optional(),
  config_drive: z.union([novaBoolean, z.literal(""), z.null()]).optional(),
  block_device_mapping_v2: z.array(z.record(z.string(), z.unknown())).optional(),
  adminPass: z.string().optional(),
  accessIPv4: accessIPv4.optional(),
  accessIPv6: accessIPv6.optional(),
  "OS-DCF:diskConfig": z.enum(["AUTO", "MANUAL"]).optional(),
};

/** 2.19 description, 2.52 tags, 2.90 hostname: Nova's create schema grows with the version. */
export const description = z.string().max(255).nullable().optional();
const tags = z.array(tagSchema).max(MAX_TAGS).optional();
/** Nova's parameter_types.hostname (2.90): an RFC 1123 label; 2.94 fqdn: dotted labels, ≤ 255. */
export const hostname = z
  .string()
  .max(63)
  .regex(/^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$/)
  .optional();
export const fqdn = z
  .string()
  .max(255)
  .regex(/^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*$/)
  .optional();

const withHints = <S extends z.ZodType>(server: S) =>
  z.strictObject({
    server,
    "os:scheduler_hints": schedulerHintsSchema.optional(),
    "OS-SCH-HNT:scheduler_hints": schedulerHintsSchema.optional(),
  });

/** 2.74: an admin's requested host and/or node (Nova's requested_destination). */
const destination = z.string().min(1).max(255).optional();

/** The create body's fields per version: each row adds (or, later, replaces) fields. */
const createFieldRows: Ranged<{ fields: z.ZodRawShape }>[] = [
  { fields: baseServer },
  { min: "2.19", fields: { description } },
  // Nova meant tags from 2.32 on and shipped them in 2.32 to 2.36 only (schemas/servers.py)
  { min: "2.32", max: "2.36", fields: { networks: networksBefore237(true) } },
  { min: "2.37", max: "2.41", fields: { networks: networksFrom237(false) } },
  { min: "2.42", fields: { networks: networksFrom237(true) } },
  { min: "2.52", fields: { tags } },
  { min: "2.74", fields: { host: destination, hypervisor_hostname: destination } },
  { min: "2.90", max: "2.93", fields: { hostname } },
  { min: "2.94", fields: { hostname: fqdn } },
];

export const createServerSchema = withHints(
  z.strictObject({
    ...baseServer,
    networks: networksFrom237(true).optional(),
    description,
    tags,
    hostname,
    host: destination,
    hypervisor_hostname: destination,
  }),
);

const createSchemaCache = new Map<string, z.ZodType>();
function createSchemaFor(v: ApiVersion): z.ZodType {
  let schema = createSchemaCache.get(v.toString());
  if (!schema) {
    const shape = Object.assign(
      {},
      ...createFieldRows.filter((r) => v.matches(r.min, r.max)).map((r) => r.fields),
    );
    schema = withHints(z.strictObject(shape));
    createSchemaCache.set(v.toString(), schema);
  }
  return schema;
}

/** The create's availability_zone, or Nova's 400 for a form it cannot parse. */
export function requestedAvailabilityZone(requested: string): RequestedAz {
  const az = parseAvailabilityZone(requested);
  if (!az) throw badRequest("Invalid input received: Unable to parse availability_zone");
  return az;
}

export interface CreateServerRequest {
  name: string;
  flavorRef: string;
  imageRef: string;
  minCount: number;
  maxCount: number;
  /** exactly what was asked for (passed to the scheduler as is), or null */
  availabilityZone: string | null;
  az: RequestedAz | null;
  metadata: Record<string, string>;
  schedulerHints: Record<string, unknown>;
  returnReservationId: boolean;
  /** the caller's adminPass, echoed back; else one is generated */
  adminPass: string | null;
  description: string | null;
  keyName: string | null;
  accessIPv4: string | null;
  accessIPv6: string | null;
  userData: string | null;
  tags: string[];
  /** the guest hostname asked for (2.90) */
  hostname: string | null;
  configDrive: boolean;
  /** Nova's `networks` as given (null: absent, before 2.37); checked against the store later */
  networks: RequestedNetworks;
  /** the security groups' names (or ids) asked for, each once; null: none asked (Nova's default) */
  securityGroups: string[] | null;
  /** an admin's host and/or node to build on, through the filters (2.74) */
  requestedDestination: { host: string | null; node: string | null } | null;
}

/** max_count has none: Nova bounds it only by the instances quota. */
export interface CreateLimits {
  maxMetadataItems: number;
}

/**
 * The create body, validated and normalized, with Nova's checks that need no lookup: counts,
 * metadata quota, availability-zone forms and the forced-host policy.
 */
export function parseCreateServer(
  raw: unknown,
  auth: AuthContext,
  limits: CreateLimits,
  v: ApiVersion,
): CreateServerRequest {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw badRequest(`${repr(raw)} is not of type 'object': the body must be {"server": {...}}`);
  }
  const body = validate(createSchemaFor(v), raw) as z.output<typeof createServerSchema>;
  const s = body.server;

  const imageRef = bootImage(s.imageRef ? idFromHref(s.imageRef) : "", s.block_device_mapping_v2 ?? []);
  if (!imageRef) throw badRequest("Missing imageRef attribute");
  // servers.py _validate_network_id, before 2.37 (from 2.37 the schema checks the format)
  for (const n of Array.isArray(s.networks) ? s.networks : []) {
    if (!n.port && typeof n.uuid === "string" && !/^[0-9a-f]{32}$/i.test(n.uuid.replaceAll("-", "")))
      throw badRequest(`Bad networks format: network uuid is not in proper format (${n.uuid})`);
  }
  if ((s.host !== undefined || s.hypervisor_hostname !== undefined) && !auth.isAdmin) {
    throw policyForbidden(RULES.requestedDestination);
  }
  if (s.hostname !== undefined && maxCountOf(s) > 1) {
    throw badRequest("Unable to set hostname for more than one server at a time.");
  }
  const flavorRef = idFromHref(String(s.flavorRef));

  const minCount = s.min_count ?? 1;
  const maxCount = s.max_count ?? minCount;
  if (minCount > maxCount) throw badRequest("min_count must be <= max_count");

  const metadata = s.metadata ?? {};
  if (Object.keys(metadata).length > limits.maxMetadataItems) {
    throw forbidden(`Maximum number of metadata items exceeds ${limits.maxMetadataItems}`);
  }

  let az: RequestedAz | null = null;
  if (s.availability_zone !== undefined) {
    az = requestedAvailabilityZone(s.availability_zone);
    if ((az.host || az.node) && !auth.isAdmin) throw policyForbidden(RULES.forcedHost);
  }

  return {
    name: s.name,
    flavorRef,
    imageRef,
    minCount,
    maxCount,
    availabilityZone: s.availability_zone ?? null,
    az,
    metadata,
    schedulerHints: { ...(body["OS-SCH-HNT:scheduler_hints"] ?? {}), ...(body["os:scheduler_hints"] ?? {}) },
    returnReservationId: s.return_reservation_id ?? false,
    adminPass: s.adminPass ?? null,
    description: s.description ?? null,
    keyName: s.key_name ?? null,
    accessIPv4: s.accessIPv4 ?? null,
    accessIPv6: s.accessIPv6 ?? null,
    userData: s.user_data ?? null,
    tags: [...new Set(s.tags ?? [])],
    hostname: s.hostname ?? null,
    configDrive: s.config_drive === true,
    networks: (s.networks as RequestedNetworks | undefined) ?? null,
    // servers.py: the names given, each once (a group without a name is none asked)
    securityGroups: s.security_groups
      ? [...new Set(s.security_groups.flatMap((g) => (g.name ? [g.name] : [])))]
      : null,
    requestedDestination:
      s.host !== undefined || s.hypervisor_hostname !== undefined
        ? { host: s.host ?? null, node: s.hypervisor_hostname ?? null }
        : null,
  };
}

const maxCountOf = (s: { min_count?: number; max_count?: number }) => s.max_count ?? s.min_count ?? 1;

const invalidBdm = (details: string) => badRequest(`Block Device Mapping is Invalid: ${details}`);

/**
 * The image a create boots: imageRef, or the boot-from-image mapping's (source image, destination
 * local), which must agree with it. There is no volume service, so any other mapping is refused.
 */
function bootImage(imageRef: string, bdms: Record<string, unknown>[]): string {
  let image = imageRef;
  for (const b of bdms) {
    if (b.source_type !== "image" || (b.destination_type ?? "local") !== "local") {
      throw invalidBdm(
        `only the boot image (source_type 'image', destination_type 'local') can be mapped: there is no volume service.`,
      );
    }
    const uuid = typeof b.uuid === "string" ? b.uuid : "";
    if (!uuid || (image && uuid !== image)) {
      throw invalidBdm(
        "Boot sequence for the instance and image/block device mapping combination is not valid.",
      );
    }
    image = uuid;
  }
  return image;
}

/**
 * Display names for a multi-create, from Nova's multi_instance_display_name_template
 * (`%(name)s-%(count)d` by default; `%(uuid)s` also works). One instance keeps its name.
 */
export function instanceNames(name: string, ids: string[], template = "%(name)s-%(count)d"): string[] {
  if (ids.length === 1) return [name];
  return ids.map((id, i) =>
    template
      .replaceAll("%(name)s", name)
      .replaceAll("%(count)d", String(i + 1))
      .replaceAll("%(uuid)s", id),
  );
}

/** PUT /servers/{id}: name (and Nova's ignored access IPs, disk config); description from 2.19. */
const updateBase = {
  name: novaName.optional(),
  accessIPv4: accessIPv4.optional(),
  accessIPv6: accessIPv6.optional(),
  "OS-DCF:diskConfig": z.enum(["AUTO", "MANUAL"]).optional(),
};
const updateSchemas: Ranged<{ value: z.ZodType }>[] = [
  { max: "2.18", value: z.strictObject({ server: z.strictObject(updateBase) }) },
  {
    min: "2.19",
    max: "2.89",
    value: z.strictObject({ server: z.strictObject({ ...updateBase, description }) }),
  },
  {
    min: "2.90",
    max: "2.93",
    value: z.strictObject({ server: z.strictObject({ ...updateBase, description, hostname }) }),
  },
  {
    min: "2.94",
    value: z.strictObject({ server: z.strictObject({ ...updateBase, description, hostname: fqdn }) }),
  },
];

export interface ServerChanges {
  name?: string;
  description?: string | null;
  hostname?: string;
  access_ip_v4?: string;
  access_ip_v6?: string;
}

export function parseUpdateServer(raw: unknown, v: ApiVersion): ServerChanges {
  const { server } = validate(forVersion(updateSchemas, v), raw) as {
    server: {
      name?: string;
      description?: string | null;
      hostname?: string;
      accessIPv4?: string;
      accessIPv6?: string;
    };
  };
  const changes: ServerChanges = {};
  if (server.accessIPv4 !== undefined) changes.access_ip_v4 = server.accessIPv4;
  if (server.accessIPv6 !== undefined) changes.access_ip_v6 = server.accessIPv6;
  if (server.name !== undefined) changes.name = server.name;
  if (server.description !== undefined) changes.description = server.description;
  if (server.hostname !== undefined) changes.hostname = server.hostname;
  return changes;
}

/** The metadata of PUT/POST /servers/{id}/metadata, within the metadata_items limit once applied. */
export function parseMetadataBody(raw: unknown): Record<string, string> {
  return validate(z.strictObject({ metadata: metadataSchema }), raw).metadata;
}

/** Nova's quota check on the metadata a server would end with: 403 over metadata_items. */
export function checkMetadataLimit(metadata: Record<string, string>, maxItems: number): void {
  if (Object.keys(metadata).length > maxItems) {
    throw forbidden(`Maximum number of metadata items exceeds ${maxItems}`);
  }
}

/** PUT /servers/{id}/metadata/{key}: `{"meta": {key: value}}`, its one key the path's. */
export function parseMetaItem(raw: unknown, key: string): string {
  const { meta } = validate(z.strictObject({ meta: metadataSchema }), raw);
  const keys = Object.keys(meta);
  if (keys.length > 1) throw badRequest("Request body contains too many items");
  if (keys[0] !== key) throw badRequest("Request body and URI mismatch");
  return meta[key]!;
}

/** PUT /servers/{id}/tags: the whole set, at most 50, duplicates folded. */
export function parseTagsBody(raw: unknown): string[] {
  const { tags } = validate(z.strictObject({ tags: z.array(tagSchema).max(MAX_TAGS) }), raw);
  return [...new Set(tags)];
}

/** A tag in a path: Nova checks it against the same rule as in a body. */
export function checkTag(tag: string): string {
  const r = tagSchema.safeParse(tag);
  if (!r.success) {
    throw badRequest(`Tag '${tag}' is invalid: it must be 1 to 60 characters without ',' or '/'.`);
  }
  return tag;
}

/**
 * POST /servers/{id}/action {"lock": ...}: Nova had no schema for it until 2.72 (anything goes, no
 * reason); from 2.73 null or an optional locked_reason.
 */
const lockSchemas: Ranged<{ value: z.ZodType }>[] = [
  { max: "2.72", value: z.unknown().transform(() => null) },
  {
    min: "2.73",
    value: z.union([z.null(), z.strictObject({ locked_reason: z.string().max(255).optional() })]),
  },
];

export function parseLockBody(raw: unknown, v: ApiVersion): { reason: string | null } {
  const body = validate(forVersion(lockSchemas, v), raw) as { locked_reason?: string } | null;
  return { reason: body?.locked_reason ?? null };
}
