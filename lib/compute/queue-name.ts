// A compute host's own queue name, from its Nova host name. Nova hosts are usually FQDNs
// (`compute-1.example.org`, up to 255 characters), while an SQS queue name is 1–80 characters of
// [A-Za-z0-9_-], and the host's dead-letter queue (name + DLQ suffix) must fit too.
//
// The name is `${prefix}${readable}-${hash}`:
//   - readable: the host name with every character SQS refuses replaced by "-", cut to what the
//     length budget leaves (from the start, where an FQDN says which host it is), trailing "-" and
//     "_" trimmed; only there for operators reading queue lists.
//   - hash: the first 50 bits of SHA-256 over the host name's UTF-8 bytes, big-endian, written as
//     10 digits of RFC 4648 base32 in lowercase (a–z, 2–7).
// The hash covers the whole host name as given, so names that differ only in case, in "." versus
// "-", or beyond the cut get different queues; two of 10,000 hosts share one with a probability
// under 1 in 20 million. Every name gets the hash, even one SQS would accept as it is, so there is
// one rule and no plain name can equal another host's hashed one.
//
// STABLE: a host's queue is found again by this name after an agent restart or an upgrade, and
// operators may have scoped IAM to it. Changing anything above moves every host to a new queue
// and strands the messages in the old ones.
import { createHash } from "node:crypto";

/** SQS: a queue name is 1–80 characters. */
const SQS_QUEUE_NAME_MAX_LENGTH = 80;
const SQS_QUEUE_NAME_CHARS = /^[A-Za-z0-9_-]+$/;
const REFUSED_BY_SQS = /[^A-Za-z0-9_-]/g;

/** Nova's host names are hostnames or FQDNs: at most 255 characters. */
export const HOST_NAME_MAX_LENGTH = 255;

const HASH_DIGITS = 10;
const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";
/** The shortest host part: one readable character, "-", the hash. */
const MIN_HOST_PART = 1 + 1 + HASH_DIGITS;

/**
 * The longest compute queue prefix the stack accepts (its `computeQueuePrefix`). With the longest
 * DLQ suffix this project uses ("-dlq") it leaves 16 characters for the host part.
 */
export const COMPUTE_QUEUE_PREFIX_MAX_LENGTH = 60;

/**
 * The queue of `host` under `prefix`, leaving room for `dlqSuffix` (the host's DLQ is
 * `computeQueueName(...) + dlqSuffix`). Throws when the prefix or the host name is not usable.
 */
export function computeQueueName(prefix: string, host: string, dlqSuffix: string): string {
  const budget = SQS_QUEUE_NAME_MAX_LENGTH - prefix.length - dlqSuffix.length;
  if (!SQS_QUEUE_NAME_CHARS.test(prefix) || !SQS_QUEUE_NAME_CHARS.test(dlqSuffix) || budget < MIN_HOST_PART) {
    throw new Error(
      `compute queue prefix "${prefix}" with DLQ suffix "${dlqSuffix}" leaves ${budget} characters for host ` +
        `"${host}"; SQS queue names are ${SQS_QUEUE_NAME_MAX_LENGTH} characters of [A-Za-z0-9_-] at most ` +
        `and a host needs ${MIN_HOST_PART}`,
    );
  }
  if (host.length === 0 || host.length > HOST_NAME_MAX_LENGTH) {
    throw new Error(
      `host name "${host}" must be 1-${HOST_NAME_MAX_LENGTH} characters to get a compute queue`,
    );
  }
  const readable = host
    .replace(REFUSED_BY_SQS, "-")
    .slice(0, budget - 1 - HASH_DIGITS)
    .replace(/[-_]+$/, "");
  return `${prefix}${readable}${readable ? "-" : ""}${hostHash(host)}`;
}

function hostHash(host: string): string {
  const digest = createHash("sha256").update(host, "utf8").digest();
  // The first 64 bits, of which the top 50 are written: 10 digits of 5 bits each.
  let bits = digest.readBigUInt64BE(0) >> 14n;
  let out = "";
  for (let i = 0; i < HASH_DIGITS; i++) {
    out = BASE32.charAt(Number(bits & 31n)) + out;
    bits >>= 5n;
  }
  return out;
}

/** IAM role session names (and so the aws:userid a report is signed with) are 2-64 characters of [\w+=,.@-]. */
const SESSION_NAME_MAX_LENGTH = 64;
const PLAIN_SESSION_NAME = /^[A-Za-z0-9._-]{2,64}$/;

/**
 * The role session name, and `novaless-host` tag value, of a host's credentials: the host name
 * itself when IAM takes it as a session name (most FQDNs), else its first characters and the same
 * hash as its queue's (names over 64 characters). STABLE, as the queue name: operators' trust
 * policies and certificates carry it.
 */
export function hostSessionName(host: string): string {
  if (PLAIN_SESSION_NAME.test(host)) return host;
  const readable = host
    .replace(/[^A-Za-z0-9._-]/g, "-")
    .slice(0, SESSION_NAME_MAX_LENGTH - 1 - HASH_DIGITS)
    .replace(/[-_.]+$/, "");
  return `${readable}${readable ? "-" : ""}${hostHash(host)}`;
}
