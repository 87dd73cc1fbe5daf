// Identity's body schemas (lib/api/identity/bodies.ts) as lib/identity receives their output: the
// typed values the hand checks used to derive (duplicate tags dropped, a timestamp normalized, a
// name by id or by name in its domain) and Keystone's refusal for a union's failure. The refusals
// to malformed bodies, end to end, are test/integration/identity-bodies.test.ts's.
import { describe, expect, it } from "vitest";
import { Refusal } from "../../../lib/api/errors.js";
import {
  applicationCredentialCreate,
  checked,
  projectCreate,
  scopeRequest,
  tokenRequest,
  userCreate,
} from "../../../lib/api/identity/bodies.js";

const refusal = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    if (e instanceof Refusal) return [e.status, e.message];
    throw e;
  }
  throw new Error("not refused");
};

describe("Identity's body schemas", () => {
  it("give lib/identity the values it takes: tags without duplicates, extras kept", () => {
    const { project } = checked(projectCreate, {
      project: { name: "p", tags: ["a", "b", "a"], color: "red" },
    });
    expect(project.tags).toEqual(["a", "b"]);
    expect(project.color).toBe("red");
  });

  it("ignore a user's description or default project that is no string, as before", () => {
    const { user } = checked(userCreate, { user: { name: "u", description: 5, default_project_id: {} } });
    expect(user.description).toBeUndefined();
    expect(user.default_project_id).toBeUndefined();
  });

  it("normalize an application credential's expiry to ISO and refuse a long password with a 403", () => {
    const { application_credential: c } = checked(applicationCredentialCreate, {
      application_credential: { name: "c", expires_at: "2030-01-02T03:04:05+01:00" },
    });
    expect(c.expires_at).toBe("2030-01-02T02:04:05.000Z");
    expect(refusal(() => checked(userCreate, { user: { name: "u", password: "p".repeat(4097) } }))[0]).toBe(
      403,
    );
  });

  it("name a user by id, else by name in its domain; a failure is worded by the last form", () => {
    const auth = (user: object) => ({
      auth: { identity: { methods: ["password"], password: { user: { password: "x", ...user } } } },
    });
    const id = checked(tokenRequest, auth({ id: "u1", name: 5 })).auth.identity;
    expect(id).toMatchObject({ method: "password", password: { user: { id: "u1", password: "x" } } });
    const byName = checked(tokenRequest, auth({ name: "u", domain: { name: "D", id: 5 } })).auth.identity;
    expect(byName).toMatchObject({ password: { user: { name: "u", domain: { name: "D" } } } });
    expect(refusal(() => checked(tokenRequest, auth({ name: "u" })))).toEqual([
      400,
      expect.stringMatching(/^Expecting to find domain in user\./),
    ]);
    expect(refusal(() => checked(scopeRequest, { project: {} }))).toEqual([
      400,
      expect.stringMatching(/^Expecting to find id or name in project\./),
    ]);
    expect(refusal(() => checked(scopeRequest, { domain: { id: "default" } }))).toEqual([
      400,
      "Only project scope is supported.",
    ]);
    expect(checked(scopeRequest, "unscoped")).toBe("unscoped");
  });
});
