// Casts to a host's own queue. A workflow's cast must reach its host (hostQueueFor: a host with no
// queue fails the step, and the state machine rolls the workflow back); compute-events' answers
// to a report are best effort (castToHost: a host it does not know is logged, the report applied).
import { castToCompute } from "../aws/send.js";
import type { Logger } from "../log.js";
import type { ComputeMessage } from "../messages/compute.js";
import { hostQueueUrl } from "../placement/host-queues.js";

/** The host's queue for a cast about `instance` at `attempt`; a host with no queue is an error. */
export async function hostQueueFor(host: string, instance: string, attempt: number): Promise<string> {
  const url = await hostQueueUrl(host);
  if (!url)
    throw new Error(
      `host ${host} has no queue_url; cannot cast to it for instance ${instance} (attempt ${attempt})`,
    );
  return url;
}

export async function castToHost(host: string, msg: ComputeMessage, log: Logger): Promise<void> {
  const url = await hostQueueUrl(host);
  if (!url) {
    log.warn("compute_events.host_unknown", { host, kind: msg.kind });
    return;
  }
  await castToCompute(url, msg);
}

/** Power off a guest that is not off while its instance is stopped (the power-state sync's one cast). */
export function stopGuest(host: string, instance_uuid: string, log: Logger): Promise<void> {
  const request_id = `req-sync-${instance_uuid}`;
  return castToHost(
    host,
    { version: 1, kind: "power_action", action: "stop", request_id, instance_uuid, host },
    log,
  );
}
