// Keypairs on the emulators: the Catalog table's per-user index, Nova's answers at 2.1 and 2.2+,
// and the key_pairs quota held under concurrent creates (the serial condition makes a racing
// create count again).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countKeypairs, createKeypair, getKeypair, listKeypairs } from "../../lib/catalog/keypairs.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, DEMO, startTestRuntime } from "./harness.js";

let runtime: Runtime;

const ED25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBoheUwCdhRkM2stzvDaXr2/2X9rUKsXyWgTUuXGu6f2 me@x";

beforeAll(async () => {
  ({ runtime } = await startTestRuntime({ hosts: 1 }));
});
afterAll(async () => runtime?.stop());

async function call(token: string, method: string, path: string, version: string, body?: unknown) {
  const res = await fetch(`${runtime.url}${path}`, {
    method,
    headers: {
      "content-type": "application/json",
      "x-auth-token": token,
      "openstack-api-version": `compute ${version}`,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

describe("os-keypairs on DynamoDB", () => {
  it("generates, imports, lists by name, shows, refuses a duplicate, deletes", async () => {
    const gen = await call(DEMO, "POST", "/v2.1/os-keypairs", "2.2", { keypair: { name: "gen" } });
    expect(gen.status).toBe(201);
    expect(gen.body.keypair.private_key).toMatch(/^-----BEGIN RSA PRIVATE KEY-----/);
    const imp = await call(DEMO, "POST", "/v2.1/os-keypairs", "2.1", {
      keypair: { name: "alpha", public_key: ED25519 },
    });
    expect(imp.status).toBe(200);
    expect(imp.body.keypair.fingerprint).toBe("03:8a:1e:18:6d:8c:9a:86:c9:ee:66:2c:55:1b:ec:e7");

    const list = await call(DEMO, "GET", "/v2.1/os-keypairs", "2.35");
    expect(list.body.keypairs.map((k: { keypair: { name: string } }) => k.keypair.name)).toEqual([
      "alpha",
      "gen",
    ]);
    const shown = await call(DEMO, "GET", "/v2.1/os-keypairs/gen", "2.2");
    expect(shown.body.keypair).toMatchObject({ name: "gen", type: "ssh", user_id: "demo", deleted: false });
    expect(Number.isInteger(shown.body.keypair.id)).toBe(true);
    // another user's namespace: the admin has no "gen" of their own
    expect((await call(ADMIN, "GET", "/v2.1/os-keypairs/gen", "2.2")).status).toBe(404);
    expect((await getKeypair("demo", "alpha"))?.public_key).toBe(ED25519);

    const dup = await call(DEMO, "POST", "/v2.1/os-keypairs", "2.2", {
      keypair: { name: "gen", public_key: ED25519 },
    });
    expect(dup.status).toBe(409);
    expect(dup.body.conflictingRequest.message).toBe("Key pair 'gen' already exists.");

    expect((await call(DEMO, "DELETE", "/v2.1/os-keypairs/gen", "2.2")).status).toBe(204);
    expect((await call(DEMO, "DELETE", "/v2.1/os-keypairs/gen", "2.2")).status).toBe(404);
    expect(await countKeypairs("demo")).toBe(1);
  });

  it("holds the quota under concurrent creates: exactly `quota` of them pass", async () => {
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        createKeypair(
          {
            name: `race-${i}`,
            user_id: "racer",
            type: "ssh",
            public_key: ED25519,
            fingerprint: "x",
            created_at: new Date().toISOString(),
          },
          5,
        ),
      ),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(5);
    expect(results.filter((r) => !r.ok && r.reason === "over-quota")).toHaveLength(7);
    const listed = await listKeypairs("racer");
    expect(listed.ok && listed.keypairs.length).toBe(5);
    const ids = listed.ok ? listed.keypairs.map((k) => k.id) : [];
    expect(new Set(ids).size).toBe(5);
  });

  it("answers 403 over the 100-key quota", async () => {
    for (let i = 0; i < 100; i++) {
      const r = await createKeypair({
        name: `k${i}`,
        user_id: "hoarder",
        type: "ssh",
        public_key: ED25519,
        fingerprint: "x",
        created_at: new Date().toISOString(),
      });
      expect(r.ok).toBe(true);
    }
    const hoarder = await call(ADMIN, "POST", "/v2.1/os-keypairs", "2.10", {
      keypair: { name: "one-more", public_key: ED25519, user_id: "hoarder" },
    });
    expect(hoarder).toEqual({
      status: 403,
      body: { forbidden: { code: 403, message: "Quota exceeded, too many key pairs." } },
    });
  });
});
