// compute-events' registration (Nova's compute service start and _init_instance): the host's
// queues and records, then what it runs reconciled with what the database puts there.
import { ensureQueueWithDlq, type QueueWithDlq } from "../aws/queues.js";
import { computeQueueName, hostSessionName } from "../compute/queue-name.js";
import { resources } from "../config.js";
import { guestSpecFor } from "../instances/guest.js";
import { listDoneEvacuationsFrom, updateMigration } from "../instances/migrations.js";
import { actionOfTask, carriesGuest, POWER_ACTION_NAMES, syncPowerState } from "../instances/power.js";
import { getInstance, listInstancesOnHost } from "../instances/queries.js";
import { SNAPSHOT_TASK_STATES } from "../instances/snapshot.js";
import type { Logger } from "../log.js";
import type { RegisterReport } from "../messages/reports.js";
import { PlacementConflict } from "../placement/capacity.js";
import { release } from "../placement/claims.js";
import { rememberQueueUrl } from "../placement/host-queues.js";
import { registerHost } from "../placement/hosts.js";
import { heartbeat } from "../placement/liveness.js";
import { registerNewHost } from "../placement/registration.js";
import type { Inventory, ResourceClass } from "../placement/types.js";
import { COMPUTE_QUEUE, DLQ_SUFFIX, HOST_TAG } from "../resources.js";
import { canonicalHypervisorType } from "../scheduler/image-props.js";
import { applyBuildReport } from "./build-events.js";
import { castToHost, stopGuest } from "./host-casts.js";
import { evacuatedGuestTerminate } from "./move-events.js";
import { applyUnshelveReport } from "./shelve-events.js";

/** A shelve's, an offload's or an unshelve's task states: their casts, not power actions. */
const SHELVE_TASKS = new Set<string>([
  "shelving",
  "shelving_image_pending_upload",
  "shelving_image_uploading",
  "shelving_offloading",
  "unshelving",
]);

/** Nova's power_state values the sync treats as "not running". */
const POWER_RUNNING = 1;

/** The vm_states whose guests a registering host's list is synced against (Nova's _init_instance). */
const SYNCED_AT_REGISTER = new Set(["active", "stopped", "paused", "suspended"]);

/**
 * Nova's compute service start: the host's queues (created here, never by the host, tagged with
 * its name for the compute role's policy), its provider and service records, then
 * _init_instance for every guest the host runs and every instance the database puts there.
 * Returns the host's queues: its answer tells the host which queue is its own.
 */
export async function register(r: RegisterReport, log: Logger): Promise<QueueWithDlq> {
  const q = await ensureQueueWithDlq(
    computeQueueName(resources().computeQueuePrefix, r.host, DLQ_SUFFIX),
    COMPUTE_QUEUE,
    undefined,
    { [HOST_TAG]: hostSessionName(r.host) },
  );
  rememberQueueUrl(r.host, q.queueUrl);
  const reg = {
    host: r.host,
    availability_zone: r.availability_zone,
    inventories: r.inventories as Partial<Record<ResourceClass, Inventory>>,
    hypervisor_type: r.hypervisor_type,
    hypervisor_version: r.hypervisor_version,
    host_ip: r.host_ip,
    supported_instances: supportedInstances(r.hypervisor_type, r.facts),
    queue_url: q.queueUrl,
    hypervisor_facts: r.facts,
  };
  // A host never seen: its provider, feed entry and first heartbeat in one request; no instance
  // can be placed there yet, so there is nothing in the database to reconcile with.
  let fresh = (await registerNewHost(reg)) !== undefined;
  if (!fresh) {
    try {
      // generation 1: never claimed on since it was created (a claim bumps it): nothing to reconcile
      fresh = (await registerHost(reg, { known: true })).generation === 1;
    } catch (e) {
      // Less than is allocated (Placement's InventoryInUse): as Nova's resource tracker, say so
      // and keep serving on the inventory Placement has, rather than refuse to start.
      if (!(e instanceof PlacementConflict)) throw e;
      log.error("compute_events.inventory_conflict", { error: e, inventories: r.inventories });
    }
    await heartbeat(r.host);
  }
  const actions = await reconcile(r, log, fresh);
  log.info("compute_events.registered", { queue_url: q.queueUrl, guests: r.guests.length, ...actions });
  return q;
}

/**
 * Nova's _init_instance and _destroy_evacuated/unknown guests, from the database's side: a guest
 * no live instance of this host owns is destroyed (a server deleted while its host was away);
 * an instance whose guest is not running is synced as a stopped one (Nova's power-state sync);
 * an interrupted build goes through the failure path; an interrupted power action is sent again.
 */
async function reconcile(r: RegisterReport, log: Logger, fresh: boolean) {
  const expected = fresh ? [] : await listInstancesOnHost(r.host);
  const byId = new Map(expected.map((i) => [i.id, i]));
  const guests = new Map(r.guests.map((g) => [g.instance_uuid, g.power_state]));
  let destroyed = 0;
  // Nova's _destroy_evacuated_instances: what was evacuated away while this host was down goes
  // (the guest if it is still here, then the evacuation's claim on this host).
  const evacuatedAway = new Set<string>();
  // (a fresh host never ran anything, so nothing was evacuated away from it: no read at start-up)
  for (const m of fresh ? [] : await listDoneEvacuationsFrom(r.host)) {
    evacuatedAway.add(m.instance_uuid);
    if (guests.has(m.instance_uuid)) {
      await castToHost(r.host, evacuatedGuestTerminate(r.host, m.instance_uuid, m.uuid), log);
      destroyed++;
    } else await evacuationCleaned(r.host, m.uuid);
  }
  let synced = 0;
  let failed = 0;
  let resent = 0;
  for (const g of r.guests) {
    if (byId.has(g.instance_uuid) || evacuatedAway.has(g.instance_uuid)) continue;
    // A move's other copy (the source's guest until confirm or revert): the record points at one
    // host, the migration at both.
    const moving = (await getInstance(g.instance_uuid))?.migration;
    if (moving && (moving.source_host === r.host || moving.dest_host === r.host)) continue;
    // Deleted (or moved) while the host was away: its claim went with the delete (Nova's local
    // delete); only the guest remains.
    await castToHost(
      r.host,
      {
        version: 1,
        kind: "terminate_instance",
        request_id: `req-init-${g.instance_uuid}`,
        instance_uuid: g.instance_uuid,
        host: r.host,
      },
      log,
    );
    destroyed++;
  }
  for (const inst of expected) {
    const power = guests.get(inst.id) ?? 0;
    if (inst.vm_state === "building") {
      if (inst.task_state !== "spawning" || inst.spawn_attempt !== inst.attempt) continue;
      // The build was spawning here when the host went away.
      const report = {
        version: 1,
        host: r.host,
        sent_at: r.sent_at,
        request_id: inst.request_id,
        instance_uuid: inst.id,
        attempt: inst.attempt,
        started_at: r.sent_at,
        in_flight: 0,
      } as const;
      if (power === POWER_RUNNING) {
        await applyBuildReport({ ...report, kind: "build_succeeded" }, log);
      } else {
        const reason = `the compute service on ${r.host} restarted while the build was spawning`;
        await applyBuildReport({ ...report, kind: "build_failed", reason }, log);
        failed++;
      }
      continue;
    }
    if (inst.unshelve && inst.task_state === "spawning") {
      // An unshelve was spawning here when the host went away: running is done, else it failed.
      await applyUnshelveReport(
        {
          version: 1,
          kind: "unshelve_done",
          host: r.host,
          sent_at: r.sent_at,
          request_id: inst.unshelve.request_id,
          instance_uuid: inst.id,
          unshelve_uuid: inst.unshelve.uuid,
          attempt: inst.attempt,
          started_at: r.sent_at,
          ok: power === POWER_RUNNING,
          details:
            power === POWER_RUNNING
              ? null
              : `the compute service on ${r.host} restarted while the unshelve was spawning`,
          power_state: power as 0,
        },
        log,
        castToHost,
      );
      continue;
    }
    // (a move's or a rebuild's steps, and a shelve's or a snapshot's, are casts still queued for
    // the host, not lost actions: SQS delivers them again)
    if (
      inst.task_state &&
      inst.task_state !== "deleting" &&
      !inst.migration &&
      !inst.rebuild &&
      !SHELVE_TASKS.has(inst.task_state) &&
      !SNAPSHOT_TASK_STATES.has(inst.task_state)
    ) {
      // A power action the host took and lost: send it again (Nova retries it at init).
      const action = actionOfTask(inst.task_state);
      const pending = Object.values(inst.actions)
        .filter((a) => a.action === POWER_ACTION_NAMES[action])
        .sort((a, b) => b.start_time.localeCompare(a.start_time))[0];
      await castToHost(
        r.host,
        {
          version: 1,
          kind: "power_action",
          action,
          ...(action === "reboot"
            ? { reboot_type: inst.task_state.includes("hard") ? ("HARD" as const) : ("SOFT" as const) }
            : {}),
          request_id: pending?.request_id ?? `req-init-${inst.id}`,
          instance_uuid: inst.id,
          host: r.host,
          ...(carriesGuest(action) ? { guest: await guestSpecFor(inst) } : {}),
        },
        log,
      );
      resent++;
      continue;
    }
    if (SYNCED_AT_REGISTER.has(inst.vm_state)) {
      const outcome = await syncPowerState(inst.id, r.host, power, r.sent_at);
      if (outcome === "stop-guest") {
        await stopGuest(r.host, inst.id, log);
      }
      if (outcome !== "ignored") synced++;
    }
  }
  return {
    guests_destroyed: destroyed,
    instances_synced: synced,
    builds_failed: failed,
    actions_resent: resent,
  };
}

/** The source's copy of an evacuated server is gone: its claim there goes, the evacuation is completed. */
export async function evacuationCleaned(host: string, migrationUuid: string): Promise<void> {
  await release(host, migrationUuid);
  await updateMigration(migrationUuid, ["done"], "completed");
}

/**
 * Nova's supported_instances: [architecture, hypervisor type, vm mode], the type canonical
 * (fields.HVType: lower case), as ImagePropertiesFilter compares an image's img_hv_type with it.
 * libvirt reports a triple per domain type its capabilities offer: a kvm host runs qemu (TCG)
 * guests too. A host that said "QEMU" (libvirt's hypervisor name) refused every image asking for
 * qemu, and so every move of a guest whose image carried it.
 */
export function supportedInstances(
  hypervisorType: string,
  facts: Record<string, unknown> | undefined,
): [string, string, string][] {
  const type = canonicalHypervisorType(hypervisorType) ?? hypervisorType;
  const types = facts?.virt_type === "kvm" ? ["kvm", type] : [type];
  return [...new Set(types)].map((t) => ["x86_64", t, "hvm"]);
}
