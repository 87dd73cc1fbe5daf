// Who calls AWS in the local runtime: one identity per component, as each has its own role on
// AWS. The access key id names the role (valid access-key syntax: 16-128 of [A-Za-z0-9_]), so the
// gateway knows the caller from the signed request alone, the way AWS and LocalStack do.
import { createHash } from "node:crypto";
import type { Identity } from "../../lib/aws/identity.js";

export const ACCOUNT = "000000000000";
export const REGION = "us-east-1";
export const PARTITION = "aws";

/**
 * The components with a role in the stack; `compute-host` is ComputeHostRole, whose sessions are
 * one per host (hostIdentityOf), each tagged with its host.
 */
export const COMPONENTS = [
  "api",
  "build-intake",
  "scheduler",
  "conductor",
  "build-watchdog",
  "compute-events",
  "state-machine",
  "compute-host",
] as const;
export type Component = (typeof COMPONENTS)[number];
/** The components that are Lambda functions in the stack. */
export type FunctionComponent = Exclude<Component, "state-machine" | "compute-host">;
export const FUNCTION_COMPONENTS = COMPONENTS.filter(
  (c): c is FunctionComponent => c !== "state-machine" && c !== "compute-host",
);

/** The deploying admin: creates tables and queues, seeds, and reads for the tests. */
export const OPERATOR = "operator";
export type Caller = Component | typeof OPERATOR;

export function accessKeyIdOf(caller: Caller): string {
  return `LOCAL${caller.replace(/-/g, "").toUpperCase()}`.padEnd(20, "0");
}

export function identityOf(caller: Caller): Identity {
  return { accessKeyId: accessKeyIdOf(caller), secretAccessKey: `novaless-local-${caller}` };
}

/** The role's name locally (CloudFormation would add the stack name and a hash). */
export function roleNameOf(caller: Caller): string {
  return `novaless-${caller}`;
}

export function roleArnOf(caller: Caller): string {
  return `arn:${PARTITION}:iam::${ACCOUNT}:role/${roleNameOf(caller)}`;
}

/** The local Lambda functions' ARNs (the state machine's Task Resources locally). */
export function functionArnOf(c: FunctionComponent): string {
  return `arn:${PARTITION}:lambda:${REGION}:${ACCOUNT}:function:novaless-${c}`;
}

/**
 * A compute host's own credentials locally: a session of ComputeHostRole named after the host and
 * tagged `novaless-host=<host>`, as a host gets on AWS. The key names the session by a hash (the
 * gateway maps it back to the host it was registered for).
 */
export function hostAccessKeyIdOf(host: string): string {
  return `LOCALCH${createHash("sha256").update(host).digest("hex").slice(0, 24).toUpperCase()}`;
}

export function hostIdentityOf(host: string): Identity {
  return { accessKeyId: hostAccessKeyIdOf(host), secretAccessKey: `novaless-local-host-${host}` };
}
