// A registering host takes its queue from compute-events' answer and asks SQS nothing (one request
// fewer a host, 10,000 of them at a fleet's start); a compute-events that does not name the queue
// is waited for as before, through GetQueueUrl.
import { describe, expect, it } from "vitest";
import { FakeDriver } from "../../../lib/compute/drivers/fake.js";
import { inventoriesFor } from "../../../lib/compute/inventory.js";
import { registerComputeHost } from "../../../lib/compute/register.js";
import type { Reporter } from "../../../lib/compute/reporter.js";

const identity = {
  host: "compute-1",
  availability_zone: "az1",
  inventories: inventoriesFor({ vcpus: 4, memory_mb: 8192, local_gb: 100 }),
  host_ip: "10.0.0.1",
  driver: new FakeDriver({ host: "compute-1", buildMs: 0, failAll: false }),
};
const URL = "http://127.0.0.1:1/000000000000/novaless-compute-compute-1";

/** A reporter whose registration compute-events answers with `answer`; it records what was sent. */
function answering(answer: string | undefined) {
  const sent: string[] = [];
  const reporter = {
    send: async (kind: string) => {
      sent.push(kind);
      return { delivered: Promise.resolve(true), answer };
    },
  } as unknown as Reporter;
  return { reporter, sent };
}

describe("registerComputeHost", () => {
  it("takes the queue compute-events' answer names, and its DLQ beside it, without asking SQS", async () => {
    const { reporter, sent } = answering(JSON.stringify({ applied: true, queue_url: URL }));
    // a doorbell that never rings and a wait of 0: any SQS request or wait would fail the start
    const queue = await registerComputeHost(identity, reporter, {
      computeQueuePrefix: "novaless-compute-",
      queueWaitMs: 0,
      queueCreated: () => new Promise<void>(() => {}),
    });
    expect(queue).toEqual({ queueUrl: URL, dlqUrl: `${URL}-dlq` });
    expect(sent).toEqual(["register"]);
  });

  it("asks SQS when the answer does not name the queue (a compute-events deployed before it did)", async () => {
    const { reporter } = answering(JSON.stringify({ applied: true }));
    // no SQS here: the GetQueueUrl it falls back to fails, and the start says which queue it waited for
    await expect(
      registerComputeHost(identity, reporter, { computeQueuePrefix: "novaless-compute-", queueWaitMs: 0 }),
    ).rejects.toThrow(/queue novaless-compute-compute-1-\w+ was not ready/);
  });
});
