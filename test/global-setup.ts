// Before any test file: the console's assets, which the API serves (lib/api/console.ts imports
// them), built fresh from console/src, as `npm start` and `cdk synth` do.
import { buildConsole } from "../scripts/build-console.js";

export default function setup(): void {
  // Each vitest project runs the global setup; the assets are built once per run.
  if (process.env.NOVALESS_TEST_CONSOLE_BUILT === "1") return;
  buildConsole();
  process.env.NOVALESS_TEST_CONSOLE_BUILT = "1";
}
