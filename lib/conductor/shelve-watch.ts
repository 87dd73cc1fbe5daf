// The watchdog's share of shelve (Nova's _poll_shelved_instances): a SHELVED server whose
// shelved_offload_time has passed is offloaded, as an admin's shelveOffload would: its host
// destroys the guest and compute-events frees its claim. Read from the `shelved` partition of the
// by-vm-state index only, so it costs nothing while no server is shelved.
import { randomUUID } from "node:crypto";
import { castToCompute } from "../aws/send.js";
import { moveOptions } from "../config.js";
import { listInstancesInVmState, listInstancesOnHost } from "../instances/queries.js";
import { beginAction } from "../instances/transition.js";
import type { InstanceAction } from "../instances/types.js";
import { log } from "../log.js";
import { getHost } from "../placement/hosts.js";
import { applyUnshelveReport } from "./shelve-events.js";

/**
 * An unshelve spawning on a host that went down (no heartbeat within service_down_time, or forced
 * down) fails that attempt as the host's own failure would: its claim is given back and the
 * unshelve goes to its alternates. A host that comes back finds it fenced (its restart's
 * reconciliation reports the same failure, which then changes nothing).
 */
export async function watchUnshelves(now: Date, up: ReadonlyMap<string, boolean>): Promise<string[]> {
  const failed: string[] = [];
  // read from the hosts that are down (the by-host index): usually none, and never every
  // offloaded server
  const down = [...up].filter(([, alive]) => !alive).map(([host]) => host);
  for (const rec of (await Promise.all(down.map((h) => listInstancesOnHost(h)))).flat()) {
    const ctx = rec.unshelve;
    if (rec.vm_state !== "shelved_offloaded" || !ctx || rec.task_state !== "spawning" || !rec.host) continue;
    const at = now.toISOString();
    await applyUnshelveReport(
      {
        version: 1,
        kind: "unshelve_done",
        host: rec.host,
        sent_at: at,
        request_id: ctx.request_id,
        instance_uuid: rec.id,
        unshelve_uuid: ctx.uuid,
        attempt: rec.attempt,
        started_at: at,
        ok: false,
        details: "its host is down (no heartbeat within service_down_time, or forced down)",
        power_state: 0,
      },
      log,
      // (a failure casts nothing to the host)
      async () => {},
    );
    log.warn("watchdog.unshelve_fenced", { instance_uuid: rec.id, host: rec.host, attempt: rec.attempt });
    failed.push(rec.id);
  }
  return failed;
}

/** The SHELVED servers offloaded now: their ids. */
export async function offloadShelved(now: Date): Promise<string[]> {
  const after = moveOptions().shelvedOffloadTime;
  // 0: offloaded as they are shelved; -1: never (only shelveOffload)
  if (after <= 0) return [];
  const due = new Date(now.getTime() - after * 1000).toISOString();
  const offloaded: string[] = [];
  for (const rec of await listInstancesInVmState("shelved")) {
    if (rec.deleted || rec.task_state !== null || !rec.host || !rec.shelve || rec.shelve.at > due) continue;
    const host = await getHost(rec.host);
    if (!host?.queue_url) continue;
    const action: InstanceAction = {
      action: "shelveOffload",
      request_id: `req-${randomUUID()}`,
      user_id: rec.user_id,
      project_id: rec.project_id,
      start_time: now.toISOString(),
      message: `offloaded by the watchdog: shelved_offload_time of ${after}s passed`,
      events: {},
    };
    if (!(await beginAction(rec, "shelving_offloading", action))) continue;
    await castToCompute(host.queue_url, {
      version: 1,
      kind: "shelve_instance",
      op: "offload",
      request_id: action.request_id,
      instance_uuid: rec.id,
      host: rec.host,
      attempt: rec.attempt,
      offload: true,
      image_id: null,
    });
    log.info("watchdog.shelved_offloaded", {
      instance_uuid: rec.id,
      host: rec.host,
      shelved_at: rec.shelve.at,
    });
    offloaded.push(rec.id);
  }
  return offloaded;
}
