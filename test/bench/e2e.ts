// npm run bench:e2e [-- --hosts 8,1000,10000 --builds 200 --concurrency 16 --build-ms 0
//                      --poll-ms 10 --warmup 5 --timeout 600 --dynamodb dynalite|local|auto --sockets
//                      --no-network]
//
// Builds end to end through the public API of the local runtime (the real HTTP API of
// startRuntime, every component under its own role), configured as `npm start` is: the seeded
// network public, so every build makes and binds a port (--no-network: none): N creates at concurrency C, each polled
// through GET /v2.1/servers/{id} until ACTIVE. Prints builds/s and POST→ACTIVE p50/p90/p99 per
// fleet size, with the machine's core count, and what the queue in front of the conductor costs:
// a build request's wait from its SendMessage to build-requests (seen at the IAM gateway) to its
// execution's start (build-intake's event source; ListExecutions). A few warm-up builds first, at
// the concurrency (not counted): the functions' cold containers are not what this measures. --sockets: the components'
// SDK calls over HTTP to the IAM gateway and on to the emulators (as before the in-process
// transport).
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { ListExecutionsCommand } from "@aws-sdk/client-sfn";
import { sfnClient } from "../../lib/aws/clients.js";
import { executionName } from "../../lib/conductor/intake.js";
import type { BuildRequest } from "../../lib/messages/build-request.js";
import type { Runtime } from "../../local/runtime.js";
import {
  backend,
  before,
  createServer,
  demoRequest,
  hardStop,
  load,
  machine,
  percentile,
  pool,
  quietLogs,
  sizesOf,
  socketWarnings,
  TimedOut,
  until,
} from "./support.js";

const { values } = parseArgs({
  options: {
    hosts: { type: "string", default: "8" },
    builds: { type: "string", default: "200" },
    concurrency: { type: "string", default: "16" },
    "build-ms": { type: "string", default: "0" },
    "poll-ms": { type: "string", default: "10" },
    warmup: { type: "string", default: "5" },
    timeout: { type: "string", default: "600" },
    dynamodb: { type: "string", default: "dynalite" },
    sockets: { type: "boolean", default: false },
    // the functions and dynalite in worker threads of their own (as `npm start` runs them), or not
    "one-thread": { type: "boolean", default: false },
    // how the bench sees builds finish: a GET per server, or one changes-since listing for all
    watch: { type: "string", default: "server" },
    // As `npm start` runs: the seeded network public, every build makes and binds a port
    // (lib/instances/networking.ts). --no-network builds without one.
    "no-network": { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (values.watch !== "changes" && values.watch !== "server") {
  process.stderr.write(`--watch must be server or changes, got ${values.watch}\n`);
  process.exit(2);
}
if (values.help) {
  process.stdout.write(
    "usage: npm run bench:e2e -- [--hosts 8,1000] [--builds 200] [--concurrency 16] [--build-ms 0]\n" +
      "       [--poll-ms 10] [--warmup 5] [--timeout 600 (s per size)] [--dynamodb dynalite|local|auto] [--sockets]\n" +
      "       [--no-network (no seeded network: builds get no port; by default each gets one on public, as npm start runs)] [--one-thread]\n" +
      "       [--watch server|changes (a GET per server, or one changes-since listing for every build in flight)]\n",
  );
  process.exit(0);
}
const sizes = sizesOf(values.hosts);
const builds = Number(values.builds);
const concurrency = Number(values.concurrency);
const buildMs = Number(values["build-ms"]);
const pollMs = Number(values["poll-ms"]);
const warmup = Number(values.warmup);
const timeoutMs = Number(values.timeout) * 1000;

// The components' JSON log lines stay off the terminal (npm start shows them; a bench does not).
quietLogs();
const print = (line = "") => process.stdout.write(`${line}\n`);
const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : "-");

interface Row {
  hosts: number;
  "start s": string;
  builds: number;
  failed: number;
  "builds/s": string;
  "p50 ms": string;
  "p90 ms": string;
  "p99 ms": string;
  "max ms": string;
  "POST p50 ms": string;
  /** a build request's SendMessage to build-requests → its execution's start, p50 / p90 */
  "queue ms": string;
  "polls/build": string;
  /** this process's CPU (user + system) over the builds, per build: what the figures cost on a shared machine */
  "CPU ms/build": string;
  /** each thread's event-loop utilization over the builds */
  "busy %": string;
  note: string;
}

/**
 * The main thread (the gateway, SQS, Step Functions, the hosts, the HTTP front, this bench's
 * client) and the runtime's worker threads.
 */
function threadsOf(runtime: Runtime): Runtime["threads"] {
  return [{ name: "main", utilization: performance.eventLoopUtilization }, ...runtime.threads];
}

/** status requests so far: each is an API request with its reads, on this same CPU */
let polls = 0;

/**
 * `--watch changes`: one watcher for every build in flight, as the console and Nova's clients
 * watch many servers: every poll-ms, GET /v2.1/servers/detail?changes-since=<the previous poll's
 * start, less a second> returns the servers written since, and each one ACTIVE or ERROR settles
 * its waiter. `--watch server` (the default): each build polls its own GET /v2.1/servers/{id}.
 */
function changesWatcher(url: string, deadline: number) {
  const waiting = new Map<string, { resolve(): void; reject(e: Error): void }>();
  let since = new Date(Date.now() - 1000);
  let running = false;
  const loop = async () => {
    running = true;
    try {
      while (waiting.size > 0) {
        if (Date.now() > deadline) {
          for (const [id, w] of waiting) w.reject(new TimedOut(`server ${id} did not go ACTIVE in time`));
          waiting.clear();
          return;
        }
        const started = new Date();
        polls++;
        const res = await demoRequest(
          "GET",
          `${url}/v2.1/servers/detail?changes-since=${encodeURIComponent(since.toISOString())}`,
        );
        if (res.status !== 200)
          throw new Error(`changes-since: HTTP ${res.status} ${res.text.slice(0, 300)}`);
        for (const s of (
          JSON.parse(res.text) as { servers: { id: string; status: string; fault?: unknown }[] }
        ).servers) {
          const w = waiting.get(s.id);
          if (!w || (s.status !== "ACTIVE" && s.status !== "ERROR")) continue;
          waiting.delete(s.id);
          if (s.status === "ACTIVE") w.resolve();
          else w.reject(new Error(`server ${s.id} went ERROR: ${JSON.stringify(s.fault)}`));
        }
        // a write stamped in the same millisecond as the request is seen next time
        since = new Date(started.getTime() - 1000);
        if (waiting.size > 0) await sleep(pollMs);
      }
    } catch (e) {
      for (const w of waiting.values()) w.reject(e as Error);
      waiting.clear();
    } finally {
      running = false;
    }
  };
  return {
    wait(id: string): Promise<void> {
      const settled = new Promise<void>((resolve, reject) => waiting.set(id, { resolve, reject }));
      if (!running) void loop();
      return settled;
    },
  };
}

async function serverStatus(url: string, id: string): Promise<string | undefined> {
  polls++;
  const res = await demoRequest("GET", `${url}/v2.1/servers/${id}`);
  if (res.status !== 200) return `HTTP ${res.status}`;
  return (JSON.parse(res.text) as { server: { status: string } }).server.status;
}

async function runSize(hosts: number, be: Awaited<ReturnType<typeof backend>>): Promise<Row> {
  const deadline = Date.now() + timeoutMs;
  const row = emptyRow(hosts);
  const t0 = performance.now();
  const starting = be.start({
    port: 0,
    hosts,
    buildMs,
    sockets: values.sockets,
    threads: !values["one-thread"],
    seedNetwork: !values["no-network"],
  });
  let runtime: Runtime;
  try {
    runtime = await before(deadline, `starting ${hosts} hosts`, starting);
  } catch (e) {
    void starting.then((r) => r.stop()).catch(() => {});
    throw e;
  }
  row["start s"] = fmt((performance.now() - t0) / 1000);
  print(`${hosts} hosts: runtime ready in ${row["start s"]} s`);
  const watcher = values.watch === "changes" ? changesWatcher(runtime.url, deadline) : undefined;
  const queued = watchQueue(runtime);
  const latencies: number[] = [];
  const posts: number[] = [];
  const failures: string[] = [];
  const build = async (name: string, record: boolean) => {
    const t = performance.now();
    const { id, ms } = await createServer(runtime.url, name);
    if (watcher) await watcher.wait(id);
    else await until(`server ${id}`, deadline, () => serverStatus(runtime.url, id), "ACTIVE", pollMs);
    if (record) {
      latencies.push(performance.now() - t);
      posts.push(ms);
    }
  };
  try {
    // at the builds' concurrency: Lambda starts a container per concurrent invocation (the
    // scheduler's cold one reads the whole fleet), and a cold start is not what this measures
    await before(
      deadline,
      "warm-up builds",
      pool(warmup, concurrency, deadline, (i) => build(`warmup-${i}`, false)),
    );
    const w0 = performance.now();
    const cpu0 = process.cpuUsage();
    // how busy each thread's event loop is over the builds: the one near 100% bounds the rate
    const busy0 = threadsOf(runtime).map((t) => t.utilization());
    const polls0 = polls;
    queued.clear();
    await before(
      deadline,
      "builds",
      pool(builds, concurrency, deadline, async (i) => {
        try {
          await build(`e2e-${i}`, true);
        } catch (e) {
          failures.push((e as Error).message);
        }
      }),
    ).catch((e) => {
      if (!(e instanceof TimedOut)) throw e;
      row.note = e.message;
    });
    const seconds = (performance.now() - w0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    row["busy %"] = threadsOf(runtime)
      .map((t, i) => `${t.name} ${Math.round(100 * t.utilization(busy0[i]).utilization)}`)
      .join(", ");
    latencies.sort((a, b) => a - b);
    posts.sort((a, b) => a - b);
    row.builds = latencies.length;
    row.failed = failures.length;
    row["builds/s"] = fmt(latencies.length / seconds);
    row["p50 ms"] = fmt(percentile(latencies, 0.5));
    row["p90 ms"] = fmt(percentile(latencies, 0.9));
    row["p99 ms"] = fmt(percentile(latencies, 0.99));
    row["max ms"] = fmt(latencies.at(-1) ?? Number.NaN);
    row["POST p50 ms"] = fmt(percentile(posts, 0.5));
    row["polls/build"] = fmt((polls - polls0) / Math.max(1, latencies.length));
    const waits = await queueWaits(queued);
    row["queue ms"] = `${fmt(percentile(waits, 0.5), 0)} / ${fmt(percentile(waits, 0.9), 0)}`;
    row["CPU ms/build"] = fmt((cpu.user + cpu.system) / 1000 / Math.max(1, latencies.length));
    if (failures.length) row.note ||= failures[0]!.slice(0, 120);
    if (socketWarnings.count) {
      row.note = `${row.note ? `${row.note}; ` : ""}${socketWarnings.count} SDK socket-pool warnings`;
      socketWarnings.count = 0;
    }
    print(
      `${hosts} hosts: ${row.builds} builds in ${fmt(seconds)} s = ${row["builds/s"]} builds/s; ` +
        `POST->ACTIVE p50 ${row["p50 ms"]} p90 ${row["p90 ms"]} p99 ${row["p99 ms"]} ms; ` +
        `build-requests' SendMessage->execution start p50 / p90 ${row["queue ms"]} ms (${waits.length} requests); ` +
        `${row["polls/build"]} status polls and CPU ${row["CPU ms/build"]} ms per build; threads busy (%): ${row["busy %"]}; ${load()}`,
    );
    return row;
  } finally {
    // Let the last builds' messages settle before the runtime goes.
    await sleep(100);
    await runtime.stop().catch((e) => print(`stop failed: ${(e as Error).message}`));
  }
}

/**
 * When each build request was sent to build-requests, by its execution's name (the IAM gateway
 * sees every SendMessage); none without the gateway.
 */
function watchQueue(runtime: Runtime): Map<string, number> {
  const sent = new Map<string, number>();
  const queue = process.env.NOVALESS_BUILD_REQUESTS_QUEUE_URL?.split("/").pop();
  runtime.emulators.gateway?.onMessageSent((m) => {
    if (m.queueUrl.split("/").pop() !== queue) return;
    try {
      sent.set(executionName(JSON.parse(m.body) as BuildRequest), Date.now());
    } catch {
      // not a build request: nothing to time
    }
  });
  return sent;
}

/** Each sent request's wait until its execution started, sorted (ms). */
async function queueWaits(sent: Map<string, number>): Promise<number[]> {
  const waits: number[] = [];
  let nextToken: string | undefined;
  do {
    const page = await sfnClient().send(
      new ListExecutionsCommand({ stateMachineArn: process.env.NOVALESS_CONDUCTOR_ARN!, nextToken }),
    );
    for (const e of page.executions ?? []) {
      const at = sent.get(e.name ?? "");
      if (at !== undefined && e.startDate) waits.push(e.startDate.getTime() - at);
    }
    nextToken = page.nextToken;
  } while (nextToken);
  return waits.sort((a, b) => a - b);
}

/** A size's row before (or without) its figures. */
function emptyRow(hosts: number, note = ""): Row {
  return {
    hosts,
    "start s": "-",
    builds: 0,
    failed: 0,
    "builds/s": "-",
    "p50 ms": "-",
    "p90 ms": "-",
    "p99 ms": "-",
    "max ms": "-",
    "POST p50 ms": "-",
    "queue ms": "-",
    "polls/build": "-",
    "CPU ms/build": "-",
    "busy %": "-",
    note,
  };
}

hardStop("bench:e2e", timeoutMs * sizes.length + 120_000);
print(
  `bench:e2e on ${machine()}; ${load()}${values["no-network"] ? "; --no-network: builds without a port" : "; each build with a port on public, as npm start runs"}`,
);
const be = await backend(values.dynamodb as "auto" | "local" | "dynalite");
print(
  `DynamoDB: ${be.name} (${be.note}); ${builds} builds per size at concurrency ${concurrency}, build-ms ${buildMs}, ` +
    `poll every ${pollMs} ms through ${values.watch === "changes" ? "one GET /v2.1/servers/detail?changes-since= for every build in flight" : "GET /v2.1/servers/{id} per build"}, ${warmup} warm-up builds not counted; ` +
    `SDK calls ${values.sockets ? "over sockets" : "in process"}; ${!values["one-thread"] ? "the functions and dynalite in threads of their own" : "one thread"}`,
);
const rows: Row[] = [];
for (const hosts of sizes) {
  try {
    rows.push(await runSize(hosts, be));
  } catch (e) {
    print(`${hosts} hosts: ${(e as Error).message}`);
    rows.push(emptyRow(hosts, (e as Error).message));
    if (e instanceof TimedOut) {
      print("larger sizes skipped: this one did not finish in time");
      break;
    }
  }
}
console.table(rows);
/** Issue 18's goals on 2 cores, at concurrency 16 (build-ms 0): builds/s, and p50 where it names one. */
const GOALS: Record<number, { perSecond: number; p50Ms?: number }> = {
  8: { perSecond: 25, p50Ms: 500 },
  1000: { perSecond: 15 },
};
for (const row of rows) {
  const goal = GOALS[row.hosts];
  if (!goal || row["builds/s"] === "-") continue;
  const rate = Number(row["builds/s"]);
  const p50 = Number(row["p50 ms"]);
  const verdict = (ok: boolean) => (ok ? "MET" : "MISSED");
  print(
    `goal at ${row.hosts} hosts${concurrency === 16 ? "" : ` (set for concurrency 16; this run ${concurrency})`}: ` +
      `>= ${goal.perSecond} builds/s ${verdict(rate >= goal.perSecond)} (${row["builds/s"]})` +
      (goal.p50Ms === undefined
        ? ""
        : `; p50 <= ${goal.p50Ms} ms ${verdict(p50 <= goal.p50Ms)} (${row["p50 ms"]})`),
  );
}
await be.stop();
process.exit(0);
