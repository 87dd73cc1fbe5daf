// A resize or cold migration's conductor steps (Nova's MigrationTask) on the in-process DynamoDB:
// placed on the scheduler's first pick, an alternate claimed after a failure, rolled back to where
// it was with its claims whole, and each step harmless when the state machine runs it twice.
import { describe, expect, it } from "vitest";
import { getInstance } from "../../../lib/instances/queries.js";
import { moveAttempt } from "../../../lib/messages/build-request.js";
import type { Scheduled } from "../../../lib/messages/scheduled.js";
import { release } from "../../../lib/placement/claims.js";
import { useLocalAws } from "../../integration/local-aws.js";
import {
  acceptedMove,
  activeOn,
  claims,
  fill,
  handOverSource,
  host,
  hostNames,
  migration,
  retried,
  scheduled,
  scheduleMove,
  setFields,
  start,
  step,
} from "./workflow-fixtures.js";

useLocalAws();

/** An ACTIVE server on a source host, a cold migration of it accepted, and hosts to move to. */
async function migrating(destinations = 2) {
  const [source, ...dests] = hostNames(destinations + 1);
  for (const h of [source!, ...dests]) await host(h);
  const rec = await activeOn(source!);
  const { req, migration: m } = await acceptedMove(rec, "migration");
  return { rec, req, m, source: source!, dests };
}

describe("cold move: placement", () => {
  it("starts on selections[0]: the destination recorded as the move's, resize_instance cast to the source", async () => {
    const { rec, req, m, source, dests } = await migrating();
    await scheduleMove(rec, req, dests[0]!);
    const casts = await start(req, scheduled(rec.id, dests));
    expect(casts).toHaveLength(1);
    expect(casts[0]!.msg).toMatchObject({ kind: "resize_instance", host: source, attempt: moveAttempt(req) });
    expect(casts[0]!.queue_url).toContain(`q-${source}`);
    const now = (await getInstance(rec.id))!;
    expect(now.task_state).toBe("resize_migrating");
    expect(now.migration).toMatchObject({ dest_host: dests[0], attempt: moveAttempt(req) });
    expect((await migration(m.uuid)).status).toBe("migrating");
    expect(await claims(rec.id)).toEqual({ [dests[0]!]: moveAttempt(req) });
    expect(await claims(m.uuid)).toEqual({ [source]: 1 });
  });

  it("a repeated BuildInstances casts the same step again and claims nothing more", async () => {
    const { rec, req, m, source, dests } = await migrating();
    await scheduleMove(rec, req, dests[0]!);
    const first = await start(req, scheduled(rec.id, dests));
    const again = await start(req, scheduled(rec.id, dests));
    expect(again).toEqual(first);
    expect(await claims(rec.id)).toEqual({ [dests[0]!]: moveAttempt(req) });
    expect(await claims(m.uuid)).toEqual({ [source]: 1 });
  });

  // Fails on the old startMove, which released the claim on every `gone` (commit 2fd0c38 taught
  // only the live migration to look first): the claim the server now lives on was freed.
  it("a BuildInstances repeated after the move finished keeps the claim the server lives on", async () => {
    const { rec, req, m, source, dests } = await migrating();
    await scheduleMove(rec, req, dests[0]!);
    const s = scheduled(rec.id, dests);
    await start(req, s);
    // the move finished and was confirmed: the server runs on the destination at the move's attempt,
    // the source's space (the migration's) is freed
    const n = moveAttempt(req);
    await setFields(rec.id, { host: dests[0], node: dests[0], attempt: n, spawn_attempt: n }, ["migration"]);
    await release(source, m.uuid);
    expect(await start(req, s)).toEqual([]);
    expect(await claims(rec.id)).toEqual({ [dests[0]!]: n });
  });

  it("a move deleted meanwhile gets its destination's claim back", async () => {
    const { rec, req, dests } = await migrating();
    await scheduleMove(rec, req, dests[0]!);
    await setFields(rec.id, { deleted: true });
    expect(await start(req, scheduled(rec.id, dests))).toEqual([]);
    expect(await claims(rec.id)).toEqual({});
  });
});

describe("cold move: alternates", () => {
  it("claims the first alternate that takes the flavor, never the source, and again the same one on a re-run", async () => {
    const { rec, req, m, source, dests } = await migrating(3);
    await scheduleMove(rec, req, dests[0]!);
    await start(req, scheduled(rec.id, dests));
    // the destination failed to finish it (its claim went with the failure); the state machine's attempt 2
    await release(dests[0]!, rec.id);
    // the next alternate is full
    await fill(dests[1]!);
    const req2 = retried(req, 2, [dests[0]!], [source, dests[1]!, dests[2]!]);
    const picked = (await step("claim_alternate", req2)) as Scheduled;
    expect(picked.hosts[picked.selections[0]!.host]!.host).toBe(dests[2]);
    const again = (await step("claim_alternate", req2)) as Scheduled;
    expect(again).toEqual(picked);
    expect(await claims(rec.id)).toEqual({ [dests[2]!]: moveAttempt(req2) });
    expect(await claims(m.uuid)).toEqual({ [source]: 1 });
  });

  it("answers nothing for a move that is over", async () => {
    const { rec, req, dests } = await migrating();
    await setFields(rec.id, {}, ["migration"]);
    expect(await step("claim_alternate", retried(req, 2, [], dests))).toEqual({ hosts: [], selections: [] });
    expect(await claims(rec.id)).toEqual({ [rec.host!]: 1 });
  });
});

describe("cold move: rollback", () => {
  it("NoValidHost leaves the server ACTIVE where it was with a fault, the migration in error, its claims whole", async () => {
    const { rec, req, m, source } = await migrating();
    // select_destinations handed the source to the migration before it found no host
    await handOverSource(rec.id);
    for (let i = 0; i < 2; i++) {
      await step("no_valid_host", req, { no_valid_host: { details: "0/3 hosts" } });
      const now = (await getInstance(rec.id))!;
      expect(now).toMatchObject({ vm_state: "active", task_state: null, host: source });
      expect(now.migration).toBeUndefined();
      expect(now.fault).toMatchObject({ code: 400, details: "0/3 hosts" });
      expect((await migration(m.uuid)).status).toBe("error");
      expect(await claims(rec.id)).toEqual({ [source]: 1 });
      expect(await claims(m.uuid)).toEqual({});
    }
  });

  it("an error after placing releases the destination's claim and gives the source back to the server", async () => {
    const { rec, req, m, source, dests } = await migrating();
    await scheduleMove(rec, req, dests[0]!);
    await start(req, scheduled(rec.id, dests));
    const error = { Error: "States.Timeout", Cause: "the cast timed out" };
    await step("build_failed", req, { error });
    await step("build_failed", req, { error });
    const now = (await getInstance(rec.id))!;
    expect(now).toMatchObject({ task_state: null, host: source });
    expect(now.fault?.message).toBe(`Migration of instance ${rec.id} aborted: States.Timeout`);
    expect(await claims(rec.id)).toEqual({ [source]: 1 });
    expect(await claims(m.uuid)).toEqual({});
  });
});
