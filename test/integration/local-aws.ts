// For integration tests: the embedded DynamoDB and SQS for this file, with the stack's tables
// created, and the environment pointing the real SDK clients at them.
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll } from "vitest";
import { resetClients } from "../../lib/aws/clients.js";
import { applyEnv, type Emulators, startEmulators } from "../../local/emulators.js";
import type { GatewayPrincipal } from "../../local/iam/gateway.js";
import { identityOf } from "../../local/iam/identities.js";
import { createTables, localTables, runSuffix } from "../../local/tables.js";

export function useLocalAws(): { emulators: () => Emulators } {
  let emulators: Emulators | undefined;
  let restore: (() => void) | undefined;
  beforeAll(async () => {
    emulators = await startEmulators();
    // Names of this file's own when the AWS is shared (NOVALESS_EXTERNAL_AWS=1), as the runtime's.
    const suffix = runSuffix();
    const tables = localTables(suffix);
    restore = applyEnv({
      ...emulators.env,
      ...Object.fromEntries(tables.map((t) => [t.env, t.localName])),
      NOVALESS_COMPUTE_QUEUE_PREFIX: `novaless${suffix}-compute-`,
    });
    resetClients();
    await createTables(new DynamoDBClient({}), tables);
  });
  afterAll(async () => {
    resetClients();
    restore?.();
    await emulators?.stop();
  });
  return {
    emulators: () => {
      if (!emulators) throw new Error("useLocalAws: the emulators start in beforeAll");
      return emulators;
    },
  };
}

/** The gateway's principals for a test that acts as the operator, allowed everything. */
export function operatorOnly(): Map<string, GatewayPrincipal> {
  const account = "000000000000";
  return new Map([
    [
      identityOf("operator").accessKeyId,
      {
        name: "operator",
        roleArn: `arn:aws:iam::${account}:role/novaless-operator`,
        sessionArn: `arn:aws:sts::${account}:assumed-role/novaless-operator/operator`,
        statements: [{ Effect: "Allow", Action: ["*"], Resource: ["*"] }],
      },
    ],
  ]);
}
