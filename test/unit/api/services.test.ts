import { describe, expect, it } from "vitest";
import { apiCall, fakeWorld } from "./fakes.js";

let world = fakeWorld();

function call(method: string, path: string, token: string, body?: unknown) {
  return apiCall(world.deps, method, path, token, body);
}

describe("os-services", () => {
  it("lists every compute service for admins, 403 for members", async () => {
    world = fakeWorld();
    const r = await call("GET", "/v2.1/os-services", "admin-token");
    expect(r.status).toBe(200);
    expect(r.json.services.map((s: { host: string }) => s.host)).toEqual(["host-1", "host-2"]);
    expect(r.json.services[0]).toMatchObject({
      binary: "nova-compute",
      status: "enabled",
      forced_down: false,
    });
    expect((await call("GET", "/v2.1/os-services", "demo-token")).status).toBe(403);
    const one = await call("GET", "/v2.1/os-services?host=host-2", "admin-token");
    expect(one.json.services).toHaveLength(1);
  });

  it("disables with a reason, re-enables (clearing it), forces down", async () => {
    world = fakeWorld();
    const d = await call("PUT", "/v2.1/os-services/host-1", "admin-token", {
      status: "disabled",
      disabled_reason: "maintenance",
    });
    expect(d.status).toBe(200);
    expect(d.json.service).toMatchObject({
      host: "host-1",
      status: "disabled",
      disabled_reason: "maintenance",
    });
    expect(world.hosts.get("host-1")!.service.disabled).toBe(true);

    const e = await call("PUT", "/v2.1/os-services/host-1", "admin-token", { status: "enabled" });
    expect(e.json.service).toMatchObject({ status: "enabled", disabled_reason: null });

    const f = await call("PUT", "/v2.1/os-services/host-2", "admin-token", { forced_down: true });
    expect(f.json.service).toMatchObject({ forced_down: true, state: "down" });
  });

  it("rejects what Nova rejects", async () => {
    world = fakeWorld();
    const cases: [unknown, number, RegExp][] = [
      [{}, 400, /status or forced_down/],
      [{ status: "sleeping" }, 400, /status/],
      [{ status: "enabled", disabled_reason: "x" }, 400, /disabled_reason/],
      [{ forced_down: "yes" }, 400, /forced_down/],
      [{ status: "disabled", colour: "red" }, 400, /colour/],
    ];
    for (const [body, status, message] of cases) {
      const r = await call("PUT", "/v2.1/os-services/host-1", "admin-token", body);
      expect(r.status, JSON.stringify(body)).toBe(status);
      expect(r.json.badRequest.message).toMatch(message);
    }
    expect((await call("PUT", "/v2.1/os-services/nope", "admin-token", { status: "disabled" })).status).toBe(
      404,
    );
    expect((await call("PUT", "/v2.1/os-services/host-1", "demo-token", { status: "disabled" })).status).toBe(
      403,
    );
  });
});
