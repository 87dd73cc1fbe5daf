// The deployed API's token table, read from Secrets Manager by the real SDK client. No Secrets
// Manager emulator runs here, so a 127.0.0.1 server answers GetSecretValue in the service's own
// JSON protocol (awsJson1_1, AWS's error shape) and counts the calls.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { authenticate, tokenTable } from "../../lib/api/auth.js";
import { resetSecrets, SECRET_TTL_MS, secretString } from "../../lib/aws/secrets.js";

const SECRET = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:NovalessAuthTokens-AbCdEf";
const OPS = { user_id: "ops", project_id: "ops", roles: ["admin", "member"] };

let server: Server;
let secrets: Map<string, string>;
let calls: { target: string; secretId: string }[];
const ENV = [
  "AWS_ENDPOINT_URL_SECRETS_MANAGER",
  "AWS_REGION",
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "NOVALESS_AUTH_TOKENS_SECRET",
  "NOVALESS_AUTH_TOKENS",
] as const;
const saved = Object.fromEntries(ENV.map((k) => [k, process.env[k]]));

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => {
      body += c;
    });
    req.on("end", () => {
      const target = String(req.headers["x-amz-target"]);
      const secretId = (JSON.parse(body) as { SecretId: string }).SecretId;
      calls.push({ target, secretId });
      const value = secrets.get(secretId);
      res.setHeader("content-type", "application/x-amz-json-1.1");
      if (target !== "secretsmanager.GetSecretValue" || value === undefined) {
        res.statusCode = 400;
        res.end(
          JSON.stringify({
            __type: "ResourceNotFoundException",
            message: "Secrets Manager can't find the specified secret.",
          }),
        );
        return;
      }
      res.end(
        JSON.stringify({ ARN: secretId, Name: "NovalessAuthTokens", SecretString: value, VersionId: "v1" }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  process.env.AWS_REGION = "eu-west-1";
  process.env.AWS_ACCESS_KEY_ID = "AKIDNOVALESSAPI";
  process.env.AWS_SECRET_ACCESS_KEY = "local";
  resetSecrets();
});
afterAll(async () => {
  resetSecrets();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  for (const k of ENV) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});
afterEach(() => {
  resetSecrets();
  delete process.env.NOVALESS_AUTH_TOKENS_SECRET;
  delete process.env.NOVALESS_AUTH_TOKENS;
});

function reset(values: Record<string, string>) {
  secrets = new Map(Object.entries(values));
  calls = [];
}

describe("secretString", () => {
  it("reads a secret once per TTL, then again", async () => {
    reset({ [SECRET]: "first" });
    const t0 = Date.parse("2026-01-01T00:00:00Z");
    expect(await secretString(SECRET, t0)).toBe("first");
    secrets.set(SECRET, "rotated");
    expect(await secretString(SECRET, t0 + SECRET_TTL_MS - 1)).toBe("first");
    expect(calls).toEqual([{ target: "secretsmanager.GetSecretValue", secretId: SECRET }]);
    expect(await secretString(SECRET, t0 + SECRET_TTL_MS)).toBe("rotated");
    expect(calls).toHaveLength(2);
  });

  it("says which secret could not be read, and AWS's error name", async () => {
    reset({});
    await expect(secretString("NovalessAuthTokens-missing")).rejects.toThrow(
      /secret NovalessAuthTokens-missing failed: ResourceNotFoundException/,
    );
  });
});

describe("tokenTable", () => {
  it("is the secret's table when NOVALESS_AUTH_TOKENS_SECRET names one, never the demo tokens", async () => {
    reset({ [SECRET]: JSON.stringify({ "s3cret-ops": OPS }) });
    process.env.NOVALESS_AUTH_TOKENS_SECRET = SECRET;
    await tokenTable();
    const tokens = { now: () => new Date() };
    expect(await authenticate({ "x-auth-token": "s3cret-ops" }, tokens)).toMatchObject({
      user_id: "ops",
      isAdmin: true,
    });
    expect(await authenticate({ "x-auth-token": "admin-token" }, tokens)).toBeUndefined();
    await tokenTable();
    expect(calls).toHaveLength(1);
  });

  it("is empty while the secret holds its placeholder, and refuses an invalid table naming the secret", async () => {
    reset({ [SECRET]: "{}" });
    process.env.NOVALESS_AUTH_TOKENS_SECRET = SECRET;
    expect(await tokenTable()).toEqual({});
    resetSecrets();
    secrets.set(SECRET, JSON.stringify({ t: { user_id: "ops" } }));
    await expect(tokenTable()).rejects.toThrow(`the token table in secret ${SECRET} is invalid`);
  });

  it("stays local without the secret: NOVALESS_AUTH_TOKENS or the demo tokens, and no call", async () => {
    reset({});
    expect(Object.keys(await tokenTable())).toEqual(["admin-token", "demo-token"]);
    process.env.NOVALESS_AUTH_TOKENS = JSON.stringify({ "local-ops": OPS });
    expect(Object.keys(await tokenTable())).toEqual(["local-ops"]);
    expect(calls).toEqual([]);
  });
});
