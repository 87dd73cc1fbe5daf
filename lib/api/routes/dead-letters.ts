// /os-dead-letters (admin, novaless): what sits in the dead-letter queues and why (the reason
// novaless recorded, or SQS's receive count), and a redrive of one queue back to its source, as
// `novaless-dlq` does from a shell. Reports parked from compute-events are shown but not
// redriven: a report is trusted for the host whose session signed it, and a redriven copy would
// carry the API's identity instead; the host says its state again when it next registers.

import { listDeadLetterQueues, peekDeadLetters, redrive } from "../../aws/dead-letters.js";
import { resources } from "../../config.js";
import { log } from "../../log.js";
import { requireAdmin } from "../auth.js";
import type { DeadLetterDeps } from "../deps.js";
import { badRequest, conflict, notFound } from "../errors.js";
import type { ApiResult, Route, RouteCall } from "../request.js";

export const DEAD_LETTER_RULES = {
  list: "novaless:dead-letters:list",
  redrive: "novaless:dead-letters:redrive",
} as const;

/** A body longer than this is cut in the listing (the message itself is untouched). */
const BODY_PREVIEW_CHARS = 2_000;
/** Messages shown per queue. */
const PEEK_MAX = 50;

export const defaultDeadLetterDeps: DeadLetterDeps = {
  list: listDeadLetterQueues,
  peek: peekDeadLetters,
  redrive,
};

function whyNotRedrivable(url: string): string | null {
  return url === resources().computeEventsDlqUrl
    ? "Reports are trusted for the host whose session signed them; a redriven copy would be sent by the API. The host reports its state again when it next registers."
    : null;
}

export async function listDeadLetters({ ctx, deps }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, DEAD_LETTER_RULES.list);
  const d = deps.deadLetters ?? defaultDeadLetterDeps;
  const queues = await d.list();
  const out = [];
  for (const q of queues) {
    const letters = q.approximateMessages > 0 ? await d.peek(q.url, PEEK_MAX) : [];
    const why = whyNotRedrivable(q.url);
    out.push({
      name: q.name,
      source: q.sourceUrl.slice(q.sourceUrl.lastIndexOf("/") + 1),
      approximate_messages: q.approximateMessages,
      redrivable: why === null,
      ...(why ? { not_redrivable_reason: why } : {}),
      messages: letters.map((l) => ({
        message_id: l.messageId,
        sent_at: l.sentAt,
        reason: l.reason,
        receive_count: l.receiveCount,
        body: l.body.length > BODY_PREVIEW_CHARS ? `${l.body.slice(0, BODY_PREVIEW_CHARS)}…` : l.body,
      })),
    });
  }
  ctx.logFields.queues = out.length;
  return { status: 200, body: { dead_letter_queues: out } };
}

export async function deadLetterAction({ ctx, deps, params, body }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, DEAD_LETTER_RULES.redrive);
  let parsed: unknown;
  try {
    parsed = body === undefined ? undefined : JSON.parse(body);
  } catch {
    throw badRequest("Malformed request body");
  }
  const action = (parsed as { redrive?: unknown } | undefined)?.redrive;
  if (
    !parsed ||
    typeof parsed !== "object" ||
    action === undefined ||
    action === null ||
    typeof action !== "object"
  )
    throw badRequest('Expected {"redrive": {}} or {"redrive": {"max": N}}.');
  const max = (action as { max?: unknown }).max;
  if (max !== undefined && (!Number.isInteger(max) || (max as number) < 1))
    throw badRequest(
      `Invalid input for field/attribute max. Value: ${JSON.stringify(max)}. It must be an integer of at least 1.`,
    );
  const d = deps.deadLetters ?? defaultDeadLetterDeps;
  const q = (await d.list()).find((x) => x.name === params.name);
  if (!q) throw notFound(`Dead-letter queue ${params.name} could not be found.`);
  const why = whyNotRedrivable(q.url);
  if (why) throw conflict(`Cannot redrive ${q.name}: ${why}`);
  const moved = await d.redrive(q, max as number | undefined);
  log.info("api.dead_letters_redriven", { request_id: ctx.requestId, queue: q.name, moved });
  return { status: 200, body: { redrive: { queue: q.name, moved } } };
}

export const deadLetterRoutes: Route[] = [
  { method: "GET", pattern: "/os-dead-letters", handler: listDeadLetters },
  { method: "POST", pattern: "/os-dead-letters/:name/action", handler: deadLetterAction },
];
