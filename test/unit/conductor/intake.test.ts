// build-intake's retry of a start that failed (lib/conductor/intake.ts): how long the request stays
// hidden after each failed receive, and what that gives Step Functions before build-requests'
// redrive moves the request to its DLQ.
import { describe, expect, it } from "vitest";
import { START_RETRY_SECONDS, startRetrySeconds } from "../../../lib/conductor/intake.js";
import { optionValue } from "../../../lib/config.js";
import { BUILD_REQUESTS_QUEUE } from "../../../lib/resources.js";

describe("a start that failed is retried", () => {
  it("after 2 s, doubling with each receive, up to 60 s", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 10].map(startRetrySeconds)).toEqual([2, 4, 8, 16, 32, 60, 60, 60]);
    // an attribute missing or unreadable counts as the first receive
    expect(startRetrySeconds(Number.NaN)).toBe(START_RETRY_SECONDS.first);
    expect(startRetrySeconds(0)).toBe(START_RETRY_SECONDS.first);
  });

  it("for about five minutes before the DLQ: longer than a throttle lasts, shorter than the build's timeout", () => {
    // the delays after each receive but the last, which SQS follows with the redrive
    let waited = 0;
    for (let n = 1; n < BUILD_REQUESTS_QUEUE.maxReceiveCount; n++) waited += startRetrySeconds(n);
    expect(waited).toBeGreaterThanOrEqual(240);
    expect(waited).toBeLessThan(optionValue<number>("instance_build_timeout"));
    // every delay is shorter than the queue's own visibility timeout, or there would be no point
    expect(START_RETRY_SECONDS.max).toBeLessThan(BUILD_REQUESTS_QUEUE.visibilityTimeout);
  });
});
