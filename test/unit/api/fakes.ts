// In-memory stand-ins for the API's I/O, so the router can be tested without DynamoDB or SQS.
import type { ApiDeps } from "../../../lib/api/deps.js";
import { handleHttp } from "../../../lib/api/router.js";
import type { Keypair } from "../../../lib/catalog/keypairs.js";
import { SEED_FLAVORS, SEED_IMAGES } from "../../../lib/catalog/seed.js";
import type { Flavor, Image } from "../../../lib/catalog/types.js";
import { MarkerNotFound } from "../../../lib/instances/queries.js";
import { requestSpecOf } from "../../../lib/instances/request-spec.js";
import type { InstanceRecord, MigrationRecord, SchedulingRecord } from "../../../lib/instances/types.js";
import type { BuildRequest } from "../../../lib/messages/build-request.js";
import type { ServiceHeartbeat } from "../../../lib/placement/liveness.js";
import type { HostRecord } from "../../../lib/placement/types.js";
import { memoryQuotaStore } from "../quotas/memory-store.js";
import { type CatalogFakes, catalogFakes } from "./catalog-fakes.js";

export interface FakeWorld {
  deps: ApiDeps;
  flavors: Map<string, Flavor>;
  images: Map<string, Image>;
  /** keypairs by `<user>#<name>` */
  keypairs: Map<string, Keypair>;
  instances: Map<string, InstanceRecord>;
  hosts: Map<string, HostRecord>;
  /** the Services table: each host's heartbeat */
  heartbeats: Map<string, ServiceHeartbeat>;
  /** the Scheduling table: each instance's last decision */
  scheduling: Map<string, SchedulingRecord>;
  /** the Migrations table, by uuid */
  migrations: Map<string, MigrationRecord>;
  sent: BuildRequest[];
  /** each sent request's DelaySeconds, in order */
  sentDelays: number[];
  deleted: { id: string; requestId: string }[];
  failEnqueue: boolean;
  /** createInstances fails for the record with this name */
  failWriteOf: string | undefined;
  now: Date;
  /** aggregates, server groups and scheduler dry runs (catalog-fakes.ts) */
  catalog: CatalogFakes;
}

/** The request spec of what the API sent: kept on the instance records, not in the message. */
export function sentSpec(w: FakeWorld, msg: BuildRequest | undefined) {
  const rec = w.instances.get(msg?.instance_uuids[0] ?? "");
  if (!rec?.request_spec)
    throw new Error(`no request spec recorded for ${JSON.stringify(msg?.instance_uuids)}`);
  return requestSpecOf(rec);
}

export const NOW = new Date("2026-03-01T12:00:00.123Z");

/** One resource class's inventory: `total`, `reserved`, `allocation_ratio`, units of 1. */
export const inv = (total: number, reserved = 0, ratio = 1) => ({
  total,
  reserved,
  allocation_ratio: ratio,
  min_unit: 1,
  max_unit: total,
  step_size: 1,
});

export function host(name: string, overrides: Partial<HostRecord> = {}): HostRecord {
  return {
    host: name,
    node: name,
    availability_zone: "nova",
    aggregates: [],
    traits: [],
    inventories: { VCPU: inv(8, 0, 16), MEMORY_MB: inv(16384, 512, 1.5), DISK_GB: inv(200) },
    usage: { VCPU: 2, MEMORY_MB: 4096, DISK_GB: 40 },
    free: {},
    generation: 3,
    num_instances: 2,
    num_io_ops: 0,
    hypervisor_type: "fake",
    hypervisor_version: 1000,
    host_ip: "10.0.0.1",
    supported_instances: [["x86_64", "fake", "hvm"]],
    stats: { failed_builds: 0 },
    service: {
      disabled: false,
      disabled_reason: null,
      forced_down: false,
    },
    queue_url: `http://queue/${name}`,
    changed_at: NOW.toISOString(),
    ...overrides,
  };
}

export function fakeWorld(): FakeWorld {
  const catalog = catalogFakes();
  const w: FakeWorld = {
    flavors: new Map(SEED_FLAVORS.map((f) => [f.id, structuredClone(f)])),
    images: new Map(SEED_IMAGES.map((i) => [i.id, structuredClone(i)])),
    keypairs: new Map(),
    instances: new Map(),
    hosts: new Map([
      ["host-1", host("host-1")],
      ["host-2", host("host-2", { availability_zone: "az2" })],
    ]),
    heartbeats: new Map(
      ["host-1", "host-2"].map((host) => [host, { host, last_heartbeat: NOW.toISOString() }]),
    ),
    scheduling: new Map(),
    migrations: new Map(),
    sent: [],
    sentDelays: [],
    deleted: [],
    failEnqueue: false,
    failWriteOf: undefined,
    now: NOW,
    catalog: catalog.state,
    deps: undefined as unknown as ApiDeps,
  };
  w.deps = {
    getFlavor: async (id) => structuredClone(w.flavors.get(id)),
    listFlavors: async () => [...w.flavors.values()].map((f) => structuredClone(f)),
    createFlavor: async (f) => {
      if (w.flavors.has(f.id)) return { ok: false, reason: "id-exists" };
      if ([...w.flavors.values()].some((x) => x.name === f.name)) return { ok: false, reason: "name-exists" };
      w.flavors.set(f.id, structuredClone(f));
      return { ok: true, flavor: f };
    },
    setFlavorExtraSpecs: async (id, specs) => {
      const f = w.flavors.get(id);
      if (!f) return undefined;
      Object.assign(f.extra_specs, specs);
      return structuredClone(f);
    },
    deleteFlavorExtraSpec: async (id, key) => {
      const f = w.flavors.get(id);
      if (!f) return "no-flavor";
      if (!Object.hasOwn(f.extra_specs, key)) return "no-key";
      delete f.extra_specs[key];
      return "deleted";
    },
    deleteFlavor: async (id) => w.flavors.delete(id),
    setFlavorDescription: async (id, description) => {
      const f = w.flavors.get(id);
      if (!f) return undefined;
      f.description = description;
      return structuredClone(f);
    },
    addFlavorAccess: async (id, project) => {
      const f = w.flavors.get(id);
      if (!f) return { ok: false, reason: "no-flavor" };
      if (f.projects?.includes(project)) return { ok: false, reason: "exists" };
      f.projects = [...(f.projects ?? []), project].sort();
      return { ok: true, flavor: structuredClone(f) };
    },
    removeFlavorAccess: async (id, project) => {
      const f = w.flavors.get(id);
      if (!f) return { ok: false, reason: "no-flavor" };
      if (!f.projects?.includes(project)) return { ok: false, reason: "absent" };
      f.projects = f.projects.filter((p) => p !== project);
      return { ok: true, flavor: structuredClone(f) };
    },
    getImage: async (ref) =>
      structuredClone(w.images.get(ref) ?? [...w.images.values()].find((i) => i.name === ref)),
    listImages: async () => [...w.images.values()].map((i) => structuredClone(i)),
    getKeypair: async (user, name) => structuredClone(w.keypairs.get(`${user}#${name}`)),
    listKeypairs: async (user, page = {}) => {
      let mine = [...w.keypairs.values()]
        .filter((k) => k.user_id === user)
        .sort((a, b) => a.name.localeCompare(b.name));
      if (page.marker !== undefined) {
        const i = mine.findIndex((k) => k.name === page.marker);
        if (i === -1) return { ok: false, reason: "marker-not-found" };
        mine = mine.slice(i + 1);
      }
      return { ok: true, keypairs: mine.slice(0, page.limit ?? mine.length).map((k) => structuredClone(k)) };
    },
    createKeypair: async (kp, quota = 100) => {
      const mine = [...w.keypairs.values()].filter((k) => k.user_id === kp.user_id);
      if (mine.some((k) => k.name === kp.name)) return { ok: false, reason: "exists" };
      if (mine.length + 1 > quota) return { ok: false, reason: "over-quota" };
      const keypair = { ...kp, id: w.keypairs.size + 1 };
      w.keypairs.set(`${kp.user_id}#${kp.name}`, keypair);
      return { ok: true, keypair: structuredClone(keypair) };
    },
    deleteKeypair: async (user, name) => w.keypairs.delete(`${user}#${name}`),
    createInstances: async (records) => {
      if (records.some((r) => r.name === w.failWriteOf)) throw new Error("write failed");
      for (const r of records) w.instances.set(r.id, structuredClone(r));
    },
    getInstance: async (id) => structuredClone(w.instances.get(id)),
    getSchedulingDecision: async (id) => structuredClone(w.scheduling.get(id)),
    listMigrations: async (opts = {}) =>
      [...w.migrations.values()]
        .filter((m) => !opts.instanceUuid || m.instance_uuid === opts.instanceUuid)
        .sort((a, b) => a.id - b.id)
        .map((m) => structuredClone(m)),
    getMigration: async (uuid) => structuredClone([...w.migrations.values()].find((m) => m.uuid === uuid)),
    // the same page as lib/instances/migrations.ts answers, from the records in memory
    pageMigrations: async (q) => {
      const newest = (a: MigrationRecord, b: MigrationRecord) =>
        b.created_at.localeCompare(a.created_at) || b.id - a.id;
      const migrations = [...w.migrations.values()]
        .filter(
          (m) =>
            (!q.instanceUuid || m.instance_uuid === q.instanceUuid) &&
            (!q.after || newest(q.after, m) < 0) &&
            q.match(m),
        )
        .sort(newest)
        .slice(0, q.limit)
        .map((m) => structuredClone(m));
      return { migrations };
    },
    listInstanceMigrations: async (uuid) =>
      [...w.migrations.values()]
        .filter((m) => m.instance_uuid === uuid)
        .sort((a, b) => a.created_at.localeCompare(b.created_at))
        .map((m) => structuredClone(m)),
    listInstances: async (projectId) =>
      [...w.instances.values()]
        .filter((r) => !r.deleted && (!projectId || r.project_id === projectId))
        .sort((a, b) => b.created_at.localeCompare(a.created_at) || a.id.localeCompare(b.id))
        .map((r) => structuredClone(r)),
    // the same page as lib/instances/queries.ts answers, from the records in memory
    listServerPage: async (q) => {
      const newest = (a: InstanceRecord, b: InstanceRecord) =>
        b.created_at.localeCompare(a.created_at) || a.id.localeCompare(b.id);
      let out = [...w.instances.values()]
        .filter(
          (r) =>
            (q.deleted === undefined || r.deleted === q.deleted) &&
            (!q.project || r.project_id === q.project) &&
            (!q.host || r.host === q.host) &&
            (!q.vmStates || q.vmStates.includes(r.vm_state)) &&
            (!q.changesSince || r.updated_at >= q.changesSince) &&
            (!q.changesBefore || r.updated_at <= q.changesBefore) &&
            q.match(r),
        )
        .sort(q.compare ?? newest)
        .map((r) => structuredClone(r));
      if (q.marker) {
        const m = w.instances.get(q.marker);
        const i = q.compare ? out.findIndex((r) => r.id === q.marker) : 0;
        if (!m || i === -1) throw new MarkerNotFound(q.marker);
        out = q.compare ? out.slice(i + 1) : out.filter((r) => newest(m, r) < 0);
      }
      const records = out.slice(0, q.limit);
      return { records, next: out.length > q.limit ? records[records.length - 1]?.id : undefined };
    },
    markDeleted: async (id) => {
      const r = w.instances.get(id);
      if (!r || r.deleted) return undefined;
      const before = structuredClone(r);
      Object.assign(r, {
        deleted: true,
        vm_state: "deleted",
        task_state: null,
        deleted_at: w.now.toISOString(),
      });
      return before; // as the real one: the record as the delete found it
    },
    updateServer: async (id, u) => {
      const r = w.instances.get(id);
      if (!r || r.deleted || (u.ifUpdatedAt !== undefined && r.updated_at !== u.ifUpdatedAt))
        return undefined;
      Object.assign(r, structuredClone(u.fields), { updated_at: (u.now ?? w.now).toISOString() });
      if (u.action) r.actions[u.action.request_id] = structuredClone(u.action);
      return structuredClone(r);
    },
    deleteServer: async (id, requestId) => {
      const r = await w.deps.markDeleted(id);
      if (r) w.deleted.push({ id, requestId });
      return r;
    },
    sendBuildRequest: async (msg, delaySeconds = 0) => {
      if (w.failEnqueue) throw new Error("queue unavailable");
      w.sent.push(structuredClone(msg));
      w.sentDelays.push(delaySeconds);
    },
    listHosts: async () => [...w.hosts.values()].map((h) => structuredClone(h)),
    getHost: async (name) => structuredClone(w.hosts.get(name)),
    listAllocations: async (opts = {}) =>
      ["a", "b"].flatMap((consumer) =>
        opts.host && w.hosts.has(opts.host)
          ? [{ consumer, host: opts.host, attempt: 1, resources: {}, claimed_at: NOW.toISOString() }]
          : [],
      ),
    deleteComputeService: async (name, at) => {
      const h = w.hosts.get(name);
      if (!h || h.service.deleted_at) return "not-found";
      if (h.num_instances > 0) return "busy";
      h.service = { ...h.service, deleted_at: at, disabled: true, disabled_reason: "deleted" };
      return "deleted";
    },
    setServiceStatus: async (name, u) => {
      const h = w.hosts.get(name);
      if (!h) return undefined;
      if (u.disabled !== undefined) {
        h.service.disabled = u.disabled;
        h.service.disabled_reason = u.disabled ? (u.disabled_reason ?? null) : null;
      }
      if (u.forced_down !== undefined) h.service.forced_down = u.forced_down;
      return structuredClone(h);
    },
    listServiceHeartbeats: async () => [...w.heartbeats.values()].map((s) => structuredClone(s)),
    getServiceHeartbeat: async (name) => structuredClone(w.heartbeats.get(name)),
    ...catalog.deps,
    quotas: memoryQuotaStore().store,
    now: () => w.now,
  };
  return w;
}

/** One request through the whole router against a fake world (at `version`); JSON in, parsed JSON out. */
export async function apiCall(
  deps: ApiDeps,
  method: string,
  path: string,
  token: string,
  body?: unknown,
  version?: string,
) {
  const r = await handleHttp(
    {
      method,
      path,
      headers: {
        "x-auth-token": token,
        ...(version ? { "openstack-api-version": `compute ${version}` } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    },
    deps,
  );
  return { status: r.status, json: r.body ? JSON.parse(r.body) : undefined };
}
