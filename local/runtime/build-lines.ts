import type { LambdaFunctionURLEvent, SQSEvent } from "aws-lambda";
import { log } from "../../lib/log.js";

/**
 * One log line per finished build (build.finished: instance, host, attempts, ms since its create
 * was queued: its build request's SentTimestamp on build-requests, a delayed chunk's delay
 * included), read from what the local runtime sees: the batches build-intake's event source hands
 * it, then the host's build_succeeded report that compute-events took. A failed attempt is a line
 * of its own (build.attempt_failed); the retry or the ERROR follows.
 */
export function buildLines() {
  const queued = new Map<string, number>();
  const QUEUED_MAX = 100_000;
  return {
    /** a batch of build requests handed to build-intake */
    requested(event: SQSEvent) {
      for (const record of event.Records) {
        let ids: unknown;
        try {
          ids = (JSON.parse(record.body) as { instance_uuids?: unknown }).instance_uuids;
        } catch {
          continue;
        }
        if (!Array.isArray(ids)) continue;
        const at = Number(record.attributes.SentTimestamp) || Date.now();
        for (const id of ids as string[]) {
          // a reschedule: the build still counts from its first request
          if (queued.has(id)) continue;
          if (queued.size >= QUEUED_MAX) queued.delete(queued.keys().next().value as string);
          queued.set(id, at);
        }
      }
    },
    /** a report compute-events answered through its function URL */
    reported(event: LambdaFunctionURLEvent, result: unknown) {
      if ((result as { statusCode?: number } | undefined)?.statusCode !== 200) return;
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(event.body ?? "") as Record<string, unknown>;
      } catch {
        return;
      }
      const id = String(body.instance_uuid ?? "");
      const since = queued.get(id);
      if (body.kind === "build_succeeded") {
        queued.delete(id);
        log.info("build.finished", {
          instance_uuid: id,
          host: body.host,
          attempts: body.attempt,
          ...(since !== undefined ? { ms: Date.now() - since } : {}),
        });
      } else if (body.kind === "build_failed") {
        log.info("build.attempt_failed", {
          instance_uuid: id,
          host: body.host,
          attempt: body.attempt,
          reason: body.reason,
        });
      }
    },
  };
}
