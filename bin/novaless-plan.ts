#!/usr/bin/env tsx
// novaless-plan scenario.json [--compact] — or `npm run plan -- scenario.json`, or `-` for stdin.
// Runs the scenario's requests through the scheduler, in order, each consuming what it placed,
// and prints JSON: per request the selections (chosen host, then alternates, per instance) or the
// NoValidHost summary, and per instance the filter trace, the filtered hosts, every weigher's
// values and the weighed hosts. --compact prints the bounded explanation kept on instances
// instead (for large fleets). See examples/*.json.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { prepareScenario, runScenario } from "../lib/scheduler/scenario.js";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { compact: { type: "boolean", default: false }, help: { type: "boolean", short: "h" } },
});
const file = positionals[0];
if (values.help || !file) {
  process.stderr.write("usage: novaless-plan <scenario.json | -> [--compact]\n");
  process.exit(values.help ? 0 : 2);
}

let input: unknown;
try {
  input = JSON.parse(readFileSync(file === "-" ? 0 : file, "utf8"));
} catch (e) {
  process.stderr.write(`novaless-plan: cannot read ${file}: ${(e as Error).message}\n`);
  process.exit(2);
}

const prepared = prepareScenario(input);
if (!prepared.ok) {
  process.stderr.write(
    `novaless-plan: invalid scenario:\n${prepared.errors.map((e) => `  ${e}\n`).join("")}`,
  );
  process.exit(2);
}
for (const w of prepared.value.warnings) process.stderr.write(`novaless-plan: ${w}\n`);

process.stdout.write(
  `${JSON.stringify(runScenario(prepared.value, { compact: values.compact }), null, 2)}\n`,
);
