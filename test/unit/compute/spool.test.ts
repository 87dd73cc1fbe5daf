// The host's report spool (lib/compute/spool.ts): what is kept survives a new incarnation over the
// same directory; reports of one instance go in order while instances go in parallel; waits are
// capped; 2xx settles, a refusal (4xx other than 429) drops with a log line, and a throttle, a
// function error or the network keeps the report. The transport is the real one (SigV4-signed
// POSTs, lib/aws/function-url.ts) to an HTTP server on 127.0.0.1 answering as a function URL would.

import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { postToFunctionUrl } from "../../../lib/aws/function-url.js";
import { runAs } from "../../../lib/aws/identity.js";
import {
  backoffMs,
  DiskSpoolStore,
  MemorySpoolStore,
  ReportSpool,
  type SpoolOptions,
  type SpoolStore,
} from "../../../lib/compute/spool.js";
import type { LogFields, Logger } from "../../../lib/log.js";

const KEYS = { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret" };
const FAST: SpoolOptions = { baseDelayMs: 10, maxDelayMs: 50, warnAfterMs: 0 };

/** A logger that keeps its lines. */
function lines(): Logger & { seen: { level: string; event: string; fields?: LogFields }[] } {
  const seen: { level: string; event: string; fields?: LogFields }[] = [];
  const at =
    (level: string) =>
    (event: string, fields?: LogFields): void => {
      seen.push({ level, event, fields });
    };
  const l: Logger & { seen: typeof seen } = {
    seen,
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    child: () => l,
  };
  return l;
}

/** A function URL on 127.0.0.1: `answer` decides each request's fate; every request is kept. */
interface FakeUrl {
  url: string;
  bodies: string[];
  times: number[];
  server: Server;
}

type Answer = number | "reset";

async function functionUrl(answer: (body: string, n: number) => Answer | Promise<Answer>): Promise<FakeUrl> {
  const bodies: string[] = [];
  const times: number[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const body = Buffer.concat(chunks).toString("utf8");
      bodies.push(body);
      times.push(Date.now());
      if (!String(req.headers.authorization).includes("/lambda/aws4_request")) {
        res.writeHead(403).end('{"Message":"Forbidden"}');
        return;
      }
      const a = await answer(body, bodies.length);
      if (a === "reset") {
        req.socket.destroy();
        return;
      }
      res.writeHead(a, { "content-type": "application/json" });
      res.end(a === 400 ? '{"dead_lettered":"malformed report"}' : `{"status":${a}}`);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/lambda-url/compute-events/`, bodies, times, server };
}

/** The agent's way of posting one try (build-path.ts's Reporter), as the host's session. */
const deliverTo =
  (url: string) =>
  (body: string, signal: AbortSignal): Promise<void> =>
    runAs(KEYS, () => postToFunctionUrl(url, body, { maxAttempts: 1, attemptTimeoutMs: 5000, signal })).then(
      () => undefined,
    );

const report = (instance: string, n: number) =>
  JSON.stringify({ kind: "action_done", instance_uuid: instance, n });

let dir: string;
let servers: Server[] = [];
let spools: ReportSpool[] = [];
let savedRegion: string | undefined;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "novaless-spool-test-"));
  savedRegion = process.env.AWS_REGION;
  process.env.AWS_REGION = "us-east-1";
});
afterEach(async () => {
  await Promise.all(spools.map((s) => s.stop()));
  spools = [];
  for (const s of servers) s.closeAllConnections();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  servers = [];
  rmSync(dir, { recursive: true, force: true });
  if (savedRegion === undefined) delete process.env.AWS_REGION;
  else process.env.AWS_REGION = savedRegion;
});

async function serve(answer: (body: string, n: number) => Answer | Promise<Answer>): Promise<FakeUrl> {
  const u = await functionUrl(answer);
  servers.push(u.server);
  return u;
}

function spoolOn(store: SpoolStore, url: string, log = lines(), opts: SpoolOptions = FAST): ReportSpool {
  const s = new ReportSpool(store, deliverTo(url), log, opts);
  spools.push(s);
  return s;
}

const until = async (what: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!what()) {
    if (Date.now() > end) throw new Error("not within the time");
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe("on disk", () => {
  it("keeps each report whole before add resolves, and a new incarnation over the directory sends them in order", async () => {
    const down = await serve(() => 503);
    const first = spoolOn(new DiskSpoolStore(dir), down.url);
    await first.start();
    await first.add("inst-a", report("inst-a", 1));
    await first.add("inst-b", report("inst-b", 1));
    await first.add("inst-a", report("inst-a", 2));
    // kept: one file per report, no temporary file left, each the report whole
    const files = readdirSync(dir);
    expect(files.filter((f) => f.endsWith(".json"))).toHaveLength(3);
    expect(files.filter((f) => f.endsWith(".tmp"))).toEqual([]);
    const kept = files.map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as { body: string });
    expect(kept.map((k) => k.body)).toContain(report("inst-a", 2));
    await until(() => down.bodies.length > 0);
    const began = Date.now();
    // the agent stops: it does not wait on the outage, and what is unsent stays on disk
    await first.stop();
    expect(Date.now() - began).toBeLessThan(1000);
    expect(first.state.depth).toBe(3);
    expect(readdirSync(dir).filter((f) => f.endsWith(".json"))).toHaveLength(3);

    // a write a crash cut short is not a report
    writeFileSync(join(dir, "0000000000000001.json.tmp"), "{half");
    const up = await serve(() => 200);
    const log = lines();
    const second = spoolOn(new DiskSpoolStore(dir), up.url, log);
    await second.start();
    expect(log.seen.find((l) => l.event === "compute.spool_resumed")?.fields).toMatchObject({ reports: 3 });
    await until(() => up.bodies.length === 3 && second.state.depth === 0);
    const a = up.bodies.filter((b) => b.includes("inst-a"));
    expect(a).toEqual([report("inst-a", 1), report("inst-a", 2)]);
    await until(() => readdirSync(dir).length === 0);
  });
});

it("keeps reports in memory across incarnations (the simulator's spool outlives its agent)", async () => {
  const store = new MemorySpoolStore();
  const down = await serve(() => 502);
  const first = spoolOn(store, down.url);
  await first.start();
  await first.add("i", report("i", 1));
  await first.stop();
  expect(store.size).toBe(1);
  const up = await serve(() => 200);
  const second = spoolOn(store, up.url);
  await second.start();
  await until(() => store.size === 0);
  expect(up.bodies).toEqual([report("i", 1)]);
});

it("sends a later report of an instance only after the earlier one, while other instances go on", async () => {
  // instance a's first report fails three times; b's reports go meanwhile
  let aFailures = 0;
  const u = await serve((body) => {
    if (body === report("a", 1) && aFailures < 3) {
      aFailures++;
      return 502;
    }
    return 200;
  });
  const s = spoolOn(new MemorySpoolStore(), u.url);
  await s.start();
  const a1 = await s.add("a", report("a", 1));
  const a2 = await s.add("a", report("a", 2));
  const b1 = await s.add("b", report("b", 1));
  const b2 = await s.add("b", report("b", 2));
  expect(await Promise.all([a1.delivered, a2.delivered, b1.delivered, b2.delivered])).toEqual([
    true,
    true,
    true,
    true,
  ]);
  const order = u.bodies;
  // a's second is sent once, after a's first was applied; b did not wait for a
  expect(order.filter((b) => b === report("a", 2))).toHaveLength(1);
  expect(order.lastIndexOf(report("a", 1))).toBeLessThan(order.indexOf(report("a", 2)));
  expect(order.indexOf(report("b", 2))).toBeLessThan(order.lastIndexOf(report("a", 1)));
  expect(order.indexOf(report("b", 1))).toBeLessThan(order.indexOf(report("b", 2)));
});

it("keeps the order of the calls when the first write ends after the second", async () => {
  const u = await serve(() => 200);
  const memory = new MemorySpoolStore();
  let slowFirst = true;
  const store: SpoolStore = {
    load: () => memory.load(),
    remove: (r) => memory.remove(r),
    put: async (r) => {
      if (slowFirst) {
        slowFirst = false;
        await new Promise((res) => setTimeout(res, 50));
      }
      await memory.put(r);
    },
  };
  const s = spoolOn(store, u.url);
  await s.start();
  // a live migration's progress (not awaited) and then its step's report
  const progress = s.add("i", report("i", 1));
  const step = await s.add("i", report("i", 2));
  expect(await step.delivered).toBe(true);
  expect(await (await progress).delivered).toBe(true);
  expect(u.bodies).toEqual([report("i", 1), report("i", 2)]);
});

it("waits with full jitter, capped: the ceiling doubles from the base to the cap and stays there", () => {
  const ceilings = Array.from({ length: 40 }, (_, i) => backoffMs(i + 1, 200, 10_000, () => 1));
  expect(ceilings.slice(0, 6)).toEqual([200, 400, 800, 1600, 3200, 6400]);
  expect(ceilings.slice(6).every((c) => c === 10_000)).toBe(true);
  // full jitter: anywhere from 0 to the ceiling
  expect(backoffMs(30, 200, 10_000, () => 0)).toBe(0);
  expect(backoffMs(30, 200, 10_000, () => 0.5)).toBe(5000);
});

it("retries without a limit on tries, never waiting longer than the cap between two", async () => {
  // 503 for 40 tries: with a 20 ms base and a 60 ms cap, no gap is much above 60 ms
  const u = await serve((_, n) => (n <= 40 ? 503 : 200));
  const log = lines();
  const s = spoolOn(new MemorySpoolStore(), u.url, log, { baseDelayMs: 20, maxDelayMs: 60 });
  await s.start();
  const { delivered } = await s.add("i", report("i", 1));
  expect(await delivered).toBe(true);
  expect(u.bodies).toHaveLength(41);
  const gaps = u.times.slice(1).map((t, i) => t - u.times[i]!);
  // the host-wide pause and the report's own wait overlap: the longer of the two, plus the request
  // and a loaded machine's scheduling (an uncapped doubling would be seconds by the 10th try)
  expect(Math.max(...gaps)).toBeLessThan(60 + 500);
  // a wait of a second or two is not worth a line (warnAfterMs, 10 s by default)
  expect(log.seen.filter((l) => l.event.startsWith("compute.report_"))).toEqual([]);
});

it("while compute-events is unavailable, a host probes with one report at a time, then sends all at once", async () => {
  let open = 0;
  const during: number[] = [];
  const refuseUntil = Date.now() + 400;
  const u = await serve(async () => {
    open++;
    const refusing = Date.now() < refuseUntil;
    if (refusing) during.push(open);
    await new Promise((r) => setTimeout(r, 10));
    open--;
    return refusing ? 503 : 200;
  });
  const s = spoolOn(new MemorySpoolStore(), u.url, lines(), { baseDelayMs: 10, maxDelayMs: 40 });
  await s.start();
  const sent = await Promise.all(["a", "b", "c", "d", "e"].map((k) => s.add(k, report(k, 1))));
  expect(await Promise.all(sent.map((x) => x.delivered))).toEqual([true, true, true, true, true]);
  // the first five went at once; once refused, the host's tries came one at a time
  expect(during.length).toBeGreaterThan(5);
  expect(Math.max(...during.slice(5))).toBe(1);
});

it("settles on 2xx: applied, removed, delivered true", async () => {
  // compute-events refuses for a while (503), then applies
  const refuseUntil = Date.now() + 300;
  const u = await serve(() => (Date.now() < refuseUntil ? 503 : 200));
  const store = new DiskSpoolStore(dir);
  const s = spoolOn(store, u.url);
  await s.start();
  const { delivered } = await s.add("i", report("i", 1));
  expect(await delivered).toBe(true);
  expect(u.bodies.length).toBeGreaterThan(1);
  expect(await store.load()).toEqual([]);
  expect(s.state).toEqual({ depth: 0, oldestAgeSeconds: 0 });
});

it("drops a report compute-events refuses (400: malformed, or another host's; a fenced one is applied, 200), with a log line", async () => {
  const u = await serve(() => 400);
  const log = lines();
  const store = new DiskSpoolStore(dir);
  const s = spoolOn(store, u.url, log);
  await s.start();
  const { delivered } = await s.add("i", report("i", 1));
  expect(await delivered).toBe(false);
  expect(u.bodies).toHaveLength(1);
  expect(await store.load()).toEqual([]);
  const refused = log.seen.find((l) => l.event === "compute.report_refused");
  expect(refused?.level).toBe("error");
  expect(refused?.fields).toMatchObject({ key: "i", kind: "action_done", status: 400 });
  expect(String(refused?.fields?.answer)).toContain("malformed report");
});

it("keeps a report through a throttle, a function error, a broken connection and refused credentials, and says it waits", async () => {
  const fates: Answer[] = [429, 502, "reset", 500, 504, 403];
  const u = await serve(() => fates.shift() ?? 200);
  const log = lines();
  const store = new DiskSpoolStore(dir);
  const s = spoolOn(store, u.url, log);
  await s.start();
  const { delivered } = await s.add("i", report("i", 1));
  await until(() => u.bodies.length >= 2);
  // still kept while it waits
  expect((await store.load()).map((r) => r.body)).toEqual([report("i", 1)]);
  expect(s.state.depth).toBe(1);
  expect(await delivered).toBe(true);
  expect(u.bodies).toHaveLength(7);
  expect(await store.load()).toEqual([]);
  expect(log.seen.filter((l) => l.event === "compute.report_waiting")).toHaveLength(1);
  expect(log.seen.find((l) => l.event === "compute.report_delivered")?.fields).toMatchObject({ tries: 7 });
});

it("sends a report spooled before the start once, in its place among those an earlier incarnation left", async () => {
  const store = new MemorySpoolStore();
  const down = await serve(() => 503);
  const first = spoolOn(store, down.url);
  await first.start();
  await first.add("i", report("i", 1));
  await first.stop();
  const up = await serve(() => 200);
  const second = spoolOn(store, up.url);
  // a guest's lifecycle event, reported while the agent registers
  const early = await second.add("i", report("i", 2));
  await second.start();
  expect(await early.delivered).toBe(true);
  await until(() => store.size === 0);
  expect(up.bodies).toEqual([report("i", 1), report("i", 2)]);
});

it("sends at once: a report reaches compute-events without waiting for a tick", async () => {
  const u = await serve(() => 200);
  // a slow retry policy: only an immediate first try can be this quick
  const s = spoolOn(new MemorySpoolStore(), u.url, lines(), { baseDelayMs: 5000, maxDelayMs: 10_000 });
  await s.start();
  const began = Date.now();
  const { delivered } = await s.add("i", report("i", 1));
  expect(await delivered).toBe(true);
  expect(Date.now() - began).toBeLessThan(1000);
});
