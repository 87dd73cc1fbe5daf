// The compute API's policy table (lib/api/policy.ts) against the routes and Nova's defaults: every
// route has a rule, every GET is for readers (or anyone, or the admin), every write for members
// (or the admin), every server action the handler dispatches is named; and who passes what.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { AuthContext } from "../../lib/api/auth.js";
import type { ApiError } from "../../lib/api/errors.js";
import {
  COMPUTE_POLICIES,
  enforceRoute,
  glanceDecision,
  type Policy,
  type RoutePolicy,
  routeKey,
  SERVER_ACTION_POLICIES,
} from "../../lib/api/policy.js";
import type { Route } from "../../lib/api/request.js";
import { ROUTES } from "../../lib/api/routes/index.js";

const auth = (...roles: string[]): AuthContext => ({
  user_id: "u",
  project_id: "p",
  roles,
  isAdmin: roles.includes("admin"),
});

const route = (method: string, pattern: string): Route => {
  const r = ROUTES.find((x) => x.method === method && x.pattern === pattern);
  if (!r) throw new Error(`no route ${method} ${pattern}`);
  return r;
};

/** The error enforceRoute throws, as the API would answer it, or "allowed". */
function outcome(r: Route, a: AuthContext, body?: unknown): string {
  try {
    enforceRoute(r, a, body === undefined ? undefined : JSON.stringify(body));
    return "allowed";
  } catch (e) {
    const err = e as ApiError;
    return `${err.status} ${err.message}`;
  }
}

const single = (p: RoutePolicy): Policy[] => ("actions" in p ? Object.values(p.actions) : [p]);

describe("the table", () => {
  it("has one entry per route of lib/api/routes, and none for a route that is gone", () => {
    const keys = ROUTES.map(routeKey);
    expect(keys.filter((k) => !Object.hasOwn(COMPUTE_POLICIES, k))).toEqual([]);
    expect(Object.keys(COMPUTE_POLICIES).filter((k) => !keys.includes(k))).toEqual([]);
  });

  it("asks a reader of every GET a member would pass, never a member", () => {
    const gets = Object.entries(COMPUTE_POLICIES).filter(([k]) => k.startsWith("GET "));
    expect(gets.length).toBeGreaterThan(40);
    for (const [k, p] of gets) expect([k, single(p).every((x) => x.need !== "member")]).toEqual([k, true]);
    // the project's reads are the reader's, by name
    for (const k of [
      "GET /servers",
      "GET /servers/detail",
      "GET /servers/:id",
      "GET /servers/:id/os-server-password",
      "GET /os-quota-sets/:project",
      "GET /os-server-groups",
    ])
      expect([k, (COMPUTE_POLICIES[k] as Policy).need]).toEqual([k, "reader"]);
  });

  it("asks a member (or leaves the admin rule to the handler) for every write, but Nova's user-owned key pairs", () => {
    // keypairs.py's rule is the user's (`user_id:%(user_id)s`), no role; DELETE /images names no
    // image; image_metadata.py has none (Glance's modify_image is asked of the image, once found)
    const open = [
      "POST /os-keypairs",
      "DELETE /os-keypairs/:name",
      "DELETE /images",
      "POST /images/:id/metadata",
      "PUT /images/:id/metadata",
      "PUT /images/:id/metadata/:key",
      "DELETE /images/:id/metadata/:key",
    ];
    const writes = Object.entries(COMPUTE_POLICIES).filter(
      ([k]) => !k.startsWith("GET ") && !open.includes(k),
    );
    for (const [k, p] of writes)
      for (const x of single(p))
        expect([k, x.rule, ["member", "admin"].includes(x.need)]).toEqual([k, x.rule, true]);
  });

  it("names every action POST /servers/{id}/action dispatches, with Nova's rule", () => {
    const src = readFileSync("lib/api/routes/server-actions.ts", "utf8");
    const dispatched = [...src.matchAll(/name === "([^"]+)"/g)].map((m) => m[1]!);
    const unsupported = src.match(/const UNSUPPORTED = new Set\(\[([\s\S]*?)\]\)/)![1]!;
    const names = [...dispatched, ...[...unsupported.matchAll(/"([^"]+)"/g)].map((m) => m[1]!)];
    expect(names.length).toBeGreaterThan(30);
    expect(names.filter((n) => !Object.hasOwn(SERVER_ACTION_POLICIES, n))).toEqual([]);
    expect(SERVER_ACTION_POLICIES.pause!.rule).toBe("os_compute_api:os-pause-server:pause");
    expect(SERVER_ACTION_POLICIES["os-getConsoleOutput"]!.need).toBe("member");
  });
});

describe("enforceRoute", () => {
  const reader = auth("reader");
  const member = auth("member");
  const custom = auth("foo");

  it("lets a reader read and refuses its writes with Nova's text and rule", () => {
    expect(outcome(route("GET", "/servers/detail"), reader)).toBe("allowed");
    expect(outcome(route("GET", "/os-quota-sets/:project"), reader)).toBe("allowed");
    expect(outcome(route("POST", "/servers"), reader)).toBe(
      "403 Policy doesn't allow os_compute_api:servers:create to be performed.",
    );
    expect(outcome(route("DELETE", "/servers/:id"), reader)).toBe(
      "403 Policy doesn't allow os_compute_api:servers:delete to be performed.",
    );
    expect(outcome(route("PUT", "/servers/:id"), reader)).toBe(
      "403 Policy doesn't allow os_compute_api:servers:update to be performed.",
    );
    expect(outcome(route("POST", "/servers/:id/action"), reader, { pause: null })).toBe(
      "403 Policy doesn't allow os_compute_api:os-pause-server:pause to be performed.",
    );
    expect(outcome(route("POST", "/servers/:id/action"), reader, { "os-getConsoleOutput": {} })).toBe(
      "403 Policy doesn't allow os_compute_api:os-console-output to be performed.",
    );
    expect(outcome(route("POST", "/os-keypairs"), reader)).toBe("allowed");
  });

  it("answers an action it does not know as Nova's 400 for a non-member, the handler's for a member", () => {
    expect(outcome(route("POST", "/servers/:id/action"), reader, { fly: null })).toBe(
      "400 There is no such action: fly",
    );
    expect(outcome(route("POST", "/servers/:id/action"), member, { fly: null })).toBe("allowed");
    // a malformed body is the handler's 400, whoever asks
    expect(outcome(route("POST", "/servers/:id/action"), reader, [])).toBe("allowed");
  });

  it("refuses a token with a custom role only where Nova needs reader or member", () => {
    expect(outcome(route("GET", "/servers"), custom)).toBe(
      "403 Policy doesn't allow os_compute_api:servers:index to be performed.",
    );
    expect(outcome(route("GET", "/os-quota-sets/:project"), custom)).toBe(
      "403 Policy doesn't allow os_compute_api:os-quota-sets:show to be performed.",
    );
    // `@` in Nova, or no rule at all
    for (const [m, p] of [
      ["GET", "/limits"],
      ["GET", "/flavors/detail"],
      ["GET", "/os-availability-zone"],
      ["GET", "/os-quota-sets/:project/defaults"],
    ] as const)
      expect([p, outcome(route(m, p), custom)]).toEqual([p, "allowed"]);
    // Glance hides the image from who may not get it; Nova's proxy says so
    expect(outcome(route("GET", "/images/:id"), custom)).toBe("404 Image not found.");
    expect(outcome(route("DELETE", "/images/:id"), custom)).toBe("404 Image not found.");
    expect(outcome(route("DELETE", "/images/:id"), reader)).toBe(
      "403 You are not allowed to delete the image.",
    );
  });

  it("passes a member and an admin through their implied roles, and leaves admin rules to the handlers", () => {
    for (const a of [member, auth("admin")]) {
      expect(outcome(route("GET", "/servers"), a)).toBe("allowed");
      expect(outcome(route("POST", "/servers"), a)).toBe("allowed");
      expect(outcome(route("POST", "/servers/:id/action"), a, { shelve: null })).toBe("allowed");
    }
    // the handler's requireAdmin answers (with the rule the body picks), not the table
    expect(outcome(route("POST", "/os-aggregates"), reader)).toBe("allowed");
  });
});

describe("Glance's image rules", () => {
  const own = { owner: "p" };
  const others = { owner: "q" };
  it("lets a reader list and show, not download, delete or upload; hides images from a custom role", () => {
    const reader = auth("reader");
    expect(glanceDecision(reader, "get_images")).toBe("allow");
    expect(glanceDecision(reader, "get_image", own)).toBe("allow");
    expect(glanceDecision(reader, "download_image", own)).toBe(403);
    expect(glanceDecision(reader, "delete_image", own)).toBe(403);
    expect(glanceDecision(reader, "upload_image", own)).toBe(403);
    expect(glanceDecision(auth("member"), "delete_image", own)).toBe("allow");
    expect(glanceDecision(auth("admin"), "upload_image", others)).toBe("allow");
    const custom = auth("foo");
    expect(glanceDecision(custom, "get_images")).toBe(403);
    expect(glanceDecision(custom, "get_image", own)).toBe(404);
    expect(glanceDecision(custom, "delete_image", own)).toBe(404);
  });

  it("scopes a member's writes to its project's images (another's, or the catalog's own, is a 403 it sees); only an admin publicizes", () => {
    const member = auth("member");
    for (const rule of ["modify_image", "delete_image", "upload_image", "communitize_image"] as const) {
      expect(glanceDecision(member, rule, own)).toBe("allow");
      expect(glanceDecision(member, rule, others)).toBe(403);
      expect(glanceDecision(member, rule, { owner: null })).toBe(403);
    }
    expect(glanceDecision(member, "download_image", others)).toBe("allow");
    // a create: the owner it proposes is the caller's project, or the admin's choice
    expect(glanceDecision(member, "add_image", { owner: "p", proposed: true })).toBe("allow");
    expect(glanceDecision(member, "add_image", { owner: "q", proposed: true })).toBe(403);
    expect(glanceDecision(member, "publicize_image", { owner: "p", proposed: true })).toBe(403);
    expect(glanceDecision(auth("admin"), "publicize_image", { owner: "p", proposed: true })).toBe("allow");
    expect(glanceDecision(auth("reader"), "add_image", { owner: "p", proposed: true })).toBe(403);
  });
});
