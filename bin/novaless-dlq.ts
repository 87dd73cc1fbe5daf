#!/usr/bin/env tsx
// `novaless-dlq list | redrive <queue-name> [--max N]`: what sits in the dead-letter queues, why,
// and putting it back once the cause is fixed. Reads the same environment as the functions
// (NOVALESS_BUILD_REQUESTS_QUEUE_URL, NOVALESS_BUILD_REQUESTS_DLQ_URL, NOVALESS_COMPUTE_EVENTS_DLQ_URL,
// NOVALESS_COMPUTE_QUEUE_PREFIX).
import { parseArgs } from "node:util";
import { listDeadLetterQueues, NotRedrivable, peekDeadLetters, redrive } from "../lib/aws/dead-letters.js";

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { max: { type: "string" }, json: { type: "boolean", default: false } },
});
const [command, queue] = positionals;

async function main(): Promise<number> {
  const queues = await listDeadLetterQueues();
  if (command === "list") {
    const report = [];
    for (const q of queues) {
      const letters = q.approximateMessages > 0 ? await peekDeadLetters(q.url) : [];
      report.push({ queue: q.name, source: q.sourceUrl, messages: letters.length, letters });
    }
    if (values.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    else {
      for (const q of report) {
        process.stdout.write(`${q.queue}: ${q.messages} message(s)\n`);
        for (const l of q.letters) {
          process.stdout.write(
            `  ${l.messageId}  sent ${l.sentAt}  reason: ${l.reason}\n    ${l.body.slice(0, 200)}\n`,
          );
        }
      }
    }
    return 0;
  }
  if (command === "redrive" && queue) {
    const q = queues.find((x) => x.name === queue || x.url === queue);
    if (!q) {
      process.stderr.write(`no dead-letter queue ${queue}; known: ${queues.map((x) => x.name).join(", ")}\n`);
      return 2;
    }
    let moved: number;
    try {
      moved = await redrive(q, values.max ? Number(values.max) : undefined);
    } catch (e) {
      if (!(e instanceof NotRedrivable)) throw e;
      process.stderr.write(`${q.name} is not redrivable: ${e.message}\n`);
      return 2;
    }
    process.stdout.write(`moved ${moved} message(s) from ${q.name} back to ${q.sourceUrl}\n`);
    return 0;
  }
  process.stderr.write("usage: novaless-dlq list [--json] | redrive <dlq-name> [--max N]\n");
  return 2;
}

process.exit(await main());
