// A live migration's conductor steps (Nova's LiveMigrationTask) on the in-process DynamoDB: placed
// on the scheduler's first pick with pre_live_migration cast to it, an alternate claimed, refused
// or aborted back to the source with its claims whole, and each step harmless when run twice.
import { describe, expect, it } from "vitest";
import { getInstance } from "../../../lib/instances/queries.js";
import { moveAttempt } from "../../../lib/messages/build-request.js";
import type { Scheduled } from "../../../lib/messages/scheduled.js";
import { useLocalAws } from "../../integration/local-aws.js";
import * as w from "./workflow-fixtures.js";

useLocalAws();

const liveMigrating = (types?: string[]) => w.moving("live-migration", types);

describe("live migration: placement", () => {
  it("starts on selections[0]: the destination the move's, the migration preparing, pre_live_migration cast to it", async () => {
    const { rec, req, m, source, dests } = await liveMigrating();
    await w.scheduleMove(rec, req, dests[0]!);
    const s = w.scheduled(rec.id, dests);
    const casts = await w.start(req, s);
    expect(casts.map((c) => c.msg)).toMatchObject([
      { kind: "pre_live_migration", host: dests[0], attempt: moveAttempt(req) },
    ]);
    expect(casts[0]!.queue_url).toContain(`q-${dests[0]}`);
    expect((await getInstance(rec.id))!.migration).toMatchObject({ dest_host: dests[0] });
    expect(await w.migration(m.uuid)).toMatchObject({ status: "preparing", dest_compute: dests[0] });
    // run twice: the same cast, nothing more claimed
    expect(await w.start(req, s)).toEqual(casts);
    expect(await w.claims(rec.id)).toEqual({ [dests[0]!]: moveAttempt(req) });
    expect(await w.claims(m.uuid)).toEqual({ [source]: 1 });
  });
});

describe("live migration: alternates", () => {
  it("claims the next alternate for the move's next attempt, never the source", async () => {
    const { rec, req, source, dests } = await liveMigrating(["fake", "fake", "fake"]);
    await w.handOverSource(rec.id);
    const req2 = w.retried(req, 2, [dests[0]!], [source, dests[1]!, dests[2]!]);
    const picked = (await w.step("claim_alternate", req2)) as Scheduled;
    expect(picked.hosts[picked.selections[0]!.host]!.host).toBe(dests[1]);
    expect(await w.step("claim_alternate", req2)).toEqual(picked);
    expect(await w.claims(rec.id)).toEqual({ [dests[1]!]: moveAttempt(req2) });
  });
});

describe("live migration: rollback", () => {
  it("another hypervisor on the scheduler's pick: no cast, the migration in error, the server ACTIVE on its source, claims whole", async () => {
    const { rec, req, m, source, dests } = await liveMigrating(["other"]);
    await w.scheduleMove(rec, req, dests[0]!);
    const s = w.scheduled(rec.id, dests);
    for (let i = 0; i < 2; i++) {
      expect(await w.start(req, s)).toEqual([]);
      const now = (await getInstance(rec.id))!;
      expect(now).toMatchObject({ vm_state: "active", task_state: null, host: source });
      expect(now.fault).toMatchObject({ message: "The supplied hypervisor type of is invalid.", code: 400 });
      expect((await w.migration(m.uuid)).status).toBe("error");
      expect(await w.claims(rec.id)).toEqual({ [source]: 1 });
      expect(await w.claims(m.uuid)).toEqual({});
    }
  });

  it("an abort asked for before the start: cancelled, nothing cast, claims whole", async () => {
    const { rec, req, m, source, dests } = await liveMigrating();
    await w.scheduleMove(rec, req, dests[0]!);
    await w.setFields(rec.id, { "migration.abort_requested": true });
    expect(await w.start(req, w.scheduled(rec.id, dests))).toEqual([]);
    expect((await w.migration(m.uuid)).status).toBe("cancelled");
    expect(await w.claims(rec.id)).toEqual({ [source]: 1 });
  });

  it("a refusal of Nova's checks fails it with Nova's text and status, twice", async () => {
    const { rec, req, m, source } = await liveMigrating();
    const message = `Unable to migrate instance (${rec.id}) to current host (${source}).`;
    const error = { Error: "LiveMigrationRefused", Cause: JSON.stringify({ errorMessage: message }) };
    for (let i = 0; i < 2; i++) {
      await w.step("build_failed", req, { error });
      const now = (await getInstance(rec.id))!;
      expect(now).toMatchObject({ task_state: null, host: source });
      expect(now.fault).toMatchObject({ message, code: 400 });
      expect((await w.migration(m.uuid)).status).toBe("error");
      expect(await w.claims(rec.id)).toEqual({ [source]: 1 });
    }
  });
});
