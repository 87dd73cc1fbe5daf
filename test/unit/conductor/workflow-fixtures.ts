// The conductor's workflows without the runtime: hosts, instances and claims written through lib/
// (the API's own writes where it has one) on the in-process DynamoDB, and each Step Functions
// step called as the state machine calls it (conductorStep), so a test reads what the workflow did.
import { randomUUID } from "node:crypto";
import { UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { defaultDeps } from "../../../lib/api/deps.js";
import { dynamo } from "../../../lib/aws/clients.js";
import { inventoriesFor } from "../../../lib/compute/inventory.js";
import { type ConductorEvent, conductorStep } from "../../../lib/conductor/dispatch.js";
import type { Cast } from "../../../lib/conductor/types.js";
import { resources } from "../../../lib/config.js";
import { getMigration } from "../../../lib/instances/migrations.js";
import { acceptMove, type MoveKind } from "../../../lib/instances/move-accept.js";
import { getInstance } from "../../../lib/instances/queries.js";
import { conductorRequest } from "../../../lib/instances/request-spec.js";
import { createInstances } from "../../../lib/instances/server-writes.js";
import { unshelveFields } from "../../../lib/instances/shelve.js";
import { beginAction } from "../../../lib/instances/transition.js";
import type {
  ActionName,
  InstanceAction,
  InstanceRecord,
  MigrationRecord,
} from "../../../lib/instances/types.js";
import { type BuildRequest, moveAttempt } from "../../../lib/messages/build-request.js";
import type { Destination } from "../../../lib/messages/common.js";
import { type ComputeMessage, computeMessage } from "../../../lib/messages/compute.js";
import { type ConductorInput, type Scheduled, scheduledOf } from "../../../lib/messages/scheduled.js";
import { consumerAllocations } from "../../../lib/placement/allocations.js";
import { claim, moveAllocation } from "../../../lib/placement/claims.js";
import { getHost, registerHost } from "../../../lib/placement/hosts.js";
import { heartbeat } from "../../../lib/placement/liveness.js";
import { resourcesFromFlavor } from "../../../lib/scheduler/resources.js";
import { record } from "../api/records.js";

export const at = (host: string): Destination => ({ host, nodename: host, availability_zone: "az1" });

/** Host names of this test's own (the tables are shared by the file's tests). */
export function hostNames(n: number): string[] {
  const tag = randomUUID().slice(0, 8);
  return Array.from({ length: n }, (_, i) => `cn-${tag}-${i}`);
}

/** What a fake host in az1 registers with Placement: its inventory of these sizes. */
export function fakeHostRegistration(
  name: string,
  sizes: { vcpus: number; memory_mb: number; local_gb: number },
  hypervisorType = "fake",
): Parameters<typeof registerHost>[0] {
  return {
    host: name,
    availability_zone: "az1",
    inventories: inventoriesFor(sizes),
    hypervisor_type: hypervisorType,
    hypervisor_version: 1000,
    host_ip: "10.0.0.1",
    supported_instances: [["x86_64", "fake", "hvm"]],
    queue_url: `http://127.0.0.1:1/000000000000/q-${name}`,
  };
}

/** A host registered with Placement and heard from now; `memoryMb` of room. */
export async function host(name: string, memoryMb = 8192, hypervisorType = "fake"): Promise<void> {
  await registerHost(
    fakeHostRegistration(name, { vcpus: 8, memory_mb: memoryMb, local_gb: 100 }, hypervisorType),
  );
  await heartbeat(name);
}

/** Take the memory left on `hostName` (for other consumers, up to max_unit each). */
export async function fill(hostName: string): Promise<void> {
  for (let i = 0; ; i++) {
    const free = (await getHost(hostName))!.free.MEMORY_MB ?? 0;
    if (free <= 0) return;
    const r = await claim(hostName, `fill-${randomUUID()}`, { MEMORY_MB: Math.min(free, 8192) }, 1);
    if (!r.claimed || i > 10)
      throw new Error(`cannot fill ${hostName}: ${r.claimed ? "too many" : r.reason}`);
  }
}

/** A new instance record (record()'s m1.tiny), written as the API writes it. */
export async function instance(over: Partial<InstanceRecord> = {}): Promise<InstanceRecord> {
  const id = randomUUID();
  const rec = record({ id, request_id: `req-${randomUUID()}`, ...over });
  await createInstances([rec]);
  return (await getInstance(id))!;
}

/** An ACTIVE instance on `hostName` at `attempt`, holding its claim there. */
export async function activeOn(hostName: string, attempt = 1, over: Partial<InstanceRecord> = {}) {
  const rec = await instance({
    vm_state: "active",
    task_state: null,
    host: hostName,
    node: hostName,
    availability_zone: "az1",
    attempt,
    spawn_attempt: attempt,
    power_state: 1,
    ...over,
  });
  const r = await claim(hostName, rec.id, resourcesFromFlavor(rec.flavor), attempt);
  if (!r.claimed) throw new Error(`cannot claim ${hostName}: ${r.reason}`);
  return rec;
}

/** The conductor's input for a request, as the intake makes it. */
export function input<R extends BuildRequest>(msg: R): ConductorInput & R {
  return { ...msg, config: { max_attempts: 3 } };
}

/** The same request at attempt `n` of the state machine, having tried `tried`. */
export function retried<R extends ConductorInput>(
  req: R,
  n: number,
  tried: string[],
  alternates: string[] = [],
): R {
  return { ...req, retry: { num_attempts: n, hosts: tried }, alternates: alternates.map(at) };
}

/** Nova's instance action for a request of `rec`'s owner. */
export function actionOf(
  rec: InstanceRecord,
  action: ActionName,
  requestId = `req-${randomUUID()}`,
): InstanceAction {
  const { user_id, project_id } = rec;
  return {
    action,
    request_id: requestId,
    user_id,
    project_id,
    start_time: new Date().toISOString(),
    message: null,
    events: {},
  };
}

const MOVE_ACTIONS: Record<MoveKind, ActionName> = {
  resize: "resize",
  migration: "migrate",
  evacuation: "evacuate",
  "live-migration": "live-migration",
};

/** A move accepted by the API's own write (acceptMove); the request it sends to the conductor. */
export async function acceptedMove(rec: InstanceRecord, kind: MoveKind) {
  let sent: BuildRequest | undefined;
  const r = await acceptMove(
    rec,
    {
      kind,
      newFlavor: rec.flavor,
      requestedHost: null,
      sameHostAllowed: false,
      action: actionOf(rec, MOVE_ACTIONS[kind]),
    },
    {
      ...defaultDeps.moves!,
      sendBuildRequest: async (msg) => {
        sent = msg;
      },
      reserveDelta: async (_project, delta) => ({ ok: true, count: 0, delta }),
      releaseUsage: async () => {},
      now: () => new Date(),
    },
  );
  if (!r.ok || !sent?.move) throw new Error(`move not accepted: ${JSON.stringify(r)}`);
  return {
    req: input(sent as BuildRequest & { move: NonNullable<BuildRequest["move"]> }),
    migration: r.migration,
  };
}

/**
 * A running server on a source host, a move of `kind` accepted, and destinations for it (`types`:
 * their hypervisors).
 */
export async function moving(kind: MoveKind, types: string[] = ["fake", "fake"]) {
  const [source, ...dests] = hostNames(types.length + 1);
  await host(source!);
  for (const [i, d] of dests.entries()) await host(d, 8192, types[i]);
  const rec = await activeOn(source!);
  const { req, migration: m } = await acceptedMove(rec, kind);
  return { rec, req, m, source: source!, dests };
}

/** A server in BUILD, its request at attempt 1, and hosts for it. */
export async function building(hosts = 3) {
  const names = hostNames(hosts);
  for (const h of names) await host(h);
  const rec = await instance();
  return { rec, req: input(conductorRequest(rec, rec.request_id)), hosts: names };
}

/** A SHELVED_OFFLOADED server (no host, no claim), its unshelve accepted by the API's own write. */
export async function unshelving(hosts = 3, over: Partial<InstanceRecord> = {}) {
  const names = hostNames(hosts);
  for (const h of names) await host(h);
  const shelved = await instance({
    vm_state: "shelved_offloaded",
    task_state: null,
    attempt: 1,
    shelve: { at: new Date().toISOString(), image_id: null, host: names[0]! },
    ...over,
  });
  const a = actionOf(shelved, "unshelve");
  const ctx = {
    uuid: randomUUID(),
    request_id: a.request_id,
    base_attempt: 1,
    requested_host: null,
    tried: [],
  };
  const rec = await beginAction(shelved, "unshelving", a, unshelveFields(ctx, undefined, false));
  if (!rec) throw new Error("unshelve not accepted");
  const unshelve = { unshelve_uuid: ctx.uuid, base_attempt: 1 };
  return { rec, req: input({ ...conductorRequest(rec, a.request_id), unshelve }), hosts: names };
}

/** What the scheduler did: `hostName` claimed for the instance at attempt `n`. */
export async function claimFor(rec: InstanceRecord, hostName: string, n: number): Promise<void> {
  const r = await claim(hostName, rec.id, resourcesFromFlavor(rec.flavor), n);
  if (!r.claimed) throw new Error(`cannot claim ${hostName}: ${r.reason}`);
}

/**
 * What select_destinations does for a move before BuildInstances: the source's allocation becomes
 * the migration's, and the destination is claimed for the instance at the move's attempt.
 */
export async function scheduleMove(
  rec: InstanceRecord,
  req: ConductorInput & { move: NonNullable<BuildRequest["move"]> },
  dest: string,
): Promise<void> {
  const move = await handOverSource(rec.id);
  const r = await claim(dest, rec.id, resourcesFromFlavor(move.new_flavor), moveAttempt(req));
  if (!r.claimed) throw new Error(`cannot claim ${dest}: ${r.reason}`);
}

/** select_destinations' first write for a move: the source's allocation the migration's. */
export async function handOverSource(id: string) {
  const move = (await getInstance(id))!.migration!;
  await moveAllocation(move.source_host, id, move.uuid, { fromAttempt: move.source_attempt });
  return move;
}

/** The scheduler's answer: `hosts[0]` selected (claimed by the caller), the rest alternates. */
export function scheduled(id: string, hosts: string[]): Scheduled {
  return scheduledOf([{ instance_uuid: id, selected: at(hosts[0]!), alternates: hosts.slice(1).map(at) }]);
}

/** One Step Functions step of the conductor, as the state machine sends it. */
export function step(
  action: ConductorEvent["action"],
  request: ConductorInput,
  more: Omit<ConductorEvent, "action" | "request"> = {},
): Promise<unknown> {
  return conductorStep({ action, request, ...more });
}

/** BuildInstances: the casts it answered, decoded. */
export async function start(
  request: ConductorInput,
  s: Scheduled,
): Promise<{ queue_url: string; msg: ComputeMessage }[]> {
  const { casts } = (await step("build_instances", request, { scheduled: s })) as { casts: Cast[] };
  return casts.map((c) => ({
    queue_url: c.queue_url,
    msg: computeMessage.parse(JSON.parse(c.message_body)),
  }));
}

/** Every claim of `consumer`: host → attempt. */
export async function claims(consumer: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const a of await consumerAllocations(consumer)) out[a.host] = a.attempt;
  return out;
}

export async function migration(uuid: string): Promise<MigrationRecord> {
  return (await getMigration(uuid))!;
}

/** A direct write to the record (dotted names reach into maps), for a state no step here makes. */
export async function setFields(
  id: string,
  fields: Record<string, unknown>,
  remove: string[] = [],
): Promise<void> {
  const names: Record<string, string> = {};
  const path = (key: string) =>
    key
      .split(".")
      .map((part) => {
        const n = `#n${Object.keys(names).length}`;
        names[n] = part;
        return n;
      })
      .join(".");
  const values = Object.fromEntries(Object.values(fields).map((v, i) => [`:v${i}`, v]));
  const set = Object.keys(fields).map((k, i) => `${path(k)} = :v${i}`);
  const rem = remove.map(path);
  await dynamo().send(
    new UpdateCommand({
      TableName: resources().instancesTable,
      Key: { id },
      UpdateExpression: [
        set.length ? `SET ${set.join(", ")}` : "",
        rem.length ? `REMOVE ${rem.join(", ")}` : "",
      ]
        .filter(Boolean)
        .join(" "),
      ExpressionAttributeNames: names,
      ...(set.length ? { ExpressionAttributeValues: values } : {}),
    }),
  );
}
