// The stack option that keeps an existing Keystone: tokens validated there (GET /v3/auth/tokens,
// keystonemiddleware's way) and cached. The Keystone here is a fake HTTP server: it stands for the
// external system, and counts what it is asked.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { defaultDeps } from "../../lib/api/deps.js";
import { handleHttp } from "../../lib/api/router.js";
import { KeystoneValidator } from "../../lib/identity/keystone.js";

const GOOD = "gAAAAABkeystone-good-token";
let requests: { path: string; auth?: string; subject?: string }[] = [];
let server: Server;
let url: string;
let expiresAt = "2099-01-01T00:00:00.000000Z";

beforeAll(async () => {
  server = createServer((req, res) => {
    const subject = req.headers["x-subject-token"] as string | undefined;
    requests.push({ path: req.url ?? "", auth: req.headers["x-auth-token"] as string, subject });
    if (req.method !== "GET" || req.url !== "/identity/v3/auth/tokens") {
      res.writeHead(404).end();
      return;
    }
    if (subject !== GOOD) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: 404, title: "Not Found", message: "Could not find token." } }));
      return;
    }
    res.writeHead(200, { "content-type": "application/json", "x-subject-token": subject });
    res.end(
      JSON.stringify({
        token: {
          methods: ["password"],
          user: { id: "u-1", name: "alice", domain: { id: "default", name: "Default" } },
          project: { id: "p-1", name: "ops", domain: { id: "default", name: "Default" } },
          roles: [{ id: "r1", name: "member" }],
          expires_at: expiresAt,
          issued_at: "2026-01-01T00:00:00.000000Z",
          audit_ids: ["a"],
        },
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/identity`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
});
beforeEach(() => {
  requests = [];
  expiresAt = "2099-01-01T00:00:00.000000Z";
});

describe("KeystoneValidator", () => {
  it("asks Keystone once per token_cache_time, with the token as X-Subject-Token and its own auth", async () => {
    let now = Date.parse("2026-03-01T12:00:00Z");
    const v = new KeystoneValidator({ url, cacheSeconds: 300, now: () => now });
    const first = await v.validate(GOOD);
    expect(first).toMatchObject({
      user_id: "u-1",
      project_id: "p-1",
      project_name: "ops",
      roles: ["member"],
    });
    expect(requests).toEqual([{ path: "/identity/v3/auth/tokens", auth: GOOD, subject: GOOD }]);
    now += 299_999;
    expect(await v.validate(GOOD)).toEqual(first);
    expect(requests).toHaveLength(1);
    now += 1;
    expect(await v.validate(GOOD)).toEqual(first);
    expect(requests).toHaveLength(2);
  });

  it("caches a refusal too, and never keeps a token past its own expiry", async () => {
    let now = Date.parse("2026-03-01T12:00:00Z");
    const v = new KeystoneValidator({ url: `${url}/v3`, now: () => now });
    expect(await v.validate("forged")).toBeUndefined();
    expect(await v.validate("forged")).toBeUndefined();
    expect(requests).toHaveLength(1);

    expiresAt = "2026-03-01T12:01:00.000000Z";
    expect(await v.validate(GOOD)).toBeDefined();
    now += 60_000;
    expect(await v.validate(GOOD)).toBeUndefined();
    expect(requests).toHaveLength(3);
  });

  it("says so when Keystone cannot answer, and caches nothing then", async () => {
    const v = new KeystoneValidator({ url: "http://127.0.0.1:9/identity" });
    await expect(v.validate(GOOD)).rejects.toThrow();
  });
});

describe("the API with NOVALESS_KEYSTONE_URL", () => {
  const saved = process.env.NOVALESS_KEYSTONE_URL;
  // the catalog is not what is tested here: an empty one
  const deps = { ...defaultDeps, listImages: async () => [] };
  beforeAll(() => {
    process.env.NOVALESS_KEYSTONE_URL = url;
  });
  afterAll(() => {
    if (saved === undefined) delete process.env.NOVALESS_KEYSTONE_URL;
    else process.env.NOVALESS_KEYSTONE_URL = saved;
  });

  it("takes Keystone's tokens (cached), refuses others with Keystone's 401, and serves no /identity", async () => {
    const get = (path: string, token: string) =>
      handleHttp({ method: "GET", path, headers: { "x-auth-token": token }, body: undefined }, deps);
    // an authenticated route (Glance's list): 200 shows the caller got through
    const ok = await get("/image/v2/images", GOOD);
    expect(ok.status).toBe(200);
    const again = await get("/image/v2/images", GOOD);
    expect(again.status).toBe(200);
    expect(requests.filter((r) => r.subject === GOOD)).toHaveLength(1);
    const refused = await get("/image/v2/images", "forged");
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body)).toEqual({
      error: {
        code: 401,
        title: "Unauthorized",
        message: "The request you have made requires authentication.",
      },
    });
    // the static tokens still work
    expect((await get("/image/v2/images", "admin-token")).status).toBe(200);
    expect((await get("/identity", GOOD)).status).toBe(404);
    expect((await get("/identity/v3", GOOD)).status).toBe(404);
  });
});
