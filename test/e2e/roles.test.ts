// Roles as Nova's and Glance's default policies read them: a project's reader lists and shows
// (servers, flavors, images, limits, quotas) and changes nothing (Nova's 403 with the route's rule,
// Glance's on /image); a token with a custom role only is refused what needs reader or member; a
// member is unchanged. The quotas of a project our Identity knows are the defaults until an admin
// sets them; a project it does not know is Nova's 400.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Project, putIfAbsent } from "../../lib/identity/store.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, DEMO, startTestRuntime } from "./harness.js";

const READER = "reader-token";
const CUSTOM = "foo-token";
const TOKENS = {
  [ADMIN]: { user_id: "admin", project_id: "admin", roles: ["admin", "member"] },
  [DEMO]: { user_id: "demo", project_id: "demo", roles: ["member"] },
  [READER]: { user_id: "demo-reader", project_id: "demo", roles: ["reader"] },
  [CUSTOM]: { user_id: "demo-foo", project_id: "demo", roles: ["foo"] },
};

let runtime: Runtime;
let client: Client;
let server: string;
beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({
    hosts: 1,
    buildMs: 20,
    env: { NOVALESS_AUTH_TOKENS: JSON.stringify(TOKENS) },
  }));
  server = await client.createServer({ name: "shared" });
  await client.waitForStatus(server, ["ACTIVE"]);
});
afterAll(async () => runtime?.stop());

const reader = () => client.as(READER);
const custom = () => client.as(CUSTOM);
const admin = () => client.as(ADMIN);
const refused = (rule: string) => [403, `Policy doesn't allow ${rule} to be performed.`];
/** Glance's status and the message line of its plain-text error ("403 Forbidden\n\n<message>…"). */
async function glance(method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(`${runtime.url}/image${path}`, {
    method,
    headers: { "x-auth-token": token, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return [res.status, (await res.text()).split("\n")[2]];
}
const answer = (r: { status: number; body: Record<string, { message?: string }> }) => [
  r.status,
  r.body.forbidden?.message ?? r.body.badRequest?.message ?? r.body.itemNotFound?.message,
];

describe("a reader", () => {
  it("lists and shows servers, flavors, images, limits and its quotas", async () => {
    const list = await reader().get("/v2.1/servers");
    expect(list.status).toBe(200);
    expect(list.body.servers.map((s: { id: string }) => s.id)).toContain(server);
    expect((await reader().get("/v2.1/servers/detail")).status).toBe(200);
    const show = await reader().get(`/v2.1/servers/${server}`);
    expect([show.status, show.body.server?.status]).toEqual([200, "ACTIVE"]);
    // the legacy URL, with the project in it
    expect((await reader().get(`/v2.1/demo/servers/${server}`)).status).toBe(200);
    expect((await reader().get(`/v2.1/servers/${server}/os-instance-actions`)).status).toBe(200);
    expect((await reader().get("/v2.1/flavors/detail")).body.flavors.length).toBeGreaterThan(0);
    const images = await reader().get("/v2.1/images");
    expect(images.body.images.length).toBeGreaterThan(0);
    expect((await reader().get(`/v2.1/images/${images.body.images[0].id}`)).status).toBe(200);
    expect((await reader().get("/image/v2/images")).status).toBe(200);
    expect((await reader().get("/v2.1/limits")).body.limits.absolute.totalInstancesUsed).toBe(1);
    const quotas = await reader().get("/v2.1/os-quota-sets/demo");
    expect([quotas.status, quotas.body.quota_set.id]).toEqual([200, "demo"]);
  });

  it("creates, deletes and acts on nothing: Nova's 403 with each route's rule", async () => {
    const create = await reader().post("/v2.1/servers", {
      server: { name: "no", flavorRef: "1", imageRef: "cirros" },
    });
    expect(answer(create)).toEqual(refused("os_compute_api:servers:create"));
    expect(answer(await reader().post("/v2.1/demo/servers", {}))).toEqual(
      refused("os_compute_api:servers:create"),
    );
    expect(answer(await reader().delete(`/v2.1/servers/${server}`))).toEqual(
      refused("os_compute_api:servers:delete"),
    );
    expect(answer(await reader().call("PUT", `/v2.1/servers/${server}`, { server: { name: "x" } }))).toEqual(
      refused("os_compute_api:servers:update"),
    );
    expect(answer(await reader().post(`/v2.1/servers/${server}/action`, { pause: null }))).toEqual(
      refused("os_compute_api:os-pause-server:pause"),
    );
    // Nova's console output is a POST action for members
    expect(
      answer(await reader().post(`/v2.1/servers/${server}/action`, { "os-getConsoleOutput": {} })),
    ).toEqual(refused("os_compute_api:os-console-output"));
    expect(
      answer(await reader().call("PUT", `/v2.1/servers/${server}/metadata/k`, { meta: { k: "v" } })),
    ).toEqual(refused("os_compute_api:server-metadata:update"));
    expect(answer(await reader().post("/v2.1/os-server-groups", { server_group: { name: "g" } }))).toEqual(
      refused("os_compute_api:os-server-groups:create"),
    );
    // the server is as it was
    expect((await admin().get(`/v2.1/servers/${server}`)).body.server.status).toBe("ACTIVE");
  });

  it("makes its own key pair: Nova's rule is the user's, not a role", async () => {
    const kp = await reader().post("/v2.1/os-keypairs", { keypair: { name: "reader-key" } });
    expect(kp.status).toBe(200);
    expect((await reader().delete("/v2.1/os-keypairs/reader-key")).status).toBe(202);
  });

  it("creates and deletes no image: Glance's 403, and Nova's through its proxy", async () => {
    const img = (await reader().get("/v2.1/images")).body.images[0].id as string;
    expect(await glance("POST", "/v2/images", READER, { name: "mine" })).toEqual([
      403,
      "You are not authorized to complete add_image action.",
    ]);
    expect(await glance("DELETE", `/v2/images/${img}`, READER)).toEqual([
      403,
      "You are not authorized to complete delete_image action.",
    ]);
    // Glance lets a reader see an image, not download it
    expect(await glance("GET", `/v2/images/${img}/file`, READER)).toEqual([
      403,
      "You are not authorized to complete download_image action.",
    ]);
    expect(answer(await reader().delete(`/v2.1/images/${img}`))).toEqual([
      403,
      "You are not allowed to delete the image.",
    ]);
    expect((await reader().get(`/v2.1/images/${img}`)).status).toBe(200);
  });
});

describe("a token with a custom role only", () => {
  it("is refused every read that needs reader, and gets what Nova grants anyone", async () => {
    expect(answer(await custom().get("/v2.1/servers"))).toEqual(refused("os_compute_api:servers:index"));
    expect(answer(await custom().get(`/v2.1/servers/${server}`))).toEqual(
      refused("os_compute_api:servers:show"),
    );
    expect(answer(await custom().get("/v2.1/os-quota-sets/demo"))).toEqual(
      refused("os_compute_api:os-quota-sets:show"),
    );
    expect(answer(await custom().post(`/v2.1/servers/${server}/action`, { "os-stop": null }))).toEqual(
      refused("os_compute_api:servers:stop"),
    );
    expect(await glance("GET", "/v2/images", CUSTOM)).toEqual([
      403,
      "You are not authorized to complete get_images action.",
    ]);
    // `@` in Nova: the limits, the zones, a project's default quotas; no rule at all: flavors
    expect((await custom().get("/v2.1/limits")).status).toBe(200);
    expect((await custom().get("/v2.1/os-availability-zone")).status).toBe(200);
    expect((await custom().get("/v2.1/os-quota-sets/demo/defaults")).status).toBe(200);
    expect((await custom().get("/v2.1/flavors")).status).toBe(200);
  });
});

describe("a member", () => {
  it("acts on its server as before", async () => {
    expect((await client.post(`/v2.1/servers/${server}/action`, { pause: null })).status).toBe(202);
    await client.waitForStatus(server, ["PAUSED"]);
    expect((await client.post(`/v2.1/servers/${server}/action`, { unpause: null })).status).toBe(202);
    await client.waitForStatus(server, ["ACTIVE"]);
  });
});

describe("the quotas of a new project", () => {
  it("are the defaults until an admin sets them; a project our Identity does not know is Nova's 400", async () => {
    const p2: Project = {
      id: "p2",
      name: "p2",
      domain_id: "default",
      description: "",
      enabled: true,
      is_domain: false,
      parent_id: "default",
    };
    expect(await putIfAbsent("project", p2.id, p2)).toBe(true);
    const defaults = (await admin().get("/v2.1/os-quota-sets/p2/defaults")).body.quota_set;
    const fresh = await admin().get("/v2.1/os-quota-sets/p2");
    expect(fresh.status).toBe(200);
    expect({ ...fresh.body.quota_set, id: "p2" }).toEqual({ ...defaults, id: "p2" });

    const set = await admin().call("PUT", "/v2.1/os-quota-sets/p2", { quota_set: { instances: 3 } });
    expect([set.status, set.body.quota_set?.instances]).toEqual([200, 3]);
    expect((await admin().get("/v2.1/os-quota-sets/p2")).body.quota_set.instances).toBe(3);

    const missing = "Project ID nope is not a valid project.";
    const put = await admin().call("PUT", "/v2.1/os-quota-sets/nope", { quota_set: { instances: 3 } });
    expect(answer(put)).toEqual([400, missing]);
    expect(answer(await admin().get("/v2.1/os-quota-sets/nope"))).toEqual([400, missing]);
    expect((await admin().delete("/v2.1/os-quota-sets/p2")).status).toBe(202);
  });
});
