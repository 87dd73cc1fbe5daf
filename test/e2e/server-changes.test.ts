// What a user changes of a server after its build, on the emulators: PUT /servers/{id}, its
// metadata and tags, and lock/unlock (recorded as instance actions, refusing changes while held).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;
let id: string;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({ hosts: 2 }));
  id = await client.at("2.52").createServer({ metadata: { a: "1" }, tags: ["blue"], description: "first" });
  await client.waitForStatus(id, ["ACTIVE"]);
});
afterAll(async () => runtime?.stop());

describe("server changes on DynamoDB", () => {
  it("shows the create's description and tags per version; PUT changes name and description", async () => {
    const old = await client.get(`/v2.1/servers/${id}`);
    expect(old.body.server).not.toHaveProperty("description");
    expect(old.body.server.flavor).toEqual({
      id: "1",
      links: [{ rel: "bookmark", href: `${runtime.url}/flavors/1` }],
    });
    const latest = await client.at("latest").get(`/v2.1/servers/${id}`);
    expect(latest.body.server).toMatchObject({ description: "first", tags: ["blue"], locked: false });
    expect(latest.body.server.flavor.original_name).toBe("m1.tiny");

    // description is 2.19's: refused before it, as an unknown key
    const early = await client
      .at("2.18")
      .call("PUT", `/v2.1/servers/${id}`, { server: { description: "x" } });
    expect(early.status).toBe(400);
    expect(early.body.badRequest.message).toContain("'description' was unexpected");
    const put = await client
      .at("2.19")
      .call("PUT", `/v2.1/servers/${id}`, { server: { name: "renamed", description: null } });
    expect(put.status).toBe(200);
    expect(put.body.server).toMatchObject({ name: "renamed", description: null });
    expect((await client.get(`/v2.1/servers/${id}`)).body.server.name).toBe("renamed");
  });

  it("metadata: replace, merge, one key, the limit", async () => {
    const base = `/v2.1/servers/${id}/metadata`;
    expect((await client.post(base, { metadata: { b: "2" } })).body).toEqual({ metadata: { b: "2" } });
    expect((await client.get(base)).body).toEqual({ metadata: { a: "1", b: "2" } });
    const put = await client.call("PUT", base, { metadata: { c: "3" } });
    expect(put.body).toEqual({ metadata: { c: "3" } });
    expect((await client.call("PUT", `${base}/d`, { meta: { d: "4" } })).body).toEqual({ meta: { d: "4" } });
    expect((await client.get(`${base}/d`)).body).toEqual({ meta: { d: "4" } });
    const mismatch = await client.call("PUT", `${base}/d`, { meta: { e: "4" } });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.badRequest.message).toBe("Request body and URI mismatch");
    expect((await client.delete(`${base}/d`)).status).toBe(204);
    const gone = await client.get(`${base}/d`);
    expect(gone.status).toBe(404);
    expect(gone.body.itemNotFound.message).toBe("Metadata item was not found");
    const many = Object.fromEntries(Array.from({ length: 129 }, (_, i) => [`k${i}`, "v"]));
    const over = await client.post(base, { metadata: many });
    expect(over.status).toBe(403);
    expect(over.body.forbidden.message).toBe("Maximum number of metadata items exceeds 128");
    expect((await client.get(base)).body).toEqual({ metadata: { c: "3" } });
    // the limit is the project's metadata_items quota
    const admin = client.as(ADMIN);
    const set = await admin.call("PUT", "/v2.1/os-quota-sets/demo", { quota_set: { metadata_items: 1 } });
    expect(set.status).toBe(200);
    const overQuota = await client.post(base, { metadata: { d: "4" } });
    expect(overQuota.status).toBe(403);
    expect(overQuota.body.forbidden.message).toBe("Maximum number of metadata items exceeds 1");
    expect((await admin.delete("/v2.1/os-quota-sets/demo")).status).toBe(202);
  });

  it("tags from 2.26: add (201, then 204), check, replace, remove, the 50-tag limit", async () => {
    const at = client.at("2.26");
    const base = `/v2.1/servers/${id}/tags`;
    expect((await client.get(base)).status).toBe(404);
    const added = await at.call("PUT", `${base}/red`);
    expect(added.status).toBe(201);
    expect(added.headers.get("location")).toBe(`${runtime.url}${base}/red`);
    expect((await at.call("PUT", `${base}/red`)).status).toBe(204);
    expect((await at.get(base)).body).toEqual({ tags: ["blue", "red"] });
    expect((await at.get(`${base}/red`)).status).toBe(204);
    const missing = await at.get(`${base}/green`);
    expect(missing.status).toBe(404);
    expect(missing.body.itemNotFound.message).toBe(`Instance ${id} has no tag 'green'`);
    expect((await at.delete(`${base}/red`)).status).toBe(204);

    const fifty = Array.from({ length: 50 }, (_, i) => `t${i}`);
    expect((await at.call("PUT", base, { tags: fifty })).body).toEqual({ tags: fifty });
    const more = await at.call("PUT", `${base}/one-more`);
    expect(more.status).toBe(400);
    expect(more.body.badRequest.message).toBe("The number of tags exceeded the per-server limit 50");
    expect((await at.call("PUT", base, { tags: [...fifty, "x"] })).status).toBe(400);
    expect((await at.call("PUT", base, { tags: ["a,b"] })).status).toBe(400);
    expect((await at.delete(base)).status).toBe(204);
    expect((await at.get(base)).body).toEqual({ tags: [] });
  });

  it("lock: refuses the owner's changes and delete (409), an owner cannot lift an admin's lock", async () => {
    const at = client.at("2.73");
    const action = `/v2.1/servers/${id}/action`;
    expect((await at.post(action, { lock: { locked_reason: "maintenance" } })).status).toBe(202);
    expect((await at.get(`/v2.1/servers/${id}`)).body.server).toMatchObject({
      locked: true,
      locked_reason: "maintenance",
    });
    const refused = await client.post(`/v2.1/servers/${id}/metadata`, { metadata: { z: "1" } });
    expect(refused.status).toBe(409);
    expect(refused.body.conflictingRequest.message).toBe(`Instance ${id} is locked`);
    expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(409);
    // an admin is not held by the lock
    expect(
      (await at.as(ADMIN).call("PUT", `/v2.1/servers/${id}`, { server: { name: "by-admin" } })).status,
    ).toBe(200);
    expect((await at.post(action, { unlock: null })).status).toBe(202);

    expect((await at.as(ADMIN).post(action, { lock: null })).status).toBe(202);
    const override = await at.post(action, { unlock: null });
    expect(override.status).toBe(403);
    expect(override.body.forbidden.message).toBe(
      "Policy doesn't allow os_compute_api:os-lock-server:unlock:unlock_override to be performed.",
    );
    expect((await at.as(ADMIN).post(action, { unlock: null })).status).toBe(202);

    const actions = (await client.get(`/v2.1/servers/${id}/os-instance-actions`)).body.instanceActions;
    // newest first; two within one millisecond may come in either order, so compare as sets
    expect(actions.map((a: { action: string }) => a.action).sort()).toEqual([
      "create",
      "lock",
      "lock",
      "unlock",
      "unlock",
    ]);
    expect(actions.at(-1).action).toBe("create");
    // 2.58: paged, newest first, with the next page's link
    const page = await client.at("2.58").get(`/v2.1/servers/${id}/os-instance-actions?limit=2`);
    expect(page.body.instanceActions).toHaveLength(2);
    const next = new URL(page.body.links[0].href);
    expect(next.searchParams.get("marker")).toBe(page.body.instanceActions[1].request_id);
    const rest = await client.at("2.58").get(`/v2.1/servers/${id}/os-instance-actions${next.search}`);
    // the same limit carried on: the next two after the marker, in the unpaged list's order
    const ids = (list: { request_id: string }[]) => list.map((a) => a.request_id);
    expect(ids(rest.body.instanceActions)).toEqual(ids(actions.slice(2, 4)));

    const unknown = await client.post(action, { fly: null });
    expect(unknown.status).toBe(400);
    expect(unknown.body.badRequest.message).toBe("There is no such action: fly");
    const rescue = await client.post(action, { rescue: null });
    expect(rescue.status).toBe(501);
    expect(rescue.body.notImplemented.message).toContain("'rescue'");
    expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  });

  it("2.74: an admin's requested host is where it builds; an unknown one is 400; a member may not", async () => {
    const admin = client.as(ADMIN).at("2.74");
    const onTwo = await admin.createServer({ host: "host-2" });
    expect((await admin.waitForStatus(onTwo, ["ACTIVE"]))["OS-EXT-SRV-ATTR:host"]).toBe("host-2");
    const unknown = await admin.post("/v2.1/servers", {
      server: {
        name: "x",
        flavorRef: "1",
        imageRef: "cirros",
        hypervisor_hostname: "nowhere",
        networks: "none",
      },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.badRequest.message).toBe("Compute host nowhere could not be found.");
    const member = await client.at("2.74").post("/v2.1/servers", {
      server: { name: "x", flavorRef: "1", imageRef: "cirros", host: "host-2", networks: "none" },
    });
    expect(member.status).toBe(403);
    expect((await admin.delete(`/v2.1/servers/${onTwo}`)).status).toBe(204);
  });
});
