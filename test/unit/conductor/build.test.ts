// A build's conductor steps (Nova's build_instances) on the in-process DynamoDB: placed on the
// scheduler's first pick, an alternate claimed after a failure, rolled back to ERROR with nothing
// claimed, and each step harmless when the state machine runs it twice.
import { describe, expect, it } from "vitest";
import { getInstance } from "../../../lib/instances/queries.js";
import { conductorRequest } from "../../../lib/instances/request-spec.js";
import { type Scheduled, scheduledOf } from "../../../lib/messages/scheduled.js";
import { release } from "../../../lib/placement/claims.js";
import { NO_VALID_HOST_MESSAGE } from "../../../lib/scheduler/errors.js";
import { useLocalAws } from "../../integration/local-aws.js";
import {
  at,
  building,
  claimFor,
  claims,
  fill,
  input,
  instance,
  retried,
  scheduled,
  setFields,
  start,
  step,
} from "./workflow-fixtures.js";

useLocalAws();

describe("build: placement", () => {
  it("starts on selections[0]: the host and attempt recorded, build_and_run_instance cast to its queue", async () => {
    const { rec, req, hosts } = await building();
    await claimFor(rec, hosts[0]!, 1);
    const casts = await start(req, scheduled(rec.id, hosts));
    expect(casts).toHaveLength(1);
    expect(casts[0]!.queue_url).toContain(`q-${hosts[0]}`);
    expect(casts[0]!.msg).toMatchObject({ kind: "build_and_run_instance", host: hosts[0], attempt: 1 });
    const now = (await getInstance(rec.id))!;
    expect(now).toMatchObject({ host: hosts[0], attempt: 1, vm_state: "building" });
    expect(now.alternates?.map((a) => a.host)).toEqual(hosts.slice(1));
    expect(await claims(rec.id)).toEqual({ [hosts[0]!]: 1 });
  });

  it("places every instance of a multi-create, each on its own pick", async () => {
    const { hosts } = await building(2);
    const a = await instance();
    const b = await instance({ request_id: a.request_id, reservation_id: a.reservation_id });
    await claimFor(a, hosts[0]!, 1);
    await claimFor(b, hosts[1]!, 1);
    const req = input({ ...conductorRequest(a, a.request_id), instance_uuids: [a.id, b.id] });
    const s = scheduledOf([
      { instance_uuid: a.id, selected: at(hosts[0]!), alternates: [] },
      { instance_uuid: b.id, selected: at(hosts[1]!), alternates: [] },
    ]);
    const casts = await start(req, s);
    expect(casts.map((c) => [c.msg.instance_uuid, c.msg.host])).toEqual([
      [a.id, hosts[0]],
      [b.id, hosts[1]],
    ]);
  });

  it("a repeated BuildInstances casts again and claims nothing more, after the build too (the host dedups)", async () => {
    const { rec, req, hosts } = await building();
    await claimFor(rec, hosts[0]!, 1);
    const s = scheduled(rec.id, hosts);
    const first = await start(req, s);
    expect(await start(req, s)).toEqual(first);
    // the host built it: a step repeated now finds it ACTIVE on that claim, and keeps it
    await setFields(rec.id, { vm_state: "active", task_state: null });
    expect(await start(req, s)).toEqual(first);
    expect(await claims(rec.id)).toEqual({ [hosts[0]!]: 1 });
  });

  it("an instance deleted before it was placed gets its claim back", async () => {
    const { rec, req, hosts } = await building();
    await claimFor(rec, hosts[0]!, 1);
    await setFields(rec.id, { deleted: true });
    expect(await start(req, scheduled(rec.id, hosts))).toEqual([]);
    expect(await claims(rec.id)).toEqual({});
  });
});

describe("build: alternates", () => {
  it("claims the first alternate with room, skipping the hosts tried, and the same one on a re-run", async () => {
    const { rec, req, hosts } = await building(4);
    await claimFor(rec, hosts[0]!, 1);
    await start(req, scheduled(rec.id, hosts));
    // the host failed the build (its claim went with the failure report)
    await release(hosts[0]!, rec.id, 1);
    await fill(hosts[1]!);
    const req2 = retried(req, 2, [hosts[0]!], hosts.slice(1));
    const picked = (await step("claim_alternate", req2)) as Scheduled;
    expect(picked.hosts[picked.selections[0]!.host]!.host).toBe(hosts[2]);
    expect(picked.selections[0]!.alternates.map((i) => picked.hosts[i]!.host)).toEqual([hosts[3]]);
    expect(await step("claim_alternate", req2)).toEqual(picked);
    expect(await claims(rec.id)).toEqual({ [hosts[2]!]: 2 });
    const casts = await start(req2, picked);
    expect(casts[0]!.msg).toMatchObject({ host: hosts[2], attempt: 2 });
    // once placed, a re-run finds the alternate recorded
    expect(await step("claim_alternate", req2)).toEqual(picked);
  });

  it("answers AlternatesExhausted when none has room, claiming nothing", async () => {
    const { rec, req, hosts } = await building(2);
    await fill(hosts[1]!);
    const answer = (await step("claim_alternate", retried(req, 2, [hosts[0]!], [hosts[1]!]))) as {
      exhausted?: { message: string };
    };
    expect(answer.exhausted?.message).toContain(rec.id);
    expect(await claims(rec.id)).toEqual({});
  });
});

describe("build: rollback", () => {
  it("an error in the workflow: ERROR with the error's name, every claim of the attempt released, twice", async () => {
    const { rec, req, hosts } = await building();
    await claimFor(rec, hosts[0]!, 1);
    const s = scheduled(rec.id, hosts);
    await start(req, s);
    const error = { Error: "States.TaskFailed", Cause: JSON.stringify({ errorMessage: "boom" }) };
    for (let i = 0; i < 2; i++) {
      await step("build_failed", { ...req, scheduled: s }, { error });
      const now = (await getInstance(rec.id))!;
      expect(now.vm_state).toBe("error");
      expect(now.fault?.message).toBe(`Build of instance ${rec.id} aborted: States.TaskFailed`);
      expect(await claims(rec.id)).toEqual({});
    }
  });

  it("finds the claims of a scheduler whose answer was lost", async () => {
    const { rec, req, hosts } = await building();
    await claimFor(rec, hosts[1]!, 1);
    await step("build_failed", req, { error: { Error: "States.Timeout" } });
    expect(await claims(rec.id)).toEqual({});
  });

  it("NoValidHost and MaxRetriesExceeded: ERROR with Nova's text", async () => {
    const { rec, req } = await building();
    await step("no_valid_host", req, { no_valid_host: { details: "0/3 hosts are available" } });
    expect((await getInstance(rec.id))!.fault).toMatchObject({
      message: NO_VALID_HOST_MESSAGE,
      details: "0/3 hosts are available",
    });
    const other = await building();
    // its third attempt failed on its host
    await setFields(other.rec.id, { attempt: 3 });
    await step("max_retries_exceeded", retried(other.req, 4, other.hosts));
    expect((await getInstance(other.rec.id))!.fault?.message).toContain("Exceeded maximum number of retries");
  });
});

describe("dispatch", () => {
  it("refuses an action it does not know, by name", async () => {
    const { req } = await building(1);
    await expect(step("resize_confirm" as "build_failed", req)).rejects.toThrow(
      "unknown conductor action resize_confirm",
    );
  });
});
