// Server group (anti-)affinity's late check on dynalite, the embedded DynamoDB of `npm start`.
import { describe } from "vitest";
import { startEmulators } from "../../local/emulators.js";
import { groupClaimsSuite } from "./group-claims-suite.js";

describe("server group claims on dynalite", () => {
  groupClaimsSuite({ name: "dynalite", start: () => startEmulators() });
});
