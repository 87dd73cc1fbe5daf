// The agent's report_interval check: what a heartbeat carries, and the host's dead-letter count.
import { GetQueueAttributesCommand } from "@aws-sdk/client-sqs";
import { sqsClient } from "../aws/clients.js";
import type { BuildPath } from "./build-path.js";
import type { HeartbeatClock } from "./heartbeat.js";
import type { Reporter } from "./reporter.js";

/**
 * One report_interval check of a host's heartbeat: what it carries (builds ended since the last,
 * dead letters, reports waiting in the spool), sent when news or when due (lib/compute/heartbeat.ts).
 */
export async function heartbeatCheck(
  clock: HeartbeatClock,
  reporter: Reporter,
  path: BuildPath,
  deadLetters: DeadLetterCount,
): Promise<void> {
  const spool = reporter.spool.state;
  const news = {
    ...deadLetters.heartbeat(),
    ...path.heartbeatIo(),
    // reports waiting are news: every check says so until they are delivered
    ...(spool.depth > 0
      ? { spooled_reports: spool.depth, spooled_oldest_seconds: spool.oldestAgeSeconds }
      : {}),
  };
  if (!clock.due(Object.keys(news).length > 0)) return;
  await reporter.send("heartbeat", news);
  clock.sent();
  path.heartbeatSent();
}

/**
 * The host's dead-letter queue as its heartbeats report it: SQS's count when last taken, plus
 * what this host parked since (SQS's approximate count may not show those yet). Per-host DLQs are
 * made at run time, so the stack's alarm learns of them only through these reports.
 */
export class DeadLetterCount {
  private counted = 0;
  private parkedBefore = 0;
  private countedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly path: BuildPath,
    private readonly dlqUrl: () => string,
  ) {}

  get value(): number {
    return this.counted + this.path.deadLettered - this.parkedBefore;
  }

  /** What a heartbeat carries: the count while not 0. */
  heartbeat(): { dead_letters?: number } {
    const n = this.value;
    return n > 0 ? { dead_letters: n } : {};
  }

  /** Count again when `everyMs` has passed since the last count (one GetQueueAttributes). */
  async recount(everyMs = 0): Promise<void> {
    if (Date.now() - this.countedAt < everyMs) return;
    const parkedBefore = this.path.deadLettered;
    const r = await sqsClient().send(
      new GetQueueAttributesCommand({
        QueueUrl: this.dlqUrl(),
        AttributeNames: ["ApproximateNumberOfMessages"],
      }),
    );
    this.counted = Number(r.Attributes?.ApproximateNumberOfMessages ?? 0);
    this.parkedBefore = parkedBefore;
    this.countedAt = Date.now();
  }
}
