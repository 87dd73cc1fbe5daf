import { describe, expect, it } from "vitest";
import { authenticate } from "../../../lib/api/auth.js";
import { DEFAULT_AUTH_TOKENS, parseAuthTokens } from "../../../lib/api/settings.js";

describe("auth tokens", () => {
  it("defaults: admin-token (admin, member) and demo-token (member)", () => {
    expect(parseAuthTokens(undefined)).toEqual(DEFAULT_AUTH_TOKENS);
    expect(parseAuthTokens("")).toEqual({
      "admin-token": { user_id: "admin", project_id: "admin", roles: ["admin", "member"] },
      "demo-token": { user_id: "demo", project_id: "demo", roles: ["member"] },
    });
  });

  it("NOVALESS_AUTH_TOKENS replaces them; invalid values are refused loudly", () => {
    expect(parseAuthTokens('{"t": {"user_id": "u", "project_id": "p", "roles": []}}')).toEqual({
      t: { user_id: "u", project_id: "p", roles: [] },
    });
    expect(() => parseAuthTokens("{")).toThrow(/not JSON/);
    // What the deployed stack sets when the operator gave no tokens: nobody gets in.
    expect(parseAuthTokens("{}")).toEqual({});
    expect(() => parseAuthTokens('{"t": {"user_id": "u"}}')).toThrow(/invalid at t\.project_id/);
  });

  it("authenticate: X-Auth-Token → caller, admin by role; unknown or missing → undefined", async () => {
    const tokens = { now: () => new Date() };
    expect(await authenticate({ "x-auth-token": "admin-token" }, tokens)).toMatchObject({
      user_id: "admin",
      isAdmin: true,
    });
    expect(await authenticate({ "x-auth-token": " demo-token " }, tokens)).toMatchObject({
      project_id: "demo",
      isAdmin: false,
    });
    expect(await authenticate({ "x-auth-token": "toString" }, tokens)).toBeUndefined();
    expect(await authenticate({}, tokens)).toBeUndefined();
  });
});
