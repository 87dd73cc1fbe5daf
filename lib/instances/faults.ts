// Faults and the texts around them. Nova shows a fault's `message` to the instance's owner and
// its `details` to admins only, and never tells a user which host their instance was on: every
// text a member can read is written here without host names; the host goes in `details` and in
// the events' admin-only fields.
import type { Fault } from "./types.js";

export function fault(message: string, details: string, code = 500): Fault {
  return { code, message, details, created: new Date().toISOString() };
}

const NAME_CHAR = "A-Za-z0-9_\\-";

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * `text` with every name in `hosts` replaced by "the host". For texts this code did not write (a
 * driver's error, an exception's message), which may name the host they came from. A name is
 * matched whole: `host-1` is not found inside `host-12` nor inside `host-1.example.org`.
 */
export function withoutHosts(text: string, hosts: Iterable<string>): string {
  const names = [...new Set(hosts)].filter(Boolean).sort((a, b) => b.length - a.length);
  if (!names.length) return text;
  const pattern = new RegExp(
    `(?<![${NAME_CHAR}.])(?:${names.map(escapeRegExp).join("|")})(?![${NAME_CHAR}]|\\.[${NAME_CHAR}])`,
    "g",
  );
  return text.replace(pattern, "the host");
}

/** Nova's RescheduledException text: what a failed attempt left for MaxRetriesExceeded. */
export function rescheduledText(instanceUuid: string, reason: string): string {
  return `Build of instance ${instanceUuid} was re-scheduled: ${reason}`;
}

/** Nova's MaxRetriesExceeded: the member's message and the operator's details. */
export function maxRetriesFault(
  instanceUuid: string,
  maxAttempts: number,
  lastFault: string | undefined,
  hostsTried: readonly string[],
): Fault {
  const reason =
    `Exceeded max scheduling attempts ${maxAttempts} for instance ${instanceUuid}. ` +
    `Last exception: ${withoutHosts(lastFault ?? "unknown", hostsTried)}`;
  return fault(
    `Exceeded maximum number of retries. ${reason}`,
    `hosts tried: ${hostsTried.join(", ") || "none"}; last exception: ${lastFault ?? "unknown"}`,
  );
}
