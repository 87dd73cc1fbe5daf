// The conductor's live migration (Nova's LiveMigrationTask, and the compute manager's
// pre_live_migration → live_migration → post_live_migration_at_destination), through the same
// state machine and claims as a cold move: the API accepts it (task `migrating`, the migration
// `accepted`); select_destinations runs Nova's checks first (liveMigrationChecks, before anything
// is claimed), hands the source's allocation to the migration's consumer and claims the
// destination for the instance (by the scheduler, with the requested host as Nova's
// requested_destination; a forced host is claimed without it); BuildInstances places it and casts
// pre_live_migration to the destination (liveMigrationTask). Each host's report moves it on
// (applyLiveReport): the source copies the guest, the destination takes it over, the source's
// claim goes (no confirm). A failure anywhere fails back to the source (failMove: the
// destination's claim released, the source's allocation the instance's again, the server ACTIVE
// with no task).

import { castToCompute } from "../aws/send.js";
import { fault } from "../instances/faults.js";
import { guestSpecFor } from "../instances/guest.js";
import { liveCompleted, liveMigrated } from "../instances/live-move.js";
import { updateMigration } from "../instances/migrations.js";
import { EVENT_LIVE_MIGRATE, MOVE_EVENTS } from "../instances/move.js";
import { rebindPorts } from "../instances/networking.js";
import { getInstance } from "../instances/queries.js";
import { event, merge, transitionWithEvent } from "../instances/transition.js";
import type { Fault, InstanceRecord, MoveContext } from "../instances/types.js";
import { reportedBy, WORKFLOWS } from "../instances/workflows.js";
import type { Logger } from "../log.js";
import type { LiveMigrationStepMessage } from "../messages/compute.js";
import { powerStateName } from "../messages/power-state.js";
import type { LiveMigrationProgressReport, MoveStepReport } from "../messages/reports.js";
import { claim, release } from "../placement/claims.js";
import { hostQueueUrl } from "../placement/host-queues.js";
import { getHost } from "../placement/hosts.js";
import { isServiceUp } from "../placement/liveness.js";
import type { HostRecord } from "../placement/types.js";
import { resourcesFromFlavor } from "../scheduler/resources.js";
import type { RequestSpec } from "../scheduler/types.js";
import { instanceClaimGroup } from "./alternates.js";
import type { CastToHost } from "./move-events.js";
import { failMove, moveTask, reportEvent } from "./moves.js";
import { causeOf } from "./tasks.js";
import type { MoveRefusedAnswer } from "./types.js";

/** The driver's fact that says whether its guests can move live (os-hypervisors shows it). */
export const LIVE_MIGRATION_FACT = "live_migration";
/** ... and why not, when it cannot. */
export const LIVE_MIGRATION_WHY_FACT = "live_migration_unsupported";

/** A refusal of Nova's checks: its text, and the API's status for it before 2.34. */
export interface LiveCheckFailure {
  message: string;
  code: 400 | 409;
}

/**
 * A refusal of the checks, thrown inside select_destinations' load step and answered by
 * selectDestinations as a MoveRefusedAnswer (a refusal is no function error): the state machine
 * hands it to the conductor's build_failed as $.error, which fails the move with its text
 * (liveRefusalFault). Its name carries the API's status.
 */
export class LiveMigrationRefused extends Error {
  constructor(f: LiveCheckFailure) {
    super(f.message);
    this.name = f.code === 409 ? "LiveMigrationConflict" : "LiveMigrationRefused";
  }

  answer(): MoveRefusedAnswer {
    return {
      hosts: [],
      selections: [],
      refused: { error: this.name as MoveRefusedAnswer["refused"]["error"], message: this.message },
    };
  }
}

/** The fault of a refusal the state machine caught, or undefined for any other error. */
export function liveRefusalFault(error: string | undefined, message: string): Fault | undefined {
  if (error === "LiveMigrationRefused") return fault(message, message, 400);
  if (error === "LiveMigrationConflict") return fault(message, message, 409);
  return undefined;
}

const precheck = (reason: string): LiveCheckFailure => ({
  message: `Migration pre-check error: ${reason}`,
  code: 400,
});

/** The driver cannot move guests live (exec: a process cannot move live). */
export function liveMigrationRefusal(
  host: Pick<HostRecord, "host" | "hypervisor_facts">,
): string | undefined {
  const facts = host.hypervisor_facts ?? {};
  if (facts[LIVE_MIGRATION_FACT] !== false) return undefined;
  const why = facts[LIVE_MIGRATION_WHY_FACT];
  return `host ${host.host} cannot live-migrate${typeof why === "string" ? `: ${why}` : ""}`;
}

/** Nova's _check_compatible_with_source_hypervisor. */
export function hypervisorMismatch(
  source: Pick<HostRecord, "hypervisor_type" | "hypervisor_version">,
  dest: Pick<HostRecord, "hypervisor_type" | "hypervisor_version">,
): LiveCheckFailure | undefined {
  if (source.hypervisor_type.toLowerCase() !== dest.hypervisor_type.toLowerCase())
    return { message: "The supplied hypervisor type of is invalid.", code: 400 };
  if (source.hypervisor_version > dest.hypervisor_version) {
    return {
      message: "The instance requires a newer hypervisor version than has been provided.",
      code: 400,
    };
  }
  return undefined;
}

/**
 * Nova's LiveMigrationTask checks before scheduling (pure): the guest runs or is paused, its
 * host is up and its driver can move it live; a forced destination (2.30 to 2.67, which skips
 * the scheduler's filters) must be another host, up, with the memory and the same hypervisor.
 */
export function liveMigrationPrecheck(
  rec: Pick<InstanceRecord, "id" | "power_state" | "vm_state" | "flavor">,
  move: Pick<MoveContext, "requested_host" | "force" | "source_host">,
  source: HostRecord | undefined,
  dest: HostRecord | undefined,
): LiveCheckFailure | undefined {
  const power = rec.power_state ?? (rec.vm_state === "active" ? 1 : 4);
  if (power !== 1 && power !== 3) {
    return {
      message: `Cannot 'os-migrateLive' instance ${rec.id} while it is in power_state ${powerStateName(power)}`,
      code: 409,
    };
  }
  if (!source || !isServiceUp(source))
    return { message: `Compute service of ${move.source_host} is unavailable at this time.`, code: 400 };
  const refused = liveMigrationRefusal(source);
  if (refused) return precheck(refused);
  const target = move.requested_host;
  if (!target) return undefined;
  if (target === move.source_host) {
    return {
      message: `Unable to migrate instance (${rec.id}) to current host (${target}).`,
      code: 400,
    };
  }
  if (!move.force) return undefined;
  if (!dest || dest.service.deleted_at)
    return { message: `Compute host ${target} could not be found.`, code: 400 };
  if (!isServiceUp(dest))
    return { message: `Compute service of ${target} is unavailable at this time.`, code: 400 };
  const avail = dest.free.MEMORY_MB ?? 0;
  if (avail <= rec.flavor.memory_mb) {
    return precheck(
      `Unable to migrate ${rec.id} to ${target}: Lack of memory(host:${avail} <= instance:${rec.flavor.memory_mb})`,
    );
  }
  const destRefused = liveMigrationRefusal(dest);
  if (destRefused) return precheck(destRefused);
  return hypervisorMismatch(source, dest);
}

/**
 * select_destinations' checks of a live migration, before anything is claimed. A refusal is
 * thrown (LiveMigrationRefused, answered as MoveRefusedAnswer): the conductor then fails the move (migration `error`, the server
 * ACTIVE with no task, the action's event saying why). A forced host is then claimed here for the
 * instance at `attempt`, without the scheduler (Nova's claim_resources_on_destination): the
 * decision finds that claim held. Otherwise the request spec's changes for the scheduler: the
 * destination must run the source's hypervisor (ImagePropertiesFilter's img_hv_type and
 * img_hv_requested_version).
 */
export async function liveMigrationChecks(
  rec: InstanceRecord,
  move: MoveContext,
  spec: Pick<RequestSpec, "image">,
  attempt: number,
  log: Logger,
): Promise<Partial<RequestSpec>> {
  const source = await getHost(move.source_host);
  const dest = move.requested_host && move.force ? await getHost(move.requested_host) : undefined;
  const refused = liveMigrationPrecheck(rec, move, source, dest);
  if (refused) {
    log.info("scheduler.live_migration_refused", { reason: refused.message });
    throw new LiveMigrationRefused(refused);
  }
  if (move.force && move.requested_host) {
    const host = move.requested_host;
    // a forced host still holds the group's policy (Nova's check_can_live_migrate_destination)
    const group = await instanceClaimGroup(rec.id);
    const claimed = await claim(host, rec.id, resourcesFromFlavor(move.new_flavor), attempt, { group });
    if (!claimed.claimed) {
      log.info("scheduler.live_migration_forced_claim_failed", { host, reason: claimed.reason });
      throw new LiveMigrationRefused({
        message: claimed.reason.startsWith("server group ")
          ? `Migration pre-check error: Failed to validate instance group policy due to: ${claimed.reason}`
          : `No valid host was found. Unable to move instance ${rec.id} to host ${host}. There is not enough capacity on the host for the instance.`,
        code: 400,
      });
    }
    return {};
  }
  if (!source) return {};
  return {
    image: {
      ...spec.image,
      properties: {
        ...spec.image.properties,
        img_hv_type: source.hypervisor_type,
        img_hv_requested_version: `>=${versionString(source.hypervisor_version)}`,
      },
    },
  };
}

/** oslo's convert_version_to_str (the filter compares versions as strings of parts). */
function versionString(v: number): string {
  const parts: number[] = [];
  let n = Math.trunc(v);
  while (n > 0) {
    parts.unshift(n % 1000);
    n = Math.trunc(n / 1000);
  }
  return parts.length ? parts.join(".") : "0";
}

const step = (rec: InstanceRecord, move: MoveContext, requestId: string) => ({
  version: 1 as const,
  request_id: requestId,
  instance_uuid: rec.id,
  migration_uuid: move.uuid,
  attempt: move.attempt!,
  same_host: false,
});

/** pre_live_migration, to the destination. */
async function preLiveMigration(rec: InstanceRecord, requestId: string): Promise<LiveMigrationStepMessage> {
  const move = rec.migration!;
  return {
    ...step(rec, move, requestId),
    kind: "pre_live_migration",
    host: move.dest_host!,
    guest: await guestSpecFor(rec),
  };
}

/** live_migration, to the source. */
async function liveMigration(rec: InstanceRecord, requestId: string): Promise<LiveMigrationStepMessage> {
  const move = rec.migration!;
  const dest = await getHost(move.dest_host!);
  return {
    ...step(rec, move, requestId),
    kind: "live_migration",
    host: move.source_host,
    dest: move.dest_host!,
    dest_ip: dest?.host_ip ?? move.dest_host!,
    block_migration: move.block_migration ?? null,
  };
}

/** post_live_migration_at_destination. */
async function postAtDestination(rec: InstanceRecord, requestId: string): Promise<LiveMigrationStepMessage> {
  const move = rec.migration!;
  return {
    ...step(rec, move, requestId),
    kind: "post_live_migration_at_destination",
    host: move.dest_host!,
    guest: await guestSpecFor(rec),
    ...(rec.vm_state === "paused" ? { paused: true } : {}),
  };
}

/**
 * A live migration's task: placed as a cold move is (the destination select_destinations claimed
 * recorded as the move's, its attempt the fencing token), then the migration `queued` then
 * `preparing`, and pre_live_migration cast to the destination. A repeated step finds it placed
 * already and casts again (the destination's preparation is idempotent). A refusal of the checks
 * fails it with Nova's text.
 */
export const liveMigrationTask = moveTask(
  "move",
  EVENT_LIVE_MIGRATE,
  async (req, now, { selected }, n, log) => {
    const move = now.migration!;
    // (a scheduler without ImagePropertiesFilter may pick another hypervisor: Nova checks after it)
    const [source, dest] = await Promise.all([getHost(move.source_host), getHost(selected.host)]);
    const mismatch = source && dest ? hypervisorMismatch(source, dest) : undefined;
    if (mismatch || move.abort_requested) {
      const text = mismatch?.message ?? `Live migration of instance ${now.id} was aborted.`;
      await failMove(now, fault(text, text, mismatch?.code ?? 400), log, {
        attempt: n,
        status: mismatch ? "error" : "cancelled",
      });
      return undefined;
    }
    const where = { dest_compute: selected.host, dest_node: selected.nodename, dest_host: selected.host };
    await updateMigration(move.uuid, ["accepted"], "queued", where);
    await updateMigration(move.uuid, ["queued"], "preparing");
    return preLiveMigration(now, req.request_id);
  },
  (error) => liveRefusalFault(error?.Error, causeOf(error).message),
);

const LIVE_STEPS: ReadonlySet<string> = new Set([
  "pre_live_migration",
  "live_migration",
  "post_live_migration_at_destination",
]);

export function isLiveMigrationStep(s: string): boolean {
  return LIVE_STEPS.has(s);
}

/**
 * compute-events: a host's report of a live migration's step, for the move the record is in
 * (move-events.ts fenced the rest). Each write is fenced by the host the step must come from and
 * the move's attempt; a repeated report repeats only what is idempotent.
 */
export async function applyLiveReport(
  r: MoveStepReport,
  rec: InstanceRecord,
  move: MoveContext,
  log: Logger,
  cast: CastToHost,
): Promise<void> {
  const ref = { id: rec.id, request_id: r.request_id };
  const ev = (ok: boolean) => reportEvent(r, ok);
  if (move.attempt !== r.attempt) {
    log.info("compute_events.move_report_fenced", { current_attempt: move.attempt });
    return;
  }
  const failed = async (text: string, status: "failed" | "cancelled") => {
    const closed = await failMove(rec, fault(text, r.details ? `${text}: ${r.details}` : text), log, {
      event: ev(false),
      status,
    });
    if (closed) await rollbackAtDestination(rec.id, move, r.request_id, log);
  };
  switch (r.step) {
    case "pre_live_migration": {
      if (r.host !== move.dest_host || rec.host !== move.source_host) return;
      if (!r.ok) {
        await failed(
          `Live migration of instance ${rec.id} failed: its destination could not prepare`,
          "failed",
        );
        return;
      }
      if (move.abort_requested) {
        await failed(`Live migration of instance ${rec.id} was aborted`, "cancelled");
        return;
      }
      // the event, fenced as the step; the source's turn (again, on a redelivery: it dedups)
      await transitionWithEvent(
        ref,
        ev(true),
        merge(
          reportedBy(WORKFLOWS.move, move.uuid, {
            host: r.host,
            field: "migration.dest_host",
            attempt: r.attempt,
          }),
          {
            set: [],
            condition: "task_state = :migrating",
            values: { ":migrating": "migrating" },
          },
        ),
      );
      await updateMigration(move.uuid, ["preparing"], "running");
      const msg = await liveMigration(rec, r.request_id);
      await cast(msg.host, msg, log);
      log.info("compute_events.live_migration_prepared", { host: r.host });
      return;
    }
    case "live_migration": {
      if (r.host !== move.source_host) return;
      // (a failure reported after the guest landed, by a restarted source that lost it, is stale)
      if (!r.ok && rec.host !== move.source_host) return;
      if (!r.ok) {
        const now = await getInstance(rec.id);
        const aborted = now?.migration?.abort_requested === true;
        await failed(
          aborted
            ? `Live migration of instance ${rec.id} was aborted`
            : `Live migration of instance ${rec.id} failed on its source host`,
          aborted ? "cancelled" : "failed",
        );
        return;
      }
      const done = await liveMigrated(ref, move, r.host, r.attempt, ev(true));
      if (done) await rebindPorts(done);
      const now = done ?? (await getInstance(rec.id));
      if (now?.migration?.uuid !== move.uuid || now.host !== move.dest_host) return;
      // the guest left the source: its space goes (Nova's _post_live_migration; no confirm)
      await release(move.source_host, move.uuid);
      const msg = await postAtDestination(now, r.request_id);
      await cast(msg.host, msg, log);
      log.info("compute_events.live_migrated", { applied: Boolean(done), dest: move.dest_host });
      return;
    }
    case "post_live_migration_at_destination": {
      if (r.host !== move.dest_host) return;
      if (!r.ok) {
        // the guest runs there already (the source let it go): it stays, and an operator looks
        log.error("compute_events.post_live_migration_failed", { details: r.details });
        return;
      }
      await release(move.source_host, move.uuid);
      const done = await liveCompleted(ref, move, r.host, r.attempt, r.power_state, ev(true));
      if (done) await updateMigration(move.uuid, ["running"], "completed");
      log.info("compute_events.live_migration_completed", { applied: Boolean(done), host: r.host });
      return;
    }
  }
}

/** compute-events: a running live migration's progress on its record (server_migrations' fields). */
export async function applyLiveProgress(r: LiveMigrationProgressReport, log: Logger): Promise<void> {
  const rec = await getInstance(r.instance_uuid);
  const move = rec?.migration;
  if (!move || move.uuid !== r.migration_uuid || move.attempt !== r.attempt || move.source_host !== r.host)
    return;
  const applied = await updateMigration(move.uuid, ["running"], "running", {
    memory_total_bytes: r.memory_total_bytes,
    memory_processed_bytes: r.memory_processed_bytes,
    memory_remaining_bytes: r.memory_remaining_bytes,
  });
  log.debug("compute_events.live_migration_progress", { applied, remaining: r.memory_remaining_bytes });
}

/**
 * The watchdog's look at a live migration: the host it waits on is down, or it made no progress
 * (its record's updated_at, which each progress report moves) within `timeout`. Before the
 * source let the guest go it fails back there; after, the destination's step is cast again.
 */
export async function watchLiveMigration(
  rec: InstanceRecord,
  status: string,
  ageSeconds: number,
  timeout: number,
  isUp: (host: string | null) => boolean,
  log: Logger,
  castToHost: (host: string, msg: LiveMigrationStepMessage) => Promise<void>,
): Promise<{ action: "failed" | "recast"; reason: string } | undefined> {
  const move = rec.migration!;
  const landed = rec.host === move.dest_host && move.dest_host !== null;
  if (landed) {
    if (ageSeconds <= timeout || !isUp(move.dest_host)) return undefined;
    await castToHost(move.dest_host!, await postAtDestination(rec, move.request_id ?? rec.request_id));
    await updateMigration(move.uuid, ["running"], "running");
    return { action: "recast", reason: "post_live_migration_at_destination had no answer" };
  }
  const waitsOn = status === "accepted" ? null : status === "running" ? move.source_host : move.dest_host;
  const down = !isUp(waitsOn);
  if (!down && ageSeconds <= timeout) return undefined;
  const reason = down
    ? "its host is down (no heartbeat within service_down_time, or forced down)"
    : `it made no progress within ${timeout}s`;
  const text = `Live migration of instance ${rec.id} failed: ${reason}`;
  const stepName =
    status === "running" ? "live_migration" : status === "accepted" ? undefined : "pre_live_migration";
  const f: Fault = fault(text, `${text} (waiting on ${waitsOn ?? "the conductor"})`);
  const failed = await failMove(rec, f, log, {
    ...(stepName && move.attempt
      ? { event: event(MOVE_EVENTS[stepName], move.attempt, "Error", waitsOn, f.details, new Date()) }
      : {}),
    status: status === "accepted" ? "error" : "failed",
  });
  if (failed && status !== "accepted" && isUp(move.dest_host))
    await rollbackAtDestination(rec.id, move, move.request_id ?? rec.request_id, log);
  return failed ? { action: "failed", reason } : undefined;
}

/**
 * Nova's rollback_live_migration_at_destination: what the destination prepared goes (its files;
 * a guest it never took over). A terminate without a claim to give back: compute-events only
 * notes the guest gone. Best effort: a destination that cannot be reached keeps nothing that
 * runs, and its next start finds no guest of it.
 */
async function rollbackAtDestination(
  instanceUuid: string,
  move: MoveContext,
  requestId: string,
  log: Logger,
): Promise<void> {
  if (!move.dest_host) return;
  const url = await hostQueueUrl(move.dest_host);
  if (!url) return;
  await castToCompute(url, {
    version: 1,
    kind: "terminate_instance",
    request_id: requestId,
    instance_uuid: instanceUuid,
    host: move.dest_host,
  }).catch((e: unknown) => log.warn("conductor.live_migration_rollback_not_cast", { error: e }));
}
