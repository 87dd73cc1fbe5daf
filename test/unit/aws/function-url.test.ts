// postToFunctionUrl's signing and retry policy (lib/aws/function-url.ts), against a transport that
// answers as a function URL would: what is retried (429, 5xx, the network), what is not (400,
// 403), that each attempt is signed for the service "lambda", and that it gives up when told to.
// The real transport and Lambda's side are test/e2e/host-isolation and test/e2e/storm.
import type { HttpRequest, HttpResponse } from "@smithy/types";
import { afterEach, beforeEach, expect, it } from "vitest";
import { type SdkRequestHandler, useRequestHandler } from "../../../lib/aws/clients.js";
import { FunctionUrlError, postToFunctionUrl } from "../../../lib/aws/function-url.js";
import { runAs } from "../../../lib/aws/identity.js";

const URL_ = "https://abcdefghij0123456789klmnopqrstuv.lambda-url.us-east-1.on.aws/";
const FAST = { baseDelayMs: 1, maxDelayMs: 2 };
const KEYS = { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret" };
let seen: HttpRequest[] = [];
let savedRegion: string | undefined;

/** A transport answering each attempt with the next of `answers` (a status, or an error thrown). */
function answering(...answers: (number | Error)[]): void {
  const handler: SdkRequestHandler = {
    handle: async (request: HttpRequest) => {
      seen.push(request);
      const next = answers.shift() ?? 200;
      if (next instanceof Error) throw next;
      const response = {
        statusCode: next,
        headers: {},
        body: `{"status":${next}}`,
      } as unknown as HttpResponse;
      return { response };
    },
  } as SdkRequestHandler;
  useRequestHandler(handler);
}

beforeEach(() => {
  seen = [];
  savedRegion = process.env.AWS_REGION;
  process.env.AWS_REGION = "us-east-1";
});
afterEach(() => {
  useRequestHandler(undefined);
  if (savedRegion === undefined) delete process.env.AWS_REGION;
  else process.env.AWS_REGION = savedRegion;
});

const post = (body = "{}", opts = {}) =>
  runAs(KEYS, () => postToFunctionUrl(URL_, body, { ...FAST, ...opts }));

it("signs each attempt for the service lambda, as the caller, with the body's hash", async () => {
  answering(200);
  expect(await post('{"kind":"heartbeat"}')).toBe('{"status":200}');
  expect(seen).toHaveLength(1);
  const auth = String(seen[0]!.headers.authorization);
  expect(auth).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-1\/lambda\/aws4_request/);
  expect(seen[0]!.headers["x-amz-content-sha256"] ?? seen[0]!.headers["x-amz-date"]).toBeDefined();
  expect(seen[0]!.method).toBe("POST");
  expect(seen[0]!.body).toBe('{"kind":"heartbeat"}');
});

it("sends again after a throttle, a function error and a network error", async () => {
  answering(429, 502, new Error("socket hang up"), 200);
  expect(await post()).toBe('{"status":200}');
  expect(seen).toHaveLength(4);
});

it("does not send again what the function refused or IAM denied", async () => {
  for (const status of [400, 403, 413]) {
    seen = [];
    answering(status);
    const e = await post().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(FunctionUrlError);
    expect((e as FunctionUrlError).status).toBe(status);
    expect((e as FunctionUrlError).attempts).toBe(1);
    expect(seen).toHaveLength(1);
  }
});

it("gives up after maxAttempts, saying how many and what came back", async () => {
  answering(429, 429, 429, 429);
  const e = (await post("{}", { maxAttempts: 3 }).catch((x: unknown) => x)) as FunctionUrlError;
  expect(e).toBeInstanceOf(FunctionUrlError);
  expect([e.status, e.attempts, seen.length]).toEqual([429, 3, 3]);
  expect(e.message).toContain("answered 429 after 3 attempt(s)");
});

it("stops waiting when its signal aborts", async () => {
  answering(429, 429, 429);
  const abort = new AbortController();
  const p = post("{}", { baseDelayMs: 60_000, maxDelayMs: 60_000, signal: abort.signal });
  setTimeout(() => abort.abort(new Error("stopping")), 20);
  await expect(p).rejects.toThrow("stopping");
});

it("signs as each caller, whose signers are kept apart (hosts of one process, interleaved)", async () => {
  answering(200, 200, 200, 200);
  const host = (n: number) => ({ accessKeyId: `AKIDHOST${n}`, secretAccessKey: `secret-${n}` });
  const postAs = (n: number) => runAs(host(n), () => postToFunctionUrl(URL_, `{"host":${n}}`, FAST));
  await Promise.all([postAs(1), postAs(2), postAs(1), postAs(2)]);
  const credentials = seen.map((r) => /Credential=(\w+)\//.exec(String(r.headers.authorization))?.[1]);
  const bodies = seen.map((r) => String(r.body));
  expect(credentials.map((c, i) => `${c} ${bodies[i]}`).sort()).toEqual([
    'AKIDHOST1 {"host":1}',
    'AKIDHOST1 {"host":1}',
    'AKIDHOST2 {"host":2}',
    'AKIDHOST2 {"host":2}',
  ]);
  // a transport set later is the one used (the signers go with the clients)
  seen = [];
  answering(200);
  await postAs(1);
  expect(seen).toHaveLength(1);
});
