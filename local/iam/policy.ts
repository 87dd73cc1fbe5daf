// The gateway's policy set for a local runtime: each component's statements from the stack,
// the operator allowed everything, and the tests' removals applied.

import { hostSessionName } from "../../lib/compute/queue-name.js";
import { HOST_TAG } from "../../lib/resources.js";
import type { Statement } from "./evaluate.js";
import type { GatewayPolicy, GatewayPrincipal } from "./gateway.js";
import {
  ACCOUNT,
  accessKeyIdOf,
  type Caller,
  COMPONENTS,
  type Component,
  hostAccessKeyIdOf,
  OPERATOR,
  roleArnOf,
  roleNameOf,
} from "./identities.js";
import type { StackPolicies } from "./stack-policies.js";

export interface IamOptions {
  /**
   * Statements to take out of the stack's policy set, for tests that prove enforcement bites
   * (the stack itself is not edited). Called with resolved statements (ARNs, not intrinsics).
   */
  removeStatement?: (component: Component, statement: Statement) => boolean;
}

/** The session a component's calls are signed as: Lambda names it after the function. */
export function sessionArnOf(caller: Caller): string {
  const session = caller === "compute-host" || caller === OPERATOR ? caller : `novaless-${caller}`;
  return `arn:aws:sts::${ACCOUNT}:assumed-role/${roleNameOf(caller)}/${session}`;
}

/** The components' statements after the test's removals. */
export function effectiveStatements(
  policies: StackPolicies,
  iam: IamOptions = {},
): Record<Component, Statement[]> {
  const remove = iam.removeStatement ?? (() => false);
  return Object.fromEntries(
    COMPONENTS.map((c) => [c, policies.identity[c].filter((s) => !remove(c, s))]),
  ) as Record<Component, Statement[]>;
}

export function gatewayPolicy(policies: StackPolicies, iam: IamOptions = {}): GatewayPolicy {
  const statements = effectiveStatements(policies, iam);
  const principal = (caller: Caller, own: Statement[]): [string, GatewayPrincipal] => [
    accessKeyIdOf(caller),
    { name: caller, roleArn: roleArnOf(caller), sessionArn: sessionArnOf(caller), statements: own },
  ];
  return {
    principals: new Map([
      ...COMPONENTS.map((c) => principal(c, statements[c])),
      principal(OPERATOR, [{ Effect: "Allow", Action: ["*"], Resource: ["*"] }]),
    ]),
    resource: policies.resource,
  };
}

/**
 * A host's own session of ComputeHostRole: named after the host and tagged `novaless-host=<host>`
 * (its session name: hostSessionName),
 * as the role's trust policy makes every host session on AWS.
 */
export function hostPrincipal(host: string, statements: Statement[]): [string, GatewayPrincipal] {
  return [
    hostAccessKeyIdOf(host),
    {
      name: `compute-host ${host}`,
      roleArn: roleArnOf("compute-host"),
      sessionArn: `arn:aws:sts::${ACCOUNT}:assumed-role/${roleNameOf("compute-host")}/${hostSessionName(host)}`,
      statements,
      tags: { [HOST_TAG]: hostSessionName(host) },
    },
  ];
}
