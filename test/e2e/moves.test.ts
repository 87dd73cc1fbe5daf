// Resize and cold migration through the conductor, on the emulators with simulated hosts: the
// states a client sees (RESIZE, VERIFY_RESIZE, REVERT_RESIZE), both hosts' claims held while a
// move is unconfirmed (the instance's on the destination, the migration's on the source), confirm
// and revert settling them, Nova's 400s and 409s, the migration records and instance actions,
// quota counting the larger flavor, and a move that finds no host leaving the server as it was.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listInstanceMigrations } from "../../lib/instances/migrations.js";
import { getInstance } from "../../lib/instances/queries.js";
import { consumerAllocations } from "../../lib/placement/allocations.js";
import { auditPlacement } from "../../lib/placement/audit.js";
import { getUsage } from "../../lib/quotas/store.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, hostsByName, leakedClaims, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;
let admin: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({ hosts: 3 }));
  admin = client.as(ADMIN);
});
afterAll(async () => runtime?.stop());

async function boot(): Promise<{ id: string; host: string }> {
  const id = await client.createServer({ flavorRef: "1" });
  await client.waitForStatus(id, ["ACTIVE"]);
  const rec = await getInstance(id);
  return { id, host: rec!.host! };
}

const action = (c: Client, id: string, body: unknown) => c.post(`/v2.1/servers/${id}/action`, body);

/** consumer → host: amounts, for the instance and its migrations */
async function claims(id: string, migration?: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const c of [id, ...(migration ? [migration] : [])])
    for (const a of await consumerAllocations(c))
      out[`${c === id ? "instance" : "migration"}@${a.host}`] =
        `${a.resources.VCPU}/${a.resources.MEMORY_MB}`;
  return out;
}

describe("resize", () => {
  it("goes RESIZE → VERIFY_RESIZE holding both hosts, and confirm frees the source", async () => {
    const { id, host: source } = await boot();
    const r = await action(client, id, { resize: { flavorRef: "2" } });
    expect(r.status).toBe(202);
    await client.waitForStatus(id, ["VERIFY_RESIZE"]);
    const rec = (await getInstance(id))!;
    expect(rec.host).not.toBe(source);
    expect(rec.flavor.id).toBe("2");
    const move = rec.migration!;
    expect(move).toMatchObject({ status: "finished", source_host: source, dest_host: rec.host });
    // both held: the new flavor on the destination for the instance, the old on the source for the migration
    expect(await claims(id, move.uuid)).toEqual({
      [`instance@${rec.host}`]: "1/2048",
      [`migration@${source}`]: "1/512",
    });
    // the placement audit knows a migration's consumer and a destination claimed before the record moved
    const audit = await auditPlacement({ repair: true });
    expect(audit.findings).toEqual([]);
    expect(await claims(id, move.uuid)).toHaveProperty(`migration@${source}`);
    const hosts = await hostsByName();
    expect(hosts.get(source)!.usage.MEMORY_MB).toBe(512);
    expect(hosts.get(rec.host!)!.usage.MEMORY_MB).toBe(2048);
    // the migration record, as an admin lists it
    const list = await admin.get(`/v2.1/os-migrations?instance_uuid=${id}`);
    expect(list.status).toBe(200);
    expect(list.body.migrations[0]).toMatchObject({
      status: "finished",
      source_compute: source,
      dest_compute: rec.host,
      instance_uuid: id,
    });

    // a second resize while one waits for confirmation is Nova's 409
    const again = await action(client, id, { resize: { flavorRef: "1" } });
    expect(again.status).toBe(409);
    expect(again.body.conflictingRequest.message).toBe(
      `Cannot 'resize' instance ${id} while it is in vm_state resized`,
    );

    expect((await action(client, id, { confirmResize: null })).status).toBe(204);
    await client.waitForStatus(id, ["ACTIVE"]);
    await eventually(
      () => claims(id, move.uuid),
      (c) => Object.keys(c).length === 1,
    );
    expect(await claims(id, move.uuid)).toEqual({ [`instance@${rec.host}`]: "1/2048" });
    expect((await hostsByName()).get(source)!.usage.MEMORY_MB ?? 0).toBe(0);
    expect((await listInstanceMigrations(id))[0]!.status).toBe("confirmed");
    const actions = await client.get(`/v2.1/servers/${id}/os-instance-actions`);
    expect(actions.body.instanceActions.map((a: { action: string }) => a.action)).toEqual(
      expect.arrayContaining(["create", "resize", "confirmResize"]),
    );
    expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  });

  it("the project's usage: the larger flavor until confirm or revert, the kept one from the moment either begins, nothing once deleted", async () => {
    const ram = async () => (await getUsage("demo")).ram;
    const start = await ram();
    for (const end of ["revertResize", "confirmResize"] as const) {
      const { id } = await boot();
      expect(await ram()).toBe(start + 512);
      expect((await action(client, id, { resize: { flavorRef: "2" } })).status).toBe(202);
      await client.waitForStatus(id, ["VERIFY_RESIZE"]);
      expect(await ram()).toBe(start + 2048);
      // given back in the begin's own transaction: at once, before the host has answered
      expect((await action(client, id, { [end]: null })).status).toBe(end === "revertResize" ? 202 : 204);
      expect(await ram()).toBe(start + (end === "revertResize" ? 512 : 2048));
      // deleted before the host answers: what the server counts now goes, no more
      expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
      expect(await ram()).toBe(start);
      await client.waitForStatus(id, ["GONE"]);
    }
  });

  it("revert puts it back on the source with the old flavor, the destination's claim gone", async () => {
    const { id, host: source } = await boot();
    expect((await action(client, id, { resize: { flavorRef: "2" } })).status).toBe(202);
    await client.waitForStatus(id, ["VERIFY_RESIZE"]);
    const move = (await getInstance(id))!.migration!;
    expect((await action(client, id, { revertResize: null })).status).toBe(202);
    await client.waitForStatus(id, ["ACTIVE"]);
    const rec = (await getInstance(id))!;
    expect(rec).toMatchObject({ host: source, vm_state: "active", task_state: null });
    expect(rec.flavor.id).toBe("1");
    expect(rec.migration).toBeUndefined();
    expect(await claims(id, move.uuid)).toEqual({ [`instance@${source}`]: "1/512" });
    expect((await listInstanceMigrations(id))[0]!.status).toBe("reverted");
    expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  });

  it("Nova's refusals: same flavor, unknown flavor, confirm before a resize, a member's migrate", async () => {
    const { id } = await boot();
    const same = await action(client, id, { resize: { flavorRef: "1" } });
    expect(same.status).toBe(400);
    expect(same.body.badRequest.message).toBe("When resizing, instances must change flavor!");
    const unknown = await action(client, id, { resize: { flavorRef: "nope" } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.badRequest.message).toBe("Unable to locate requested flavor.");
    const confirm = await action(client, id, { confirmResize: null });
    expect(confirm.status).toBe(409);
    expect(confirm.body.conflictingRequest.message).toBe(
      `Cannot 'confirmResize' instance ${id} while it is in vm_state active`,
    );
    const member = await action(client, id, { migrate: null });
    expect(member.status).toBe(403);
    expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  });
});

describe("cold migration", () => {
  it("an admin migrates to a named host (2.56); the server keeps its flavor", async () => {
    const { id, host: source } = await boot();
    const target = [...(await hostsByName()).keys()].find((h) => h !== source)!;
    const r = await action(admin.at("2.56"), id, { migrate: { host: target } });
    expect(r.status).toBe(202);
    await client.waitForStatus(id, ["VERIFY_RESIZE"]);
    const rec = (await getInstance(id))!;
    expect(rec.host).toBe(target);
    expect(rec.flavor.id).toBe("1");
    expect((await listInstanceMigrations(id))[0]).toMatchObject({ migration_type: "migration" });
    expect((await action(admin, id, { confirmResize: null })).status).toBe(204);
    await client.waitForStatus(id, ["ACTIVE"]);
    expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  });

  it("a requested host that cannot take it: NoValidHost leaves the server ACTIVE where it was, with a fault", async () => {
    const { id, host: source } = await boot();
    const big = await admin.post("/v2.1/flavors", {
      flavor: { name: "huge", ram: 1_000_000, vcpus: 1, disk: 1 },
    });
    expect(big.status).toBe(200);
    const r = await action(client, id, { resize: { flavorRef: big.body.flavor.id } });
    expect(r.status).toBe(202);
    const after = await eventually(
      () => getInstance(id),
      (rec) => rec?.task_state === null && rec.migration === undefined && rec.fault !== null,
    );
    expect(after).toMatchObject({ vm_state: "active", host: source });
    expect(after!.fault!.message).toContain("No valid host");
    expect(await claims(id)).toEqual({ [`instance@${source}`]: "1/512" });
    expect((await listInstanceMigrations(id))[0]!.status).toBe("error");
    expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  });
});

describe("after every move", () => {
  it("leaks no claim", async () => {
    expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
  });
});
