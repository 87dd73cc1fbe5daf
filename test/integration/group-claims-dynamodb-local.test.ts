// Server group (anti-)affinity's late check on Amazon's DynamoDB Local (Java), so that where
// dynalite and DynamoDB differ, it shows up here. Without Java the suite is skipped, and says so.
import { describe } from "vitest";
import { javaAvailable, startDynamoDbLocal } from "../../local/dynamodb-local.js";
import { groupClaimsSuite } from "./group-claims-suite.js";

const java = javaAvailable();
if (!java.ok) {
  console.warn(`SKIPPED: server group claims on DynamoDB Local: ${java.reason} (install Java 17 to run it)`);
}

describe.skipIf(!java.ok)("server group claims on DynamoDB Local", () => {
  groupClaimsSuite({ name: "DynamoDB Local", start: () => startDynamoDbLocal() });
});
