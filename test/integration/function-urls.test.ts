// Lambda function URLs (AWS_IAM) at the local gateway (local/iam/function-urls.ts), called with
// the product's own client (lib/aws/function-url.ts) over a real socket: what Lambda refuses is
// refused here (no signature, another service's, a caller without both actions since 2025-10, a
// request over 6 MB), a throttle is 429 and a failed function 502, and the function is told who
// signed.
import type { LambdaFunctionURLEventWithIAMAuthorizer } from "aws-lambda";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type FunctionUrlError, postToFunctionUrl } from "../../lib/aws/function-url.js";
import { runAs } from "../../lib/aws/identity.js";
import { type Emulators, startEmulators } from "../../local/emulators.js";
import type { GatewayPrincipal } from "../../local/iam/gateway.js";
import { userIdOf } from "../../local/iam/requests.js";
import { LambdaServiceError } from "../../local/lambda.js";

const ACCOUNT = "000000000000";
const FN = `arn:aws:lambda:us-east-1:${ACCOUNT}:function:novaless-echo`;
const both = {
  accessKeyId: "LOCALURLBOTH00000000",
  secretAccessKey: "x",
};
const urlOnly = {
  accessKeyId: "LOCALURLONLY00000000",
  secretAccessKey: "x",
};
const principal = (name: string, actions: string[]): GatewayPrincipal => ({
  name,
  roleArn: `arn:aws:iam::${ACCOUNT}:role/${name}`,
  sessionArn: `arn:aws:sts::${ACCOUNT}:assumed-role/${name}/${name}-session`,
  statements: actions.map((a) => ({
    Effect: "Allow",
    Action: [a],
    Resource: [FN],
    Condition: (a === "lambda:InvokeFunctionUrl"
      ? { StringEquals: { "lambda:FunctionUrlAuthType": ["AWS_IAM"] } }
      : { Bool: { "lambda:InvokedViaFunctionUrl": ["true"] } }) as Record<string, Record<string, string[]>>,
  })),
});
const principals = new Map<string, GatewayPrincipal>([
  [both.accessKeyId, principal("both", ["lambda:InvokeFunctionUrl", "lambda:InvokeFunction"])],
  // the policy of before 2025-10: InvokeFunctionUrl alone no longer reaches a new URL
  [urlOnly.accessKeyId, principal("url-only", ["lambda:InvokeFunctionUrl"])],
]);

let emulators: Emulators;
let url = "";
let seen: LambdaFunctionURLEventWithIAMAuthorizer[] = [];
let next: "ok" | "throttle" | "fail" = "ok";
let savedRegion: string | undefined;

beforeAll(async () => {
  savedRegion = process.env.AWS_REGION;
  process.env.AWS_REGION = "us-east-1";
  emulators = await startEmulators({ iam: { policy: { principals, resource: [] } } });
  url = emulators.gateway!.functionUrl("echo", FN, async (event) => {
    seen.push(event);
    if (next === "throttle") throw new LambdaServiceError("TooManyRequestsException", 429, "Rate Exceeded.");
    if (next === "fail") throw new Error("the function failed");
    return { statusCode: 200, body: JSON.stringify({ got: event.body }) };
  });
});
afterAll(async () => {
  await emulators?.stop();
  if (savedRegion === undefined) delete process.env.AWS_REGION;
  else process.env.AWS_REGION = savedRegion;
});

const post = (keys: typeof both, body: string) =>
  runAs(keys, () => postToFunctionUrl(url, body, { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 2 }));
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error("expected a refusal");
    },
    (e: unknown) => e as FunctionUrlError,
  );

it("hands the function the body and who signed it (payload format 2.0, authorizer.iam)", async () => {
  seen = [];
  next = "ok";
  expect(await post(both, '{"kind":"heartbeat"}')).toBe(JSON.stringify({ got: '{"kind":"heartbeat"}' }));
  const iam = seen[0]!.requestContext.authorizer.iam;
  const p = principals.get(both.accessKeyId)!;
  expect(iam.userId).toBe(userIdOf(p));
  expect(iam.userId).toMatch(/^AROA[A-Z2-7]{17}:both-session$/);
  expect(iam.userArn).toBe(p.sessionArn);
  expect(iam.accessKey).toBe(both.accessKeyId);
  expect(seen[0]!.requestContext.http.method).toBe("POST");
  expect(seen[0]!.rawPath).toBe("/");
});

it("refuses a caller allowed InvokeFunctionUrl alone (both actions since 2025-10), not running the function", async () => {
  seen = [];
  const e = await refusal(post(urlOnly, "{}"));
  expect([e.status, e.attempts]).toEqual([403, 1]);
  expect(seen).toHaveLength(0);
});

it("refuses a request not signed, or signed for another service", async () => {
  const unsigned = await fetch(url, { method: "POST", body: "{}" });
  expect(unsigned.status).toBe(403);
  const sqsSigned = await fetch(url, {
    method: "POST",
    body: "{}",
    headers: {
      authorization: `AWS4-HMAC-SHA256 Credential=${both.accessKeyId}/20261127/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=00`,
    },
  });
  expect(sqsSigned.status).toBe(403);
});

it("refuses a request over 6 MB (413) without retrying it", async () => {
  seen = [];
  const e = await refusal(post(both, JSON.stringify({ pad: "x".repeat(6_300_000) })));
  expect([e.status, e.attempts]).toEqual([413, 1]);
  expect(seen).toHaveLength(0);
});

it("answers a throttle 429 and a failed function 502, which the client sends again", async () => {
  next = "throttle";
  const throttled = await refusal(post(both, "{}"));
  expect([throttled.status, throttled.attempts]).toEqual([429, 2]);
  expect(throttled.body).toContain("Rate Exceeded.");
  next = "fail";
  const failed = await refusal(post(both, "{}"));
  expect([failed.status, failed.attempts]).toEqual([502, 2]);
  next = "ok";
});
