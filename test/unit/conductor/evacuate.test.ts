// An evacuation's conductor steps (Nova's rebuild on another host, a move of type evacuation here)
// on the in-process DynamoDB: placed on the scheduler's first pick with rebuild_instance cast to
// it, an alternate claimed, rolled back to its failed host with its claims whole, each step
// harmless when run twice.
import { describe, expect, it } from "vitest";
import { EVENT_REBUILD } from "../../../lib/instances/move.js";
import { getInstance } from "../../../lib/instances/queries.js";
import { moveAttempt } from "../../../lib/messages/build-request.js";
import type { Scheduled } from "../../../lib/messages/scheduled.js";
import { release } from "../../../lib/placement/claims.js";
import { useLocalAws } from "../../integration/local-aws.js";
import {
  acceptedMove,
  activeOn,
  claims,
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

/** A server whose host failed, its evacuation accepted, and hosts to rebuild it on. */
async function evacuating(destinations = 2) {
  const [source, ...dests] = hostNames(destinations + 1);
  for (const h of [source!, ...dests]) await host(h);
  const rec = await activeOn(source!);
  const { req, migration: m } = await acceptedMove(rec, "evacuation");
  return { rec, req, m, source: source!, dests };
}

describe("evacuation: placement", () => {
  it("starts on selections[0]: rebuild_instance cast to it, the rebuild's event recorded", async () => {
    const { rec, req, m, source, dests } = await evacuating();
    await scheduleMove(rec, req, dests[0]!);
    const s = scheduled(rec.id, dests);
    const casts = await start(req, s);
    const n = moveAttempt(req);
    expect(casts.map((c) => c.msg)).toMatchObject([{ kind: "rebuild_instance", host: dests[0], attempt: n }]);
    const now = (await getInstance(rec.id))!;
    expect(now.task_state).toBe("rebuild_spawning");
    expect(now.actions[req.request_id]?.events[`${EVENT_REBUILD}#${n}`]).toMatchObject({ result: "Success" });
    expect(await migration(m.uuid)).toMatchObject({ status: "pre-migrating", dest_compute: dests[0] });
    expect(await start(req, s)).toEqual(casts);
    expect(await claims(rec.id)).toEqual({ [dests[0]!]: n });
    expect(await claims(m.uuid)).toEqual({ [source]: 1 });
  });

  it("a BuildInstances repeated after the rebuild elsewhere finished keeps the claim the server lives on", async () => {
    const { rec, req, m, source, dests } = await evacuating();
    await scheduleMove(rec, req, dests[0]!);
    const s = scheduled(rec.id, dests);
    await start(req, s);
    const n = moveAttempt(req);
    await setFields(rec.id, { host: dests[0], node: dests[0], attempt: n, task_state: null }, ["migration"]);
    await release(source, m.uuid);
    expect(await start(req, s)).toEqual([]);
    expect(await claims(rec.id)).toEqual({ [dests[0]!]: n });
  });
});

describe("evacuation: alternates", () => {
  it("claims the next alternate for the next attempt, never the failed host", async () => {
    const { rec, req, source, dests } = await evacuating(2);
    await handOverSource(rec.id);
    const req2 = retried(req, 2, [dests[0]!], [source, dests[0]!, dests[1]!]);
    const picked = (await step("claim_alternate", req2)) as Scheduled;
    expect(picked.hosts[picked.selections[0]!.host]!.host).toBe(dests[1]);
    expect(await claims(rec.id)).toEqual({ [dests[1]!]: moveAttempt(req2) });
  });
});

describe("evacuation: rollback", () => {
  it("max retries: the server stays on its failed host with a fault, its claim there its own again, twice", async () => {
    const { rec, req, m, source, dests } = await evacuating();
    await scheduleMove(rec, req, dests[0]!);
    await start(req, scheduled(rec.id, dests));
    for (let i = 0; i < 2; i++) {
      await step("max_retries_exceeded", retried(req, 3, dests));
      const now = (await getInstance(rec.id))!;
      expect(now).toMatchObject({ task_state: null, host: source });
      expect(now.fault?.message).toContain("Exceeded maximum number of retries");
      expect((await migration(m.uuid)).status).toBe("error");
      expect(await claims(rec.id)).toEqual({ [source]: 1 });
      expect(await claims(m.uuid)).toEqual({});
    }
  });
});
