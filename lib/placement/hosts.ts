// Host records: a compute node's resource provider and its service settings in one compact item,
// and the reads the scheduler's cache is built from (the whole fleet once, then the change feed).
import { GetCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { batchGetAll } from "../aws/dynamo-batch.js";
import { conditionHeld, unlessConditionFails } from "../aws/dynamo-errors.js";
import { scanAll } from "../aws/dynamo-pages.js";
import { resources } from "../config.js";
import { planInventory, withOverrides } from "./capacity.js";
import { logChange, readChanges } from "./change-log.js";
import { stamp, stampNew } from "./feed.js";
import type { HostRecord, Inventory, ResourceClass } from "./types.js";

export interface HostRegistration {
  host: string;
  availability_zone: string;
  inventories: Partial<Record<ResourceClass, Inventory>>;
  aggregates?: string[];
  traits?: string[];
  hypervisor_type: string;
  hypervisor_version: number;
  host_ip: string;
  supported_instances: [string, string, string][];
  queue_url: string;
  /** the driver's facts (limits enforced, URI…): os-hypervisors' cpu_info */
  hypervisor_facts?: Record<string, unknown>;
}

export async function getHost(host: string): Promise<HostRecord | undefined> {
  const r = await dynamo().send(
    new GetCommand({ TableName: resources().hostsTable, Key: { host }, ConsistentRead: true }),
  );
  return r.Item as HostRecord | undefined;
}

/** Every host; `consistent` for readers that must see every write already acknowledged (audit). */
export async function listHosts(opts: { consistent?: boolean } = {}): Promise<HostRecord[]> {
  return scanAll<HostRecord>({
    TableName: resources().hostsTable,
    ...(opts.consistent ? { ConsistentRead: true } : {}),
  });
}

/** Scan segments a cold start reads in parallel. */
export const COLD_START_SEGMENTS = 8;

/** The whole fleet for a cold cache: `segments` parallel Scans, each paginated. */
export async function readAllHosts(segments = COLD_START_SEGMENTS): Promise<HostRecord[]> {
  const table = resources().hostsTable;
  const parts = await Promise.all(
    Array.from({ length: segments }, (_, segment) =>
      scanAll<HostRecord>({ TableName: table, Segment: segment, TotalSegments: segments }),
    ),
  );
  return parts.flat();
}

/**
 * These hosts' items, as a cache refresh reads them (eventually consistent: a reader that gets
 * an image older than the feed's entry reads it again on its next refresh).
 */
export function readHosts(hosts: readonly string[]): Promise<HostRecord[]> {
  return batchGetAll<HostRecord>(
    resources().hostsTable,
    hosts.map((host) => ({ host })),
  );
}

/**
 * Every host whose item was written after `since` (ISO-8601), from the change feed. The feed
 * lags and writers' clocks differ, so a caller passes a `since` some seconds before the newest
 * `changed_at` it has seen, and keeps whichever copy of a host has the larger generation and
 * `changed_at`.
 */
export async function readChangedHosts(since: string): Promise<HostRecord[]> {
  const changed = new Set((await readChanges(since)).map((c) => c.host));
  return changed.size ? readHosts([...changed]) : [];
}

/** A host's first provider item: its inventory, nothing used, the service enabled, generation 1. */
export function newHostItem(reg: HostRegistration): HostRecord {
  return stampNew({
    host: reg.host,
    node: reg.host,
    availability_zone: reg.availability_zone,
    aggregates: reg.aggregates ?? [],
    traits: reg.traits ?? [],
    ...planInventory({ host: reg.host, usage: {} }, reg.inventories),
    generation: 1,
    num_instances: 0,
    num_io_ops: 0,
    hypervisor_type: reg.hypervisor_type,
    hypervisor_version: reg.hypervisor_version,
    host_ip: reg.host_ip,
    supported_instances: reg.supported_instances,
    stats: { failed_builds: 0 },
    service: { disabled: false, disabled_reason: null, forced_down: false },
    queue_url: reg.queue_url,
    ...(reg.hypervisor_facts ? { hypervisor_facts: reg.hypervisor_facts } : {}),
    started_at: new Date().toISOString(),
  });
}

/**
 * The compute agent's registration: create the host, or update its inventory and facts while
 * keeping its usage, the operator's service settings and the reserved and
 * allocation_ratio an admin set. One UpdateItem conditioned on `generation`, so it can lose
 * neither a concurrent claim nor a concurrent inventory change; it writes only what the agent
 * owns, so a concurrent os-services change (which does not bump the generation) is kept too.
 * Throws PlacementConflict (Placement's InventoryInUse) when the reported inventory would no
 * longer hold what is allocated on the host, and InvalidInventory for an impossible one.
 */
export async function registerHost(
  reg: HostRegistration,
  /** the caller found the item there already (registerNewHost): no Put first */
  opts: { known?: boolean } = {},
): Promise<HostRecord> {
  const table = resources().hostsTable;
  // A host registers once and restarts rarely: try the conditional Put first (one request) and
  // read-modify-write only when the item is already there.
  for (let first = !opts.known; ; first = false) {
    const current = first ? undefined : await getHost(reg.host);
    if (!current) {
      const item = newHostItem(reg);
      const put = dynamo().send(
        new PutCommand({ TableName: table, Item: item, ConditionExpression: "attribute_not_exists(host)" }),
      );
      // registered meanwhile: read it and update
      if (await conditionHeld(put)) {
        await logChange(reg.host, { ":changed_at": item.changed_at });
        return item;
      }
      continue;
    }
    const planned = planInventory(current, withOverrides(reg.inventories, current.inventory_overrides));
    const facts: Record<string, unknown> = {
      availability_zone: reg.availability_zone,
      aggregates: reg.aggregates ?? current.aggregates,
      traits: reg.traits ?? current.traits,
      ...planned,
      hypervisor_type: reg.hypervisor_type,
      hypervisor_version: reg.hypervisor_version,
      host_ip: reg.host_ip,
      supported_instances: reg.supported_instances,
      queue_url: reg.queue_url,
      ...(reg.hypervisor_facts ? { hypervisor_facts: reg.hypervisor_facts } : {}),
      // the compute service (re)started: what its uptime counts from
      started_at: new Date().toISOString(),
      // Nova's compute stats are the service's memory: a restarted one counts failed builds and
      // builds in flight from 0 (its agent then resets failed_builds only after a failure, and
      // sets num_io_ops by heartbeat: lib/compute/host-state.ts)
      stats: { failed_builds: 0 },
      num_io_ops: 0,
    };
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = { ":g": current.generation, ":one": 1 };
    const sets = Object.entries(facts).map(([k, v], i) => {
      names[`#f${i}`] = k;
      values[`:f${i}`] = v;
      return `#f${i} = :f${i}`;
    });
    // forced_down is the operator's (Nova: only `service-force-down` unsets it): a restarted agent
    // must not bring a host an operator fenced back into scheduling.
    sets.push("generation = generation + :one", stamp(values));
    // a service deleted through the API comes back as new when its agent registers (Nova's
    // restarted nova-compute recreates its service record), enabled
    if (current.service.deleted_at) {
      sets.push("service = :service");
      values[":service"] = {
        disabled: false,
        disabled_reason: null,
        forced_down: current.service.forced_down,
      };
    }
    const r = await unlessConditionFails(
      dynamo().send(
        new UpdateCommand({
          TableName: table,
          Key: { host: reg.host },
          UpdateExpression: `SET ${sets.join(", ")}`,
          ConditionExpression: "generation = :g",
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: "ALL_NEW",
        }),
      ),
    );
    // a claim or release moved the generation on: read again
    if (r) {
      await logChange(reg.host, values);
      return r.Attributes as HostRecord;
    }
  }
}

/**
 * The end of a build on `host`: Nova's failed_builds statistic for the BuildFailureWeigher (+1
 * per failure, 0 on success) and num_io_ops set to the builds the agent still has in flight, in
 * one write. The absolute count corrects what claims added (+1 each) for builds that never ran.
 */
export async function recordBuildResult(host: string, ok: boolean, inFlight: number): Promise<void> {
  const values = buildStatsValues(inFlight, ok);
  await writeBuildStats(host, values, ok);
  await logChange(host, values);
}

/**
 * A heartbeat's in_flight, sent once builds ended whose reports left num_io_ops as the claims
 * counted it (a success after no failure writes nothing to the host: lib/compute/host-state.ts).
 * False when the host has no provider item (its service was deleted): the heartbeat goes on.
 */
export async function recordInFlight(host: string, inFlight: number): Promise<boolean> {
  const values = buildStatsValues(inFlight);
  const written = await conditionHeld(writeBuildStats(host, values));
  if (written) await logChange(host, values);
  return written;
}

function buildStatsValues(inFlight: number, ok?: boolean): Record<string, unknown> {
  return { ":io": inFlight, ...(ok === true ? { ":zero": 0 } : ok === false ? { ":one": 1 } : {}) };
}

function writeBuildStats(host: string, values: Record<string, unknown>, ok?: boolean): Promise<unknown> {
  const sets = ["num_io_ops = :io", stamp(values), ...(ok === true ? ["stats.failed_builds = :zero"] : [])];
  return dynamo().send(
    new UpdateCommand({
      TableName: resources().hostsTable,
      Key: { host },
      UpdateExpression: `SET ${sets.join(", ")}${ok === false ? " ADD stats.failed_builds :one" : ""}`,
      ConditionExpression: "attribute_exists(host)",
      ExpressionAttributeValues: values,
    }),
  );
}
