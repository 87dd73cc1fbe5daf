// The soak: the local runtime under random load and random faults, then a check that nothing
// is stuck, overcommitted or leaked. `npm run soak -- --minutes M --seed S`; exits non-zero when
// a must-be-zero figure is not zero. A run of about a minute with a fixed seed is part of `npm test`.
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { GetQueueAttributesCommand } from "@aws-sdk/client-sqs";
import { sqsClient } from "../../lib/aws/clients.js";
import { listDeadLetterQueues, peekDeadLetters } from "../../lib/aws/dead-letters.js";
import { resources } from "../../lib/config.js";
import { listMigrations, OPEN_MIGRATION_STATUSES } from "../../lib/instances/migrations.js";
import { listInstances } from "../../lib/instances/queries.js";
import { countsInQuota } from "../../lib/instances/quota-release.js";
import type { InstanceRecord } from "../../lib/instances/types.js";
import { listBuilding } from "../../lib/instances/watch.js";
import { setLogFormat } from "../../lib/log.js";
import { addressHolder } from "../../lib/network/store/addresses.js";
import { listPorts } from "../../lib/network/store/table.js";
import { listAllocations } from "../../lib/placement/allocations.js";
import { auditPlacement } from "../../lib/placement/audit.js";
import { listHosts } from "../../lib/placement/hosts.js";
import { capacity, type HostRecord, type Inventory } from "../../lib/placement/types.js";
import { deltaOf } from "../../lib/quotas/quotas.js";
import { getUsage } from "../../lib/quotas/store.js";
import { seededRandom } from "../../lib/scheduler/scenario.js";
import { type Runtime, startRuntime } from "../../local/runtime.js";

export interface SoakOptions {
  minutes: number;
  seed: number;
  hosts?: number;
  /** seconds to wait for quiescence after the load stops */
  settleSeconds?: number;
  log?: (line: string) => void;
  /** the functions and dynalite in threads of their own, as `npm start` runs them */
  threads?: boolean;
  /**
   * "libvirt": real QEMU guests of the seeded novaless-guest image on libvirt hosts (root; as
   * `npm start -- --driver libvirt`), small flavors only, and cirros (no image data) as the
   * image every host fails to boot; no black-hole host (a libvirt host cannot be told to fail).
   */
  driver?: "fake" | "libvirt";
  /**
   * [DEFAULT] reclaim_instance_interval, seconds (5 unless said): a delete of an idle server leaves
   * it SOFT_DELETED, its claim and port held, until the watchdog reclaims it; the load restores or
   * force-deletes some. 0: every delete is at once.
   */
  reclaimSeconds?: number;
}

export interface SoakReport {
  seed: number;
  /** every create, delete and move request */
  requests: number;
  creates: number;
  instances: number;
  active: number;
  error_by_reason: Record<string, number>;
  deleted: number;
  /** move requests made and how they were answered (202/204 accepted, 4xx refused as the state changed) */
  moves: Record<MoveRequest, { accepted: number; refused: number }>;
  /** deletes of servers in the middle of a move (RESIZE, REVERT_RESIZE) or in VERIFY_RESIZE */
  deleted_moving: number;
  deleted_verify_resize: number;
  /** VERIFY_RESIZE left at the end of the load, confirmed or reverted before the final checks */
  settled_verify_resize: number;
  /** migrations in error, by why: the fault the failed move left, or the server's delete */
  failed_moves: Record<string, number>;
  /** migration records at the end, by status */
  migrations_by_status: Record<string, number>;
  host_kills: number;
  /** outages of the report path: compute-events' URL refusing every report, heartbeats included */
  report_outages: number;
  /** live hosts' agents restarted (memory lost, spool kept), some in the middle of an outage */
  host_restarts: number;
  /** seconds from the end of the load until quiet (both settlings, the VERIFY_RESIZEs settled between) */
  settle_seconds: number;
  /** DynamoDB requests the gateway answered ProvisionedThroughputExceededException */
  dynamodb_throttles: number;
  stuck_in_build: number;
  /** live instances left with a task state (resize_* counted apart), or still inside a move */
  stuck_task_state: number;
  stuck_resize_task_state: number;
  moves_in_progress: number;
  /** migration records not in a final status (confirmed, reverted, error) */
  open_migrations: number;
  /** usage checks of every host, during the load and the settling, and at the end */
  overcommit_checks: number;
  /** (check, host) pairs whose usage passed capacity in some resource class */
  overcommitted_hosts: number;
  /**
   * allocations that do not belong to a live instance on its record's host at its attempt
   * (nothing may be in progress at the end, so a migration's consumer counts too)
   */
  leaked_claims: number;
  leaked_migration_claims: number;
  /** the placement audit's findings (it knows migration consumers) */
  audit_findings: number;
  missing_claims: number;
  /** per project and counted resource, usage that differs from what its live servers' flavors count */
  quota_mismatches: number;
  /** instances whose guest is defined on more than one host */
  double_builds: number;
  /** guests defined on a host their instance's record does not name (or of a deleted instance) */
  guests_off_record: number;
  /**
   * ports a build made (device_owner compute:*) whose server is gone, ports a live server names
   * that are missing or bound elsewhere, and addresses not held by the port that shows them
   */
  leaked_ports: number;
  /** the ports checked at the end (the seeded network public gives every server one) */
  ports_checked: number;
  /** servers seen SOFT_DELETED during the load (deleted with reclaim_instance_interval set) */
  soft_deleted_seen: number;
  /** SOFT_DELETED servers left after the settling: each must have been reclaimed */
  unreclaimed: number;
  dead_letters: { queue: string; reason: string }[];
  problems: string[];
}

const ADMIN = { "x-auth-token": "admin-token", "content-type": "application/json" };
const DEMO = { "x-auth-token": "demo-token", "content-type": "application/json" };
const FLAVORS = ["1", "2", "3", "4"];

type MoveRequest =
  | "resize"
  | "migrate"
  | "migrate_host"
  | "confirmResize"
  | "revertResize"
  // the rest of a server's life (issue 21): unshelve of an offloaded server goes through the conductor
  | "pause"
  | "unpause"
  | "shelve"
  | "unshelve"
  // a SOFT_DELETED server brought back, or deleted before its reclaim
  | "restore"
  | "forceDelete";

export async function runSoak(opts: SoakOptions): Promise<SoakReport> {
  const random = seededRandom(opts.seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const say = opts.log ?? (() => {});
  // a soak with its own log (npm run soak, SOAK_LOG=1) shows the product's lines as a person reads them
  if (opts.log) setLogFormat("human");
  const hostCount = opts.hosts ?? 12;
  const reclaimSeconds = opts.reclaimSeconds ?? 5;
  const libvirt = opts.driver === "libvirt";
  // a real guest's memory is this machine's: the two smallest flavors
  const flavors = libvirt ? FLAVORS.slice(0, 2) : FLAVORS;
  const starting = Date.now();
  const runtime: Runtime = await startRuntime({
    port: 0,
    threads: opts.threads,
    // every server gets a port on public: its ports are checked at the end with the claims
    seedNetwork: true,
    hosts: hostCount,
    ...(libvirt
      ? { driver: "libvirt" as const, transport: "long-poll" as const }
      : {
          buildMs: 300,
          failHosts: [`host-${hostCount}`], // a "black hole" host that fails every build
        }),
    heartbeatSeconds: 1,
    watchdogIntervalMs: 1000,
    env: {
      // the soak's demo project creates far more than Nova's default instance quota
      NOVALESS_QUOTA_INSTANCES: "-1",
      NOVALESS_QUOTA_CORES: "-1",
      NOVALESS_QUOTA_RAM: "-1",
      NOVALESS_SERVICE_DOWN_TIME: "4",
      NOVALESS_INSTANCE_BUILD_TIMEOUT: "15",
      NOVALESS_RECLAIM_INSTANCE_INTERVAL: String(reclaimSeconds),
      NOVALESS_LOG_LEVEL: process.env.NOVALESS_LOG_LEVEL ?? "error",
    },
    faults: {
      random,
      schedulerFailureRate: 0.05,
      dynamodbThrottleRate: 0.02,
      duplicateHostMessageRate: 0.1,
      maxHostMessageDelaySeconds: 2,
    },
  });
  say(`runtime started in ${Math.round((Date.now() - starting) / 1000)} s`);
  const api = async (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = DEMO,
  ) => {
    const r = await fetch(`${runtime.url}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : {} };
  };

  const report: SoakReport = {
    seed: opts.seed,
    requests: 0,
    creates: 0,
    instances: 0,
    active: 0,
    error_by_reason: {},
    deleted: 0,
    moves: {
      resize: { accepted: 0, refused: 0 },
      migrate: { accepted: 0, refused: 0 },
      migrate_host: { accepted: 0, refused: 0 },
      confirmResize: { accepted: 0, refused: 0 },
      revertResize: { accepted: 0, refused: 0 },
      pause: { accepted: 0, refused: 0 },
      unpause: { accepted: 0, refused: 0 },
      shelve: { accepted: 0, refused: 0 },
      unshelve: { accepted: 0, refused: 0 },
      restore: { accepted: 0, refused: 0 },
      forceDelete: { accepted: 0, refused: 0 },
    },
    deleted_moving: 0,
    deleted_verify_resize: 0,
    settled_verify_resize: 0,
    migrations_by_status: {},
    failed_moves: {},
    host_kills: 0,
    report_outages: 0,
    host_restarts: 0,
    settle_seconds: 0,
    dynamodb_throttles: 0,
    stuck_in_build: 0,
    stuck_task_state: 0,
    stuck_resize_task_state: 0,
    moves_in_progress: 0,
    open_migrations: 0,
    overcommit_checks: 0,
    overcommitted_hosts: 0,
    leaked_claims: 0,
    leaked_migration_claims: 0,
    audit_findings: 0,
    missing_claims: 0,
    quota_mismatches: 0,
    double_builds: 0,
    guests_off_record: 0,
    leaked_ports: 0,
    ports_checked: 0,
    soft_deleted_seen: 0,
    unreclaimed: 0,
    dead_letters: [],
    problems: [],
  };
  // No host's usage above its capacity, at every check (not only at the end).
  const checkOvercommit = (hosts: HostRecord[], when: string) => {
    report.overcommit_checks++;
    for (const h of hosts) {
      const over = Object.entries(h.inventories).filter(
        ([rc, inv]) => (h.usage[rc as keyof typeof h.usage] ?? 0) > capacity(inv as Inventory),
      );
      if (over.length) {
        report.overcommitted_hosts++;
        report.problems.push(
          `overcommitted ${h.host} ${when}: ${over.map(([rc]) => `${rc} ${h.usage[rc as keyof typeof h.usage]}`).join(", ")}`,
        );
      }
    }
  };
  let nextCheck = 0;
  const maybeCheckOvercommit = async (when: string) => {
    if (Date.now() < nextCheck) return;
    nextCheck = Date.now() + 2000;
    checkOvercommit(await listHosts(), when);
  };
  /** A move action; 4xx answers are the state having changed since it was read (a race, counted). */
  const moveAction = async (
    id: string,
    kind: MoveRequest,
    body: unknown,
    headers: Record<string, string> = DEMO,
  ) => {
    const r = await api("POST", `/v2.1/servers/${id}/action`, body, headers);
    report.requests++;
    const ok = r.status === 202 || r.status === 204;
    if (ok) report.moves[kind].accepted++;
    else if (r.status === 400 || r.status === 404 || r.status === 409) report.moves[kind].refused++;
    else report.problems.push(`${kind} ${id} answered ${r.status}: ${JSON.stringify(r.body)}`);
    return ok;
  };
  // servers deleted during the load while reclaim_instance_interval is set: SOFT_DELETED for a
  // while (unless deleted at once: mid-move, never launched, host down), until reclaimed
  const deletedIds = new Set<string>();
  const softSeen = new Set<string>();
  const deleteServer = async (id: string) => {
    const r = await api("DELETE", `/v2.1/servers/${id}`);
    report.requests++;
    if (r.status === 204) report.deleted++;
    if (r.status === 204 && reclaimSeconds > 0) deletedIds.add(id);
    else if (r.status !== 404) report.problems.push(`delete ${id} answered ${r.status}`);
    return r.status === 204;
  };
  try {
    const groups: string[] = [];
    for (const policy of ["anti-affinity", "soft-anti-affinity", "soft-affinity", "affinity"]) {
      const g = await api(
        "POST",
        "/v2.1/os-server-groups",
        { server_group: { name: `soak-${policy}`, policy } },
        { ...DEMO, "OpenStack-API-Version": "compute 2.64" },
      );
      if (g.status === 200) groups.push(g.body.server_group.id);
      else
        report.problems.push(
          `could not create a ${policy} server group: ${g.status} ${JSON.stringify(g.body)}`,
        );
    }
    const live: string[] = [];
    const dead = new Map<string, number>(); // host → when to restart it
    const moving = new Map<string, string>(); // server → its source host, for moves accepted
    const deleteAt = new Map<string, number>(); // server → when to delete it, mid-move
    const hostNames = [...runtime.hosts.keys()];
    const shelvedIds = new Set<string>(); // servers shelved during the load, until unshelved

    const forget = (id: string) => {
      shelvedIds.delete(id);
      const i = live.indexOf(id);
      if (i >= 0) live.splice(i, 1);
      moving.delete(id);
      deleteAt.delete(id);
    };
    /**
     * One move step on a server, by the state an admin reads: an ACTIVE one is resized (up or
     * down among the seeded flavors) or cold-migrated (from 2.56 sometimes to a named host), and
     * sometimes deleted soon after, mid-move; one in VERIFY_RESIZE is confirmed, reverted or
     * deleted; one in RESIZE or REVERT_RESIZE is sometimes deleted.
     */
    const moveStep = async (id: string) => {
      const got = await api("GET", `/v2.1/servers/${id}`, undefined, ADMIN);
      if (got.status !== 200) {
        deletedIds.delete(id);
        return;
      }
      const s = got.body.server;
      const host: string | null = s["OS-EXT-SRV-ATTR:host"];
      if (s.status === "SOFT_DELETED") {
        // restored (back among the live ones) or deleted now, before the watchdog reclaims it
        softSeen.add(id);
        // the first restored, the next force-deleted, then either: both run however few steps a
        // busy machine lets through before the reclaim
        const { restore, forceDelete } = report.moves;
        if (!restore.accepted || (forceDelete.accepted > 0 && random() < 0.6)) {
          if (await moveAction(id, "restore", { restore: null })) {
            deletedIds.delete(id);
            live.push(id);
          }
        } else if (await moveAction(id, "forceDelete", { forceDelete: null })) deletedIds.delete(id);
      } else if (deletedIds.has(id)) {
        // deleted at once, or its soft delete still under way: nothing to do with it
        return;
      } else if (s.status === "ACTIVE" && host && (!report.moves.pause.accepted || random() < 0.2)) {
        // pause or shelve (shelved_offload_time 0: offloaded at once, its claim freed)
        if (!report.moves.pause.accepted || random() < 0.5) await moveAction(id, "pause", { pause: null });
        else if (await moveAction(id, "shelve", { shelve: null })) shelvedIds.add(id);
      } else if (s.status === "PAUSED") {
        if (!report.moves.shelve.accepted || random() < 0.4) {
          if (await moveAction(id, "shelve", { shelve: null })) shelvedIds.add(id);
        } else await moveAction(id, "unpause", { unpause: null });
      } else if (s.status === "SHELVED_OFFLOADED" || s.status === "SHELVED") {
        if (await moveAction(id, "unshelve", { unshelve: null })) shelvedIds.delete(id);
      } else if (s.status === "ACTIVE" && host) {
        // each kind at least once, however little load a busy machine lets through
        const r = !report.moves.resize.accepted ? 0 : !report.moves.migrate.accepted ? 0.7 : random();
        let ok: boolean;
        if (r < 0.6) {
          const flavorRef = pick(flavors.filter((f) => f !== s.flavor.id));
          ok = await moveAction(id, "resize", { resize: { flavorRef } });
        } else if (r < 0.85) {
          ok = await moveAction(id, "migrate", { migrate: null }, ADMIN);
        } else {
          const to = pick(hostNames.filter((h) => h !== host));
          ok = await moveAction(
            id,
            "migrate_host",
            { migrate: { host: to } },
            {
              ...ADMIN,
              "OpenStack-API-Version": "compute 2.56",
            },
          );
        }
        if (ok) {
          moving.set(id, host);
          // until one delete has landed mid-move, every accepted move has one due unless one is
          // pending: another path (a random delete, a failed move) may take the server first, and
          // a loaded machine lets few moves through
          if ((!report.deleted_moving && deleteAt.size === 0) || random() < 0.3)
            deleteAt.set(id, Date.now() + random() * 1500);
        }
      } else if (s.status === "VERIFY_RESIZE") {
        const r = !report.moves.confirmResize.accepted
          ? 0
          : !report.moves.revertResize.accepted
            ? 0.5
            : random();
        if (r < 0.45) await moveAction(id, "confirmResize", { confirmResize: null });
        else if (r < 0.85) await moveAction(id, "revertResize", { revertResize: null });
        else {
          forget(id);
          if (await deleteServer(id)) report.deleted_verify_resize++;
        }
      } else if ((s.status === "RESIZE" || s.status === "REVERT_RESIZE") && random() < 0.3) {
        forget(id);
        if (await deleteServer(id)) report.deleted_moving++;
      }
    };
    const until = Date.now() + opts.minutes * 60_000;
    // No new host deaths in the load's last 10 s: a step a dead host had taken comes back only
    // after its queue's visibility timeout, which the settling would otherwise wait out (moves
    // give the hosts more such steps; the suite's budget has no room for that wait).
    const killsUntil = until - 10_000;
    // a host dies at least once however few steps a busy machine lets through: past half the
    // killing window without one, the next step kills (ci44's soak made 74 requests and no kill)
    const killBy = Date.now() + (killsUntil - Date.now()) / 2;
    // An outage of the report path (longer than service_down_time: the watchdog must hold, not
    // evacuate) and a live host's agent restarted (its memory lost, its spool kept), each at least
    // once by the same rule as kills: the first outage by a third of the window, a restart by two.
    const outageBy = Date.now() + (killsUntil - Date.now()) / 3;
    const restartBy = Date.now() + ((killsUntil - Date.now()) * 2) / 3;
    let outageEnds = 0;
    // a restart waits for its registration, which waits out an outage: not awaited in the loop
    const restarting = new Map<string, Promise<void>>();
    while (Date.now() < until) {
      const window = Date.now() < killsUntil;
      const overdue = report.host_kills === 0 && Date.now() >= killBy && window;
      const outageDue = report.report_outages === 0 && Date.now() >= outageBy && window;
      const restartDue = report.host_restarts === 0 && Date.now() >= restartBy && window;
      const roll = overdue ? 0.62 : outageDue ? 0.645 : restartDue ? 0.665 : random();
      if (roll < 0.42) {
        const multi = random() < 0.15;
        const count = multi ? 2 + Math.floor(random() * 2) : 1;
        const hints: Record<string, unknown> = {};
        if (groups.length && random() < 0.2) hints.group = pick(groups);
        const server = {
          name: `soak-${report.requests}`,
          flavorRef: pick(libvirt ? ["1", "1", "2"] : ["1", "1", "2", "2", "3", "4"]),
          imageRef: libvirt
            ? random() < 0.05
              ? "cirros"
              : "novaless-guest"
            : random() < 0.05
              ? "broken"
              : pick(["cirros", "ubuntu"]),
          ...(libvirt ? { config_drive: true } : {}),
          min_count: count,
          max_count: count,
          // Nova answers a multi-create's first server only; its reservation tells them all
          return_reservation_id: count > 1,
          ...(random() < 0.4 ? { availability_zone: pick(["az1", "az2"]) } : {}),
        };
        const r = await api("POST", "/v2.1/servers", { server, "os:scheduler_hints": hints });
        report.requests++;
        report.creates++;
        if (r.status === 202) {
          const list = await api("GET", `/v2.1/servers?reservation_id=${r.body.reservation_id ?? ""}`);
          const ids: string[] = r.body.reservation_id
            ? list.body.servers.map((s: { id: string }) => s.id)
            : [r.body.server.id];
          live.push(...ids);
          report.instances += ids.length;
        } else if (r.status >= 500) {
          report.problems.push(`create answered ${r.status}: ${JSON.stringify(r.body)}`);
        }
      } else if (roll < 0.6 && live.length) {
        const id = pick(live);
        forget(id);
        await deleteServer(id);
      } else if (roll < 0.64 && dead.size < hostCount / 4 && Date.now() < killsUntil) {
        // half the time the source of a move accepted earlier (it may be mid-move, or back there)
        const up = (h: string) => !dead.has(h) && !restarting.has(h);
        const sources = [...moving.values()].filter(up);
        const victim = sources.length && random() < 0.5 ? pick(sources) : pick(hostNames.filter(up));
        await runtime.killHost(victim);
        dead.set(victim, Date.now() + 3000 + random() * 8000);
        report.host_kills++;
        say(`killed ${victim}`);
      } else if (roll < 0.65 && window && Date.now() >= outageEnds) {
        const seconds = 5 + Math.floor(random() * 4);
        runtime.refuseComputeEvents(seconds);
        outageEnds = Date.now() + seconds * 1000;
        report.report_outages++;
        say(`compute-events refuses reports for ${seconds} s`);
      } else if (roll < 0.67 && window) {
        const host = pick(hostNames.filter((h) => !dead.has(h) && !restarting.has(h)));
        restarting.set(
          host,
          runtime.restartHost(host).finally(() => restarting.delete(host)),
        );
        report.host_restarts++;
        say(`restarting ${host}${Date.now() < outageEnds ? " during an outage" : ""}`);
      } else if (roll < 0.92 && live.length) {
        // a shelved server is unshelved at least once, however few steps a busy machine lets through;
        // a deleted one is looked at (restored or force-deleted) until each has been, then at times
        const shelf = !report.moves.unshelve.accepted ? [...shelvedIds][0] : undefined;
        const deleted = [...deletedIds];
        const soft =
          deleted.length &&
          (!report.moves.restore.accepted || !report.moves.forceDelete.accepted || random() < 0.25)
            ? pick(deleted)
            : undefined;
        await moveStep(shelf ?? soft ?? pick(live));
      }
      for (const [id, at] of deleteAt) {
        if (Date.now() < at) continue;
        forget(id);
        if (await deleteServer(id)) report.deleted_moving++;
      }
      await maybeCheckOvercommit("during the load");
      for (const [host, at] of dead) {
        if (Date.now() >= at) {
          await runtime.restartHost(host);
          dead.delete(host);
          say(`restarted ${host}`);
        }
      }
      await sleep(50 + random() * 150);
    }
    for (const host of dead.keys()) await runtime.restartHost(host);
    await Promise.all(restarting.values());
    // the deletes still due: they land mid-move now
    for (const id of [...deleteAt.keys()]) {
      forget(id);
      if (await deleteServer(id)) report.deleted_moving++;
    }
    say(`load stopped after ${report.requests} requests; waiting for quiescence`);

    // Quiescence: nothing left in BUILD (the watchdog and the failure loop finish the rest),
    // nothing left to do in any queue (a terminate a killed host had taken comes back to its
    // successor after the host queue's visibility timeout), and no live server with a task in
    // progress (a move between its steps, a revert, a failed move's source starting its guest).
    const settleBy = Date.now() + (opts.settleSeconds ?? 120) * 1000;
    const queues = [resources().buildRequestsQueueUrl, ...(await listHosts()).map((h) => h.queue_url)];
    // Each kind of move at least once however little load a busy machine let through, each on a
    // quiet server of its own, in this order: confirm and revert (a resize each, which the
    // settling below confirms (the first) or reverts (the next)); pause; shelve (offloaded at once;
    // the settling unshelves a shelved one if none was, and shelves again when the one shelved
    // during the load was deleted first); a cold migration (ci47's loaded soak accepted resizes
    // but asked no migrate; confirmed or reverted by the settling as any VERIFY_RESIZE); a delete
    // mid-move (a resize, deleted as soon as it is accepted).
    const quiet = (await listInstances()).filter(
      (r) => r.vm_state === "active" && r.task_state === null && !r.migration && r.host,
    );
    const resizeOf = (r: InstanceRecord) =>
      moveAction(r.id, "resize", { resize: { flavorRef: pick(flavors.filter((f) => f !== r.flavor.id)) } });
    const onShelf = (await listInstances()).some((r) => r.vm_state.startsWith("shelved"));
    const fallbacks: ((r: InstanceRecord) => Promise<unknown>)[] = [
      ...(["confirmResize", "revertResize"] as const)
        .filter((k) => !report.moves[k].accepted)
        .map(() => resizeOf),
      ...(report.moves.pause.accepted
        ? []
        : [(r: InstanceRecord) => moveAction(r.id, "pause", { pause: null })]),
      ...(!report.moves.shelve.accepted || (!report.moves.unshelve.accepted && !onShelf)
        ? [(r: InstanceRecord) => moveAction(r.id, "shelve", { shelve: null })]
        : []),
      ...(report.moves.migrate.accepted
        ? []
        : [(r: InstanceRecord) => moveAction(r.id, "migrate", { migrate: null }, ADMIN)]),
      ...(report.deleted_moving + report.deleted_verify_resize > 0
        ? []
        : [
            async (r: InstanceRecord) => {
              if ((await resizeOf(r)) && (await deleteServer(r.id))) report.deleted_moving++;
            },
          ]),
    ];
    for (const [i, fallback] of fallbacks.entries()) if (quiet[i]) await fallback(quiet[i]);
    let building = await listBuilding();
    let pending = 0;
    let busy: InstanceRecord[] = [];
    const settleFrom = Date.now();
    let lastWait = "";
    // Nothing may be in progress at the end: every VERIFY_RESIZE is confirmed or reverted as soon
    // as the settling sees it (alongside the builds still finishing, to keep within the budget).
    const settle = async () => {
      for (;;) {
        building = await listBuilding();
        pending = await pendingMessages(queues);
        const live = await listInstances();
        const offloaded = live.find((r) => r.vm_state === "shelved_offloaded" && r.task_state === null);
        if (!report.moves.unshelve.accepted && offloaded)
          await moveAction(offloaded.id, "unshelve", { unshelve: null });
        for (const r of live) {
          if (r.vm_state !== "resized" || r.task_state !== null || r.migration?.status !== "finished")
            continue;
          const confirm = !report.moves.confirmResize.accepted
            ? true
            : !report.moves.revertResize.accepted
              ? false
              : random() < 0.5;
          const ok = confirm
            ? await moveAction(r.id, "confirmResize", { confirmResize: null })
            : await moveAction(r.id, "revertResize", { revertResize: null });
          if (ok) report.settled_verify_resize++;
        }
        // a task in progress, a move not over (a confirm has no task state: Nova's), or a
        // SOFT_DELETED server its reclaim has not reached yet
        for (const r of live) if (r.vm_state === "soft-delete") softSeen.add(r.id);
        busy = live.filter(
          (r) =>
            (r.task_state !== null && r.vm_state !== "building") ||
            r.migration ||
            r.vm_state === "resized" ||
            r.vm_state === "soft-delete",
        );
        await maybeCheckOvercommit("while settling");
        const waitingFor = `${building.length} building, ${pending} queued, busy: ${busy.map((r) => `${r.id.slice(0, 8)} ${r.vm_state}/${r.task_state}/${r.migration?.status ?? "-"}`).join(" ")}`;
        if (waitingFor !== lastWait)
          say(`settling (${Math.round((Date.now() - settleFrom) / 1000)} s): ${waitingFor}`);
        lastWait = waitingFor;
        if ((!building.length && !pending && !busy.length) || Date.now() >= settleBy) return;
        await sleep(500);
      }
    };
    await settle();
    report.settle_seconds = Math.round((Date.now() - settleBy) / 1000 + (opts.settleSeconds ?? 120));
    say(`settled after ${Math.round((Date.now() - settleFrom) / 1000)} s`);
    if (pending) report.problems.push(`${pending} message(s) still queued after settling`);
    await runtime.emulators.sfn?.waitForIdle();
    report.stuck_in_build = building.length;
    report.dynamodb_throttles = runtime.emulators.gateway?.throttled ?? 0;
    for (const b of building)
      report.problems.push(`stuck in BUILD: ${b.id} attempt ${b.attempt} on ${b.host}`);

    const instances = await listInstances();
    const byId = new Map(instances.map((r) => [r.id, r]));
    report.soft_deleted_seen = softSeen.size;
    for (const r of instances) {
      if (r.vm_state === "active") report.active++;
      if (r.vm_state === "soft-delete") {
        report.unreclaimed++;
        report.problems.push(`not reclaimed: ${r.id} SOFT_DELETED since ${r.deleted_at} on ${r.host}`);
      }
      if (r.vm_state === "error") {
        const reason = (r.fault?.message ?? "unknown").split(".")[0]!;
        report.error_by_reason[reason] = (report.error_by_reason[reason] ?? 0) + 1;
      }
      if (r.task_state !== null && r.vm_state !== "building") {
        report.stuck_task_state++;
        if (r.task_state.startsWith("resize_")) report.stuck_resize_task_state++;
        report.problems.push(`stuck task_state: ${r.id} ${r.vm_state}/${r.task_state} on ${r.host}`);
      }
      if (r.migration || r.vm_state === "resized") {
        report.moves_in_progress++;
        report.problems.push(
          `move in progress: ${r.id} ${r.vm_state}/${r.task_state} migration ${r.migration?.uuid} ${r.migration?.status} ${r.migration?.source_host}→${r.migration?.dest_host}`,
        );
      }
    }
    const migrations = await listMigrations();
    const migrationsByUuid = new Map(migrations.map((m) => [m.uuid, m]));
    const everyInstance = new Map(
      (await listInstances(undefined, { withDeleted: true })).map((r) => [r.id, r]),
    );
    for (const m of migrations.filter((m) => m.status === "error")) {
      const r = everyInstance.get(m.instance_uuid);
      const why =
        r?.fault && r.fault.created >= m.created_at
          ? `${r.fault.message.split(".")[0]}: ${r.fault.details.slice(0, 70)}`
          : r?.deleted
            ? "the server was deleted"
            : "no fault";
      report.failed_moves[why] = (report.failed_moves[why] ?? 0) + 1;
    }
    for (const m of migrations) {
      report.migrations_by_status[m.status] = (report.migrations_by_status[m.status] ?? 0) + 1;
      if (OPEN_MIGRATION_STATUSES.includes(m.status)) {
        report.open_migrations++;
        const owner = byId.get(m.instance_uuid);
        report.problems.push(
          `open migration ${m.uuid} (${m.migration_type}) ${m.status} since ${m.updated_at} of ${m.instance_uuid} (${owner ? `${owner.vm_state}/${owner.task_state} on ${owner.host}` : "deleted"}) ${m.source_compute}→${m.dest_compute}`,
          ...history(everyInstance.get(m.instance_uuid)),
        );
      }
    }
    checkOvercommit(await listHosts(), "at the end");

    // Leaked: an allocation that is not a live instance's on its record's host at its attempt.
    const allocations = await listAllocations();
    for (const a of allocations) {
      const rec = byId.get(a.consumer);
      if (rec && rec.vm_state !== "error" && rec.host === a.host && rec.attempt === a.attempt) continue;
      report.leaked_claims++;
      const m = migrationsByUuid.get(a.consumer);
      if (m) {
        report.leaked_migration_claims++;
        const owner = byId.get(m.instance_uuid);
        report.problems.push(
          `leaked claim of migration ${a.consumer} (${m.migration_type} ${m.status}) on ${a.host}: instance ${m.instance_uuid} ${owner ? `${owner.vm_state} on ${owner.host}` : "deleted"}`,
        );
      } else {
        report.problems.push(
          `leaked claim of ${a.consumer} on ${a.host} attempt ${a.attempt}: ${rec ? `${rec.vm_state} on ${rec.host} attempt ${rec.attempt}` : "deleted or missing"}`,
        );
      }
    }
    const audit = await auditPlacement({ graceSeconds: 0 });
    report.audit_findings = audit.findings.length + audit.pending.length;
    for (const f of [...audit.findings, ...audit.pending])
      report.problems.push(`audit: ${f.kind} ${f.host} ${f.detail}`);
    // Missing: a running (or spawning) instance whose host holds no claim for it.
    const held = new Map(allocations.map((a) => [`${a.consumer}@${a.host}`, a]));
    for (const r of instances) {
      // (a paused, suspended, SHELVED or SOFT_DELETED server keeps its host's claim; an offloaded
      // one has none)
      const running =
        ["active", "paused", "suspended", "shelved", "soft-delete"].includes(r.vm_state) ||
        (r.vm_state === "building" && r.task_state === "spawning");
      if (!running || !r.host) continue;
      const a = held.get(`${r.id}@${r.host}`);
      if (!a || a.attempt !== r.attempt) {
        report.missing_claims++;
        report.problems.push(`missing claim: ${r.id} (${r.vm_state}) on ${r.host} attempt ${r.attempt}`);
      }
    }

    // Quota: each project's usage is what its live servers' flavors count (no move is unconfirmed
    // now), but for the SOFT_DELETED ones, which Nova's count leaves out.
    const projects = new Set([...everyInstance.values()].map((r) => r.project_id));
    for (const project of projects) {
      const counted = { instances: 0, cores: 0, ram: 0 };
      for (const r of instances.filter((i) => i.project_id === project && countsInQuota(i))) {
        const d = deltaOf(1, r.flavor);
        counted.instances += d.instances;
        counted.cores += d.cores;
        counted.ram += d.ram;
      }
      const usage = await getUsage(project);
      for (const k of ["instances", "cores", "ram"] as const) {
        if (usage[k] === counted[k]) continue;
        report.quota_mismatches++;
        report.problems.push(
          `quota: project ${project} ${k} usage ${usage[k]}, its live servers count ${counted[k]}`,
        );
      }
    }

    // Double builds: a guest defined on two hosts, or on a host its record does not name.
    const guestHosts = new Map<string, string[]>();
    for (const [name, h] of runtime.hosts) {
      for (const g of h.driver.list()) {
        guestHosts.set(g.instance_uuid, [...(guestHosts.get(g.instance_uuid) ?? []), name]);
        const rec = byId.get(g.instance_uuid);
        if (rec?.host === name) continue;
        report.guests_off_record++;
        report.problems.push(
          `guest of ${g.instance_uuid} on ${name} (power ${g.power_state}): ${rec ? `${rec.vm_state} on ${rec.host}` : "deleted"}`,
          ...history(everyInstance.get(g.instance_uuid)),
        );
      }
    }
    for (const [id, on] of guestHosts) {
      if (on.length < 2) continue;
      report.double_builds++;
      report.problems.push(`double build: ${id} defined on ${on.join(", ")}`);
    }

    // Ports: every one a build made belongs to a live server that names it, bound to its host, and
    // holds the addresses it shows; every port a live server names is there.
    const ports = await listPorts();
    const portsById = new Map(ports.map((p) => [p.id, p]));
    report.ports_checked = ports.length;
    for (const p of ports) {
      if (!String(p.device_owner ?? "").startsWith("compute:")) continue;
      const rec = byId.get(String(p.device_id));
      if (!rec || !(rec.network_info ?? []).some((v) => v.port_id === p.id)) {
        report.leaked_ports++;
        report.problems.push(
          `port ${p.id} of ${p.device_id}: ${rec ? `${rec.vm_state}, not in its network info` : "its server is gone"}`,
          ...history(everyInstance.get(String(p.device_id))),
        );
      }
      for (const f of p.fixed_ips) {
        if ((await addressHolder(f.subnet_id, f.ip_address)) === p.id) continue;
        report.leaked_ports++;
        report.problems.push(`port ${p.id} shows ${f.ip_address}, which it does not hold`);
      }
    }
    for (const r of instances) {
      for (const v of r.network_info ?? []) {
        const p = portsById.get(v.port_id);
        const bound = r.vm_state === "shelved_offloaded" ? "" : (r.host ?? "");
        if (p && p.device_id === r.id && (r.task_state !== null || p["binding:host_id"] === bound)) continue;
        report.leaked_ports++;
        report.problems.push(
          `${r.id} (${r.vm_state} on ${r.host}) names port ${v.port_id}: ${p ? `bound to ${p.device_id} on ${p["binding:host_id"]}` : "missing"}`,
        );
      }
    }

    for (const q of await listDeadLetterQueues()) {
      for (const l of await peekDeadLetters(q.url))
        report.dead_letters.push({ queue: q.name, reason: l.reason });
    }
    say(`checked after ${Math.round((Date.now() - settleFrom) / 1000)} s`);
    // Not drawn from the must-be-zero list, but worth knowing: the whole API answered.
    const check = await api("GET", "/v2.1/servers/detail?all_tenants=1", undefined, ADMIN);
    if (check.status !== 200) report.problems.push(`final listing answered ${check.status}`);
  } finally {
    const stopping = Date.now();
    await runtime.stop();
    say(`runtime stopped in ${Math.round((Date.now() - stopping) / 1000)} s`);
  }
  return report;
}

/** An instance's actions and their events, oldest first: what a problem's reader needs to replay it. */
function history(rec: InstanceRecord | undefined): string[] {
  if (!rec) return [];
  return Object.values(rec.actions)
    .sort((a, b) => a.start_time.localeCompare(b.start_time))
    .map(
      (a) =>
        `  ${a.start_time.slice(11, 23)} ${a.action} ${a.request_id.slice(0, 12)}: ${Object.values(a.events)
          .sort((x, y) => x.start_time.localeCompare(y.start_time))
          .map((e) => `${e.event}@${e.host}#${e.attempt}:${e.result} ${e.finish_time?.slice(11, 23) ?? ""}`)
          .join(", ")}`,
    );
}

/** Messages waiting, in flight or delayed, over the given queues. */
async function pendingMessages(queueUrls: string[]): Promise<number> {
  let n = 0;
  for (const url of queueUrls) {
    const a = await sqsClient().send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: [
          "ApproximateNumberOfMessages",
          "ApproximateNumberOfMessagesNotVisible",
          "ApproximateNumberOfMessagesDelayed",
        ],
      }),
    );
    for (const v of Object.values(a.Attributes ?? {})) n += Number(v);
  }
  return n;
}

export function mustBeZero(r: SoakReport): string[] {
  const bad: string[] = [];
  if (r.stuck_in_build) bad.push(`stuck in BUILD: ${r.stuck_in_build}`);
  if (r.stuck_task_state) bad.push(`stuck task_state: ${r.stuck_task_state}`);
  if (r.moves_in_progress) bad.push(`moves still in progress: ${r.moves_in_progress}`);
  if (r.open_migrations) bad.push(`open migrations: ${r.open_migrations}`);
  if (r.overcommitted_hosts) bad.push(`overcommitted hosts: ${r.overcommitted_hosts}`);
  if (r.leaked_claims) bad.push(`leaked claims: ${r.leaked_claims}`);
  if (r.audit_findings) bad.push(`audit findings: ${r.audit_findings}`);
  if (r.missing_claims) bad.push(`missing claims: ${r.missing_claims}`);
  if (r.quota_mismatches) bad.push(`quota mismatches: ${r.quota_mismatches}`);
  if (r.double_builds) bad.push(`double builds: ${r.double_builds}`);
  if (r.guests_off_record) bad.push(`guests off record: ${r.guests_off_record}`);
  if (r.leaked_ports) bad.push(`leaked ports: ${r.leaked_ports}`);
  if (r.unreclaimed) bad.push(`SOFT_DELETED servers not reclaimed: ${r.unreclaimed}`);
  return bad;
}

export function printReport(r: SoakReport): string {
  const moves = Object.entries(r.moves).map(([k, v]) => `${k} ${v.accepted}/${v.accepted + v.refused}`);
  const lines = [
    `soak (seed ${r.seed})`,
    `  requests made          ${r.requests} (${r.creates} creates, ${r.instances} instances)`,
    `  moves accepted/asked   ${moves.join(", ")}`,
    `  migrations             ${
      Object.entries(r.migrations_by_status)
        .map(([s, n]) => `${n} ${s}`)
        .join(", ") || "none"
    }`,
    ...Object.entries(r.failed_moves).map(([why, n]) => `    ${n} × error: ${why}`),
    `  ACTIVE                 ${r.active}`,

    `  ERROR                  ${Object.values(r.error_by_reason).reduce((a, b) => a + b, 0)}`,
    ...Object.entries(r.error_by_reason).map(([reason, n]) => `    ${n} × ${reason}`),
    `  deleted                ${r.deleted} (${r.deleted_moving} mid-move, ${r.deleted_verify_resize} in VERIFY_RESIZE)`,
    `  VERIFY_RESIZE settled  ${r.settled_verify_resize}   (confirmed or reverted after the load)`,
    `  host kills             ${r.host_kills}`,
    `  report outages         ${r.report_outages}   (compute-events refusing every report)`,
    `  live host restarts     ${r.host_restarts}`,
    `  settled in             ${r.settle_seconds} s`,
    `  DynamoDB throttles     ${r.dynamodb_throttles}   (injected, retried)`,
    `  stuck in BUILD         ${r.stuck_in_build}   (must be 0)`,
    `  stuck task_state       ${r.stuck_task_state} (${r.stuck_resize_task_state} resize_*)   (must be 0)`,
    `  moves in progress      ${r.moves_in_progress}   (must be 0)`,
    `  open migrations        ${r.open_migrations}   (must be 0)`,
    `  overcommitted hosts    ${r.overcommitted_hosts} over ${r.overcommit_checks} checks   (must be 0)`,
    `  leaked claims          ${r.leaked_claims} (${r.leaked_migration_claims} migration consumers)   (must be 0)`,
    `  audit findings         ${r.audit_findings}   (must be 0)`,
    `  missing claims         ${r.missing_claims}   (must be 0)`,
    `  quota mismatches       ${r.quota_mismatches}   (must be 0)`,
    `  double builds          ${r.double_builds}   (must be 0)`,
    `  guests off record      ${r.guests_off_record}   (must be 0)`,
    `  leaked ports           ${r.leaked_ports} of ${r.ports_checked} ports   (must be 0)`,
    `  SOFT_DELETED seen      ${r.soft_deleted_seen}`,
    `  not reclaimed          ${r.unreclaimed}   (must be 0)`,
    `  dead letters           ${r.dead_letters.length}`,
    ...r.dead_letters.map((d) => `    ${d.queue}: ${d.reason}`),
    ...(r.problems.length ? ["  problems:", ...r.problems.slice(0, 40).map((p) => `    ${p}`)] : []),
  ];
  return lines.join("\n");
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      minutes: { type: "string", default: "2" },
      seed: { type: "string", default: "42" },
      hosts: { type: "string", default: "12" },
      threads: { type: "boolean", default: false },
      driver: { type: "string", default: "fake" },
      // [DEFAULT] reclaim_instance_interval, seconds; 0: deletes at once
      reclaim: { type: "string", default: "3" },
    },
  });
  if (values.driver !== "fake" && values.driver !== "libvirt") {
    process.stderr.write(`--driver must be fake or libvirt, got ${values.driver}\n`);
    process.exit(2);
  }
  const report = await runSoak({
    minutes: Number(values.minutes),
    seed: Number(values.seed),
    hosts: Number(values.hosts),
    threads: values.threads,
    driver: values.driver,
    reclaimSeconds: Number(values.reclaim),
    log: (l) => process.stderr.write(`${l}\n`),
  });
  process.stdout.write(`${printReport(report)}\n`);
  const bad = mustBeZero(report);
  if (bad.length) process.stdout.write(`FAILED: ${bad.join("; ")}\n`);
  process.exit(bad.length ? 1 : 0);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
