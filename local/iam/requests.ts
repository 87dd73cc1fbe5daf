// What a signed request says of itself: the service it is for (its X-Amz-Target, or for S3 its
// signature's scope), its SigV4 credential, a presigned URL's expiry; and who its signer is to
// IAM (aws:userid, SQS's SenderId, the global condition keys).
import { createHash } from "node:crypto";
import type { RequestContext } from "./evaluate.js";
import type { GatewayPrincipal, RawRequest, Service } from "./gateway.js";
import { ACCOUNT, REGION } from "./identities.js";

export function serviceOf(target: string | undefined): Service | undefined {
  if (!target) return undefined;
  if (target.startsWith("DynamoDB_")) return "dynamodb";
  if (target.startsWith("AmazonSQS.")) return "sqs";
  if (target.startsWith("AWSStepFunctions.")) return "states";
  return undefined;
}

/**
 * A request's SigV4 credential (`<key id>/<date>/<region>/<service>/aws4_request`): the
 * Authorization header's, or a presigned URL's `X-Amz-Credential` (S3's query authentication).
 */
export function credentialOf(req: Pick<RawRequest, "headers" | "path">): string | undefined {
  const header = /Credential=([^,\s]+)/.exec(req.headers.authorization ?? "")?.[1];
  if (header) return header;
  const query = req.path.includes("?")
    ? new URLSearchParams(req.path.slice(req.path.indexOf("?") + 1))
    : undefined;
  return query?.get("X-Amz-Credential") ?? undefined;
}

/** The service a credential's scope names. */
export const scopeService = (credential: string | undefined): string | undefined => credential?.split("/")[3];

/**
 * A presigned request past its X-Amz-Date + X-Amz-Expires: S3's 403 AccessDenied "Request has
 * expired" (S3's "Authenticating requests: using query parameters").
 */
export function presignExpired(path: string, now = Date.now()): boolean {
  const q = new URLSearchParams(path.includes("?") ? path.slice(path.indexOf("?") + 1) : "");
  const date = q.get("X-Amz-Date");
  const expires = Number(q.get("X-Amz-Expires"));
  const m = date ? /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(date) : undefined;
  if (!m || !Number.isFinite(expires)) return false;
  const signed = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!);
  return now > signed + expires * 1000;
}

/**
 * aws:userid and SQS's SenderId of a role session: `<role id>:<session name>`. The role id is
 * AWS's unique id of the role (AROA…); locally a stable one from the role's ARN.
 */
export function userIdOf(p: Pick<GatewayPrincipal, "roleArn" | "sessionArn">): string {
  const session = p.sessionArn.split("/").slice(-1)[0] ?? "";
  return `${roleIdOf(p.roleArn)}:${session}`;
}

/** by role ARN: every request of a caller asks for its role's id (aws:userid, SenderId) */
const roleIds = new Map<string, string>();

/** A role's unique id as AWS forms them: AROA and 17 characters of [A-Z2-7]. */
function roleIdOf(roleArn: string): string {
  const known = roleIds.get(roleArn);
  if (known) return known;
  const digest = createHash("sha256").update(roleArn).digest();
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let id = "AROA";
  for (let i = 0; i < 17; i++) id += alphabet.charAt(digest[i]! & 31);
  roleIds.set(roleArn, id);
  return id;
}

/** The global condition keys of a request, from its signer alone. */
export function principalContext(principal: GatewayPrincipal): RequestContext {
  return {
    "aws:SecureTransport": "true", // the gateway stands in for HTTPS
    "aws:PrincipalArn": principal.roleArn,
    "aws:PrincipalAccount": ACCOUNT,
    "aws:RequestedRegion": REGION,
    "aws:userid": userIdOf(principal),
    ...Object.fromEntries(Object.entries(principal.tags ?? {}).map(([k, v]) => [`aws:PrincipalTag/${k}`, v])),
  };
}
