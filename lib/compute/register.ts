// What a compute host is, and its start: Nova's compute service registering itself.
import { GetQueueUrlCommand } from "@aws-sdk/client-sqs";
import { sqsClient } from "../aws/clients.js";
import type { Inventory, ResourceClass } from "../placement-rules.js";
import { DLQ_SUFFIX } from "../resources.js";
import type { Driver } from "./drivers/driver.js";
import { computeQueueName } from "./queue-name.js";
import type { Reporter } from "./reporter.js";

/** What a compute host is: its name, place, size and hypervisor. */
export interface HostIdentity {
  host: string;
  availability_zone: string;
  inventories: Partial<Record<ResourceClass, Inventory>>;
  host_ip: string;
  driver: Driver;
}

/** A host's own queue and its dead-letter queue. */
export interface HostQueue {
  queueUrl: string;
  dlqUrl: string;
}

export interface RegisterOptions {
  computeQueuePrefix: string;
  /** how long to wait for compute-events to create this host's queues (ms) */
  queueWaitMs?: number;
  signal?: AbortSignal;
  /**
   * Resolves once SQS created the queue of this name (the local simulator's doorbell), so a fleet
   * registering at once waits for its queues without polling; asked before the report is sent.
   */
  queueCreated?: (queueName: string) => Promise<void>;
}

/**
 * Nova's compute service start: report the host (inventory, hypervisor, the guests it runs) and
 * take its queues, which compute-events creates and tags with the host's name (the host may not
 * create queues) and names in its answer. What every transport does before it takes messages.
 */
export async function registerComputeHost(
  h: HostIdentity,
  reporter: Reporter,
  opts: RegisterOptions,
): Promise<HostQueue> {
  const d = h.driver;
  const name = computeQueueName(opts.computeQueuePrefix, h.host, DLQ_SUFFIX);
  let created = opts.queueCreated?.(name);
  const { answer } = await reporter.send(
    "register",
    {
      availability_zone: h.availability_zone,
      host_ip: h.host_ip,
      inventories: h.inventories as Record<string, Inventory>,
      hypervisor_type: d.hypervisorType,
      hypervisor_version: d.hypervisorVersion,
      facts: d.facts(),
      guests: d.list(),
    },
    opts.signal,
  );
  const queueUrl = queueUrlOf(answer);
  // compute-events creates the DLQ first, beside the queue: its URL is the queue's and the suffix
  if (queueUrl) return { queueUrl, dlqUrl: `${queueUrl}${DLQ_SUFFIX}` };
  // A compute-events that does not name the queue (one deployed before it did): ask SQS for it.
  const waitMs = opts.queueWaitMs ?? 60_000;
  const deadline = Date.now() + waitMs;
  for (let pause = 50; ; pause = Math.min(2000, pause * 2)) {
    try {
      const queue = await sqsClient().send(new GetQueueUrlCommand({ QueueName: name }), {
        abortSignal: opts.signal,
      });
      return { queueUrl: queue.QueueUrl!, dlqUrl: `${queue.QueueUrl!}${DLQ_SUFFIX}` };
    } catch (e) {
      // Not there yet, or not tagged for this host yet: SQS says one or the other.
      const code = (e as { name?: string }).name ?? "";
      const waiting = /QueueDoesNotExist|NonExistentQueue|AccessDenied/.test(code);
      if (waiting && created) {
        // the doorbell rings when compute-events has created the queue (or at the deadline)
        const left = deadline - Date.now();
        await Promise.race([created, new Promise((r) => setTimeout(r, Math.max(0, left)).unref())]);
        created = undefined;
        continue;
      }
      if (!waiting || Date.now() + pause > deadline || opts.signal?.aborted) {
        throw new Error(
          `compute host ${h.host}: queue ${name} was not ready within ${waitMs / 1000} s of registering ` +
            `(${code}: ${(e as Error).message}); compute-events creates it: is the stack's ComputeEvents function running?`,
        );
      }
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}

/** The queue URL a registration's answer names, if it names one. */
function queueUrlOf(answer: string | undefined): string | undefined {
  if (!answer) return undefined;
  try {
    const url = (JSON.parse(answer) as { queue_url?: unknown }).queue_url;
    return typeof url === "string" && url ? url : undefined;
  } catch {
    return undefined;
  }
}
