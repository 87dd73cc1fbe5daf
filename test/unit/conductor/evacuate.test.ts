// An evacuation's conductor steps (Nova's rebuild on another host, a move of type evacuation here)
// on the in-process DynamoDB: placed on the scheduler's first pick with rebuild_instance cast to
// it, an alternate claimed, rolled back to its failed host with its claims whole, each step
// harmless when run twice.
import { describe, expect, it } from "vitest";
import { EVENT_REBUILD } from "../../../lib/instances/move.js";
import { getInstance } from "../../../lib/instances/queries.js";
import { moveAttempt } from "../../../lib/messages/build-request.js";
import type { Scheduled } from "../../../lib/messages/scheduled.js";
import { useLocalAws } from "../../integration/local-aws.js";
import * as w from "./workflow-fixtures.js";

useLocalAws();

/** A server whose host failed, its evacuation accepted, and hosts to rebuild it on. */
const evacuating = () => w.moving("evacuation");

describe("evacuation: placement", () => {
  it("starts on selections[0]: rebuild_instance cast to it, the rebuild's event recorded", async () => {
    const { rec, req, m, source, dests } = await evacuating();
    await w.scheduleMove(rec, req, dests[0]!);
    const s = w.scheduled(rec.id, dests);
    const casts = await w.start(req, s);
    const n = moveAttempt(req);
    expect(casts.map((c) => c.msg)).toMatchObject([{ kind: "rebuild_instance", host: dests[0], attempt: n }]);
    const now = (await getInstance(rec.id))!;
    expect(now.task_state).toBe("rebuild_spawning");
    expect(now.actions[req.request_id]?.events[`${EVENT_REBUILD}#${n}`]).toMatchObject({ result: "Success" });
    expect(await w.migration(m.uuid)).toMatchObject({ status: "pre-migrating", dest_compute: dests[0] });
    expect(await w.start(req, s)).toEqual(casts);
    expect(await w.claims(rec.id)).toEqual({ [dests[0]!]: n });
    expect(await w.claims(m.uuid)).toEqual({ [source]: 1 });
  });
});

describe("evacuation: alternates", () => {
  it("claims the next alternate for the next attempt, never the failed host", async () => {
    const { rec, req, source, dests } = await evacuating();
    await w.handOverSource(rec.id);
    const req2 = w.retried(req, 2, [dests[0]!], [source, dests[0]!, dests[1]!]);
    const picked = (await w.step("claim_alternate", req2)) as Scheduled;
    expect(picked.hosts[picked.selections[0]!.host]!.host).toBe(dests[1]);
    expect(await w.claims(rec.id)).toEqual({ [dests[1]!]: moveAttempt(req2) });
  });
});

describe("evacuation: rollback", () => {
  it("max retries: the server stays on its failed host with a fault, its claim there its own again, twice", async () => {
    const { rec, req, m, source, dests } = await evacuating();
    await w.scheduleMove(rec, req, dests[0]!);
    await w.start(req, w.scheduled(rec.id, dests));
    for (let i = 0; i < 2; i++) {
      await w.step("max_retries_exceeded", w.retried(req, 3, dests));
      const now = (await getInstance(rec.id))!;
      expect(now).toMatchObject({ task_state: null, host: source });
      expect(now.fault?.message).toContain("Exceeded maximum number of retries");
      expect((await w.migration(m.uuid)).status).toBe("error");
      expect(await w.claims(rec.id)).toEqual({ [source]: 1 });
      expect(await w.claims(m.uuid)).toEqual({});
    }
  });
});
