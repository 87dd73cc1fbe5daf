// The soak: the local runtime under random load and random faults, then a check that nothing
// is stuck, overcommitted or leaked. `npm run soak -- --minutes M --seed S`; exits non-zero when
// a must-be-zero figure is not zero. A run of about a minute with a fixed seed is part of `npm test`.
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { GetQueueAttributesCommand } from "@aws-sdk/client-sqs";
import { sqsClient } from "../../lib/aws/clients.js";
import { listDeadLetterQueues, peekDeadLetters } from "../../lib/aws/dead-letters.js";
import { listInstances } from "../../lib/instances/queries.js";
import { listBuilding } from "../../lib/instances/watch.js";
import { listAllocations } from "../../lib/placement/allocations.js";
import { auditPlacement } from "../../lib/placement/audit.js";
import { listHosts } from "../../lib/placement/hosts.js";
import { capacity, type Inventory } from "../../lib/placement/types.js";
import { seededRandom } from "../../lib/scheduler/scenario.js";
import { type Runtime, startRuntime } from "../../local/runtime.js";

export interface SoakOptions {
  minutes: number;
  seed: number;
  hosts?: number;
  /** seconds to wait for quiescence after the load stops */
  settleSeconds?: number;
  log?: (line: string) => void;
}

export interface SoakReport {
  seed: number;
  requests: number;
  instances: number;
  active: number;
  error_by_reason: Record<string, number>;
  deleted: number;
  host_kills: number;
  /** DynamoDB requests the gateway answered ProvisionedThroughputExceededException */
  dynamodb_throttles: number;
  stuck_in_build: number;
  overcommitted_hosts: number;
  leaked_claims: number;
  missing_claims: number;
  dead_letters: { queue: string; reason: string }[];
  problems: string[];
}

const ADMIN = { "x-auth-token": "admin-token", "content-type": "application/json" };
const DEMO = { "x-auth-token": "demo-token", "content-type": "application/json" };

export async function runSoak(opts: SoakOptions): Promise<SoakReport> {
  const random = seededRandom(opts.seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const say = opts.log ?? (() => {});
  const hostCount = opts.hosts ?? 12;
  const runtime: Runtime = await startRuntime({
    port: 0,
    hosts: hostCount,
    buildMs: 300,
    failHosts: [`host-${hostCount}`], // a "black hole" host that fails every build
    heartbeatSeconds: 1,
    watchdogIntervalMs: 1000,
    env: {
      // the soak's demo project creates far more than Nova's default instance quota
      NOVALESS_QUOTA_INSTANCES: "-1",
      NOVALESS_QUOTA_CORES: "-1",
      NOVALESS_QUOTA_RAM: "-1",
      NOVALESS_SERVICE_DOWN_TIME: "4",
      NOVALESS_INSTANCE_BUILD_TIMEOUT: "15",
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
    instances: 0,
    active: 0,
    error_by_reason: {},
    deleted: 0,
    host_kills: 0,
    dynamodb_throttles: 0,
    stuck_in_build: 0,
    overcommitted_hosts: 0,
    leaked_claims: 0,
    missing_claims: 0,
    dead_letters: [],
    problems: [],
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
    const until = Date.now() + opts.minutes * 60_000;
    while (Date.now() < until) {
      const roll = random();
      if (roll < 0.55) {
        const multi = random() < 0.15;
        const count = multi ? 2 + Math.floor(random() * 2) : 1;
        const hints: Record<string, unknown> = {};
        if (groups.length && random() < 0.2) hints.group = pick(groups);
        const server = {
          name: `soak-${report.requests}`,
          flavorRef: pick(["1", "1", "2", "2", "3", "4"]),
          imageRef: random() < 0.05 ? "broken" : pick(["cirros", "ubuntu"]),
          min_count: count,
          max_count: count,
          // Nova answers a multi-create's first server only; its reservation tells them all
          return_reservation_id: count > 1,
          ...(random() < 0.4 ? { availability_zone: pick(["az1", "az2"]) } : {}),
        };
        const r = await api("POST", "/v2.1/servers", { server, "os:scheduler_hints": hints });
        report.requests++;
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
      } else if (roll < 0.8 && live.length) {
        const id = live.splice(Math.floor(random() * live.length), 1)[0]!;
        const r = await api("DELETE", `/v2.1/servers/${id}`);
        if (r.status === 204) report.deleted++;
        else if (r.status !== 404) report.problems.push(`delete ${id} answered ${r.status}`);
      } else if (roll < 0.84 && dead.size < hostCount / 4) {
        const victim = pick([...runtime.hosts.keys()].filter((h) => !dead.has(h)));
        await runtime.killHost(victim);
        dead.set(victim, Date.now() + 3000 + random() * 8000);
        report.host_kills++;
        say(`killed ${victim}`);
      }
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
    say(`load stopped after ${report.requests} requests; waiting for quiescence`);

    // Quiescence: nothing left in BUILD (the watchdog and the failure loop finish the rest) and
    // nothing left to do in any queue (a terminate a killed host had taken comes back to its
    // successor after the host queue's visibility timeout).
    const settleBy = Date.now() + (opts.settleSeconds ?? 120) * 1000;
    const queues = [
      process.env.NOVALESS_BUILD_REQUESTS_QUEUE_URL!,
      ...(await listHosts()).map((h) => h.queue_url),
    ];
    let building = await listBuilding();
    let pending = await pendingMessages(queues);
    while ((building.length || pending) && Date.now() < settleBy) {
      await sleep(500);
      building = await listBuilding();
      pending = await pendingMessages(queues);
    }
    if (pending) report.problems.push(`${pending} message(s) still queued after settling`);
    await runtime.emulators.sfn?.waitForIdle();
    report.stuck_in_build = building.length;
    report.dynamodb_throttles = runtime.emulators.gateway?.throttled ?? 0;
    for (const b of building)
      report.problems.push(`stuck in BUILD: ${b.id} attempt ${b.attempt} on ${b.host}`);

    const instances = await listInstances();
    for (const r of instances) {
      if (r.vm_state === "active") report.active++;
      if (r.vm_state === "error") {
        const reason = (r.fault?.message ?? "unknown").split(".")[0]!;
        report.error_by_reason[reason] = (report.error_by_reason[reason] ?? 0) + 1;
      }
    }
    const hosts = await listHosts();
    for (const h of hosts) {
      const over = Object.entries(h.inventories).filter(
        ([rc, inv]) => (h.usage[rc as keyof typeof h.usage] ?? 0) > capacity(inv as Inventory),
      );
      if (over.length) {
        report.overcommitted_hosts++;
        report.problems.push(`overcommitted ${h.host}: ${over.map(([rc]) => rc).join(", ")}`);
      }
    }
    const audit = await auditPlacement({ graceSeconds: 0 });
    report.leaked_claims = audit.findings.length + audit.pending.length;
    for (const f of [...audit.findings, ...audit.pending])
      report.problems.push(`audit: ${f.kind} ${f.host} ${f.detail}`);
    // Missing: a running (or spawning) instance whose host holds no claim for it.
    const held = new Map((await listAllocations()).map((a) => [`${a.consumer}@${a.host}`, a]));
    for (const r of instances) {
      const running = r.vm_state === "active" || (r.vm_state === "building" && r.task_state === "spawning");
      if (!running || !r.host) continue;
      const a = held.get(`${r.id}@${r.host}`);
      if (!a || a.attempt !== r.attempt) {
        report.missing_claims++;
        report.problems.push(`missing claim: ${r.id} (${r.vm_state}) on ${r.host} attempt ${r.attempt}`);
      }
    }
    for (const q of await listDeadLetterQueues()) {
      for (const l of await peekDeadLetters(q.url))
        report.dead_letters.push({ queue: q.name, reason: l.reason });
    }
    // Not drawn from the must-be-zero list, but worth knowing: the whole API answered.
    const check = await api("GET", "/v2.1/servers/detail?all_tenants=1", undefined, ADMIN);
    if (check.status !== 200) report.problems.push(`final listing answered ${check.status}`);
  } finally {
    await runtime.stop();
  }
  return report;
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
  if (r.overcommitted_hosts) bad.push(`overcommitted hosts: ${r.overcommitted_hosts}`);
  if (r.leaked_claims) bad.push(`leaked claims: ${r.leaked_claims}`);
  if (r.missing_claims) bad.push(`missing claims: ${r.missing_claims}`);
  return bad;
}

export function printReport(r: SoakReport): string {
  const lines = [
    `soak (seed ${r.seed})`,
    `  requests made          ${r.requests} (${r.instances} instances)`,
    `  ACTIVE                 ${r.active}`,
    `  ERROR                  ${Object.values(r.error_by_reason).reduce((a, b) => a + b, 0)}`,
    ...Object.entries(r.error_by_reason).map(([reason, n]) => `    ${n} × ${reason}`),
    `  deleted                ${r.deleted}`,
    `  host kills             ${r.host_kills}`,
    `  DynamoDB throttles     ${r.dynamodb_throttles}   (injected, retried)`,
    `  stuck in BUILD         ${r.stuck_in_build}   (must be 0)`,
    `  overcommitted hosts    ${r.overcommitted_hosts}   (must be 0)`,
    `  leaked claims (audit)  ${r.leaked_claims}   (must be 0)`,
    `  missing claims         ${r.missing_claims}   (must be 0)`,
    `  dead letters           ${r.dead_letters.length}`,
    ...r.dead_letters.map((d) => `    ${d.queue}: ${d.reason}`),
    ...(r.problems.length ? ["  problems:", ...r.problems.slice(0, 30).map((p) => `    ${p}`)] : []),
  ];
  return lines.join("\n");
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      minutes: { type: "string", default: "2" },
      seed: { type: "string", default: "42" },
      hosts: { type: "string", default: "12" },
    },
  });
  const report = await runSoak({
    minutes: Number(values.minutes),
    seed: Number(values.seed),
    hosts: Number(values.hosts),
    log: (l) => process.stderr.write(`${l}\n`),
  });
  process.stdout.write(`${printReport(report)}\n`);
  const bad = mustBeZero(report);
  if (bad.length) process.stdout.write(`FAILED: ${bad.join("; ")}\n`);
  process.exit(bad.length ? 1 : 0);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
