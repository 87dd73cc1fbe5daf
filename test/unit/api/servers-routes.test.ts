// The servers routes through handleHttp with in-memory I/O: what a create keeps, key_name checked
// against the caller's key pairs, and an admin's host_status (2.16) from the host's service.
import { beforeEach, describe, expect, it, vi } from "vitest";
import type { HttpRequest } from "../../../lib/api/request.js";
import { handleHttp } from "../../../lib/api/router.js";
import { type FakeWorld, fakeWorld } from "./fakes.js";

let w: FakeWorld;
beforeEach(() => {
  w = fakeWorld();
  vi.spyOn(process.stdout, "write").mockImplementation(() => true);
  vi.spyOn(process.stderr, "write").mockImplementation(() => true);
});

async function call(method: string, path: string, version: string, token = "demo-token", body?: unknown) {
  const req: HttpRequest = {
    method,
    path,
    headers: { host: "api.test", "x-auth-token": token, "openstack-api-version": `compute ${version}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  };
  const res = await handleHttp(req, w.deps);
  return { status: res.status, json: res.body ? JSON.parse(res.body) : undefined };
}

/** From 2.37 `networks` is required: "none" unless the test gives some. */
const needsNetworks = (version: string) => version === "latest" || Number(version.split(".")[1]) >= 37;
const create = (over: Record<string, unknown>, version = "latest", token = "demo-token") =>
  call("POST", "/v2.1/servers", version, token, {
    server: {
      name: "vm",
      flavorRef: "1",
      imageRef: "cirros",
      ...(needsNetworks(version) ? { networks: "none" } : {}),
      ...over,
    },
  });

describe("servers routes", () => {
  it("key_name must be one of the caller's key pairs", async () => {
    const missing = await create({ key_name: "mine" });
    expect(missing.status).toBe(400);
    expect(missing.json.badRequest.message).toBe("Keypair mine not found for user demo");
    w.keypairs.set("demo#mine", {
      name: "mine",
      user_id: "demo",
      type: "ssh",
      public_key: "ssh-ed25519 AAAA",
      fingerprint: "00",
      created_at: w.now.toISOString(),
    } as never);
    const ok = await create({ key_name: "mine", description: "d", tags: ["t"], user_data: "aGk=" }, "2.52");
    expect(ok.status).toBe(202);
    const shown = await call("GET", `/v2.1/servers/${ok.json.server.id}`, "latest");
    expect(shown.json.server).toMatchObject({ key_name: "mine", description: "d", tags: ["t"] });
    const admin = await call("GET", `/v2.1/servers/${ok.json.server.id}`, "latest", "admin-token");
    expect(admin.json.server["OS-EXT-SRV-ATTR:user_data"]).toBe("aGk=");
  });

  it("host_status for admins from 2.16: UP, MAINTENANCE when disabled, DOWN when down", async () => {
    const id = (await create({})).json.server.id;
    Object.assign(w.instances.get(id)!, {
      host: "host-1",
      node: "host-1",
      vm_state: "active",
      task_state: null,
    });
    const status = async (version = "2.16", token = "admin-token") =>
      (await call("GET", `/v2.1/servers/${id}`, version, token)).json.server.host_status;
    expect(await status()).toBe("UP");
    expect(await status("2.15")).toBeUndefined();
    expect(await status("2.16", "demo-token")).toBeUndefined();
    w.hosts.get("host-1")!.service.disabled = true;
    expect(await status()).toBe("MAINTENANCE");
    w.hosts.get("host-1")!.service.forced_down = true;
    expect(await status()).toBe("DOWN");
    const list = await call("GET", "/v2.1/servers/detail?all_tenants=1", "2.16", "admin-token");
    expect(list.json.servers[0].host_status).toBe("DOWN");
  });

  it("deleted servers: hidden, except with changes-since, `deleted` (admins) or status DELETED (admins), as Nova", async () => {
    const kept = (await create({ name: "kept" })).json.server.id;
    const gone = (await create({ name: "gone" })).json.server.id;
    expect((await call("DELETE", `/v2.1/servers/${gone}`, "latest")).status).toBe(204);
    const names = async (q: string, token = "demo-token") =>
      (await call("GET", `/v2.1/servers/detail?${q}`, "latest", token)).json.servers.map(
        (x: { name: string }) => x.name,
      );
    expect(await names("")).toEqual(["kept"]);
    // changes-since: the deleted one too, DELETED
    const since = await call("GET", "/v2.1/servers/detail?changes-since=2000-01-01T00:00:00Z", "latest");
    expect(since.json.servers.map((x: { id: string; status: string }) => [x.id, x.status]).sort()).toEqual(
      [
        [kept, "BUILD"],
        [gone, "DELETED"],
      ].sort(),
    );
    // Nova's `deleted` is an admin's filter (a member's is dropped)
    expect(await names("deleted=true")).toEqual(["kept"]);
    expect(await names("all_tenants=1&deleted=true", "admin-token")).toEqual(["gone"]);
    expect(await names("all_tenants=1&deleted=false", "admin-token")).toEqual(["kept"]);
    expect(await names("all_tenants=1&status=DELETED", "admin-token")).toEqual(["gone"]);
    const member = await call("GET", "/v2.1/servers/detail?status=deleted", "latest");
    expect(member.status).toBe(403);
    expect(member.json.forbidden.message).toBe("Only administrators may list deleted instances");
    // a deleted server's id is still a marker (Nova reads it with read_deleted); an unknown one is 400
    expect((await call("GET", `/v2.1/servers?marker=${gone}`, "latest")).status).toBe(200);
    const unknown = await call("GET", "/v2.1/servers?marker=6a1f0b8e-0000-4000-8000-000000000000", "latest");
    expect(unknown.status).toBe(400);
    expect(unknown.json.badRequest.message).toBe("marker [6a1f0b8e-0000-4000-8000-000000000000] not found");
  });
});
