// Quotas on the embedded DynamoDB through the real SDK: concurrent reservations never pass a
// limit, and a delete releases its instance's usage exactly once.
import { describe, expect, it } from "vitest";
import { getInstance } from "../../lib/instances/queries.js";
import { markDeletedReleasing } from "../../lib/instances/quota-release.js";
import { createInstances } from "../../lib/instances/server-writes.js";
import {
  deleteProjectLimits,
  getProjectLimits,
  getUsage,
  releaseUsage,
  reserveInstances,
  setDefaultLimits,
  setProjectLimits,
} from "../../lib/quotas/store.js";
import { record } from "../unit/api/records.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

const tiny = { vcpus: 1, memory_mb: 512 };

describe("reserving instances", () => {
  it("50 concurrent creates against a quota of 10: exactly 10 accepted, the rest refused with Nova's message", async () => {
    const results = await Promise.all(Array.from({ length: 50 }, () => reserveInstances("race", tiny, 1, 1)));
    const accepted = results.filter((r) => r.ok);
    expect(accepted).toHaveLength(10);
    expect(await getUsage("race")).toEqual({ instances: 10, cores: 10, ram: 5120 });
    const refused = results.find((r) => !r.ok);
    expect(refused).toEqual({
      ok: false,
      message: "Quota exceeded for instances: Requested 1, but already used 10 of 10 instances",
    });
  });

  it("multi-creates racing: never more than the cores limit, each all or reduced to what fits", async () => {
    await setProjectLimits("cores-race", { cores: 20, instances: -1 });
    const big = { vcpus: 3, memory_mb: 1024 };
    const results = await Promise.all(
      Array.from({ length: 12 }, () => reserveInstances("cores-race", big, 1, 2)),
    );
    const got = results.reduce((n, r) => n + (r.ok ? r.count : 0), 0);
    expect(got).toBe(6); // 18 cores of 20: a seventh instance would need 21
    expect((await getUsage("cores-race")).cores).toBe(18);
  });

  it("-1 is unlimited; a released reservation makes room again", async () => {
    await setProjectLimits("unl", { instances: -1, cores: -1, ram: -1 });
    const r = await reserveInstances("unl", { vcpus: 64, memory_mb: 1 << 20 }, 50, 50);
    expect(r).toMatchObject({ ok: true, count: 50 });
    await deleteProjectLimits("unl");
    expect((await getProjectLimits("unl")).instances).toBe(10);
    const over = await reserveInstances("unl", tiny, 1, 1);
    expect(over.ok).toBe(false);
    if (r.ok) await releaseUsage("unl", r.delta);
    expect(await getUsage("unl")).toEqual({ instances: 0, cores: 0, ram: 0 });
    expect(await reserveInstances("unl", tiny, 1, 1)).toMatchObject({ ok: true, count: 1 });
  });

  it("the default class's limits apply to projects without their own", async () => {
    await setDefaultLimits({ server_groups: 3 });
    expect((await getProjectLimits("anyone")).server_groups).toBe(3);
    await setProjectLimits("anyone", { server_groups: 7 });
    expect((await getProjectLimits("anyone")).server_groups).toBe(7);
    expect((await getProjectLimits("anyone")).instances).toBe(10);
  });
});

describe("a delete releases exactly once", () => {
  it("concurrent and repeated deletes of one instance release its usage once", async () => {
    const id = "6a1f0b8e-3333-4000-8000-000000000001";
    const r = await reserveInstances("del", tiny, 1, 1);
    expect(r.ok).toBe(true);
    await createInstances([record({ id, project_id: "del" })]);
    const outcomes = await Promise.all(Array.from({ length: 5 }, () => markDeletedReleasing(id)));
    expect(outcomes.filter((o) => o !== undefined)).toHaveLength(1);
    expect(await markDeletedReleasing(id)).toBeUndefined();
    expect((await getInstance(id))?.deleted).toBe(true);
    expect(await getUsage("del")).toEqual({ instances: 0, cores: 0, ram: 0 });
  });
});
