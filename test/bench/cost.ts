// npm run bench:cost [-- --hosts 10,1000,10000 --builds 50 --concurrency 4 --idle-seconds 20
//                       --heartbeat-seconds <report_interval> --timeout 600 --dynamodb auto|local|dynalite
//                       --moves 5 --move-hosts 10 --no-network]
//
// Configured as `npm start` runs: the seeded network public, so every build makes and binds a
// port (--no-network: builds without one, the configuration of the figures before 2026-12-07).
// What a build and an idle host cost, counted at the SDK boundary (lib/aws/meter.ts) by component
// (the identity each client signs as), on the local runtime with every component under its own
// role: DynamoDB requests and capacity units (ReturnConsumedCapacity INDEXES: table and each
// index, refused conditional writes at their minimum charge), SQS requests, Step Functions
// executions and state transitions, Lambda invocations and duration (GB-s at the stack's memory
// sizes), CloudWatch Logs bytes of the functions; then $ per million builds and $ per host-month
// idle from the price table (prices.ts), and the stack's fixed idle cost: what it bills a month
// with no host at all (the event source mappings' pollers, the watchdog's schedule, the
// CloudWatch alarms and dashboards, the Secrets Manager secrets, counted in the synthesized template).
//
// Per size: start the runtime (build time 0); an idle window (nothing to build); one watchdog run;
// a few warm-up builds at the concurrency (not counted: cold containers' first reads); then N
// builds through the public API at the given concurrency, each waited to ACTIVE by reading its
// item with the bench's own (unmetered) client. In the build window the idle traffic is taken
// out: empty polls by their answer, heartbeats by their table (Services), the rest at the idle
// window's rate.
//
// Then the moves (--moves N of each kind; 0 skips them), on a runtime of their own whose hosts
// heartbeat every 2 s with service_down_time 6 s, so that a stopped host is down soon enough to
// evacuate: resize + confirm, resize + revert, an admin's cold migration + confirm, evacuate (its
// source stopped), and the evacuated source's return (it destroys its copies, then frees their
// claims). One move at a time, each step timed from its POST to its final state; the figures are
// per move as for a build, with the claim transactions each component wrote (claims, allocation
// moves, releases), counted at the IAM gateway.

import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, GetCommand, QueryCommand } from "@aws-sdk/lib-dynamodb";
import { ACCESS_LOG_FORMAT } from "../../infra/constructs/api.js";
import { currentIdentity } from "../../lib/aws/identity.js";
import {
  type CallerUsage,
  type MeterReading,
  meterReading,
  startMeter,
  stopMeter,
} from "../../lib/aws/meter.js";
import { idleHeartbeatSeconds } from "../../lib/compute/heartbeat.js";
import { fleetCacheStats } from "../../lib/conductor/fleet-snapshots.js";
import { optionValue, schedulerConfig } from "../../lib/config.js";
import { FEED_SHARDS } from "../../lib/placement/feed.js";
import { MIGRATIONS_BY_INSTANCE_INDEX } from "../../lib/resources.js";
import {
  accessKeyIdOf,
  COMPONENTS,
  FUNCTION_COMPONENTS,
  type FunctionComponent,
  hostAccessKeyIdOf,
  OPERATOR,
} from "../../local/iam/identities.js";
import { type InvocationRecord, observeInvocations } from "../../local/lambda.js";
import type { Runtime } from "../../local/runtime.js";
import { type ExecutionRecordSummary, observeExecutions } from "../../local/sfn-server.js";
import { PRICES } from "./prices.js";
import {
  backend,
  before,
  createServer,
  DEMO_TOKEN,
  hardStop,
  load,
  machine,
  percentile,
  pool,
  quietLogs,
  sizesOf,
  socketWarnings,
  stackFixedResources,
  stackMemory,
  TimedOut,
  until,
} from "./support.js";

const { values } = parseArgs({
  options: {
    hosts: { type: "string", default: "10" },
    builds: { type: "string", default: "50" },
    concurrency: { type: "string", default: "4" },
    warmup: { type: "string", default: "3" },
    "idle-seconds": { type: "string", default: "20" },
    // the agents' configured interval ([DEFAULT] report_interval), unless given
    "heartbeat-seconds": { type: "string", default: String(schedulerConfig().report_interval) },
    "poll-seconds": { type: "string", default: "20" },
    timeout: { type: "string", default: "600" },
    dynamodb: { type: "string", default: "auto" },
    moves: { type: "string", default: "5" },
    "move-hosts": { type: "string", default: "10" },
    "no-network": { type: "boolean", default: false },
  },
});
const sizes = sizesOf(values.hosts);
/** as `npm start` runs: the seeded network, a port per server */
const network = !values["no-network"];
const builds = Number(values.builds);
const concurrency = Number(values.concurrency);
const warmup = Number(values.warmup);
const heartbeatSeconds = Number(values["heartbeat-seconds"]);
/** an idle agent's heartbeat period: it sends one with nothing new only when due (lib/compute/heartbeat.ts) */
const idleHeartbeat = idleHeartbeatSeconds(heartbeatSeconds, schedulerConfig().service_down_time);
// Long enough to see every host heartbeat at least twice.
const idleSeconds = Math.max(Number(values["idle-seconds"]), 2 * idleHeartbeat);
/** a real agent's long poll (the agent's default WaitTimeSeconds) */
const pollSeconds = Number(values["poll-seconds"]);
const timeoutMs = Number(values.timeout) * 1000;
const MONTH_S = 30 * 86_400;
/** the stack's schedule of the build watchdog (rate 1 minute) */
const WATCHDOG_RUNS_PER_MONTH = MONTH_S / 60;
/**
 * An SQS event source mapping's pollers: Lambda long-polls the queue with five of them whatever
 * the traffic (services-sqs-scaling.html: it starts with five; each receive waits up to 20 s), so
 * a mapping costs 5 × (month / 20 s) receives, about 648,000. AWS publishes no idle figure; this
 * is the estimate; the local runtime's receives (one 20 s long poll at a time) are shown beside it.
 */
const EVENT_SOURCE_POLLERS = 5;
const EVENT_SOURCE_WAIT_SECONDS = 20;

// --- Output: the components' JSON log lines are counted (by identity) and kept off the terminal.
const out = process.stdout.write.bind(process.stdout);
const print = (line = "") => out(`${line}\n`);
const logBytes = new Map<string, number>();
const lastErrors: string[] = [];
quietLogs((text, stderr) => {
  const caller = currentIdentity()?.accessKeyId ?? "";
  logBytes.set(caller, (logBytes.get(caller) ?? 0) + Buffer.byteLength(text));
  if (stderr && text.includes('"level":"error"')) {
    lastErrors.push(text.slice(0, 400));
    if (lastErrors.length > 5) lastErrors.shift();
  }
});

const CALLERS = [...COMPONENTS, OPERATOR] as const;
/**
 * "heartbeat": the writes to the Services table compute-events makes for the hosts' heartbeat
 * reports, set apart from the builds.
 */
type Caller = (typeof CALLERS)[number] | "heartbeat" | "other";
const callerOf = new Map<string, Caller>(CALLERS.map((c) => [accessKeyIdOf(c), c]));
// every host signs with its own session's key (hostAccessKeyIdOf): all of them are compute-host
const nameOf = (key: string): Caller =>
  callerOf.get(key) ?? (key.startsWith(hostAccessKeyIdOf("x").slice(0, 7)) ? "compute-host" : "other");
const functionOf = (name: string) => name.replace(/^novaless-/, "") as FunctionComponent;

/** Everything counted in one window. */
interface Window {
  seconds: number;
  meter: MeterReading;
  invocations: InvocationRecord[];
  executions: ExecutionRecordSummary[];
  logBytes: Map<string, number>;
}

const invocations: InvocationRecord[] = [];
const executions: ExecutionRecordSummary[] = [];
observeInvocations((r) => invocations.push(r));
observeExecutions((e) => executions.push(e));
let windowStart = performance.now();

function openWindow(): void {
  meterReading({ reset: true });
  invocations.length = 0;
  executions.length = 0;
  logBytes.clear();
  windowStart = performance.now();
}

/** The window since the last open or close; the next one starts now (the meter is reset too). */
function closeWindow(): Window {
  const started = windowStart;
  windowStart = performance.now();
  return {
    seconds: (windowStart - started) / 1000,
    meter: meterReading({ reset: true }),
    invocations: invocations.splice(0),
    executions: executions.splice(0),
    logBytes: new Map(logBytes),
  };
}

/** A report that is a heartbeat with no news (no build ended, no dead letter): idle traffic. */
function isIdleHeartbeat(body: string): boolean {
  try {
    const r = JSON.parse(body) as { kind?: string; in_flight?: number; dead_letters?: number };
    return r.kind === "heartbeat" && r.in_flight === undefined && r.dead_letters === undefined;
  } catch {
    return false;
  }
}

/**
 * What a window's idle heartbeats cost compute-events, taken out of its figures by report, not by
 * the idle window's rate: at fleet size the heartbeats are thousands a window beside a few dozen
 * builds, so a rate's small drift would be more than the builds' own requests. Each report is an
 * invocation of its own (the hosts post them to its function URL: no SQS request); an idle
 * heartbeat's goes, a build's report and a heartbeat with news (num_io_ops, which builds cause)
 * stay.
 */
function withoutIdleHeartbeats(
  w: Window,
  m: Map<Caller, Figures>,
  memory: Record<FunctionComponent, number>,
): void {
  const ce = m.get("compute-events");
  if (!ce) return;
  for (const inv of w.invocations) {
    if (functionOf(inv.name) !== "compute-events") continue;
    if (!isIdleHeartbeat(String((inv.event as { body?: string } | undefined)?.body ?? ""))) continue;
    ce.invocations -= 1;
    ce.durationMs -= inv.durationMs;
    ce.gbSeconds -= gbSecondsOf(inv, memory);
  }
}

/** One component's figures, per build or per window. */
interface Figures {
  ddbRequests: number;
  tableRead: number;
  tableWrite: number;
  indexRead: number;
  indexWrite: number;
  failedWrite: number;
  conditionalFailures: number;
  unreported: number;
  sqsRequests: number;
  sfnRequests: number;
  invocations: number;
  gbSeconds: number;
  durationMs: number;
  logBytes: number;
}

const zero = (): Figures => ({
  ddbRequests: 0,
  tableRead: 0,
  tableWrite: 0,
  indexRead: 0,
  indexWrite: 0,
  failedWrite: 0,
  conditionalFailures: 0,
  unreported: 0,
  sqsRequests: 0,
  sfnRequests: 0,
  invocations: 0,
  gbSeconds: 0,
  durationMs: 0,
  logBytes: 0,
});

function add(a: Figures, b: Figures, k = 1): Figures {
  const r = { ...a };
  for (const key of Object.keys(r) as (keyof Figures)[]) r[key] += k * b[key];
  return r;
}

/** The Services table (heartbeats) of the runtime being measured. */
let servicesTable = "";

/** A caller's figures, and apart the heartbeats in them (their writes to the Services table). */
function splitHeartbeats(u: CallerUsage): { rest: CallerUsage; heartbeats: CallerUsage } {
  const hb = u.tables[servicesTable];
  if (!hb)
    return { rest: u, heartbeats: { ...u, requests: {}, tables: {}, emptyReceives: 0, sqsExtraChunks: 0 } };
  const { [servicesTable]: _services, ...tables } = u.tables;
  // Each heartbeat is one UpdateItem of a tiny item: one write unit.
  const beats = hb.write;
  const requests = { ...u.requests };
  requests["dynamodb:UpdateItem"] = Math.max(0, (requests["dynamodb:UpdateItem"] ?? 0) - beats);
  return {
    rest: { ...u, requests, tables },
    heartbeats: {
      ...u,
      requests: { "dynamodb:UpdateItem": beats },
      tables: { [servicesTable]: hb },
      emptyReceives: 0,
      sqsExtraChunks: 0,
      conditionalFailures: 0,
      failedWriteUnits: {},
      unreported: 0,
    },
  };
}

function usageFigures(u: CallerUsage): Figures {
  const f = zero();
  for (const [op, n] of Object.entries(u.requests)) {
    if (op.startsWith("dynamodb:")) f.ddbRequests += n;
    else if (op.startsWith("sqs:")) f.sqsRequests += n;
    else if (op.startsWith("sfn:")) f.sfnRequests += n;
  }
  // A poll that found nothing is idle traffic, whatever the window; a payload over 64 KiB is
  // billed as a request a chunk.
  f.sqsRequests += (u.sqsExtraChunks ?? 0) - u.emptyReceives;
  for (const t of Object.values(u.tables)) {
    f.tableRead += t.read;
    f.tableWrite += t.write;
    f.indexRead += t.indexRead;
    f.indexWrite += t.indexWrite;
  }
  f.failedWrite = Object.values(u.failedWriteUnits).reduce((s, n) => s + n, 0);
  f.conditionalFailures = u.conditionalFailures;
  f.unreported = u.unreported;
  return f;
}

/** The ReceiveMessage calls `fn`'s identity made in the window (its event source's pollers). */
function sqsOf(w: Window, fn: FunctionComponent): number {
  let n = 0;
  for (const [key, u] of Object.entries(w.meter))
    if (nameOf(key) === fn) n += u.requests["sqs:ReceiveMessage"] ?? 0;
  return n;
}

/**
 * One scheduled run's cost (the watchdog's): its own function's figures only, empty receives
 * included. A host's heartbeat that compute-events handles meanwhile is idle traffic, counted at
 * its rate, not the run's.
 */
function runCost(
  w: Window,
  fn: FunctionComponent,
  memory: Record<FunctionComponent, number>,
): { usd: number; parts: string } {
  const f = byComponent(w, memory).get(fn) ?? zero();
  for (const [key, u] of Object.entries(w.meter)) if (nameOf(key) === fn) f.sqsRequests += u.emptyReceives;
  const usd = dollars(f, fn);
  return {
    usd,
    parts: `${fn} $${fmt(usd * 1e6, 2)} (${fmt(f.invocations, 0)} invocation(s), ${fmt(f.ddbRequests, 0)} DynamoDB and ${fmt(f.sqsRequests, 0)} SQS requests, ${fmt(f.gbSeconds, 4)} GB-s, ${fmt(f.logBytes, 0)} B of logs)`,
  };
}

/** Lambda bills each invocation's duration rounded up to the millisecond, at the stack's memory. */
function gbSecondsOf(inv: InvocationRecord, memory: Record<FunctionComponent, number>): number {
  return (Math.ceil(inv.durationMs) / 1000) * ((memory[functionOf(inv.name)] ?? inv.memory) / 1024);
}

/** Figures by component of a window. */
function byComponent(
  w: Window,
  memory: Record<FunctionComponent, number>,
  opts: { withoutIdleHeartbeats?: boolean } = {},
): Map<Caller, Figures> {
  const m = new Map<Caller, Figures>();
  const at = (c: Caller) => {
    if (!m.has(c)) m.set(c, zero());
    return m.get(c)!;
  };
  for (const [key, u] of Object.entries(w.meter)) {
    const { rest, heartbeats } = nameOf(key) === "compute-events" ? splitHeartbeats(u) : { rest: u };
    m.set(nameOf(key), add(at(nameOf(key)), usageFigures(rest)));
    if (heartbeats) m.set("heartbeat", add(at("heartbeat"), usageFigures(heartbeats)));
  }
  for (const inv of w.invocations) {
    const f = at(functionOf(inv.name));
    f.invocations++;
    f.durationMs += inv.durationMs;
    f.gbSeconds += gbSecondsOf(inv, memory);
  }
  for (const [key, bytes] of w.logBytes) at(nameOf(key)).logBytes += bytes;
  if (opts.withoutIdleHeartbeats) withoutIdleHeartbeats(w, m, memory);
  return m;
}

/** Where a build's units go: caller → table (or table/index) → read and write units per build. */
function unitsByTable(window: Window, idle: Window, done: number): Record<string, Record<string, string>> {
  const sums = new Map<string, { read: number; write: number }>();
  const count = (w: Window, scale: number) => {
    for (const [key, u] of Object.entries(w.meter)) {
      const put = (where: string, read: number, write: number) => {
        const k = `${nameOf(key)}|${where.replace(/^novaless-?/i, "")}`;
        const s = sums.get(k) ?? { read: 0, write: 0 };
        s.read += read * scale;
        s.write += write * scale;
        sums.set(k, s);
      };
      for (const [table, t] of Object.entries(u.tables)) {
        put(table, t.read, t.write);
        for (const [index, i] of Object.entries(t.indexes)) put(`${table}/${index}`, i.read, i.write);
      }
      for (const [table, units] of Object.entries(u.failedWriteUnits)) put(`${table} (refused)`, 0, units);
    }
  };
  count(window, 1);
  count(idle, -window.seconds / idle.seconds);
  const rows: Record<string, Record<string, string>> = {};
  for (const [k, v] of [...sums].sort()) {
    if (Math.max(v.read, v.write) / done < 0.005) continue;
    const [caller, where] = k.split("|") as [string, string];
    rows[`${caller} ${where}`] = { "RRU / build": fmt(v.read / done), "WRU / build": fmt(v.write / done) };
  }
  return rows;
}

/**
 * Where a build's SQS requests go: caller → API → requests per build (the idle rate taken out,
 * empty receives apart: a long poll that finds nothing is idle traffic, charged per host-month),
 * and the payloads' 64 KiB chunks AWS bills past each call's first.
 */
function sqsByApi(window: Window, idle: Window, done: number): Record<string, Record<string, string>> {
  const sums = new Map<string, { requests: number; empty: number }>();
  const count = (w: Window, scale: number) => {
    for (const [key, u] of Object.entries(w.meter)) {
      for (const [op, n] of Object.entries(u.requests)) {
        if (!op.startsWith("sqs:")) continue;
        const k = `${nameOf(key)} ${op.slice(4)}`;
        const s = sums.get(k) ?? { requests: 0, empty: 0 };
        const empty = op === "sqs:ReceiveMessage" ? u.emptyReceives : 0;
        s.requests += (n - empty) * scale;
        s.empty += empty * scale;
        sums.set(k, s);
      }
      const k = `${nameOf(key)} (64 KiB chunks past a call's first)`;
      const s = sums.get(k) ?? { requests: 0, empty: 0 };
      s.requests += (u.sqsExtraChunks ?? 0) * scale;
      sums.set(k, s);
    }
  };
  count(window, 1);
  count(idle, -window.seconds / idle.seconds);
  const rows: Record<string, Record<string, string>> = {};
  for (const [k, v] of [...sums].sort()) {
    if (Math.max(Math.abs(v.requests), Math.abs(v.empty)) / done < 0.005) continue;
    rows[k] = { "requests / build": fmt(v.requests / done), "empty receives / build": fmt(v.empty / done) };
  }
  return rows;
}

/** A goal that write units decide: no verdict where the emulator leaves index writes out. */
function verdict(met: boolean): string {
  if (be.name === "dynalite") return "UNKNOWN (dynalite leaves index writes out)";
  return met ? "MET" : "MISSED";
}

/**
 * The bytes of one access log line of the API's $default stage (ACCESS_LOG_FORMAT) for a server
 * create, with the values API Gateway fills in (an example of each: the local runtime writes no
 * access log).
 */
function accessLogLineBytes(): number {
  const example: Record<string, string> = {
    "$context.requestId": "Qj9B2hXyIAMEbXw=",
    "$context.identity.sourceIp": "203.0.113.10",
    "$context.requestTime": "08/Dec/2026:02:13:00 +0000",
    "$context.httpMethod": "POST",
    "$context.path": "/v2.1/servers",
    "$context.status": "202",
    "$context.responseLength": "412",
    "$context.responseLatency": "95",
    "$context.integrationLatency": "93",
    "$context.integrationErrorMessage": "-",
  };
  const line = Object.fromEntries(
    Object.entries(ACCESS_LOG_FORMAT).map(([k, v]) => {
      if (!(v in example)) throw new Error(`no example value for the access log's ${v}`);
      return [k, example[v]];
    }),
  );
  return Buffer.byteLength(JSON.stringify(line));
}

function dynamoUnits(f: Figures): { read: number; write: number } {
  return { read: f.tableRead + f.indexRead, write: f.tableWrite + f.indexWrite + f.failedWrite };
}

const LAMBDA_LOGS: ReadonlySet<Caller> = new Set(FUNCTION_COMPONENTS);

function dollars(f: Figures, caller: Caller): number {
  const u = dynamoUnits(f);
  return (
    u.read * PRICES.dynamodbReadUnit.usd +
    u.write * PRICES.dynamodbWriteUnit.usd +
    f.sqsRequests * PRICES.sqsRequest.usd +
    f.invocations * PRICES.lambdaRequest.usd +
    f.gbSeconds * PRICES.lambdaGbSecondArm.usd +
    (LAMBDA_LOGS.has(caller) ? f.logBytes * PRICES.logsIngestedByte.usd : 0)
  );
}

const fmt = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : "-");

interface SizeResult {
  hosts: number;
  note?: string;
  startSeconds?: number;
  perBuild?: { rcu: number; wcu: number; usdPerMillion: number; builds: number };
  idle?: { usdPerHostMonth: number };
  /** the stack's monthly cost with no host */
  fixedUsdPerMonth?: number;
}

async function runSize(
  hosts: number,
  be: Awaited<ReturnType<typeof backend>>,
  memory: Record<FunctionComponent, number>,
): Promise<SizeResult> {
  const deadline = Date.now() + timeoutMs;
  const result: SizeResult = { hosts };
  print(`\n## ${hosts} hosts`);
  const t0 = performance.now();
  const starting = be.start({
    port: 0,
    hosts,
    buildMs: 0,
    heartbeatSeconds,
    // Run once, measured, below (the stack schedules it every minute).
    watchdogIntervalMs: 0,
    seedNetwork: network,
  });
  let runtime: Runtime;
  try {
    runtime = await before(deadline, `starting ${hosts} hosts`, starting);
  } catch (e) {
    // A start that is still going would hold this process: it is stopped when it finishes.
    void starting.then((r) => r.stop()).catch(() => {});
    throw e;
  }
  result.startSeconds = (performance.now() - t0) / 1000;
  print(`runtime ready in ${fmt(result.startSeconds, 1)} s`);
  watchFeedWrites(runtime);
  const reader = DynamoDBDocumentClient.from(new DynamoDBClient({}));
  const instancesTable = process.env.NOVALESS_INSTANCES_TABLE!;
  servicesTable = process.env.NOVALESS_SERVICES_TABLE!;
  try {
    fleetCacheStats({ reset: true });
    startMeter();
    // --- idle window
    openWindow();
    await before(deadline, "idle window", sleep(idleSeconds * 1000));
    const idle = closeWindow();
    await before(deadline, "watchdog run", runtime.runWatchdog());
    const watchdog = closeWindow();

    // --- builds
    let done = 0;
    const failures: string[] = [];
    const build = async (name: string) => {
      const { id, ms } = await createServer(runtime.url, name);
      // API Gateway invokes the API function once per request; its duration is at most the
      // round trip the client waited.
      invocations.push({
        name: "novaless-api",
        memory: memory.api,
        durationMs: ms,
        ok: true,
        event: undefined,
      });
      await until(
        `server ${id}`,
        deadline,
        async () =>
          (
            await reader.send(
              new GetCommand({ TableName: instancesTable, Key: { id }, ProjectionExpression: "vm_state" }),
            )
          ).Item?.vm_state as string | undefined,
        "active",
        // Gently: the bench's reads share the machine (and DynamoDB) with what they measure.
        50,
      );
    };
    // at the builds' concurrency: Lambda starts a container per concurrent invocation (the
    // scheduler's cold one reads the whole fleet), and a cold start is not what this counts
    await before(
      deadline,
      "warm-up builds",
      pool(Math.max(warmup, concurrency), concurrency, deadline, (i) => build(`warmup-${i}`)),
    );
    openWindow();
    feedWrites.clear();
    const buildsFrom = performance.now();
    await before(
      deadline,
      "builds",
      pool(builds, concurrency, deadline, async (i) => {
        try {
          await build(`bench-${i}`);
          done++;
        } catch (e) {
          failures.push((e as Error).message);
        }
      }),
    ).catch((e) => {
      if (!(e instanceof TimedOut)) throw e;
      failures.push(e.message);
    });
    const buildSeconds = (performance.now() - buildsFrom) / 1000;
    // What follows ACTIVE (the agent's last writes, the message's delete, the execution's end)
    // belongs to the builds: let it land, and every host's next heartbeat, which sets num_io_ops
    // for the builds that ended on it since the last (lib/compute/build-path.ts); the idle rate
    // covers the extra time.
    await before(
      deadline,
      "settling",
      (async () => {
        await runtime.emulators.sfn?.waitForIdle();
        await sleep(heartbeatSeconds * 1000 + 1000);
      })(),
    ).catch(() => {});
    const window = closeWindow();
    stopMeter();
    if (failures.length) print(`${failures.length} builds failed, e.g. ${failures[0]}`);
    if (done === 0) {
      result.note = "no build finished";
      return result;
    }
    report(
      hosts,
      done,
      { idle, watchdog },
      window,
      memory,
      result,
      buildSeconds,
      runtime.policies.eventSources.length,
    );
    reportFeed(done, window);
    reportColdStarts();
    if (socketWarnings.count) {
      print(`the SDK warned ${socketWarnings.count} times that a client's 50 sockets were all taken`);
      socketWarnings.count = 0;
    }
    return result;
  } finally {
    stopMeter();
    reader.destroy();
    await runtime.stop().catch((e) => print(`stop failed: ${(e as Error).message}`));
  }
}

// --- Cold starts (issue 39): the scheduler containers' first refreshes of this size, from the
// fleet snapshot or a Scan, and their reads (metered apart: lib/conductor/fleet-snapshots.ts).
// They fall mostly in the uncounted warm-up builds; the figures above exclude nothing for them.
function reportColdStarts(): void {
  const s = fleetCacheStats();
  const u = s.coldStartUsage;
  const units = Object.values(u?.tables ?? {}).reduce((sum, t) => sum + t.read + t.indexRead, 0);
  const n = s.coldStarts.snapshot + s.coldStarts.scan;
  print(
    `cold starts: ${n} (${s.coldStarts.snapshot} from the snapshot, ${s.coldStarts.scan} from a Scan), ` +
      `${fmt(units, 1)} read units in all (${fmt(n ? units / n : 0, 1)} each), ${fmt(n ? s.coldStartMs / n : 0, 0)} ms each; ` +
      `requests ${JSON.stringify(u?.requests ?? {})}; snapshot writes ${s.writes} (${fmt(s.lastBytes / 1024, 0)} KiB), HEADs ${s.heads}`,
  );
}

/**
 * The hosts' change feed (the HostChanges table) at 100 builds/s: its write units per build (the
 * meter's, this window) scaled, and how they spread over the feed's partitions (the entries
 * counted at the gateway). A partition takes 1,000 write units a second.
 */
function reportFeed(done: number, window: Window): void {
  const feedTable = process.env.NOVALESS_HOST_CHANGES_TABLE!;
  let units = 0;
  for (const usage of Object.values(window.meter)) units += usage.tables[feedTable]?.write ?? 0;
  const writes = [...feedWrites.values()].reduce((a, b) => a + b, 0);
  if (writes === 0) {
    print("change feed: no entry counted (no IAM gateway?)");
    return;
  }
  const busiest = Math.max(...FEED_SHARDS.map((f) => feedWrites.get(f) ?? 0)) / writes;
  const perSecond = (units / done) * 100;
  print(
    `change feed: ${fmt(units / done)} write units and ${fmt(writes / done)} entries per build; ` +
      `at 100 builds/s ${fmt(perSecond, 0)} units/s over ${FEED_SHARDS.length} feed partitions: ` +
      `${fmt(perSecond / FEED_SHARDS.length, 0)} each if even, the busiest here ${fmt(busiest * 100, 0)}% ` +
      `of the writes (${fmt(perSecond * busiest, 0)} units/s; a partition takes 1,000)`,
  );
}

function report(
  hosts: number,
  done: number,
  idleRuns: { idle: Window; watchdog: Window },
  window: Window,
  memory: Record<FunctionComponent, number>,
  result: SizeResult,
  buildSeconds: number,
  eventSources: number,
): void {
  const { idle, watchdog } = idleRuns;
  const idleBy = byComponent(idle, memory);
  // Per build: the idle heartbeats taken out report by report, in both windows.
  const idleLeft = byComponent(idle, memory, { withoutIdleHeartbeats: true });
  const buildBy = byComponent(window, memory, { withoutIdleHeartbeats: true });
  // The build window less the idle rate (the watchdog's runs, sweeps) for its length, per build;
  // heartbeats are counted apart (the Services table), not per build.
  const perBuild = new Map<Caller, Figures>();
  for (const c of new Set([...idleLeft.keys(), ...buildBy.keys()])) {
    if (c === "heartbeat") continue;
    const idleF = idleLeft.get(c) ?? zero();
    const f = add(buildBy.get(c) ?? zero(), idleF, -window.seconds / idle.seconds);
    for (const k of Object.keys(f) as (keyof Figures)[]) f[k] = Math.max(0, f[k]) / done;
    perBuild.set(c, f);
  }
  // Each POST is one API Gateway request and one invocation of the API function (its duration
  // bounded by what the client waited).
  print(
    `${done} builds in ${fmt(buildSeconds, 1)} s (${fmt(done / buildSeconds, 1)} builds/s at concurrency ${concurrency}; ${load()}), ` +
      `counted until every host's next heartbeat (${fmt(window.seconds, 1)} s); per build:`,
  );
  const rows: Record<string, Record<string, string>> = {};
  let total = zero();
  let usd = 0;
  for (const [c, f] of [...perBuild].sort()) {
    if (Object.values(f).every((v) => v === 0)) continue;
    const u = dynamoUnits(f);
    rows[c] = {
      "ddb req": fmt(f.ddbRequests),
      RRU: fmt(u.read),
      "RRU idx": fmt(f.indexRead),
      WRU: fmt(u.write),
      "WRU idx": fmt(f.indexWrite),
      "WRU refused": fmt(f.failedWrite),
      "sqs req": fmt(f.sqsRequests),
      "sfn api req": fmt(f.sfnRequests),
      "lambda inv": fmt(f.invocations),
      "lambda ms": fmt(f.invocations ? f.durationMs / f.invocations : 0, 1),
      "GB-s": fmt(f.gbSeconds, 4),
      "log B": fmt(f.logBytes, 0),
      "$/M builds": fmt(dollars(f, c) * 1e6),
    };
    total = add(total, f);
    usd += dollars(f, c);
  }
  console.table(rows);
  print("units per build by caller, table and index (the idle rate taken out):");
  console.table(unitsByTable(window, idle, done));
  const sfnExec = window.executions.length / done;
  const transitions = window.executions.reduce((s, e) => s + e.transitions, 0) / done;
  const expressGbS =
    window.executions.reduce((s, e) => s + Math.ceil(e.durationMs / 100) * 0.1 * (64 / 1024), 0) / done;
  const sfnUsd = sfnExec * PRICES.expressRequest.usd + expressGbS * PRICES.expressGbSecond.usd;
  const apiUsd = PRICES.httpApiRequest.usd;
  // What the stack logs and traces beside the functions: the state machine's execution logs at
  // its level (vended logs), the API's access log line, and X-Ray's traces where tracing is on
  // (each traced execution one trace: the default sampling rule records every one up to 1 a second).
  const sfnLogBytes = window.executions.reduce((s, e) => s + e.logBytes, 0) / done;
  const traces = window.executions.filter((e) => e.traced).length / done;
  const accessLogBytes = accessLogLineBytes();
  const stackLogsUsd =
    sfnLogBytes * PRICES.vendedLogsIngestedByte.usd + accessLogBytes * PRICES.logsIngestedByte.usd;
  const xrayUsd = traces * PRICES.xrayTraceRecorded.usd;
  usd += sfnUsd + apiUsd + stackLogsUsd + xrayUsd;
  const units = dynamoUnits(total);
  const scheduler = perBuild.get("scheduler") ?? zero();
  print(
    `DynamoDB: ${fmt(total.ddbRequests)} requests, ${fmt(units.read)} RRU (index ${fmt(total.indexRead)}), ` +
      `${fmt(units.write)} WRU (index ${fmt(total.indexWrite)}, refused conditional writes ${fmt(total.failedWrite)} ` +
      `at their minimum charge: DynamoDB bills a refused write, its error reports no units)`,
  );
  if (total.unreported > 0) print(`  ${fmt(total.unreported)} answers per build carried no ConsumedCapacity`);
  print(
    `claim conflicts: ${fmt(scheduler.conditionalFailures, 3)} per build (scheduler's refused writes); ` +
      `all refused writes: ${fmt(total.conditionalFailures, 3)} per build`,
  );
  print(`SQS: ${fmt(total.sqsRequests)} requests (empty polls excluded); per build by caller and API:`);
  console.table(sqsByApi(window, idle, done));
  print(
    `Step Functions (EXPRESS): ${fmt(sfnExec)} executions, ${fmt(transitions, 1)} state transitions, ` +
      `${fmt(expressGbS, 4)} GB-s (64 MB, 100 ms steps)`,
  );
  print(
    `Lambda: ${fmt(total.invocations)} invocations, ${fmt(total.gbSeconds, 4)} GB-s ` +
      `(durations on this shared machine; the API's is its POST's round trip); logs of the functions ${fmt(total.logBytes, 0)} B`,
  );
  print(
    `logs and traces beside the functions: the state machine's execution logs ${fmt(sfnLogBytes, 0)} B ` +
      `(its LoggingConfiguration level, conductor_log_level), the API's access log line ${fmt(accessLogBytes, 0)} B, ` +
      `X-Ray ${fmt(traces)} traces (conductor_tracing)`,
  );
  const logsUsd =
    [...perBuild].reduce((sum, [c, f]) => sum + (LAMBDA_LOGS.has(c) ? f.logBytes : 0), 0) *
      PRICES.logsIngestedByte.usd +
    stackLogsUsd;
  const shares: [string, number][] = [
    ["DynamoDB", units.read * PRICES.dynamodbReadUnit.usd + units.write * PRICES.dynamodbWriteUnit.usd],
    ["SQS", total.sqsRequests * PRICES.sqsRequest.usd],
    ["Lambda requests", total.invocations * PRICES.lambdaRequest.usd],
    ["Lambda duration", total.gbSeconds * PRICES.lambdaGbSecondArm.usd],
    ["Step Functions", sfnUsd],
    ["API Gateway", apiUsd],
    ["CloudWatch Logs", logsUsd],
    ["X-Ray", xrayUsd],
  ];
  print(
    `$ per million builds: ${fmt(usd * 1e6)}: ` +
      shares.map(([k, v]) => `${k} ${fmt(v * 1e6)} (${fmt((100 * v) / usd, 0)}%)`).join(", "),
  );
  // Issue 39's goals, all-in: table and index units as AWS bills them (refused writes included).
  print(
    `goals (table + index units): RRU ${fmt(units.read)} <= 8 ${units.read <= 8 ? "MET" : "MISSED"}; ` +
      `WRU ${fmt(units.write)} <= 20 ${verdict(units.write <= 20)}; ` +
      `SQS ${fmt(total.sqsRequests)} <= 10 ${total.sqsRequests <= 10 ? "MET" : "MISSED"}; ` +
      `$/M builds ${fmt(usd * 1e6)} <= 20 at 10,000 hosts ${hosts >= 10_000 ? verdict(usd * 1e6 <= 20) : "(not this size)"}`,
  );
  result.perBuild = { rcu: units.read, wcu: units.write, usdPerMillion: usd * 1e6, builds: done };

  // --- idle per host-month: a real agent long-polls every `pollSeconds` and, idle, heartbeats
  // every `idleHeartbeat`; each heartbeat costs what the idle window measured per compute-host write.
  const compute = idleBy.get("heartbeat") ?? zero();
  const heartbeatsSeen = compute.ddbRequests;
  const perHeartbeat = heartbeatsSeen > 0 ? dynamoUnits(compute) : { read: 0, write: 0 };
  if (heartbeatsSeen > 0) {
    perHeartbeat.read /= heartbeatsSeen;
    perHeartbeat.write /= heartbeatsSeen;
  }
  const heartbeatsPerMonth = MONTH_S / idleHeartbeat;
  const pollsPerMonth = MONTH_S / pollSeconds;
  // A heartbeat is compute-events' write; its invocation (the host's POST to the function URL) is
  // in the other idle traffic, at its measured rate.
  const heartbeatUsd =
    heartbeatsPerMonth *
    (perHeartbeat.read * PRICES.dynamodbReadUnit.usd + perHeartbeat.write * PRICES.dynamodbWriteUnit.usd);
  const pollUsd = pollsPerMonth * PRICES.sqsRequest.usd;
  const wd = runCost(watchdog, "build-watchdog", memory);
  const watchdogRunUsd = wd.usd;
  print(`watchdog run window ${fmt(watchdog.seconds, 2)} s: ${wd.parts} (per million runs)`);
  // Whatever else ran while nothing was built (empty polls aside), at its measured rate.
  let otherRunUsd = 0;
  const others: string[] = [];
  for (const [c, f] of idleBy) {
    if (c === "compute-host" || c === "heartbeat") continue;
    const d = dollars(f, c);
    if (d > 0) others.push(c);
    otherRunUsd += d;
  }
  const otherUsd = (otherRunUsd / idle.seconds) * (MONTH_S / hosts);
  // The stack's fixed idle cost, a month with no host: what follows from the template alone.
  const pollerReceives = eventSources * EVENT_SOURCE_POLLERS * (MONTH_S / EVENT_SOURCE_WAIT_SECONDS);
  const pollersUsd = pollerReceives * PRICES.sqsRequest.usd;
  // the watchdog's run as measured at this fleet size: an upper bound of an empty fleet's
  const watchdogMonthUsd = watchdogRunUsd * WATCHDOG_RUNS_PER_MONTH;
  const fixedResources = stackFixedResources();
  const alarmsUsd = fixedResources.alarms * PRICES.cloudwatchAlarm.usd;
  const dashboardsUsd = fixedResources.dashboards * PRICES.cloudwatchDashboard.usd;
  const secretsUsd = fixedResources.secrets * PRICES.secretsManagerSecret.usd;
  const fixedUsd = pollersUsd + watchdogMonthUsd + alarmsUsd + dashboardsUsd + secretsUsd;
  const pollersSeen = sqsOf(idle, "build-intake");
  const idleUsd = heartbeatUsd + pollUsd + otherUsd + fixedUsd / hosts;
  if (heartbeatsSeen === 0)
    print("no heartbeat seen in the idle window: heartbeats counted as free (unknown)");
  print(
    `idle window ${fmt(idle.seconds, 1)} s: ${heartbeatsSeen} heartbeat writes seen ` +
      `(${fmt(heartbeatsSeen / idle.seconds / hosts, 4)} per host-s; the rule's ${fmt(1 / idleHeartbeat, 4)}), ${fmt(perHeartbeat.write, 2)} WRU and ` +
      `${fmt(perHeartbeat.read, 2)} RRU each`,
  );
  print(
    `fixed $ a month (no host): ${fmt(fixedUsd, 4)} = event source pollers ${fmt(pollersUsd, 4)} ` +
      `(${eventSources} mapping(s) × ${EVENT_SOURCE_POLLERS} pollers, a receive every ${EVENT_SOURCE_WAIT_SECONDS} s each: ${fmt(pollerReceives, 0)} receives, estimated; ` +
      `the local runtime's one long poll made ${fmt(pollersSeen, 0)} receives in the ${fmt(idle.seconds, 1)} s idle window, ` +
      `${fmt((pollersSeen / idle.seconds) * MONTH_S, 0)} a month at that rate) + watchdog schedule ${fmt(watchdogMonthUsd, 4)} ` +
      `(${WATCHDOG_RUNS_PER_MONTH} runs a month at the run measured here, $${fmt(watchdogRunUsd * 1e6, 2)} per million) + ` +
      `CloudWatch alarms ${fmt(alarmsUsd, 2)} (${fixedResources.alarms} at $${PRICES.cloudwatchAlarm.usd}) + dashboards ${fmt(dashboardsUsd, 2)} ` +
      `(${fixedResources.dashboards} at $${PRICES.cloudwatchDashboard.usd}) + Secrets Manager ${fmt(secretsUsd, 2)} (${fixedResources.secrets} secrets at $${PRICES.secretsManagerSecret.usd}); ` +
      `list prices, no free tier; not counted: log and S3 storage (grow with use), KMS (the queues use SQS-managed keys); ` +
      `goal <= 1 ${verdict(fixedUsd <= 1)}`,
  );
  print(
    `idle $ per host-month: ${fmt(idleUsd, 4)} = heartbeats ${fmt(heartbeatUsd, 4)} (each compute-events' write; its invocation is in the other idle traffic) ` +
      `(${fmt(heartbeatsPerMonth, 0)} a month: every ${idleHeartbeat} s at report_interval ${heartbeatSeconds} s and service_down_time ${schedulerConfig().service_down_time} s) + long polls ${fmt(pollUsd, 4)} ` +
      `(${fmt(pollsPerMonth, 0)} a month at ${pollSeconds} s, computed: the local agents poll every 1 s) + ` +
      `other idle traffic ${fmt(otherUsd, 4)} (measured rate${others.length ? `: ${others.join(", ")}` : ""}) + ` +
      `the fixed ${fmt(fixedUsd, 4)} shared by ${hosts} hosts ${fmt(fixedUsd / hosts, 4)}; ` +
      `goal <= 0.10 ${heartbeatsSeen === 0 ? "UNKNOWN" : idleUsd <= 0.1 ? "MET" : "MISSED"}`,
  );
  result.fixedUsdPerMonth = fixedUsd;
  result.idle = { usdPerHostMonth: idleUsd };
}

// --- moves

/** the seeded ubuntu image (a rebuild takes an image by id, as Nova's schema wants) */
const UBUNTU = "a1b2c3d4-0000-4000-8000-000000000002";

type MoveKind =
  | "resize + confirm"
  | "resize + revert"
  | "migrate + confirm"
  | "live migrate"
  | "rebuild (new image)"
  | "evacuate"
  | "evacuated source back";
/** The placement transactions of one caller (claims.ts): what a move costs the hosts' claims. */
interface ClaimWrites {
  /** a host's usage up and the consumer's allocation written (claim) */
  claims: number;
  /** an allocation handed from one consumer to another (moveAllocation), the host unchanged */
  moves: number;
  /** the allocation deleted and the host's usage down (release) */
  releases: number;
  /** any other transaction on those tables (the audit's repairs) */
  other: number;
  /** refused by a condition or a conflict (nothing written) */
  refused: number;
}
const claimWrites = new Map<Caller, ClaimWrites>();
const noClaims = (): ClaimWrites => ({ claims: 0, moves: 0, releases: 0, other: 0, refused: 0 });

/**
 * Counts the TransactWriteItems on the Hosts and Allocations tables as they reach the runtime's
 * IAM gateway (every component's SDK call passes it, signed with the component's key): the
 * meter counts requests by operation, not which transaction a request was.
 */
function watchClaimWrites(runtime: Runtime): boolean {
  const hostsTable = process.env.NOVALESS_HOSTS_TABLE!;
  const allocationsTable = process.env.NOVALESS_ALLOCATIONS_TABLE!;
  return onGatewayAnswer(runtime, (req, res) => {
    const target = String(req.headers["x-amz-target"] ?? "");
    if (!target.endsWith(".TransactWriteItems")) return;
    const items = (
      JSON.parse(req.body.toString("utf8")) as { TransactItems?: Record<string, { TableName?: string }>[] }
    ).TransactItems;
    const actions = new Set(
      (items ?? []).flatMap((item) =>
        Object.entries(item).map(
          ([verb, a]) =>
            `${verb}:${a.TableName === hostsTable ? "H" : a.TableName === allocationsTable ? "A" : "?"}`,
        ),
      ),
    );
    if (![...actions].some((a) => a.endsWith(":H") || a.endsWith(":A"))) return;
    const key = /Credential=([^/]+)\//.exec(String(req.headers.authorization ?? ""))?.[1] ?? "";
    const c = claimWrites.get(nameOf(key)) ?? noClaims();
    claimWrites.set(nameOf(key), c);
    if (res.status !== 200) c.refused++;
    else if (actions.has("Update:H") && actions.has("Put:A")) c.claims++;
    else if (actions.has("Update:H") && actions.has("Delete:A")) c.releases++;
    else if (actions.has("Delete:A") && actions.has("Put:A") && !actions.has("Update:H")) c.moves++;
    else c.other++;
  });
}

/**
 * Calls `seen` with every request that passes the runtime's IAM gateway and its answer (every
 * component's SDK call does, signed with its own key); false when the runtime has no gateway.
 */
function onGatewayAnswer(
  runtime: Runtime,
  seen: (req: { headers: Record<string, unknown>; body: Buffer }, res: { status: number }) => void,
): boolean {
  const gateway = runtime.emulators.gateway;
  if (!gateway) return false;
  const serve = gateway.serve.bind(gateway);
  gateway.serve = async (req, signal) => {
    const res = await serve(req, signal);
    seen(req, res);
    return res;
  };
  return true;
}

/** The change feed's entries by shard, counted at the gateway as they pass (all components). */
const feedWrites = new Map<string, number>();

/**
 * Counts the change feed's entries by their shard (lib/placement/feed.ts), each in that shard's
 * partition of the HostChanges table. The meter has the table's units, not how they spread.
 */
function watchFeedWrites(runtime: Runtime): boolean {
  const feedTable = process.env.NOVALESS_HOST_CHANGES_TABLE!;
  return onGatewayAnswer(runtime, (req, res) => {
    if (res.status !== 200) return;
    const target = String(req.headers["x-amz-target"] ?? "");
    if (target.slice(target.indexOf(".") + 1) !== "PutItem") return;
    const body = JSON.parse(req.body.toString("utf8")) as {
      TableName?: string;
      Item?: { feed?: { S?: string } };
    };
    const shard = body.TableName === feedTable ? body.Item?.feed?.S : undefined;
    if (shard) feedWrites.set(shard, (feedWrites.get(shard) ?? 0) + 1);
  });
}

interface MoveResult {
  kind: MoveKind;
  moves: number;
  /** per step of the move: its name and the seconds each took, POST to final state */
  steps: { name: string; seconds: number[] }[];
  perMove: Map<Caller, Figures>;
  claims: Map<Caller, ClaimWrites>;
  sfnExecutions: number;
  transitions: number;
  apiRequests: number;
  usd: number;
  note?: string;
}

const ADMIN_TOKEN = "admin-token";

/** One request to the public API; the answer and how long it took. */
async function call(
  url: string,
  token: string,
  method: string,
  path: string,
  body?: unknown,
  version?: string,
): Promise<{ status: number; json: Record<string, unknown>; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      "content-type": "application/json",
      "x-auth-token": token,
      ...(version ? { "openstack-api-version": `compute ${version}` } : {}),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  const ms = performance.now() - t0;
  return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {}, ms };
}

async function runMoves(
  n: number,
  hosts: number,
  be: Awaited<ReturnType<typeof backend>>,
  memory: Record<FunctionComponent, number>,
): Promise<MoveResult[]> {
  const deadline = Date.now() + timeoutMs;
  const moveHeartbeat = 2;
  print(
    `\n## moves: ${n} of each, one at a time, on ${hosts} hosts (heartbeat ${moveHeartbeat} s, service_down_time ${3 * moveHeartbeat} s)`,
  );
  const starting = be.start({
    port: 0,
    hosts,
    buildMs: 0,
    heartbeatSeconds: moveHeartbeat,
    watchdogIntervalMs: 0,
    seedNetwork: network,
    env: { NOVALESS_SERVICE_DOWN_TIME: String(3 * moveHeartbeat) },
  });
  let runtime: Runtime;
  try {
    runtime = await before(deadline, `starting ${hosts} hosts`, starting);
  } catch (e) {
    void starting.then((r) => r.stop()).catch(() => {});
    throw e;
  }
  const reader = DynamoDBDocumentClient.from(new DynamoDBClient({}));
  const instancesTable = process.env.NOVALESS_INSTANCES_TABLE!;
  const migrationsTable = process.env.NOVALESS_MIGRATIONS_TABLE!;
  servicesTable = process.env.NOVALESS_SERVICES_TABLE!;
  if (!watchClaimWrites(runtime)) print("no IAM gateway in this runtime: claim transactions not counted");
  const results: MoveResult[] = [];
  let posts = 0;
  /** a POST of the move, as API Gateway and the API function count it */
  const post = async (token: string, path: string, body: unknown, want: number, version?: string) => {
    const r = await call(runtime.url, token, "POST", path, body, version);
    invocations.push({
      name: "novaless-api",
      memory: memory.api,
      durationMs: r.ms,
      ok: true,
      event: undefined,
    });
    posts++;
    if (r.status !== want)
      throw new Error(`POST ${path}: HTTP ${r.status} ${JSON.stringify(r.json).slice(0, 300)}`);
    return r;
  };
  const instance = async (id: string) =>
    (
      await reader.send(
        new GetCommand({
          TableName: instancesTable,
          Key: { id },
          ProjectionExpression: "vm_state, task_state, #h",
          ExpressionAttributeNames: { "#h": "host" },
        }),
      )
    ).Item as { vm_state: string; task_state: string | null; host: string } | undefined;
  /** "VERIFY_RESIZE", "ACTIVE" or "ERROR" once the server is at rest (no task), else its task state */
  const status = async (id: string) => {
    const rec = await instance(id);
    if (!rec) return undefined;
    if (rec.vm_state === "error") return "ERROR";
    if (rec.task_state) return rec.task_state;
    return rec.vm_state === "resized" ? "VERIFY_RESIZE" : rec.vm_state === "active" ? "ACTIVE" : rec.vm_state;
  };
  /** one step: its POST, then until the server is at `want` (and, for an evacuation, off `from`) */
  const step = async (
    id: string,
    action: unknown,
    token: string,
    want: string,
    code: number,
    version?: string,
    from?: string,
  ) => {
    const t0 = performance.now();
    await post(token, `/v2.1/servers/${id}/action`, action, code, version);
    await until(
      `server ${id}`,
      deadline,
      async () => {
        const s = await status(id);
        return from !== undefined && s === want && (await instance(id))?.host === from
          ? "still on its source"
          : s;
      },
      want,
      20,
    );
    return (performance.now() - t0) / 1000;
  };
  const boot = async (name: string, host?: string) => {
    const r = await call(runtime.url, host ? ADMIN_TOKEN : DEMO_TOKEN, "POST", "/v2.1/servers", {
      server: {
        name,
        flavorRef: "1",
        imageRef: "cirros",
        ...(host ? { availability_zone: `nova:${host}` } : {}),
      },
    });
    if (r.status !== 202)
      throw new Error(`create ${name}: HTTP ${r.status} ${JSON.stringify(r.json).slice(0, 300)}`);
    const id = (r.json.server as { id: string }).id;
    await until(`server ${id}`, deadline, () => status(id), "ACTIVE", 20);
    return id;
  };
  /** everything a window's moves left running lands in it */
  const settle = async () => {
    await runtime.emulators.sfn?.waitForIdle();
    await sleep(1000);
  };
  const measure = async (
    kind: MoveKind,
    servers: string[],
    stepNames: string[],
    move: (id: string) => Promise<number[]>,
    idle: Window,
  ) => {
    // the first move of each kind warms its functions: not counted
    await move(servers[0]!);
    await settle();
    const steps = stepNames.map((name) => ({ name, seconds: [] as number[] }));
    posts = 0;
    openWindow();
    claimWrites.clear();
    for (const id of servers.slice(1)) {
      const times = await before(deadline, kind, move(id));
      for (const [i, t] of times.entries()) steps[i]!.seconds.push(t);
    }
    const apiPosts = posts;
    await settle();
    results.push(moveFigures(kind, servers.length - 1, steps, closeWindow(), idle, memory, apiPosts));
  };

  try {
    // servers first, not measured: the resized and migrated ones anywhere, the evacuated ones on host-1
    const plain: string[] = [];
    for (let i = 0; i < 5 * (n + 1); i++) plain.push(await before(deadline, "boots", boot(`move-${i}`)));
    const evacuees: string[] = [];
    for (let i = 0; i <= n; i++)
      evacuees.push(await before(deadline, "boots", boot(`evacuee-${i}`, "host-1")));
    await settle();
    startMeter();
    openWindow();
    await before(
      deadline,
      "idle window",
      sleep(Math.max(Number(values["idle-seconds"]), 2 * moveHeartbeat) * 1000),
    );
    const idle = closeWindow();

    await measure(
      "resize + confirm",
      plain.slice(0, n + 1),
      ["resize → VERIFY_RESIZE", "confirm → ACTIVE"],
      async (id) => [
        await step(id, { resize: { flavorRef: "2" } }, DEMO_TOKEN, "VERIFY_RESIZE", 202),
        await step(id, { confirmResize: null }, DEMO_TOKEN, "ACTIVE", 204),
      ],
      idle,
    );
    await measure(
      "resize + revert",
      plain.slice(n + 1, 2 * n + 2),
      ["resize → VERIFY_RESIZE", "revert → ACTIVE"],
      async (id) => [
        await step(id, { resize: { flavorRef: "2" } }, DEMO_TOKEN, "VERIFY_RESIZE", 202),
        await step(id, { revertResize: null }, DEMO_TOKEN, "ACTIVE", 202),
      ],
      idle,
    );
    await measure(
      "migrate + confirm",
      plain.slice(2 * n + 2, 3 * n + 3),
      ["migrate → VERIFY_RESIZE", "confirm → ACTIVE"],
      async (id) => [
        await step(id, { migrate: null }, ADMIN_TOKEN, "VERIFY_RESIZE", 202),
        await step(id, { confirmResize: null }, ADMIN_TOKEN, "ACTIVE", 204),
      ],
      idle,
    );
    // the scheduler picks the destination; the fake driver's copy takes [fake] live_migration_ms
    await measure(
      "live migrate",
      plain.slice(3 * n + 3, 4 * n + 4),
      [
        `live migrate → ACTIVE on another host (copy ${optionValue<number>("compute_fake_live_migration_ms")} ms)`,
      ],
      async (id) => {
        const from = (await instance(id))?.host ?? undefined;
        const live = { "os-migrateLive": { host: null, block_migration: "auto" } };
        return [await step(id, live, ADMIN_TOKEN, "ACTIVE", 202, "2.68", from)];
      },
      idle,
    );
    // a new image: the scheduler checks the server's own host (RUN_ON_REBUILD filters), no claim
    await measure(
      "rebuild (new image)",
      plain.slice(4 * n + 4),
      ["rebuild → ACTIVE"],
      async (id) => [await step(id, { rebuild: { imageRef: UBUNTU } }, DEMO_TOKEN, "ACTIVE", 202)],
      idle,
    );

    // host-1 stops; once service_down_time has passed (and the watchdog saw it) it may be evacuated
    await runtime.killHost("host-1");
    await before(deadline, "service_down_time", sleep((3 * moveHeartbeat + 1) * 1000));
    await runtime.runWatchdog();
    await measure(
      "evacuate",
      evacuees,
      ["evacuate → ACTIVE"],
      async (id) => [await step(id, { evacuate: {} }, ADMIN_TOKEN, "ACTIVE", 200, "2.68", "host-1")],
      idle,
    );

    // host-1 back: it destroys its copies of the evacuated servers, then their source claims go
    const evacuations = async () =>
      (
        await Promise.all(
          evacuees.map(
            async (id) =>
              (
                await reader.send(
                  new QueryCommand({
                    TableName: migrationsTable,
                    IndexName: MIGRATIONS_BY_INSTANCE_INDEX,
                    KeyConditionExpression: "instance_uuid = :i",
                    ExpressionAttributeValues: { ":i": id },
                  }),
                )
              ).Items ?? [],
          ),
        )
      ).flat() as { migration_type: string; status: string }[];
    posts = 0;
    openWindow();
    claimWrites.clear();
    const t0 = performance.now();
    await runtime.restartHost("host-1");
    await until(
      "the evacuations' completion",
      deadline,
      async () => {
        const open = (await evacuations()).filter(
          (m) => m.migration_type === "evacuation" && m.status !== "completed",
        );
        return open.length === 0 ? "completed" : `${open.length} open`;
      },
      "completed",
      50,
    );
    const back = (performance.now() - t0) / 1000;
    await settle();
    results.push(
      moveFigures(
        "evacuated source back",
        evacuees.length,
        [{ name: `host-1 restarted → its ${evacuees.length} evacuations completed`, seconds: [back] }],
        closeWindow(),
        idle,
        memory,
        0,
      ),
    );
    stopMeter();
    return results;
  } finally {
    stopMeter();
    reader.destroy();
    await runtime.stop().catch((e) => print(`stop failed: ${(e as Error).message}`));
  }
}

/** One kind's window, per move, less the idle rate; printed by component. */
function moveFigures(
  kind: MoveKind,
  n: number,
  steps: { name: string; seconds: number[] }[],
  window: Window,
  idle: Window,
  memory: Record<FunctionComponent, number>,
  apiPosts: number,
): MoveResult {
  const idleBy = byComponent(idle, memory, { withoutIdleHeartbeats: true });
  const by = byComponent(window, memory, { withoutIdleHeartbeats: true });
  const perMove = new Map<Caller, Figures>();
  for (const c of new Set([...idleBy.keys(), ...by.keys()])) {
    if (c === "heartbeat") continue;
    const f = add(by.get(c) ?? zero(), idleBy.get(c) ?? zero(), -window.seconds / idle.seconds);
    for (const k of Object.keys(f) as (keyof Figures)[]) f[k] = Math.max(0, f[k]) / n;
    perMove.set(c, f);
  }
  // copies: the next kind's warm-up adds to the live counts before they are cleared
  const claims = new Map([...claimWrites].map(([c, w]) => [c, { ...w }] as const));
  print(`\n### ${kind}: ${n} in ${fmt(window.seconds, 1)} s (${load()})`);
  for (const s of steps) {
    const sorted = [...s.seconds].sort((a, b) => a - b);
    print(
      `  ${s.name}: p50 ${fmt(percentile(sorted, 0.5))} s, max ${fmt(sorted.at(-1) ?? Number.NaN)} s (${sorted.map((t) => fmt(t)).join(", ")})`,
    );
  }
  const rows: Record<string, Record<string, string>> = {};
  let usd = 0;
  for (const c of [...new Set([...perMove.keys(), ...claims.keys()])].sort()) {
    const f = perMove.get(c) ?? zero();
    const w = claims.get(c);
    if (Object.values(f).every((v) => v === 0) && !w) continue;
    const u = dynamoUnits(f);
    rows[c] = {
      "ddb req": fmt(f.ddbRequests),
      RRU: fmt(u.read),
      WRU: fmt(u.write),
      "WRU refused": fmt(f.failedWrite),
      "sqs req": fmt(f.sqsRequests),
      "lambda inv": fmt(f.invocations),
      "GB-s": fmt(f.gbSeconds, 4),
      "claim/move/release": w ? `${fmt(w.claims / n)}/${fmt(w.moves / n)}/${fmt(w.releases / n)}` : "",
      "refused tx": w ? fmt(w.refused / n) : "",
      "$/M moves": fmt(dollars(f, c) * 1e6),
    };
    usd += dollars(f, c);
  }
  console.table(rows);
  const sfnExecutions = window.executions.length / n;
  const transitions = window.executions.reduce((s, e) => s + e.transitions, 0) / n;
  const expressGbS =
    window.executions.reduce((s, e) => s + Math.ceil(e.durationMs / 100) * 0.1 * (64 / 1024), 0) / n;
  const sfnUsd = sfnExecutions * PRICES.expressRequest.usd + expressGbS * PRICES.expressGbSecond.usd;
  const apiRequests = apiPosts / n;
  // the state machines' execution logs and traces, as for a build (the access log line is a
  // create's: a move's POST answers shorter)
  const sfnLogBytes = window.executions.reduce((s, e) => s + e.logBytes, 0) / n;
  const traces = window.executions.filter((e) => e.traced).length / n;
  usd +=
    sfnUsd +
    apiRequests * (PRICES.httpApiRequest.usd + accessLogLineBytes() * PRICES.logsIngestedByte.usd) +
    sfnLogBytes * PRICES.vendedLogsIngestedByte.usd +
    traces * PRICES.xrayTraceRecorded.usd;
  const machines = [...new Set(window.executions.map((e) => e.stateMachineName))].join(", ");
  print(
    `  Step Functions: ${fmt(sfnExecutions)} executions (${machines || "none"}), ${fmt(transitions, 1)} transitions; ` +
      `API: ${fmt(apiRequests)} requests; $ per million: ${fmt(usd * 1e6)}`,
  );
  return { kind, moves: n, steps, perMove, claims, sfnExecutions, transitions, apiRequests, usd };
}

function printMoveSummary(results: MoveResult[]): void {
  print("\n## moves summary (per move; DynamoDB units include indexes and refused writes)");
  console.table(
    results.map((r) => {
      let total = zero();
      for (const f of r.perMove.values()) total = add(total, f);
      const w = noClaims();
      for (const c of r.claims.values())
        for (const k of Object.keys(w) as (keyof ClaimWrites)[]) w[k] += c[k];
      const u = dynamoUnits(total);
      return {
        move: r.kind,
        n: r.moves,
        "s (p50 per step)": r.steps
          .map((s) =>
            fmt(
              percentile(
                [...s.seconds].sort((a, b) => a - b),
                0.5,
              ),
            ),
          )
          .join(" + "),
        "ddb req": fmt(total.ddbRequests, 1),
        RRU: fmt(u.read, 1),
        WRU: fmt(u.write, 1),
        "sqs req": fmt(total.sqsRequests, 1),
        "sfn exec": fmt(r.sfnExecutions),
        "lambda inv": fmt(total.invocations, 1),
        "claim/move/release": `${fmt(w.claims / r.moves)}/${fmt(w.moves / r.moves)}/${fmt(w.releases / r.moves)}`,
        "$/M moves": fmt(r.usd * 1e6),
      };
    }),
  );
}

// --- main
hardStop("bench:cost", timeoutMs * (sizes.length + (Number(values.moves) > 0 ? 1 : 0)) + 120_000);
print(
  `bench:cost on ${machine()}; ${load()}; ${network ? "each build with a port on the seeded network public, as npm start runs" : "--no-network: builds without a port"}`,
);
const be = await backend(values.dynamodb as "auto" | "local" | "dynalite");
print(
  `DynamoDB: ${be.name} (${be.note})${be.name === "dynalite" ? ": dynalite reports no index WRITE units (its index reads are counted); index writes are NOT counted" : ": table and index units as DynamoDB reports them, a TransactWriteItems' as AWS bills it (lib/aws/meter.ts)"}`,
);
const memory = stackMemory();
print(`Lambda memory (from the stack, MB): ${JSON.stringify(memory)}; Arm`);
print(`prices (us-east-1, on-demand):`);
for (const p of Object.values(PRICES))
  print(`  $${p.usd.toPrecision(4)} per ${p.per}; ${p.asOf}; ${p.source}`);
const results: SizeResult[] = [];
for (const hosts of sizes) {
  try {
    results.push(await runSize(hosts, be, memory));
  } catch (e) {
    print(`${hosts} hosts: ${(e as Error).message}`);
    if (lastErrors.length) print(`last errors logged:\n${lastErrors.join("\n")}`);
    results.push({ hosts, note: (e as Error).message });
    if (e instanceof TimedOut) {
      print("larger sizes skipped: this one did not finish in time");
      break;
    }
  }
}
print("\n## summary (per build: units include indexes and refused writes)");
console.table(
  results.map((r) => ({
    hosts: r.hosts,
    "start s": r.startSeconds === undefined ? "-" : fmt(r.startSeconds, 1),
    builds: r.perBuild?.builds ?? 0,
    "RRU/build": r.perBuild ? fmt(r.perBuild.rcu) : "-",
    "WRU/build": r.perBuild ? fmt(r.perBuild.wcu) : "-",
    "$/M builds": r.perBuild ? fmt(r.perBuild.usdPerMillion) : "-",
    "$/host-month idle": r.idle ? fmt(r.idle.usdPerHostMonth, 4) : "-",
    "$/month fixed": r.fixedUsdPerMonth === undefined ? "-" : fmt(r.fixedUsdPerMonth, 2),
    note: r.note ?? "",
  })),
);
const moves = Number(values.moves);
if (moves > 0) {
  try {
    printMoveSummary(await runMoves(moves, Number(values["move-hosts"]), be, memory));
  } catch (e) {
    print(`moves: ${(e as Error).message}`);
    if (lastErrors.length) print(`last errors logged:\n${lastErrors.join("\n")}`);
  }
}
await be.stop();
process.exit(0);
