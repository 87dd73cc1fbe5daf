// A resize or cold migration's conductor steps (Nova's MigrationTask) on the in-process DynamoDB:
// placed on the scheduler's first pick, an alternate claimed after a failure, rolled back to where
// it was with its claims whole, and each step harmless when the state machine runs it twice.
import { describe, expect, it } from "vitest";
import { getInstance } from "../../../lib/instances/queries.js";
import { moveAttempt } from "../../../lib/messages/build-request.js";
import type { Scheduled } from "../../../lib/messages/scheduled.js";
import { release } from "../../../lib/placement/claims.js";
import { useLocalAws } from "../../integration/local-aws.js";
import * as w from "./workflow-fixtures.js";

useLocalAws();

const migrating = (destinations = 2) => w.moving("migration", Array(destinations).fill("fake"));

describe("cold move: placement", () => {
  it("starts on selections[0]: the destination recorded as the move's, resize_instance cast to the source", async () => {
    const { rec, req, m, source, dests } = await migrating();
    await w.scheduleMove(rec, req, dests[0]!);
    const casts = await w.start(req, w.scheduled(rec.id, dests));
    expect(casts).toHaveLength(1);
    expect(casts[0]!.msg).toMatchObject({ kind: "resize_instance", host: source, attempt: moveAttempt(req) });
    expect(casts[0]!.queue_url).toContain(`q-${source}`);
    const now = (await getInstance(rec.id))!;
    // the flavor the source's driver checks its disks against (Nova's migrate_disk_and_power_off)
    expect(casts[0]!.msg).toMatchObject({ new_flavor: now.migration!.new_flavor });
    expect(now.task_state).toBe("resize_migrating");
    expect(now.migration).toMatchObject({ dest_host: dests[0], attempt: moveAttempt(req) });
    expect((await w.migration(m.uuid)).status).toBe("migrating");
    expect(await w.claims(rec.id)).toEqual({ [dests[0]!]: moveAttempt(req) });
    expect(await w.claims(m.uuid)).toEqual({ [source]: 1 });
  });

  it("a repeated BuildInstances casts the same step again and claims nothing more", async () => {
    const { rec, req, m, source, dests } = await migrating();
    await w.scheduleMove(rec, req, dests[0]!);
    const first = await w.start(req, w.scheduled(rec.id, dests));
    const again = await w.start(req, w.scheduled(rec.id, dests));
    expect(again).toEqual(first);
    expect(await w.claims(rec.id)).toEqual({ [dests[0]!]: moveAttempt(req) });
    expect(await w.claims(m.uuid)).toEqual({ [source]: 1 });
  });
});

describe("cold move: alternates", () => {
  it("claims the first alternate that takes the flavor, never the source, and again the same one on a re-run", async () => {
    const { rec, req, m, source, dests } = await migrating(3);
    await w.scheduleMove(rec, req, dests[0]!);
    await w.start(req, w.scheduled(rec.id, dests));
    // the destination failed to finish it (its claim went with the failure); the state machine's attempt 2
    await release(dests[0]!, rec.id);
    // the next alternate is full
    await w.fill(dests[1]!);
    const req2 = w.retried(req, 2, [dests[0]!], [source, dests[1]!, dests[2]!]);
    const picked = (await w.step("claim_alternate", req2)) as Scheduled;
    expect(picked.hosts[picked.selections[0]!.host]!.host).toBe(dests[2]);
    const again = (await w.step("claim_alternate", req2)) as Scheduled;
    expect(again).toEqual(picked);
    expect(await w.claims(rec.id)).toEqual({ [dests[2]!]: moveAttempt(req2) });
    expect(await w.claims(m.uuid)).toEqual({ [source]: 1 });
  });

  it("answers nothing for a move that is over", async () => {
    const { rec, req, dests } = await migrating();
    await w.setFields(rec.id, {}, ["migration"]);
    expect(await w.step("claim_alternate", w.retried(req, 2, [], dests))).toEqual({
      hosts: [],
      selections: [],
    });
    expect(await w.claims(rec.id)).toEqual({ [rec.host!]: 1 });
  });
});

describe("cold move: rollback", () => {
  it("NoValidHost leaves the server ACTIVE where it was with a fault, the migration in error, its claims whole", async () => {
    const { rec, req, m, source } = await migrating();
    // select_destinations handed the source to the migration before it found no host
    await w.handOverSource(rec.id);
    for (let i = 0; i < 2; i++) {
      await w.step("no_valid_host", req, { no_valid_host: { details: "0/3 hosts" } });
      const now = (await getInstance(rec.id))!;
      expect(now).toMatchObject({ vm_state: "active", task_state: null, host: source });
      expect(now.migration).toBeUndefined();
      expect(now.fault).toMatchObject({ code: 400, details: "0/3 hosts" });
      expect((await w.migration(m.uuid)).status).toBe("error");
      expect(await w.claims(rec.id)).toEqual({ [source]: 1 });
      expect(await w.claims(m.uuid)).toEqual({});
    }
  });

  it("an error after placing releases the destination's claim and gives the source back to the server", async () => {
    const { rec, req, m, source, dests } = await migrating();
    await w.scheduleMove(rec, req, dests[0]!);
    await w.start(req, w.scheduled(rec.id, dests));
    const error = { Error: "States.Timeout", Cause: "the cast timed out" };
    await w.step("build_failed", req, { error });
    await w.step("build_failed", req, { error });
    const now = (await getInstance(rec.id))!;
    expect(now).toMatchObject({ task_state: null, host: source });
    expect(now.fault?.message).toBe(`Migration of instance ${rec.id} aborted: States.Timeout`);
    expect(await w.claims(rec.id)).toEqual({ [source]: 1 });
    expect(await w.claims(m.uuid)).toEqual({});
  });
});
