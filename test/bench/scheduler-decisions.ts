// npx tsx test/bench/scheduler-decisions.ts [--sizes 1000,10000,50000 --requests 3000 --seed 7
//   --out decisions.jsonl --detailed]
//
// What bench:scheduler decided, request by request (warm-up included): the hosts chosen, the
// alternates, the failed instance, and the compact explanations and summaries kept, as one JSON
// line per request; prints a SHA-256 of each size's lines. Run it on two commits and compare the
// digests (or diff the --out files) to prove an optimization decides exactly as before. Every
// request's outcome feeds the next (consumed hosts, placed instances), so one difference
// anywhere changes the digest. --detailed adds every decision's detailed explanation (every host's
// rejection and weigher values: slow at 50,000 hosts).
import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { parseArgs } from "node:util";
import { LOOP_ARGS, runLoop } from "./scheduler-loop.js";

const { values } = parseArgs({
  options: {
    ...LOOP_ARGS,
    out: { type: "string" },
    detailed: { type: "boolean", default: false },
  },
});

// -0 and 0 told apart: a weight's sign is part of the decision.
const exact = (v: unknown) => JSON.stringify(v, (_k, x) => (Object.is(x, -0) ? "-0" : x));
const out = values.out ? createWriteStream(values.out) : undefined;

for (const size of values.sizes.split(",").map(Number)) {
  const hash = createHash("sha256");
  let decisions = 0;
  let failures = 0;
  runLoop(
    size,
    {
      seed: Number(values.seed),
      requests: Number(values.requests),
      warmup: Number(values.warmup),
      changed: Number(values.changed),
      explanation: values.detailed ? "detailed" : "compact",
    },
    ({ n, result, kept }) => {
      const decided = [...result.placements.map((p) => p.decision), ...(result.ok ? [] : [result.decision])];
      decisions += decided.length;
      if (!result.ok) failures++;
      const line = exact({
        size,
        n,
        ok: result.ok,
        placed: result.placements.map((p) => [p.instance_uuid, p.selected, p.position, p.conflicts ?? []]),
        alternates: result.ok ? result.alternates : [],
        failed: result.ok ? null : result.instance_uuid,
        kept,
        ...(values.detailed ? { detailed: decided.map((d) => d.detailed()) } : {}),
      });
      hash.update(line).update("\n");
      out?.write(`${line}\n`);
    },
  );
  console.log(`${size} hosts: ${decisions} decisions, ${failures} NoValidHost, sha256 ${hash.digest("hex")}`);
}
out?.end();
