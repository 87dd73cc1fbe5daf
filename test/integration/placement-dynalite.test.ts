// The placement suite on dynalite, the embedded DynamoDB of `npm start`.
import { describe } from "vitest";
import { startEmulators } from "../../local/emulators.js";
import { placementSuite } from "./placement-suite.js";

describe("placement on dynalite", () => {
  placementSuite({ name: "dynalite", start: () => startEmulators() });
});
