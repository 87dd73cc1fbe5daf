import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { hashPassword, verifyPassword } from "../../../lib/identity/password.js";
import { signToken, type TokenPayload, verifyToken } from "../../../lib/identity/token.js";

const domain = { id: "default", name: "Default" };
const payload: TokenPayload = {
  methods: ["password"],
  user: { id: "demo", name: "demo", domain },
  project: { id: "demo", name: "demo", domain },
  roles: [{ id: "member", name: "member" }],
  issued_at: "2026-03-01T12:00:00.000Z",
  expires_at: "2026-03-01T13:00:00.000Z",
  audit_ids: ["x7rrH0hUSkKnYpn8hYz3pA"],
};
const key = randomBytes(32);

describe("tokens", () => {
  it("verify what they signed until it expires", () => {
    const token = signToken(payload, key);
    expect(verifyToken(token, key, new Date("2026-03-01T12:59:59.999Z"))).toEqual(payload);
    expect(verifyToken(token, key, new Date("2026-03-01T13:00:00.000Z"))).toBeUndefined();
  });

  it("refuse another key's token, a changed payload, a changed signature and garbage", () => {
    const now = new Date("2026-03-01T12:30:00Z");
    const token = signToken(payload, key);
    expect(verifyToken(token, randomBytes(32), now)).toBeUndefined();
    const [body, sig] = token.slice("nl1.".length).split(".") as [string, string];
    const admin = Buffer.from(
      JSON.stringify({ ...payload, roles: [{ id: "admin", name: "admin" }] }),
    ).toString("base64url");
    expect(verifyToken(`nl1.${admin}.${sig}`, key, now)).toBeUndefined();
    const flipped = sig.slice(0, -2) + (sig.endsWith("AA") ? "BB" : "AA");
    expect(verifyToken(`nl1.${body}.${flipped}`, key, now)).toBeUndefined();
    expect(verifyToken(`nl1.${body}`, key, now)).toBeUndefined();
    expect(verifyToken(`${token}.x`, key, now)).toBeUndefined();
    expect(verifyToken("admin-token", key, now)).toBeUndefined();
  });
});

describe("scrypt passwords", () => {
  it("verify the password they hashed, salted (two hashes differ), and nothing else", async () => {
    const a = await hashPassword("admin-secret");
    const b = await hashPassword("admin-secret");
    expect(a).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain("admin-secret");
    expect(await verifyPassword("admin-secret", a)).toBe(true);
    expect(await verifyPassword("admin-secret", b)).toBe(true);
    expect(await verifyPassword("admin-secreT", a)).toBe(false);
    expect(await verifyPassword("admin-secret", "plain$admin-secret")).toBe(false);
  });

  it("read their parameters from the stored hash", async () => {
    const stored = await hashPassword("pw");
    const weaker = stored.replace("$16384$", "$1024$");
    // same salt and hash under other parameters: no longer a match, so N is really read
    expect(await verifyPassword("pw", weaker)).toBe(false);
  });
});
