// An unshelve's conductor steps (Nova's unshelve_instance) on the in-process DynamoDB: placed on the
// scheduler's first pick with unshelve_instance cast to it, an alternate claimed after a failure,
// rolled back to SHELVED_OFFLOADED with nothing claimed, each step harmless when run twice.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { getInstance } from "../../../lib/instances/queries.js";
import { unshelveAttempt } from "../../../lib/messages/build-request.js";
import type { Scheduled } from "../../../lib/messages/scheduled.js";
import { useLocalAws } from "../../integration/local-aws.js";
import { claimFor, claims, fill, retried, scheduled, start, step, unshelving } from "./workflow-fixtures.js";

useLocalAws();

describe("unshelve: placement", () => {
  it("starts on selections[0]: spawning there at the unshelve's attempt, unshelve_instance cast to it; again the same", async () => {
    const { rec, req, hosts } = await unshelving();
    const n = unshelveAttempt(req);
    await claimFor(rec, hosts[1]!, n);
    const s = scheduled(rec.id, hosts.slice(1));
    const casts = await start(req, s);
    expect(casts.map((c) => c.msg)).toMatchObject([
      { kind: "unshelve_instance", host: hosts[1], attempt: n },
    ]);
    expect(casts[0]!.queue_url).toContain(`q-${hosts[1]}`);
    expect(await getInstance(rec.id)).toMatchObject({ task_state: "spawning", host: hosts[1], attempt: n });
    expect(await start(req, s)).toEqual(casts);
    expect(await claims(rec.id)).toEqual({ [hosts[1]!]: n });
  });

  it("a shelved image that is gone: the unshelve ends with Nova's fault, its claim released", async () => {
    const missing = randomUUID();
    const { rec, req, hosts } = await unshelving(1, {
      shelve: { at: new Date().toISOString(), image_id: missing, host: "gone" },
    });
    await claimFor(rec, hosts[0]!, unshelveAttempt(req));
    expect(await start(req, scheduled(rec.id, hosts))).toEqual([]);
    const now = (await getInstance(rec.id))!;
    expect(now).toMatchObject({ vm_state: "shelved_offloaded", task_state: null });
    expect(now.fault?.message).toBe(`Unshelve attempted but the image ${missing} cannot be found.`);
    expect(await claims(rec.id)).toEqual({});
  });
});

describe("unshelve: alternates", () => {
  it("claims the first alternate with room for the next attempt, and the same one on a re-run", async () => {
    const { rec, req, hosts } = await unshelving(3);
    await fill(hosts[1]!);
    const req2 = retried(req, 2, [hosts[0]!], hosts.slice(1));
    const picked = (await step("claim_alternate", req2)) as Scheduled;
    expect(picked.hosts[picked.selections[0]!.host]!.host).toBe(hosts[2]);
    expect(await step("claim_alternate", req2)).toEqual(picked);
    expect(await claims(rec.id)).toEqual({ [hosts[2]!]: unshelveAttempt(req2) });
  });
});

describe("unshelve: rollback", () => {
  it("NoValidHost: SHELVED_OFFLOADED with no task and no fault (Nova), every claim of it released; twice", async () => {
    const { rec, req, hosts } = await unshelving();
    await claimFor(rec, hosts[0]!, unshelveAttempt(req));
    await start(req, scheduled(rec.id, hosts));
    for (let i = 0; i < 2; i++) {
      await step("no_valid_host", retried(req, 2, [hosts[0]!]), { no_valid_host: { details: "0/3" } });
      const now = (await getInstance(rec.id))!;
      expect(now).toMatchObject({ vm_state: "shelved_offloaded", task_state: null, fault: null });
      expect(now.unshelve).toBeUndefined();
      expect(await claims(rec.id)).toEqual({});
    }
  });

  it("an error in the workflow: the fault names it, nothing is claimed", async () => {
    const { rec, req, hosts } = await unshelving();
    await claimFor(rec, hosts[0]!, unshelveAttempt(req));
    await step("build_failed", req, { error: { Error: "States.Timeout" } });
    const now = (await getInstance(rec.id))!;
    expect(now.fault?.message).toBe(`Unshelve of instance ${rec.id} aborted: States.Timeout`);
    expect(await claims(rec.id)).toEqual({});
  });
});
