// A rebuild's conductor steps (Nova's rebuild_instance on the server's own host) on the in-process
// DynamoDB: started on its own host with rebuild_instance cast to it, no alternates and no claim,
// rolled back to ERROR with the old image, each step harmless when run twice.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { getInstance } from "../../../lib/instances/queries.js";
import { beginRebuild } from "../../../lib/instances/rebuild.js";
import { conductorRequest } from "../../../lib/instances/request-spec.js";
import type { InstanceRecord, RebuildContext } from "../../../lib/instances/types.js";
import { NO_VALID_HOST_MESSAGE } from "../../../lib/scheduler/errors.js";
import { useLocalAws } from "../../integration/local-aws.js";
import {
  actionOf,
  activeOn,
  claims,
  host,
  hostNames,
  input,
  retried,
  scheduled,
  start,
  step,
} from "./workflow-fixtures.js";

useLocalAws();

const NEW_IMAGE = { id: "b1b2c3d4-0000-4000-8000-000000000002", name: "fedora", properties: {} };

/** A server on its host with a rebuild to a new image accepted by the API's own write. */
async function rebuilding() {
  const [own, other] = hostNames(2);
  for (const h of [own!, other!]) await host(h);
  const rec = await activeOn(own!);
  const a = actionOf(rec, "rebuild");
  const ctx: RebuildContext = {
    uuid: randomUUID(),
    request_id: a.request_id,
    orig_image: rec.image,
    image_changed: true,
    old_vm_state: "active",
  };
  const began = await beginRebuild(rec, ctx, NEW_IMAGE, {}, a);
  if (!began) throw new Error("rebuild not accepted");
  const req = input({ ...conductorRequest(rec, a.request_id), rebuild: { rebuild_uuid: ctx.uuid } });
  return { rec: began as InstanceRecord, oldImage: rec.image, req, own: own!, other: other! };
}

describe("rebuild: placement", () => {
  it("starts on its own host: rebuild_spawning, rebuild_instance cast there, its claim untouched; again the same", async () => {
    const { rec, req, own } = await rebuilding();
    const s = scheduled(rec.id, [own]);
    const casts = await start(req, s);
    expect(casts.map((c) => c.msg)).toMatchObject([{ kind: "rebuild_instance", host: own, same_host: true }]);
    expect(casts[0]!.queue_url).toContain(`q-${own}`);
    expect((await getInstance(rec.id))!.task_state).toBe("rebuild_spawning");
    expect(await start(req, s)).toEqual(casts);
    expect(await claims(rec.id)).toEqual({ [own]: 1 });
  });

  it("refuses a pick that is not its host", async () => {
    const { rec, req, other } = await rebuilding();
    await expect(start(req, scheduled(rec.id, [other]))).rejects.toThrow("not its host");
  });

  it("a rebuild that is over casts nothing and releases nothing", async () => {
    const { rec, req, own } = await rebuilding();
    await step("no_valid_host", req, { no_valid_host: { details: "image refused" } });
    expect(await start(req, scheduled(rec.id, [own]))).toEqual([]);
    expect(await claims(rec.id)).toEqual({ [own]: 1 });
  });
});

describe("rebuild: alternates", () => {
  it("has none: ClaimAlternate answers nothing and claims nothing", async () => {
    const { rec, req, own, other } = await rebuilding();
    expect(await step("claim_alternate", retried(req, 2, [own], [other]))).toEqual({
      hosts: [],
      selections: [],
    });
    expect(await claims(rec.id)).toEqual({ [own]: 1 });
  });
});

describe("rebuild: rollback", () => {
  it("NoValidHost: ERROR with Nova's fault, the old image back, its claim kept; twice", async () => {
    const { rec, oldImage, req, own } = await rebuilding();
    expect(rec.image).toEqual(NEW_IMAGE);
    for (let i = 0; i < 2; i++) {
      await step("no_valid_host", req, { no_valid_host: { details: "ImagePropertiesFilter" } });
      const now = (await getInstance(rec.id))!;
      expect(now).toMatchObject({ vm_state: "error", host: own, image: oldImage });
      expect(now.rebuild).toBeUndefined();
      expect(now.fault).toMatchObject({ message: NO_VALID_HOST_MESSAGE, details: "ImagePropertiesFilter" });
      expect(await claims(rec.id)).toEqual({ [own]: 1 });
    }
  });

  it("an error in the workflow: ERROR with the error's name", async () => {
    const { rec, req } = await rebuilding();
    await step("build_failed", req, { error: { Error: "States.Timeout" } });
    expect((await getInstance(rec.id))!.fault?.message).toBe(
      `Rebuild of instance ${rec.id} aborted: States.Timeout`,
    );
  });
});
