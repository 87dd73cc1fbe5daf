import { createPrivateKey, X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  generateSshKey,
  generateX509Key,
  InvalidKeypair,
  sshFingerprint,
  x509Fingerprint,
} from "../../../lib/catalog/ssh-keys.js";
import { apiCall, fakeWorld } from "./fakes.js";

// made with ssh-keygen; the fingerprints are `ssh-keygen -l -E md5`'s and openssl's
const ED25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBoheUwCdhRkM2stzvDaXr2/2X9rUKsXyWgTUuXGu6f2 me@x";
const ECDSA =
  "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBBWbSXbV9Y6VFbf8PXkVuQpmuip7fz7y3MabZdlX25VWDQg2rSxzcD1RUWnMOJtE78wrZisL/VUgIExcx4IDg5I= e";
const CERT = `-----BEGIN CERTIFICATE-----
MIIB9DCCAV2gAwIBAgIUCqwM2EU82PrSvKWE33te5J+Q6M4wDQYJKoZIhvcNAQEL
BQAwDDEKMAgGA1UEAwwBdDAeFw0yNjExMjMyMjA5NDNaFw0zNjExMjAyMjA5NDNa
MAwxCjAIBgNVBAMMAXQwgZ8wDQYJKoZIhvcNAQEBBQADgY0AMIGJAoGBAL/Dlc0W
VN5TrCKfu8zXIAj6qnjAOixOqJUlUFq2F2mz6vAqxiZ+MoHdS9rhp/mr590gWSvT
4QZ9MXq8xlfsXr/hZoDBw4UTgz0HngRVVCN0tbOcILMpNVKV2xSFXX17u90LodNK
vXFM0TI+O0Aqu2FYHVBfUViAONZroOzPHv9bAgMBAAGjUzBRMB0GA1UdDgQWBBRO
3cDCkrJHRQTKs41B5DUJkNjFsTAfBgNVHSMEGDAWgBRO3cDCkrJHRQTKs41B5DUJ
kNjFsTAPBgNVHRMBAf8EBTADAQH/MA0GCSqGSIb3DQEBCwUAA4GBALWD0IUWF3Dj
rhvnQmCfAFs+BuC6469Sab1STZSaI0pJBFc0Eo0ek3+sPGXYIQMYdikvMCLJyucE
WMOjXyah0Mlsff5SpWsBXgpJsUnbFEkOtqRIdJEEj/eQP0ogsmQF2ABPsOWDWnWE
mbj9dkiuLOBKbUzaBJWKYul1t6GIq7u+
-----END CERTIFICATE-----`;

let world = fakeWorld();

const call = (method: string, path: string, token: string, version?: string, body?: unknown) =>
  apiCall(world.deps, method, path, token, body, version);

describe("key material", () => {
  it("fingerprints OpenSSH keys as ssh-keygen's MD5 and certificates as openssl's SHA-1", () => {
    expect(sshFingerprint(ED25519)).toBe("03:8a:1e:18:6d:8c:9a:86:c9:ee:66:2c:55:1b:ec:e7");
    expect(sshFingerprint(ECDSA)).toBe("b4:5e:d5:93:b1:a1:8f:a7:38:1c:3f:3b:fd:38:ba:25");
    expect(x509Fingerprint(CERT)).toBe("32:6f:87:01:f3:c2:76:ec:69:9b:f7:04:78:b8:af:bb:19:7a:eb:5f");
  });

  it("generates an x509 key pair as Nova: a self-signed certificate for the user, its key, the SHA-1", () => {
    const g = generateX509Key("demo");
    const cert = new X509Certificate(g.public_key);
    expect(cert.subject).toBe("CN=demo");
    expect(cert.issuer).toBe("CN=demo");
    expect(cert.checkPrivateKey(createPrivateKey(g.private_key!))).toBe(true);
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(g.fingerprint).toBe(x509Fingerprint(g.public_key));
    expect(g.fingerprint).toMatch(/^([0-9a-f]{2}:){19}[0-9a-f]{2}$/);
  });

  it("refuses what is not a key, or a blob of another type than its prefix", () => {
    expect(() => sshFingerprint("ssh-rsa not-base64!")).toThrow(
      "Keypair data is invalid: failed to generate fingerprint",
    );
    expect(() => sshFingerprint(ED25519.replace("ssh-ed25519", "ssh-rsa"))).toThrow(InvalidKeypair);
    expect(() => sshFingerprint(ED25519.replace("AAAAI", "AAAAJ"))).toThrow(InvalidKeypair);
    expect(() => x509Fingerprint(ED25519)).toThrow(/failed to generate X509 fingerprint/);
  });

  it("generates an RSA key whose public half is a valid OpenSSH key with the stated fingerprint", () => {
    const k = generateSshKey();
    expect(k.private_key).toMatch(/^-----BEGIN RSA PRIVATE KEY-----/);
    expect(k.public_key).toMatch(/^ssh-rsa AAAAB3NzaC1yc2E[A-Za-z0-9+/=]+ Generated-by-Nova$/);
    expect(sshFingerprint(k.public_key)).toBe(k.fingerprint);
  });
});

describe("os-keypairs", () => {
  it("2.1: imports (200, no type), lists, shows Nova's fields, deletes (202)", async () => {
    world = fakeWorld();
    const c = await call("POST", "/v2.1/os-keypairs", "demo-token", "2.1", {
      keypair: { name: "mine", public_key: ED25519 },
    });
    expect(c.status).toBe(200);
    expect(c.json.keypair).toEqual({
      name: "mine",
      public_key: ED25519,
      fingerprint: "03:8a:1e:18:6d:8c:9a:86:c9:ee:66:2c:55:1b:ec:e7",
      user_id: "demo",
    });
    const l = await call("GET", "/v2.1/os-keypairs", "demo-token");
    expect(l.json).toEqual({
      keypairs: [{ keypair: { name: "mine", public_key: ED25519, fingerprint: c.json.keypair.fingerprint } }],
    });
    const s = await call("GET", "/v2.1/os-keypairs/mine", "demo-token");
    expect(Object.keys(s.json.keypair).sort()).toEqual([
      "created_at",
      "deleted",
      "deleted_at",
      "fingerprint",
      "id",
      "name",
      "public_key",
      "updated_at",
      "user_id",
    ]);
    expect(s.json.keypair.created_at).toBe("2026-03-01T12:00:00.123000");
    expect((await call("DELETE", "/v2.1/os-keypairs/mine", "demo-token")).status).toBe(202);
    const gone = await call("GET", "/v2.1/os-keypairs/mine", "demo-token");
    expect(gone).toEqual({
      status: 404,
      json: { itemNotFound: { code: 404, message: "Keypair mine not found for user demo" } },
    });
  });

  it("2.2: type in every view, 201 on create with a generated private key, 204 on delete; x509 imports", async () => {
    world = fakeWorld();
    const g = await call("POST", "/v2.1/os-keypairs", "demo-token", "2.2", { keypair: { name: "gen" } });
    expect(g.status).toBe(201);
    expect(g.json.keypair).toMatchObject({ name: "gen", type: "ssh", user_id: "demo" });
    expect(g.json.keypair.private_key).toMatch(/PRIVATE KEY/);
    const x = await call("POST", "/v2.1/os-keypairs", "demo-token", "2.2", {
      keypair: { name: "cert", type: "x509", public_key: CERT },
    });
    expect(x.json.keypair).toMatchObject({
      type: "x509",
      fingerprint: "32:6f:87:01:f3:c2:76:ec:69:9b:f7:04:78:b8:af:bb:19:7a:eb:5f",
    });
    expect(x.json.keypair.private_key).toBeUndefined();
    const l = await call("GET", "/v2.1/os-keypairs", "demo-token", "2.2");
    expect(l.json.keypairs.map((k: { keypair: { type: string } }) => k.keypair.type)).toEqual([
      "x509",
      "ssh",
    ]);
    expect((await call("GET", "/v2.1/os-keypairs/gen", "demo-token", "2.2")).json.keypair.type).toBe("ssh");
    expect((await call("DELETE", "/v2.1/os-keypairs/gen", "demo-token", "2.2")).status).toBe(204);
  });

  it("refuses a duplicate name (409), a bad key (400), a bad name, and type before 2.2", async () => {
    world = fakeWorld();
    await call("POST", "/v2.1/os-keypairs", "demo-token", "2.1", {
      keypair: { name: "k", public_key: ED25519 },
    });
    const dup = await call("POST", "/v2.1/os-keypairs", "demo-token", "2.1", {
      keypair: { name: "k", public_key: ECDSA },
    });
    expect(dup).toEqual({
      status: 409,
      json: { conflictingRequest: { code: 409, message: "Key pair 'k' already exists." } },
    });
    const bad = await call("POST", "/v2.1/os-keypairs", "demo-token", "2.1", {
      keypair: { name: "b", public_key: "ssh-rsa AAAA" },
    });
    expect(bad.json).toEqual({
      badRequest: { code: 400, message: "Keypair data is invalid: failed to generate fingerprint" },
    });
    const name = await call("POST", "/v2.1/os-keypairs", "demo-token", "2.1", {
      keypair: { name: "a@b", public_key: ED25519 },
    });
    expect(name.status).toBe(400);
    expect(name.json.badRequest.message).toMatch(/^Invalid input for field\/attribute name\. Value: a@b\./);
    const typed = await call("POST", "/v2.1/os-keypairs", "demo-token", "2.1", {
      keypair: { name: "t", type: "ssh" },
    });
    expect(typed.json.badRequest.message).toContain(
      "Additional properties are not allowed ('type' was unexpected)",
    );
  });

  it("2.92: no generation (public_key required), and @ and . allowed in names", async () => {
    world = fakeWorld();
    const g = await call("POST", "/v2.1/os-keypairs", "demo-token", "2.92", { keypair: { name: "gen" } });
    expect(g.status).toBe(400);
    expect(g.json.badRequest.message).toContain("'public_key' is a required property");
    const ok = await call("POST", "/v2.1/os-keypairs", "demo-token", "latest", {
      keypair: { name: "me@host.example", public_key: ED25519 },
    });
    expect(ok.status).toBe(201);
    expect(ok.json.keypair.private_key).toBeUndefined();
  });

  it("2.10: an admin acts on another user's keys; a member cannot", async () => {
    world = fakeWorld();
    const made = await call("POST", "/v2.1/os-keypairs", "admin-token", "2.10", {
      keypair: { name: "for-demo", public_key: ED25519, user_id: "demo" },
    });
    expect(made.json.keypair.user_id).toBe("demo");
    expect((await call("GET", "/v2.1/os-keypairs/for-demo", "demo-token")).status).toBe(200);
    expect((await call("GET", "/v2.1/os-keypairs/for-demo?user_id=demo", "admin-token", "2.10")).status).toBe(
      200,
    );
    // before 2.10 user_id is ignored: the admin's own keys
    expect((await call("GET", "/v2.1/os-keypairs/for-demo?user_id=demo", "admin-token", "2.9")).status).toBe(
      404,
    );
    const peek = await call("GET", "/v2.1/os-keypairs?user_id=admin", "demo-token", "2.10");
    expect(peek).toEqual({
      status: 403,
      json: {
        forbidden: {
          code: 403,
          message: "Policy doesn't allow os_compute_api:os-keypairs:index to be performed.",
        },
      },
    });
  });

  it("2.35: pages by name with limit and marker and a next link; an unknown marker is 400", async () => {
    world = fakeWorld();
    for (const n of ["c", "a", "b"])
      await call("POST", "/v2.1/os-keypairs", "demo-token", "2.35", {
        keypair: { name: n, public_key: ED25519 },
      });
    const p1 = await call("GET", "/v2.1/os-keypairs?limit=2", "demo-token", "2.35");
    expect(p1.json.keypairs.map((k: { keypair: { name: string } }) => k.keypair.name)).toEqual(["a", "b"]);
    expect(p1.json.keypairs_links[0].href).toMatch(/\/v2\.1\/os-keypairs\?limit=2&marker=b$/);
    const p2 = await call("GET", "/v2.1/os-keypairs?limit=2&marker=b", "demo-token", "2.35");
    expect(p2.json).toEqual({ keypairs: [{ keypair: expect.objectContaining({ name: "c" }) }] });
    const older = await call("GET", "/v2.1/os-keypairs?limit=2", "demo-token", "2.34");
    expect(older.json.keypairs).toHaveLength(3);
    expect((await call("GET", "/v2.1/os-keypairs?marker=zz", "demo-token", "2.35")).json).toEqual({
      badRequest: { code: 400, message: "Marker zz could not be found." },
    });
  });

  it("2.75: unknown query parameters are refused; before, ignored", async () => {
    world = fakeWorld();
    expect((await call("GET", "/v2.1/os-keypairs?colour=red", "demo-token", "2.74")).status).toBe(200);
    expect((await call("GET", "/v2.1/os-keypairs?colour=red", "demo-token", "2.75")).json).toEqual({
      badRequest: { code: 400, message: "Additional properties are not allowed ('colour' was unexpected)" },
    });
    expect((await call("GET", "/v2.1/os-keypairs?limit=1&user_id=demo", "demo-token", "2.75")).status).toBe(
      200,
    );
    expect((await call("GET", "/v2.1/os-keypairs/x?limit=1", "demo-token", "2.75")).status).toBe(400);
  });
});
