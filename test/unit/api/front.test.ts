// The one front (lib/api/front.ts) on its own: a service that declares its differences gets the
// chain every front has — its version documents without a token, Keystone's 401, its error shape
// for every refusal (its domain's errors too), its malformed-JSON answer, zod checks through
// Hono's validator, its 404 — and leaves an unexpected error to the front it is mounted on.
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Refusal } from "../../../lib/api/errors.js";
import { createFront, type FrontEnv, jsonBody, queryOf, type Service } from "../../../lib/api/front.js";

class DomainError extends Error {}

const SERVICE: Service<FrontEnv> = {
  errorBody: (r) => ({ json: { fault: { status: r.status, type: r.type, message: r.message } } }),
  refusalOf: (e) => (e instanceof DomainError ? new Refusal(409, e.message, "Domain") : undefined),
  malformedBody: () => new Refusal(400, "not JSON", "Malformed"),
  versions: [{ path: "/", document: (base) => ({ base }), status: 300 }],
  tokenPaths: ["/v1/*"],
  notFound: (c) => new Refusal(404, `no ${c.req.path}`, "NotFound"),
};

const deps = { now: () => new Date("2026-03-01T12:00:00Z") };

function app() {
  const front = createFront(SERVICE, deps, (a) => {
    a.post(
      "/v1/things",
      jsonBody(
        SERVICE,
        z.object({ size: z.int() }),
        (f) => new Refusal(400, `bad ${f.issue.path.join(".")}`, "Bad"),
      ),
      (c) => c.json({ size: c.req.valid("json").size, by: c.get("auth").user_id }, 201),
    );
    a.get(
      "/v1/things",
      queryOf(
        z.object({ limit: z.array(z.string().regex(/^\d+$/)).optional() }),
        () => new Refusal(400, "bad limit", "Bad"),
      ),
      (c) => c.json({ limit: c.req.valid("query").limit ?? [] }),
    );
    a.get("/v1/conflict", () => {
      throw new DomainError("taken");
    });
    a.get("/v1/boom", () => {
      throw new Error("boom");
    });
  });
  // the enclosing front: an unexpected error is its to answer
  const root = new Hono<FrontEnv>({ strict: false });
  root.use("*", async (c, next) => {
    c.set("baseUrl", "https://api.test");
    await next();
  });
  root.onError((e, c) => c.json({ outer: e.message }, 500));
  root.route("/svc", front);
  return root;
}

async function call(method: string, path: string, opts: { token?: string | null; body?: string } = {}) {
  const headers: Record<string, string> = {};
  if (opts.token !== null) headers["x-auth-token"] = opts.token ?? "demo-token";
  const r = await app().request(`/svc${path}`, { method, headers, body: opts.body });
  return { status: r.status, json: await r.json() };
}

describe("createFront", () => {
  it("answers its version documents without a token, with their status", async () => {
    expect(await call("GET", "/", { token: null })).toEqual({
      status: 300,
      json: { base: "https://api.test" },
    });
  });

  it("refuses its paths without a valid token with Keystone's 401", async () => {
    for (const token of [null, "no-such-token"])
      expect(await call("GET", "/v1/things", { token })).toEqual({
        status: 401,
        json: {
          error: {
            code: 401,
            title: "Unauthorized",
            message: "The request you have made requires authentication.",
          },
        },
      });
  });

  it("reads a body as JSON (else its malformed answer) and checks it with zod", async () => {
    const fault = (status: number, type: string, message: string) => ({
      status,
      json: { fault: { status, type, message } },
    });
    expect(await call("POST", "/v1/things", { body: "{bad" })).toEqual(fault(400, "Malformed", "not JSON"));
    expect(await call("POST", "/v1/things", { body: "" })).toEqual(fault(400, "Malformed", "not JSON"));
    expect(await call("POST", "/v1/things", { body: '{"size": "big"}' })).toEqual(
      fault(400, "Bad", "bad size"),
    );
    expect(await call("POST", "/v1/things", { body: '{"size": 3}' })).toEqual({
      status: 201,
      json: { size: 3, by: "demo" },
    });
  });

  it("checks a query with zod through Hono's validator", async () => {
    expect((await call("GET", "/v1/things?limit=x")).json).toEqual({
      fault: { status: 400, type: "Bad", message: "bad limit" },
    });
    expect((await call("GET", "/v1/things?limit=2&limit=3")).json).toEqual({ limit: ["2", "3"] });
  });

  it("shapes its domain's errors and its 404; leaves an unexpected error to the enclosing front", async () => {
    expect(await call("GET", "/v1/conflict")).toEqual({
      status: 409,
      json: { fault: { status: 409, type: "Domain", message: "taken" } },
    });
    expect(await call("GET", "/v1/nothing")).toEqual({
      status: 404,
      json: { fault: { status: 404, type: "NotFound", message: "no /svc/v1/nothing" } },
    });
    expect(await call("GET", "/v1/boom")).toEqual({ status: 500, json: { outer: "boom" } });
  });
});
