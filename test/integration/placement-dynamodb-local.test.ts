// The placement suite on Amazon's DynamoDB Local (Java), so that where dynalite and DynamoDB
// differ, it shows up here. Without Java the suite is skipped, and says so.
import { describe } from "vitest";
import { javaAvailable, startDynamoDbLocal } from "../../local/dynamodb-local.js";
import { placementSuite } from "./placement-suite.js";

const java = javaAvailable();
if (!java.ok) {
  console.warn(`SKIPPED: placement suite on DynamoDB Local: ${java.reason} (install Java 17 to run it)`);
}

describe.skipIf(!java.ok)("placement on DynamoDB Local", () => {
  placementSuite({ name: "DynamoDB Local", start: () => startDynamoDbLocal() });
});
