// Live migration through the conductor, on the emulators with simulated fake hosts: os-migrateLive
// at each microversion (the scheduler's choice, a requested host, a forced one before 2.68), the
// conductor's verdict as Nova's 400 before 2.34 and as the action's error event from 2.34, both
// hosts' claims held while it runs and settled after, the in-progress migration's views,
// force_complete and abort, a destination that cannot prepare rolling back, and redelivered
// steps changing nothing. exec's refusal has its own runtime, at the end.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { castToCompute } from "../../lib/aws/send.js";
import type { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { listInstanceMigrations } from "../../lib/instances/migrations.js";
import { getInstance } from "../../lib/instances/queries.js";
import type { MigrationRecord } from "../../lib/instances/types.js";
import { consumerAllocations } from "../../lib/placement/allocations.js";
import { auditPlacement } from "../../lib/placement/audit.js";
import { getHost } from "../../lib/placement/hosts.js";
import { type InvocationRecord, observeInvocations } from "../../local/lambda.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, hostsByName, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;
let admin: Client;

const fake = (host: string) => runtime.hosts.get(host)!.driver as FakeDriver;

async function boot(server: Record<string, unknown> = {}): Promise<{ id: string; host: string }> {
  const id = await client.createServer({ flavorRef: "1", ...server });
  await client.waitForStatus(id, ["ACTIVE"]);
  return { id, host: (await getInstance(id))!.host! };
}

const live = (c: Client, id: string, body: Record<string, unknown>) =>
  c.post(`/v2.1/servers/${id}/action`, { "os-migrateLive": body });

/** The server's newest migration record. */
async function lastMigration(id: string): Promise<MigrationRecord> {
  const all = await listInstanceMigrations(id);
  return all.sort((a, b) => b.id - a.id)[0]!;
}

async function settled(id: string): Promise<MigrationRecord> {
  const m = await eventually(
    () => lastMigration(id),
    (m) => ["completed", "error", "failed", "cancelled"].includes(m.status),
  );
  await eventually(
    () => getInstance(id),
    (r) => r?.task_state === null && r.migration === undefined,
  );
  return m;
}

/** consumer@host → MEMORY_MB, for the instance and one migration */
async function claims(id: string, migration: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const c of [id, migration])
    for (const a of await consumerAllocations(c))
      out[`${c === id ? "instance" : "migration"}@${a.host}`] = a.resources.MEMORY_MB ?? 0;
  return out;
}

function otherHost(...not: string[]): string {
  return [...runtime.hosts.keys()].find((h) => !not.includes(h))!;
}

describe("on fake hosts", () => {
  beforeAll(async () => {
    ({ runtime, client } = await startTestRuntime({
      hosts: 3,
      heartbeatSeconds: 1,
      watchdogIntervalMs: 0, // the watchdog's test runs it when it means to
      // a step with no answer for 4 s is stuck (the watchdog runs only when a test asks)
      env: { NOVALESS_SERVICE_DOWN_TIME: "4", NOVALESS_INSTANCE_BUILD_TIMEOUT: "4" },
    }));
    admin = client.as(ADMIN);
    for (const h of runtime.hosts.values()) (h.driver as FakeDriver).liveMigrationMs = 300;
  });
  afterAll(async () => runtime?.stop());

  describe("os-migrateLive", () => {
    it("moves a running server to the scheduler's host, holding both claims while it runs", async () => {
      const { id, host: source } = await boot();
      fake(source).liveMigrationMs = 1500;
      const r = await live(admin.at("2.25"), id, { host: null, block_migration: "auto" });
      expect(r.status).toBe(202);
      // the conductor answered before the API did (Nova's synchronous call): placed already
      const placed = await lastMigration(id);
      expect(["queued", "preparing", "running", "completed"]).toContain(placed.status);
      expect(placed.migration_type).toBe("live-migration");
      const server = (await admin.get(`/v2.1/servers/${id}`)).body.server;
      expect(server.status).toBe("MIGRATING");
      expect(server["OS-EXT-STS:task_state"]).toBe("migrating");

      // running: both hosts claimed (the destination for the instance, the source for the migration)
      const running = await eventually(
        () => lastMigration(id),
        (m) => m.status === "running" && (m.memory_processed_bytes ?? 0) > 0,
      );
      const dest = running.dest_compute!;
      expect(dest).not.toBe(source);
      expect(await claims(id, running.uuid)).toEqual({
        [`instance@${dest}`]: 512,
        [`migration@${source}`]: 512,
      });
      expect((await auditPlacement({ repair: false })).findings).toEqual([]);
      // the in-progress view with the driver's progress (2.23), its uuid (2.59), owner (2.80)
      const at = (v: string) => admin.at(v).get(`/v2.1/servers/${id}/migrations`);
      const v223 = (await at("2.23")).body.migrations;
      expect(v223).toHaveLength(1);
      expect(v223[0]).toMatchObject({
        id: running.id,
        server_uuid: id,
        status: "running",
        source_compute: source,
        dest_compute: dest,
        memory_total_bytes: 512 * 2 ** 20,
      });
      expect(v223[0].memory_processed_bytes).toBeGreaterThan(0);
      expect(v223[0]).not.toHaveProperty("uuid");
      expect((await at("2.59")).body.migrations[0].uuid).toBe(running.uuid);
      expect((await at("2.80")).body.migrations[0]).toHaveProperty("project_id");
      const shown = await admin.at("2.23").get(`/v2.1/servers/${id}/migrations/${running.id}`);
      expect(shown.body.migration.status).toBe("running");
      expect((await client.at("2.23").get(`/v2.1/servers/${id}/migrations`)).status).toBe(403);

      const done = await settled(id);
      expect(done.status).toBe("completed");
      const rec = (await getInstance(id))!;
      expect(rec).toMatchObject({ host: dest, vm_state: "active", task_state: null });
      // no confirm: the source's claim is gone, the destination's is the instance's
      expect(await claims(id, running.uuid)).toEqual({ [`instance@${dest}`]: 512 });
      expect(fake(source).has(id)).toBe(false);
      expect(fake(dest).has(id)).toBe(true);
      const hosts = await hostsByName();
      expect(hosts.get(source)!.usage.MEMORY_MB ?? 0).toBe(0);
      expect((await auditPlacement({ repair: false })).findings).toEqual([]);
      // os-migrations lists it; the in-progress list no longer does
      const list = await admin.at("2.23").get(`/v2.1/os-migrations?instance_uuid=${id}`);
      expect(list.body.migrations[0]).toMatchObject({
        migration_type: "live-migration",
        status: "completed",
      });
      expect((await at("2.23")).body.migrations).toEqual([]);
      const gone = await admin.at("2.23").get(`/v2.1/servers/${id}/migrations/${running.id}`);
      expect(gone.status).toBe(404);
      // the instance action and its events
      const actions = (await admin.get(`/v2.1/servers/${id}/os-instance-actions`)).body.instanceActions;
      const act = actions.find((a: { action: string }) => a.action === "live-migration");
      expect(act).toBeDefined();
      const events = (
        await admin.at("2.51").get(`/v2.1/servers/${id}/os-instance-actions/${act.request_id}`)
      ).body.instanceAction.events.map((e: { event: string; result: string }) => `${e.event}:${e.result}`);
      expect(events).toEqual(
        expect.arrayContaining([
          "conductor_live_migrate_instance:Success",
          "compute_pre_live_migration:Success",
          "compute_live_migration:Success",
          "compute_post_live_migration_at_destination:Success",
        ]),
      );
      await admin.delete(`/v2.1/servers/${id}`);
    });

    it("takes a requested host through the scheduler, and a forced one past it before 2.68", async () => {
      const { id, host: source } = await boot();
      const target = otherHost(source);
      expect((await live(admin.at("2.30"), id, { host: target, block_migration: false })).status).toBe(202);
      expect(await settled(id)).toMatchObject({ status: "completed", dest_compute: target });
      // forced (2.30 to 2.67): no filters, but still claimed, and Nova's minimal checks
      const forcedTo = otherHost(target);
      const forced = await live(admin.at("2.67"), id, {
        host: forcedTo,
        block_migration: "auto",
        force: true,
      });
      expect(forced.status).toBe(202);
      expect(await settled(id)).toMatchObject({ status: "completed", dest_compute: forcedTo });
      expect(await consumerAllocations(id)).toHaveLength(1);
      // a disabled host: the scheduler refuses it (NoValidHost), forcing skips the filters
      const disabled = otherHost(forcedTo);
      await admin.call("PUT", "/v2.1/os-services/disable", { host: disabled, binary: "nova-compute" });
      try {
        const checked = await live(admin.at("2.30"), id, { host: disabled, block_migration: "auto" });
        expect(checked.status).toBe(400);
        expect(checked.body.badRequest.message).toBe(
          "No valid host was found. There are not enough hosts available.",
        );
        await settled(id);
        const there = await live(admin.at("2.30"), id, {
          host: disabled,
          block_migration: "auto",
          force: true,
        });
        expect(there.status).toBe(202);
        expect(await settled(id)).toMatchObject({ status: "completed", dest_compute: disabled });
      } finally {
        await admin.call("PUT", "/v2.1/os-services/enable", { host: disabled, binary: "nova-compute" });
      }
      // force without a host, force from 2.68, disk_over_commit from 2.25: Nova's 400s
      const noHost = await live(admin.at("2.30"), id, { host: null, block_migration: "auto", force: true });
      expect(noHost.body.badRequest.message).toBe("Can't force to a non-provided destination");
      expect(
        (await live(admin.at("2.68"), id, { host: null, block_migration: "auto", force: true })).status,
      ).toBe(400);
      expect(
        (await live(admin.at("2.25"), id, { host: null, block_migration: "auto", disk_over_commit: false }))
          .status,
      ).toBe(400);
      // before 2.25 both booleans are required
      expect((await live(admin, id, { host: null, block_migration: false })).status).toBe(400);
      // an unknown host, and a member
      const unknown = await live(admin.at("2.25"), id, { host: "no-such-host", block_migration: "auto" });
      expect(unknown.body.badRequest.message).toBe("Compute host no-such-host could not be found.");
      expect((await live(client.at("2.25"), id, { host: null, block_migration: "auto" })).status).toBe(403);
      await admin.delete(`/v2.1/servers/${id}`);
    });

    it("answers the conductor's refusal as Nova's 400 before 2.34, as an error event from 2.34", async () => {
      const { id, host: source } = await boot();
      // a refusal and NoValidHost are select_destinations' answers, not function errors
      const invocations: InvocationRecord[] = [];
      const stop = observeInvocations((r) => invocations.push(r));
      // to itself: UnableToMigrateToSelf, forced
      const self = await live(admin.at("2.30"), id, { host: source, block_migration: "auto", force: true });
      expect(self.status).toBe(400);
      expect(self.body.badRequest.message).toBe(
        `Unable to migrate instance (${id}) to current host (${source}).`,
      );
      expect(await settled(id)).toMatchObject({ status: "error" });
      // a requested host that cannot take it: NoValidHost
      const others = [...runtime.hosts.keys()].filter((h) => h !== source);
      for (const h of others)
        await admin.call("PUT", `/v2.1/os-services/disable`, { host: h, binary: "nova-compute" });
      try {
        const sync = await live(admin.at("2.33"), id, { host: null, block_migration: "auto" });
        expect(sync.status).toBe(400);
        expect(sync.body.badRequest.message).toBe(
          "No valid host was found. There are not enough hosts available.",
        );
        expect(await settled(id)).toMatchObject({ status: "error" });
        let rec = (await getInstance(id))!;
        expect(rec).toMatchObject({ host: source, vm_state: "active", task_state: null });

        // from 2.34: 202 at once; the refusal is the action's error event and the migration's error
        const async = await live(admin.at("2.34"), id, { host: null, block_migration: "auto" });
        expect(async.status).toBe(202);
        expect(await settled(id)).toMatchObject({ status: "error" });
        rec = (await getInstance(id))!;
        expect(rec).toMatchObject({ host: source, vm_state: "active", task_state: null });
        const act = Object.values(rec.actions)
          .filter((a) => a.action === "live-migration")
          .sort((a, b) => b.start_time.localeCompare(a.start_time))[0]!;
        expect(Object.values(act.events).map((e) => `${e.event}:${e.result}`)).toContain(
          "conductor_live_migrate_instance:Error",
        );
      } finally {
        stop();
        for (const h of others)
          await admin.call("PUT", `/v2.1/os-services/enable`, { host: h, binary: "nova-compute" });
      }
      const scheduler = invocations.filter((r) => r.name === "novaless-scheduler");
      expect(scheduler).toHaveLength(3);
      expect(scheduler.filter((r) => !r.ok)).toEqual([]);
      // nothing held for the failed moves
      expect((await consumerAllocations(id)).map((a) => a.host)).toEqual([source]);
      // a stopped server: Nova's 409s
      await admin.post(`/v2.1/servers/${id}/action`, { "os-stop": null });
      await client.waitForStatus(id, ["SHUTOFF"]);
      const stopped = await live(admin.at("2.25"), id, { host: null, block_migration: "auto" });
      expect(stopped.status).toBe(409);
      expect(stopped.body.conflictingRequest.message).toBe(
        `Cannot 'os-migrateLive' instance ${id} while it is in vm_state stopped`,
      );
      await admin.delete(`/v2.1/servers/${id}`);
    });
  });

  describe("the in-progress live migration", () => {
    it("force_complete ends the copy at once (2.22)", async () => {
      const { id, host: source } = await boot();
      fake(source).liveMigrationMs = 60_000;
      await live(admin.at("2.25"), id, { host: null, block_migration: "auto" });
      const running = await eventually(
        () => lastMigration(id),
        (m) => m.status === "running",
      );
      const path = `/v2.1/servers/${id}/migrations/${running.id}/action`;
      expect((await admin.at("2.21").post(path, { force_complete: null })).status).toBe(404);
      expect((await admin.at("2.22").post(path, { force_complete: {} })).status).toBe(400);
      const t0 = Date.now();
      expect((await admin.at("2.22").post(path, { force_complete: null })).status).toBe(202);
      expect(await settled(id)).toMatchObject({ status: "completed" });
      expect(Date.now() - t0).toBeLessThan(20_000);
      // not running any more: Nova's 409 for the task state
      const after = await admin.at("2.22").post(path, { force_complete: null });
      expect(after.status).toBe(409);
      expect(after.body.conflictingRequest.message).toBe(
        `Cannot 'force_complete' instance ${id} while it is in task_state None`,
      );
      fake(source).liveMigrationMs = 300;
      await admin.delete(`/v2.1/servers/${id}`);
    });

    it("abort (2.24) cancels the copy: the server stays on its source, its claims whole", async () => {
      const { id, host: source } = await boot();
      fake(source).liveMigrationMs = 60_000;
      await live(admin.at("2.25"), id, { host: null, block_migration: "auto" });
      const running = await eventually(
        () => lastMigration(id),
        (m) => m.status === "running",
      );
      const path = `/v2.1/servers/${id}/migrations/${running.id}`;
      expect((await admin.at("2.23").delete(path)).status).toBe(404);
      expect((await admin.at("2.24").delete(`/v2.1/servers/${id}/migrations/99999`)).status).toBe(404);
      expect((await admin.at("2.24").delete(path)).status).toBe(202);
      expect(await settled(id)).toMatchObject({ status: "cancelled" });
      const rec = (await getInstance(id))!;
      expect(rec).toMatchObject({ host: source, vm_state: "active", task_state: null });
      expect(fake(source).has(id)).toBe(true);
      expect(fake(running.dest_compute!).has(id)).toBe(false);
      expect(await claims(id, running.uuid)).toEqual({ [`instance@${source}`]: 512 });
      expect((await auditPlacement({ repair: false })).findings).toEqual([]);
      fake(source).liveMigrationMs = 300;
      await admin.delete(`/v2.1/servers/${id}`);
    });

    it("an abort while preparing is Nova's 400 before 2.65 and cancels it from 2.65", async () => {
      const { id, host: source } = await boot();
      const dest = otherHost(source);
      fake(dest).liveMigrationPrepareMs = 4000;
      try {
        await live(admin.at("2.30"), id, { host: dest, block_migration: "auto" });
        const preparing = await eventually(
          () => lastMigration(id),
          (m) => m.status === "preparing",
        );
        const path = `/v2.1/servers/${id}/migrations/${preparing.id}`;
        const early = await admin.at("2.64").delete(path);
        expect(early.status).toBe(400);
        expect(early.body.badRequest.message).toBe(
          `Migration ${preparing.id} state of instance ${id} is preparing. Cannot abort live migration while the migration is in this state.`,
        );
        const force = await admin.at("2.22").post(`${path}/action`, { force_complete: null });
        expect(force.body.badRequest.message).toBe(
          `Migration ${preparing.id} state of instance ${id} is preparing. Cannot force complete while the migration is in this state.`,
        );
        expect((await admin.at("2.65").delete(path)).status).toBe(202);
        expect(await settled(id)).toMatchObject({ status: "cancelled" });
        expect((await getInstance(id))!).toMatchObject({
          host: source,
          vm_state: "active",
          task_state: null,
        });
        expect(await claims(id, preparing.uuid)).toEqual({ [`instance@${source}`]: 512 });
        expect(fake(source).liveMigrations.get(id)).toBeUndefined();
      } finally {
        fake(dest).liveMigrationPrepareMs = 0;
      }
      await admin.delete(`/v2.1/servers/${id}`);
    });

    it("a server deleted mid-copy leaves no claim on either host, its migration in error", async () => {
      const { id, host: source } = await boot();
      fake(source).liveMigrationMs = 60_000;
      await live(admin.at("2.25"), id, { host: null, block_migration: "auto" });
      const running = await eventually(
        () => lastMigration(id),
        (m) => m.status === "running",
      );
      expect(Object.keys(await claims(id, running.uuid))).toHaveLength(2);
      expect((await admin.delete(`/v2.1/servers/${id}`)).status).toBe(204);
      await client.waitForStatus(id, ["GONE"]);
      // nothing held for it or its migration, and every host's usage is its allocations' sum
      expect(
        await eventually(
          () => claims(id, running.uuid),
          (c) => Object.keys(c).length === 0,
        ),
      ).toEqual({});
      expect((await auditPlacement({ repair: false })).findings).toEqual([]);
      expect(await claims(id, running.uuid)).toEqual({});
      expect((await lastMigration(id)).status).toBe("error");
      expect(fake(running.dest_compute!).has(id)).toBe(false);
      fake(source).liveMigrationMs = 300;
    });

    it("a destination that cannot prepare rolls back: failed, ACTIVE on the source, nothing held", async () => {
      const { id, host: source } = await boot();
      const dest = otherHost(source);
      fake(dest).failLiveMigrationPrepare = true;
      const destUsed = (await hostsByName()).get(dest)!.usage.MEMORY_MB ?? 0;
      try {
        expect((await live(admin.at("2.34"), id, { host: dest, block_migration: "auto" })).status).toBe(202);
        const m = await settled(id);
        expect(m).toMatchObject({ status: "failed", dest_compute: dest });
        const rec = (await getInstance(id))!;
        expect(rec).toMatchObject({ host: source, vm_state: "active", task_state: null });
        expect(await claims(id, m.uuid)).toEqual({ [`instance@${source}`]: 512 });
        const hosts = await hostsByName();
        expect(hosts.get(dest)!.usage.MEMORY_MB ?? 0).toBe(destUsed);
        const act = Object.values(rec.actions).find((a) => a.action === "live-migration")!;
        expect(Object.values(act.events).map((e) => `${e.event}:${e.result}`)).toContain(
          "compute_pre_live_migration:Error",
        );
        expect((await admin.get(`/v2.1/servers/${id}`)).body.server.status).toBe("ACTIVE");
      } finally {
        fake(dest).failLiveMigrationPrepare = false;
      }
      await admin.delete(`/v2.1/servers/${id}`);
    });

    it("redelivered steps change nothing: one copy, one completion", async () => {
      const { id, host: source } = await boot();
      fake(source).liveMigrationMs = 1500;
      await live(admin.at("2.25"), id, { host: null, block_migration: "auto" });
      const running = await eventually(
        () => lastMigration(id),
        (m) => m.status === "running",
      );
      const rec = (await getInstance(id))!;
      const move = rec.migration!;
      const step = {
        version: 1 as const,
        request_id: move.request_id!,
        instance_uuid: id,
        migration_uuid: move.uuid,
        attempt: move.attempt!,
        same_host: false,
      };
      const destHost = (await getHost(running.dest_compute!))!;
      const sourceHost = (await getHost(source))!;
      // the destination's preparation and the source's copy, cast again while the copy runs
      await castToCompute(destHost.queue_url, {
        ...step,
        kind: "pre_live_migration",
        host: destHost.host,
        guest: {
          instance_uuid: id,
          name: rec.name,
          hostname: "vm",
          project_id: rec.project_id,
          user_id: rec.user_id,
          flavor: rec.flavor,
          image: rec.image,
          metadata: {},
        },
      });
      await castToCompute(sourceHost.queue_url, {
        ...step,
        kind: "live_migration",
        host: source,
        dest: destHost.host,
        dest_ip: destHost.host_ip,
        block_migration: null,
      });
      expect(await settled(id)).toMatchObject({ status: "completed" });
      expect(fake(source).liveMigrations.get(id)).toBe(1);
      // and once more after it completed: fenced, the server stays where it went
      await castToCompute(sourceHost.queue_url, {
        ...step,
        kind: "live_migration",
        host: source,
        dest: destHost.host,
        dest_ip: destHost.host_ip,
        block_migration: null,
      });
      await new Promise((r) => setTimeout(r, 1000));
      expect((await getInstance(id))!).toMatchObject({ host: running.dest_compute, task_state: null });
      expect(await consumerAllocations(id)).toHaveLength(1);
      expect((await auditPlacement({ repair: false })).findings).toEqual([]);
      fake(source).liveMigrationMs = 300;
      await admin.delete(`/v2.1/servers/${id}`);
    });
  });

  describe("the watchdog", () => {
    it("fails a live migration stuck in preparing back to its source; the late report is fenced", async () => {
      const { id, host: source } = await boot();
      const dest = otherHost(source);
      fake(dest).liveMigrationPrepareMs = 8000;
      try {
        await live(admin.at("2.30"), id, { host: dest, block_migration: "auto" });
        const preparing = await eventually(
          () => lastMigration(id),
          (m) => m.status === "preparing",
        );
        await new Promise((r) => setTimeout(r, 4500));
        const actions = await runtime.runWatchdog();
        expect(actions).toEqual(
          expect.arrayContaining([expect.objectContaining({ instance_uuid: id, action: "failed" })]),
        );
        expect(await settled(id)).toMatchObject({ status: "failed" });
        expect(await claims(id, preparing.uuid)).toEqual({ [`instance@${source}`]: 512 });
        // the destination answers late: its report changes nothing
        await new Promise((r) => setTimeout(r, 4000));
        expect((await getInstance(id))!).toMatchObject({
          host: source,
          vm_state: "active",
          task_state: null,
        });
        expect((await lastMigration(id)).status).toBe("failed");
        expect(fake(source).liveMigrations.get(id)).toBeUndefined();
        expect((await auditPlacement({ repair: false })).findings).toEqual([]);
      } finally {
        fake(dest).liveMigrationPrepareMs = 0;
      }
      await admin.delete(`/v2.1/servers/${id}`);
    });

    it("fails a live migration whose source died mid-copy back to its source, claims whole", async () => {
      const { id, host: source } = await boot();
      fake(source).liveMigrationMs = 60_000;
      await live(admin.at("2.25"), id, { host: null, block_migration: "auto" });
      const running = await eventually(
        () => lastMigration(id),
        (m) => m.status === "running",
      );
      await runtime.killHost(source);
      const actions = await eventually(
        () => runtime.runWatchdog(),
        (a) => a.some((x) => x.instance_uuid === id),
        20_000,
      );
      expect(actions).toEqual(
        expect.arrayContaining([expect.objectContaining({ instance_uuid: id, action: "failed" })]),
      );
      expect(await settled(id)).toMatchObject({ status: "failed" });
      expect((await getInstance(id))!).toMatchObject({ host: source, vm_state: "active", task_state: null });
      expect(await claims(id, running.uuid)).toEqual({ [`instance@${source}`]: 512 });
      expect((await auditPlacement({ repair: false })).findings).toEqual([]);
      await runtime.restartHost(source);
      fake(source).liveMigrationMs = 300;
      // (the copy stopped where it was: the guest never left)
      expect(fake(source).has(id)).toBe(true);
      await admin.delete(`/v2.1/servers/${id}`);
    });
  });
});

describe("on exec hosts", () => {
  const instances = mkdtempSync(join(tmpdir(), "novaless-e2e-live-exec-"));
  beforeAll(async () => {
    ({ runtime, client } = await startTestRuntime({ hosts: 2, driver: "exec", instancesPath: instances }));
    admin = client.as(ADMIN);
  });
  afterAll(async () => {
    await runtime?.stop();
    rmSync(instances, { recursive: true, force: true });
  });

  it("refuses with Nova's MigrationPreCheckError before anything is claimed; os-hypervisors says why", async () => {
    const id = await client.createServer({ imageRef: "sleeper", name: "proc" });
    await client.waitForStatus(id, ["ACTIVE"]);
    const source = (await getInstance(id))!.host!;
    const before = await hostsByName();
    const r = await live(admin.at("2.25"), id, { host: null, block_migration: "auto" });
    expect(r.status).toBe(400);
    expect(r.body.badRequest.message).toBe(
      `Migration pre-check error: host ${source} cannot live-migrate: a process cannot move live`,
    );
    expect(await settled(id)).toMatchObject({ status: "error" });
    expect((await getInstance(id))!).toMatchObject({ host: source, vm_state: "active", task_state: null });
    // nothing was claimed, nor handed to the migration's consumer
    expect((await consumerAllocations(id)).map((a) => a.host)).toEqual([source]);
    const after = await hostsByName();
    for (const [h, rec] of after) expect(rec.usage).toEqual(before.get(h)!.usage);
    // the driver's facts, as os-hypervisors shows them (cpu_info)
    const hv = await admin.at("2.53").get("/v2.1/os-hypervisors/detail");
    const cpu = hv.body.hypervisors.find(
      (h: { service: { host: string } }) => h.service.host === source,
    ).cpu_info;
    const facts = typeof cpu === "string" ? JSON.parse(cpu) : cpu;
    expect(facts).toMatchObject({
      live_migration: false,
      live_migration_unsupported: "a process cannot move live",
      // and a process's traffic cannot be filtered: its security groups are not enforced
      security_groups_enforced: false,
      security_groups_unenforced: expect.stringContaining("the host's own network namespace"),
    });
    await admin.delete(`/v2.1/servers/${id}`);
  });
});
