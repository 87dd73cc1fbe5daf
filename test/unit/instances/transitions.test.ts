// The one begin write, the workflows' fences and abandon, and the API's begin → send → abandon,
// through the real SDK on the embedded DynamoDB: each write's condition is what decides.
import { randomUUID } from "node:crypto";
import { describe, expect, it, vi } from "vitest";
import { ActionNotSent, acceptAction } from "../../../lib/instances/accept.js";
import {
  createMigration,
  getMigration,
  listInstanceMigrations,
  nextMigrationId,
  updateMigration,
} from "../../../lib/instances/migrations.js";
import { beginMove } from "../../../lib/instances/move.js";
import {
  acceptMove,
  MoveNotQueued,
  type MoveRequestSpec,
  migrationOf,
  moveContextOf,
} from "../../../lib/instances/move-accept.js";
import { getInstance } from "../../../lib/instances/queries.js";
import { abandonRebuild, beginRebuild } from "../../../lib/instances/rebuild.js";
import { createInstances } from "../../../lib/instances/server-writes.js";
import { unshelveFields } from "../../../lib/instances/shelve.js";
import { beginAction, merge, transition } from "../../../lib/instances/transition.js";
import type { InstanceAction, InstanceRecord, MoveContext } from "../../../lib/instances/types.js";
import { abandonAction, inWorkflow, reportedBy, WORKFLOWS } from "../../../lib/instances/workflows.js";
import { log } from "../../../lib/log.js";
import { useLocalAws } from "../../integration/local-aws.js";
import { record } from "../api/records.js";

useLocalAws();

/** A server stored as `over` says: ACTIVE with no task on host-1 unless told otherwise. */
async function server(over: Partial<InstanceRecord> = {}): Promise<InstanceRecord> {
  const rec = record({
    id: randomUUID(),
    request_id: `req-${randomUUID()}`,
    vm_state: "active",
    task_state: null,
    host: "host-1",
    node: "host-1",
    attempt: 1,
    spawn_attempt: 1,
    launched_at: "2026-03-01T12:00:02.000Z",
    ...over,
  });
  await createInstances([rec]);
  return (await getInstance(rec.id))!;
}

function action(name: InstanceAction["action"]): InstanceAction {
  return {
    action: name,
    request_id: `req-${randomUUID()}`,
    user_id: "demo",
    project_id: "demo",
    start_time: new Date().toISOString(),
    message: null,
    events: {},
  };
}

/** A resize of `rec` to m1.small, as acceptMove would record it. */
function moveOf(rec: InstanceRecord, a: InstanceAction): MoveContext {
  const spec: MoveRequestSpec = {
    kind: "resize",
    newFlavor: { ...rec.flavor, id: "2", name: "m1.small" },
    requestedHost: null,
    sameHostAllowed: false,
    action: a,
  };
  return moveContextOf(rec, migrationOf(rec, spec, 1, a.start_time), spec);
}

describe("beginAction: the one begin write", () => {
  it("sets the task and records the action; the same begin again (a concurrent request) is refused", async () => {
    const rec = await server();
    const a = action("stop");
    const begun = await beginAction(rec, "powering-off", a);
    expect(begun?.task_state).toBe("powering-off");
    expect(begun?.actions[a.request_id]?.action).toBe("stop");
    expect(await beginAction(rec, "powering-off", action("stop"))).toBeUndefined();
    expect((await getInstance(rec.id))?.actions[a.request_id]).toBeDefined();
  });

  it("is conditioned on the vm_state, task state and host as read", async () => {
    const rec = await server();
    expect(
      await beginAction({ ...rec, vm_state: "stopped" }, "powering-on", action("start")),
    ).toBeUndefined();
    expect(await beginAction({ ...rec, host: "host-2" }, "shelving", action("shelve"))).toBeUndefined();
    expect(
      await beginAction({ ...rec, task_state: "rebooting" }, "pausing", action("pause")),
    ).toBeUndefined();
    expect((await getInstance(rec.id))?.task_state).toBeNull();
  });

  it("begins on a server with no host (offloaded) only while it has none", async () => {
    const off = await server({ vm_state: "shelved_offloaded", host: null, node: null });
    const a = action("unshelve");
    const ctx = {
      uuid: randomUUID(),
      request_id: a.request_id,
      base_attempt: 1,
      requested_host: null,
      tried: [],
    };
    const begun = await beginAction(off, "unshelving", a, unshelveFields(ctx, undefined, false));
    expect(begun?.task_state).toBe("unshelving");
    expect(begun?.unshelve?.uuid).toBe(ctx.uuid);
    const hosted = await server({ vm_state: "shelved_offloaded" });
    expect(await beginAction({ ...hosted, host: null }, "unshelving", action("unshelve"))).toBeUndefined();
  });

  it("adds what an action records and requires (a move's context, no move under way)", async () => {
    const rec = await server();
    const a = action("resize");
    const begun = await beginMove(rec, moveOf(rec, a), a);
    expect(begun?.task_state).toBe("resize_prep");
    expect(begun?.migration?.request_id).toBe(a.request_id);
    // the task state read back as none, a second move is still refused by its context
    await transition(rec.id, {
      set: ["task_state = :null"],
      condition: "attribute_exists(id)",
      values: { ":null": null },
    });
    const b = action("resize");
    expect(await beginMove(rec, moveOf(rec, b), b)).toBeUndefined();
  });
});

describe("the workflows' fences and abandon", () => {
  it("abandon takes a move's begin back once; another move's abandon changes nothing", async () => {
    const rec = await server();
    const a = action("migrate");
    const move = moveOf(rec, a);
    await beginMove(rec, move, a);
    const run = { workflow: WORKFLOWS.move, uuid: move.uuid };
    expect(await abandonAction(rec.id, "resize_prep", { ...run, uuid: randomUUID() })).toBeUndefined();
    const back = await abandonAction(rec.id, "resize_prep", run);
    expect(back?.task_state).toBeNull();
    expect(back?.migration).toBeUndefined();
    expect(await abandonAction(rec.id, "resize_prep", run)).toBeUndefined();
  });

  it("abandon leaves a move the conductor took on (its task state moved on)", async () => {
    const rec = await server();
    const a = action("resize");
    const move = moveOf(rec, a);
    await beginMove(rec, move, a);
    await transition(
      rec.id,
      inWorkflow(WORKFLOWS.move, move.uuid, {
        set: ["task_state = :t"],
        condition: "attribute_exists(id)",
        values: { ":t": "resize_migrating" },
      }),
    );
    expect(
      await abandonAction(rec.id, "resize_prep", { workflow: WORKFLOWS.move, uuid: move.uuid }),
    ).toBeUndefined();
    expect((await getInstance(rec.id))?.migration?.uuid).toBe(move.uuid);
  });

  it("a rebuild's abandon puts its image back", async () => {
    const rec = await server();
    const a = action("rebuild");
    const ctx = {
      uuid: randomUUID(),
      request_id: a.request_id,
      orig_image: rec.image,
      image_changed: true,
      old_vm_state: "active" as const,
    };
    const image = { ...rec.image, id: "img-new", name: "ubuntu" };
    expect((await beginRebuild(rec, ctx, image, { name: "renamed" }, a))?.image.id).toBe("img-new");
    const back = await abandonRebuild(rec.id, ctx);
    expect(back?.image.id).toBe(rec.image.id);
    expect(back?.task_state).toBeNull();
    expect(back?.rebuild).toBeUndefined();
    // (the fields the request set stay, as Nova's do)
    expect(back?.name).toBe("renamed");
    expect(await abandonRebuild(rec.id, ctx)).toBeUndefined();
  });

  it("an action without a context abandons by its task state alone", async () => {
    const rec = await server();
    await beginAction(rec, "shelving", action("shelve"));
    expect(await abandonAction(rec.id, "shelving_offloading")).toBeUndefined();
    expect((await abandonAction(rec.id, "shelving"))?.task_state).toBeNull();
    expect(await abandonAction(rec.id, "shelving")).toBeUndefined();
  });

  it("a host's report is fenced by the run, the host where the record names it, and the attempt", async () => {
    const rec = await server();
    const a = action("resize");
    const move = moveOf(rec, a);
    await beginMove(rec, move, a);
    await transition(rec.id, {
      set: ["migration.dest_host = :d", "migration.attempt = :n"],
      condition: "attribute_exists(migration)",
      values: { ":d": "host-2", ":n": 2 },
    });
    const mark = {
      set: ["task_state = :t"],
      condition: "attribute_exists(id)",
      values: { ":t": "resize_migrated" },
    };
    const report = (uuid: string, host: string, attempt: number) =>
      transition(
        rec.id,
        merge(reportedBy(WORKFLOWS.move, uuid, { host, field: "migration.dest_host", attempt }), mark),
      );
    expect(await report(randomUUID(), "host-2", 2)).toBeUndefined();
    expect(await report(move.uuid, "host-1", 2)).toBeUndefined();
    expect(await report(move.uuid, "host-2", 1)).toBeUndefined();
    expect((await report(move.uuid, "host-2", 2))?.task_state).toBe("resize_migrated");
  });

  it("an unshelve's fence also wants the server offloaded", async () => {
    const rec = await server({ vm_state: "shelved" });
    const uuid = randomUUID();
    await transition(rec.id, {
      set: ["#us = :us"],
      condition: "attribute_exists(id)",
      names: { "#us": "unshelve" },
      values: { ":us": { uuid } },
    });
    expect(await transition(rec.id, inWorkflow(WORKFLOWS.unshelve, uuid))).toBeUndefined();
    await transition(rec.id, {
      set: ["vm_state = :v"],
      condition: "attribute_exists(id)",
      values: { ":v": "shelved_offloaded" },
    });
    expect((await transition(rec.id, inWorkflow(WORKFLOWS.unshelve, uuid)))?.unshelve?.uuid).toBe(uuid);
  });
});

describe("acceptAction: begin → send → abandon on failure", () => {
  const shelving = (rec: InstanceRecord, a: InstanceAction) => ({
    instance_uuid: rec.id,
    request_id: a.request_id,
    write: () => beginAction(rec, "shelving", a),
    abandon: () => abandonAction(rec.id, "shelving"),
  });

  it("sends once begun, with the record as begun", async () => {
    const rec = await server();
    const a = action("shelve");
    const send = vi.fn(async (_: InstanceRecord) => {});
    const begun = await acceptAction(shelving(rec, a), send);
    expect(begun?.task_state).toBe("shelving");
    expect(send).toHaveBeenCalledWith(begun);
  });

  it("sends nothing when the begin is refused", async () => {
    const rec = await server({ task_state: "pausing" });
    const send = vi.fn(async () => {});
    expect(
      await acceptAction(shelving({ ...rec, task_state: null }, action("shelve")), send),
    ).toBeUndefined();
    expect(send).not.toHaveBeenCalled();
  });

  it("a send that fails takes the begin back and says why", async () => {
    const rec = await server();
    const lost = new Error("queue unreachable");
    const err = await acceptAction(shelving(rec, action("shelve")), async () => {
      throw lost;
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ActionNotSent);
    expect((err as ActionNotSent).cause).toBe(lost);
    expect((await getInstance(rec.id))?.task_state).toBeNull();
  });

  it("an abandon that fails is logged; the caller still learns the request was not sent", async () => {
    const rec = await server();
    const a = action("shelve");
    const logged = vi.spyOn(log, "error").mockImplementation(() => {});
    try {
      const err = await acceptAction(
        {
          ...shelving(rec, a),
          abandon: () => Promise.reject(new Error("throttled")),
        },
        () => Promise.reject(new Error("queue unreachable")),
      ).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ActionNotSent);
      expect(logged).toHaveBeenCalledWith(
        "instances.action_not_abandoned",
        expect.objectContaining({ instance_uuid: rec.id, request_id: a.request_id }),
      );
    } finally {
      logged.mockRestore();
    }
  });
});

describe("acceptMove: a move's begin → send → abandon", () => {
  const io = (send: () => Promise<void>, released: unknown[]) => ({
    nextMigrationId,
    createMigration,
    updateMigration,
    begin: beginMove,
    abandon: abandonAction,
    sendBuildRequest: send,
    reserveDelta: async () => ({ ok: true as const, count: 1, delta: { instances: 0, cores: 1, ram: 512 } }),
    releaseUsage: async (...args: unknown[]) => {
      released.push(args);
    },
    now: () => new Date(),
  });
  const resize = (rec: InstanceRecord): MoveRequestSpec => ({
    kind: "resize",
    newFlavor: { ...rec.flavor, id: "2", name: "m1.small", vcpus: 2, memory_mb: 1024 },
    requestedHost: null,
    sameHostAllowed: false,
    action: action("resize"),
  });

  it("a request that cannot be queued leaves nothing: no task, no move, the migration in error, the quota back", async () => {
    const rec = await server();
    const released: unknown[] = [];
    const err = await acceptMove(
      rec,
      resize(rec),
      io(() => Promise.reject(new Error("queue unreachable")), released),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MoveNotQueued);
    expect((err as Error).message).toBe(
      `the move of instance ${rec.id} could not be queued: queue unreachable`,
    );
    const after = await getInstance(rec.id);
    expect(after?.task_state).toBeNull();
    expect(after?.migration).toBeUndefined();
    expect((await listInstanceMigrations(rec.id)).map((m) => m.status)).toEqual(["error"]);
    expect(released).toHaveLength(1);
  });

  it("queued: the instance in resize_prep with its move, the migration pre-migrating", async () => {
    const rec = await server();
    const r = await acceptMove(
      rec,
      resize(rec),
      io(async () => {}, []),
    );
    expect(r.ok).toBe(true);
    const migration = r.ok ? r.migration : undefined;
    expect((await getMigration(migration!.uuid))?.status).toBe("pre-migrating");
    const after = await getInstance(rec.id);
    expect(after?.task_state).toBe("resize_prep");
    expect(after?.migration?.uuid).toBe(migration!.uuid);
    // a second accept from the same read is refused, its migration in error, its quota back
    const released: unknown[] = [];
    expect(
      await acceptMove(
        rec,
        resize(rec),
        io(async () => {}, released),
      ),
    ).toEqual({ ok: false, reason: "state" });
    expect(released).toHaveLength(1);
  });
});
