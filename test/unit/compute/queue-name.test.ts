import { readFileSync } from "node:fs";
import { describe, expect, it, vi } from "vitest";
import {
  COMPUTE_QUEUE_PREFIX_MAX_LENGTH,
  computeQueueName,
  HOST_NAME_MAX_LENGTH,
} from "../../../lib/compute/queue-name.js";
import { DEFAULT_COMPUTE_QUEUE_PREFIX, resources } from "../../../lib/config.js";
import { DLQ_SUFFIX } from "../../../lib/resources.js";

const SQS_NAME = /^[A-Za-z0-9_-]{1,80}$/;
const PREFIX = "novalessstack-compute-";
const LONGEST_PREFIX = "p".repeat(COMPUTE_QUEUE_PREFIX_MAX_LENGTH);

/** Both queues SQS must accept: the host's and its DLQ's. */
function expectValid(name: string) {
  expect(name).toMatch(SQS_NAME);
  expect(`${name}${DLQ_SUFFIX}`).toMatch(SQS_NAME);
}

/** A 255-character FQDN of 63-character labels. */
function longFqdn(first: string): string {
  const label = (c: string) => c.repeat(63);
  return [first.padEnd(63, "x"), label("b"), label("c"), label("d")].join(".");
}

describe("computeQueueName", () => {
  it("keeps an FQDN readable, its dots made dashes, and adds the hash of the name", () => {
    const name = computeQueueName(PREFIX, "compute-1.example.org", DLQ_SUFFIX);
    expect(name).toMatch(/^novalessstack-compute-compute-1-example-org-[a-z2-7]{10}$/);
    expectValid(name);
  });

  it("hashes names SQS would accept as they are, too", () => {
    expect(computeQueueName(PREFIX, "host-1", DLQ_SUFFIX)).toMatch(
      /^novalessstack-compute-host-1-[a-z2-7]{10}$/,
    );
  });

  it("is stable: the same host gets the same queue, and this release's names are pinned", () => {
    expect(computeQueueName(PREFIX, "compute-1.example.org", DLQ_SUFFIX)).toBe(
      computeQueueName(PREFIX, "compute-1.example.org", DLQ_SUFFIX),
    );
    // Pinned: a change here moves every deployed host to a new, empty queue.
    expect(computeQueueName(PREFIX, "host-1", DLQ_SUFFIX)).toBe("novalessstack-compute-host-1-jilznlcjgu");
    expect(computeQueueName(PREFIX, "compute-1.example.org", DLQ_SUFFIX)).toBe(
      "novalessstack-compute-compute-1-example-org-kszze7hfsp",
    );
  });

  it("gives names differing only in case, or in '.' versus '-', different queues", () => {
    const names = [
      "compute-1.example.org",
      "Compute-1.example.org",
      "COMPUTE-1.EXAMPLE.ORG",
      "compute-1-example-org",
    ];
    const queues = names.map((h) => computeQueueName(PREFIX, h, DLQ_SUFFIX));
    expect(new Set(queues).size).toBe(names.length);
    queues.forEach(expectValid);
  });

  it("fits a 255-character host name under the longest prefix, DLQ included", () => {
    const host = longFqdn("a");
    expect(host).toHaveLength(HOST_NAME_MAX_LENGTH);
    const name = computeQueueName(LONGEST_PREFIX, host, DLQ_SUFFIX);
    expectValid(name);
    expect(`${name}${DLQ_SUFFIX}`).toHaveLength(80);
    expect(name.startsWith(`${LONGEST_PREFIX}axxxx-`)).toBe(true);
  });

  it("tells apart long names that share everything the cut keeps", () => {
    const a = longFqdn("compute-0001");
    const b = `${a.slice(0, -1)}e`;
    expect(computeQueueName(PREFIX, a, DLQ_SUFFIX)).not.toBe(computeQueueName(PREFIX, b, DLQ_SUFFIX));
    expect(computeQueueName(LONGEST_PREFIX, a, DLQ_SUFFIX)).not.toBe(
      computeQueueName(LONGEST_PREFIX, b, DLQ_SUFFIX),
    );
  });

  it("gives 10,000 hosts 10,000 queues", () => {
    const queues = new Set<string>();
    for (let i = 0; i < 10_000; i++)
      queues.add(computeQueueName(LONGEST_PREFIX, `compute-${i}.example.org`, DLQ_SUFFIX));
    expect(queues.size).toBe(10_000);
  });

  it("never ends the readable part on a dash before the hash", () => {
    const cut = computeQueueName(LONGEST_PREFIX, "abcd.efgh", DLQ_SUFFIX);
    expect(cut).toMatch(new RegExp(`^${LONGEST_PREFIX}abcd-[a-z2-7]{10}$`));
    expect(computeQueueName(PREFIX, "...", DLQ_SUFFIX)).toMatch(/^novalessstack-compute-[a-z2-7]{10}$/);
  });

  it("refuses a prefix that leaves no room, or that SQS would refuse, naming it", () => {
    expect(() => computeQueueName(`${LONGEST_PREFIX}ppppp`, "host-1", DLQ_SUFFIX)).toThrow(
      /prefix "p+".*host-1/,
    );
    expect(() => computeQueueName("compute.queues.", "host-1", DLQ_SUFFIX)).toThrow(/compute\.queues\./);
  });

  it("refuses an empty host name and one longer than 255 characters", () => {
    expect(() => computeQueueName(PREFIX, "", DLQ_SUFFIX)).toThrow(/host name ""/);
    expect(() => computeQueueName(PREFIX, `${longFqdn("a")}z`, DLQ_SUFFIX)).toThrow(/1-255/);
  });
});

describe("the compute agent's default queue prefix", () => {
  it("is the deployed stack's default: the stack name lowercased, then -compute-", () => {
    const app = readFileSync(new URL("../../../infra/app.ts", import.meta.url), "utf8");
    const stackName = /new NovalessStack\(app, "([^"]+)"/.exec(app)?.[1];
    expect(stackName).toBeDefined();
    vi.stubEnv("NOVALESS_COMPUTE_QUEUE_PREFIX", "");
    try {
      expect(resources().computeQueuePrefix).toBe(`${stackName}-compute-`.toLowerCase());
    } finally {
      vi.unstubAllEnvs();
    }
    expect(DEFAULT_COMPUTE_QUEUE_PREFIX.length).toBeLessThanOrEqual(COMPUTE_QUEUE_PREFIX_MAX_LENGTH);
  });
});
