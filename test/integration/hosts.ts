// For integration tests: a registered compute host and the build-requests queue, on the embedded
// AWS of useLocalAws (call after it).
import { SQSClient } from "@aws-sdk/client-sqs";
import { beforeAll } from "vitest";
import { registerHost } from "../../lib/placement/hosts.js";
import { applyEnv } from "../../local/emulators.js";
import { createQueues } from "../../local/tables.js";

/** A fake-driver host of 8 VCPUs, registered as its agent would. */
export async function registerTestHost(host: string): Promise<void> {
  await registerHost({
    host,
    availability_zone: "nova",
    inventories: {
      VCPU: { total: 8, reserved: 0, allocation_ratio: 1, min_unit: 1, max_unit: 8, step_size: 1 },
    },
    hypervisor_type: "fake",
    hypervisor_version: 1,
    host_ip: "10.0.0.1",
    supported_instances: [["x86_64", "fake", "hvm"]],
    queue_url: `http://queue/${host}`,
  });
}

/** The build-requests queue and its DLQ, made before the file's tests, for what sends a build request. */
export function useBuildRequestsQueue(): void {
  beforeAll(async () => {
    const queues = await createQueues(new SQSClient({}));
    applyEnv({
      NOVALESS_BUILD_REQUESTS_QUEUE_URL: queues.buildRequestsQueueUrl,
      NOVALESS_BUILD_REQUESTS_DLQ_URL: queues.buildRequestsDlqUrl,
    });
  });
}
