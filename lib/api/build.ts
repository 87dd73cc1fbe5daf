// The create, planned without I/O: the instance records and the build request the API writes.
import { randomInt, randomUUID } from "node:crypto";
import type { Flavor, Image } from "../catalog/types.js";
import type { InstanceRecord, NetworkRequest } from "../instances/types.js";
import { zoneRequest } from "../messages/availability-zone.js";
import { type BuildRequest, MAX_INSTANCES_PER_REQUEST } from "../messages/build-request.js";
import type { FlavorSpec, ImageSpec, RequestSpec } from "../scheduler/types.js";
import type { AuthContext } from "./auth.js";
import { badRequest } from "./errors.js";
import { type CreateServerRequest, instanceNames } from "./validation/servers.js";

export function flavorSpec(f: Flavor): FlavorSpec {
  return {
    id: f.id,
    name: f.name,
    vcpus: f.vcpus,
    memory_mb: f.memory_mb,
    root_gb: f.root_gb,
    ephemeral_gb: f.ephemeral_gb,
    swap: f.swap,
    extra_specs: { ...f.extra_specs },
  };
}

export function imageSpec(i: Image): ImageSpec {
  return { id: i.id, name: i.name, properties: { ...i.properties } };
}

const LOWER_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789";
/** Nova's generate_password alphabet: no look-alikes (0/O, 1/l/I). */
const PASSWORD_SYMBOLS = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

function randomString(alphabet: string, length: number): string {
  let s = "";
  for (let i = 0; i < length; i++) s += alphabet[randomInt(alphabet.length)];
  return s;
}

/** Nova's reservation id: `r-` and 8 lowercase letters or digits. */
export function newReservationId(): string {
  return `r-${randomString(LOWER_ALNUM, 8)}`;
}

/** Nova's generated admin password (password_length = 12). */
export function newAdminPass(): string {
  return randomString(PASSWORD_SYMBOLS, 12);
}

const GIB = 1024 ** 3;

/**
 * Nova's _validate_flavor_image_nostatus: the image against the flavor a server boots (or is
 * rebuilt) with, with its exceptions' texts. A root disk of 0 means "the image's size": no disk
 * check then.
 */
export function checkFlavorFitsImage(
  flavor: Pick<Flavor, "memory_mb" | "root_gb">,
  image: Pick<Image, "min_ram" | "min_disk" | "size">,
): void {
  // FlavorMemoryTooSmall
  if (flavor.memory_mb < (image.min_ram ?? 0))
    throw badRequest("Flavor's memory is too small for requested image.");
  const dest = flavor.root_gb * GIB;
  if (dest === 0) return;
  const size = image.size ?? 0;
  const minDisk = (image.min_disk ?? 0) * GIB;
  if (size > dest)
    throw badRequest(
      `Flavor's disk is too small for requested image. Flavor disk is ${dest} bytes, image is ${size} bytes.`,
    );
  if (minDisk > dest)
    throw badRequest(
      `Flavor's disk is smaller than the minimum size specified in image metadata. Flavor disk is ${dest} bytes, minimum size is ${minDisk} bytes.`,
    );
}

/** The RequestSpec of a create: what the scheduler decides from (and what a dry run plans). */
export function requestSpecFor(
  req: CreateServerRequest,
  flavor: FlavorSpec,
  image: ImageSpec,
  auth: AuthContext,
): RequestSpec {
  return {
    project_id: auth.project_id,
    user_id: auth.user_id,
    flavor,
    image,
    // "az:host:node" asks for the zone and forces the host and/or node (admin only, checked in
    // validation)
    ...zoneRequest(req.az),
    // 2.74: a requested destination goes through the filters, unlike a forced host
    ...(req.requestedDestination
      ? {
          requested_destination: {
            ...(req.requestedDestination.host ? { host: req.requestedDestination.host } : {}),
            ...(req.requestedDestination.node ? { node: req.requestedDestination.node } : {}),
          },
        }
      : {}),
    scheduler_hints: { ...req.schedulerHints },
    num_instances: req.maxCount,
  };
}

export interface CreatePlanInput {
  req: CreateServerRequest;
  flavor: Flavor;
  image: Image;
  auth: AuthContext;
  requestId: string;
  now: Date;
  nameTemplate?: string;
  /** injectable for tests */
  ids?: string[];
  reservationId?: string;
  /** the create's networks, resolved: each server gets a port on each */
  networks?: NetworkRequest[];
  /** the zones they are all available in, for the scheduler's AvailabilityZoneFilter */
  networkZones?: string[];
  /** the create's security groups, resolved (ids, or `default`); absent: the project's default */
  securityGroups?: string[];
}

export interface CreatePlan {
  reservationId: string;
  records: InstanceRecord[];
  /** one per MAX_INSTANCES_PER_REQUEST instances, in launch order */
  buildRequests: BuildRequest[];
}

/**
 * The delay of a large create's k-th build request (0 for the first): the requests follow each
 * other about as fast as one is scheduled and cast, so they do not all claim the same best hosts
 * at once (each would lose claims to the others) nor share the scheduler's and conductor's time.
 * Capped well inside instance_build_timeout (600 s by default), past which the watchdog would take
 * a waiting request for a lost one.
 */
export function buildRequestDelaySeconds(k: number): number {
  return Math.min(k * 5, 300);
}

/**
 * One record per instance (max_count of them), and their build requests: one for up to
 * MAX_INSTANCES_PER_REQUEST instances, more for a larger create (each its own conductor
 * execution, so a full fleet may build the first ones and put the rest in ERROR with
 * NoValidHost, where Nova's single scheduling would put them all in ERROR).
 */
export function planCreate(input: CreatePlanInput): CreatePlan {
  const { req, auth, requestId } = input;
  const n = req.maxCount;
  const ids = input.ids ?? Array.from({ length: n }, () => randomUUID());
  if (ids.length !== n) throw new Error(`planCreate: ${ids.length} ids for ${n} instances`);
  const reservationId = input.reservationId ?? newReservationId();
  const names = instanceNames(req.name, ids, input.nameTemplate);
  const flavor = flavorSpec(input.flavor);
  const image = imageSpec(input.image);
  const now = input.now.toISOString();

  // Nova keeps the RequestSpec with the instance: the scheduler reads it there (the build
  // request carries ids only), and a stuck build can be sent again from it.
  const spec = {
    ...requestSpecFor(req, flavor, image, auth),
    ...(input.networkZones ? { network_availability_zones: [...input.networkZones] } : {}),
    num_instances: 1,
  };
  const records: InstanceRecord[] = ids.map((id, i) => ({
    id,
    name: names[i]!,
    project_id: auth.project_id,
    user_id: auth.user_id,
    reservation_id: reservationId,
    request_id: requestId,
    flavor: { ...flavor, extra_specs: { ...flavor.extra_specs } },
    image: { ...image, properties: { ...image.properties } },
    requested_availability_zone: req.availabilityZone,
    availability_zone: null,
    metadata: { ...req.metadata },
    description: req.description,
    tags: [...req.tags],
    key_name: req.keyName,
    ...(input.networks?.length ? { requested_networks: input.networks.map((n) => ({ ...n })) } : {}),
    ...(input.securityGroups?.length ? { requested_security_groups: [...input.securityGroups] } : {}),
    access_ip_v4: req.accessIPv4,
    access_ip_v6: req.accessIPv6,
    hostname: req.hostname,
    config_drive: req.configDrive,
    user_data: req.userData,
    launch_index: i,
    vm_state: "building",
    task_state: "scheduling",
    host: null,
    node: null,
    attempt: 0,
    spawn_attempt: 0,
    retry_hosts: [],
    fault: null,
    created_at: now,
    updated_at: now,
    launched_at: null,
    deleted: false,
    deleted_at: null,
    request_spec: spec,
    actions: {
      [requestId]: {
        action: "create",
        request_id: requestId,
        user_id: auth.user_id,
        project_id: auth.project_id,
        start_time: now,
        message: null,
        events: {},
      },
    },
  }));

  const buildRequests: BuildRequest[] = [];
  for (let i = 0; i < ids.length; i += MAX_INSTANCES_PER_REQUEST) {
    buildRequests.push({
      version: 2,
      request_id: requestId,
      reservation_id: reservationId,
      project_id: auth.project_id,
      user_id: auth.user_id,
      instance_uuids: ids.slice(i, i + MAX_INSTANCES_PER_REQUEST),
      retry: { num_attempts: 1, hosts: [] },
    });
  }
  return { reservationId, records, buildRequests };
}
