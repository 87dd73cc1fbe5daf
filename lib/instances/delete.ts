// Deleting a server wherever it is in the flow: mark it deleted (every later fenced write then
// fails), release its claim, and tell its host to tear down whatever it built.
import { castToCompute } from "../conductor/queues.js";
import { log } from "../log.js";
import { release } from "../placement/claims.js";
import { getHost } from "../placement/hosts.js";
import { markDeleted } from "./repo.js";
import type { InstanceRecord } from "./types.js";

/**
 * Returns the deleted record, or undefined if it was already deleted (idempotent). A conductor
 * that claims after this point finds the instance deleted and releases its own claim.
 */
export async function deleteServer(id: string, requestId: string): Promise<InstanceRecord | undefined> {
  const rec = await markDeleted(id);
  if (!rec) return undefined;
  if (rec.host) {
    // Every attempt's claim: only the current one should exist, but a release is cheap and exact.
    await release(rec.host, id, rec.attempt);
    const host = await getHost(rec.host);
    if (host?.queue_url) {
      await castToCompute(host.queue_url, {
        version: 1,
        kind: "terminate_instance",
        request_id: requestId,
        instance_uuid: id,
        host: rec.host,
      });
    }
  }
  log.info("instance.deleted", {
    request_id: requestId,
    instance_uuid: id,
    host: rec.host,
    attempt: rec.attempt,
  });
  return rec;
}
