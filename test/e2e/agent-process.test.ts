// The agent an operator installs, as the operator runs it: the one-file bundle (npm run
// bundle:agent) started as its own process with a compute.conf, only its host's credentials and
// the endpoints, against the local runtime. It discovers the machine's inventory, registers through
// compute-events, builds and stops a server forced to it, and on SIGTERM exits 0 with one log line.
// A report compute-events cannot take (it is throttled, all its reserved concurrency held) waits
// in the agent's spool on disk through a SIGTERM and is delivered by the next start.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { resources } from "../../lib/config.js";
import { getInstance } from "../../lib/instances/queries.js";
import { getHost } from "../../lib/placement/hosts.js";
import type { Runtime } from "../../local/runtime.js";
import { bundleAgent } from "../../scripts/bundle-agent.js";
import { ADMIN, type Client, eventually, startTestRuntime } from "./harness.js";

const HOST = "cn-real-01.rack4.example.net";
let runtime: Runtime;
let client: Client;
let dir: string;
let bundle: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "novaless-agent-"));
  bundle = join(dir, "novaless-compute.mjs");
  // built here, as an operator would, so the test runs what ships
  await bundleAgent(bundle);
  ({ runtime, client } = await startTestRuntime({ hosts: 1, transport: "long-poll" }));
}, 120_000);
afterAll(async () => {
  await runtime?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Agent {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  exit: Promise<number | null>;
}

/** The bundle as its own process: only the host's credentials, the endpoints and its config. */
function startAgent(args: string[], extraEnv: Record<string, string> = {}): Agent {
  const endpoints = runtime.emulators.env;
  const creds = runtime.hostCredentials(HOST);
  const child = spawn(process.execPath, [bundle, ...args], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: dir,
      AWS_ENDPOINT_URL_SQS: endpoints.AWS_ENDPOINT_URL_SQS!,
      AWS_REGION: endpoints.AWS_REGION!,
      AWS_ACCESS_KEY_ID: creds.accessKeyId,
      AWS_SECRET_ACCESS_KEY: creds.secretAccessKey,
      ...extraEnv,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout?.on("data", (d) => {
    out += d;
  });
  child.stderr?.on("data", (d) => {
    err += d;
  });
  const exit = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  return { child, out: () => out, err: () => err, exit };
}

it("refuses a configuration it cannot run with, saying what is missing, and answers --help", async () => {
  const bad = startAgent(["--host", HOST, "--config-file", join(dir, "missing.conf")]);
  expect(await bad.exit).toBe(2);
  expect(bad.err()).toContain(`--config-file ${join(dir, "missing.conf")}: no such file`);
  const unset = startAgent(["--host", HOST, "--set", "novaless.compute_queue_prefix=x-"]);
  expect(await unset.exit).toBe(2);
  expect(unset.err()).toMatch(/\[novaless\] events_url is required/);
  const help = startAgent(["--help"]);
  expect(await help.exit).toBe(0);
  expect(help.out()).toContain("[DEFAULT] reserved_host_memory_mb");
});

/** The agent's compute.conf: the fake driver, its spool under the test's directory. */
function writeConf(): string {
  const conf = join(dir, "compute.conf");
  writeFileSync(
    conf,
    [
      "[DEFAULT]",
      "compute_driver = fake",
      `instances_path = ${join(dir, "instances")}`,
      "reserved_host_memory_mb = 256",
      "report_interval = 2",
      "[novaless]",
      `events_url = ${resources().computeEventsUrl}`,
      `report_spool_path = ${join(dir, "reports")}`,
      "wait_time_seconds = 1",
      "[fake]",
      "build_ms = 50",
    ].join("\n"),
  );
  return conf;
}

it("registers with the machine's inventory, builds a server, stops it, and stops on SIGTERM", async () => {
  const conf = writeConf();
  const agent = startAgent(["--config-file", conf, "--host", HOST], {
    // the environment overrides the file, as documented
    NOVALESS_NOVALESS_COMPUTE_QUEUE_PREFIX: resources().computeQueuePrefix,
  });
  try {
    const host = await eventually(
      () => getHost(HOST),
      (h) => Boolean(h?.queue_url),
      30_000,
    );
    expect(host, agent.err()).toBeDefined();
    expect(host!.inventories.VCPU).toMatchObject({ total: availableParallelism(), allocation_ratio: 16 });
    expect(host!.inventories.MEMORY_MB?.reserved).toBe(256);
    // the agent says it runs once it has found its queue (after the consumer made it)
    await eventually(
      async () => agent.out(),
      (o) => o.includes(`novaless-compute ${HOST}: driver fake`),
      10_000,
    );
    expect(agent.out()).toContain(`novaless-compute ${HOST}: driver fake`);

    const id = await client
      .as(ADMIN)
      .createServer({ name: "on-the-real-agent", availability_zone: `nova:${HOST}` });
    const active = await client.waitForStatus(id, ["ACTIVE"]);
    expect(active["OS-EXT-SRV-ATTR:host"]).toBe(HOST);
    expect((await client.as(ADMIN).post(`/v2.1/servers/${id}/action`, { "os-stop": null })).status).toBe(202);
    await client.waitForStatus(id, ["SHUTOFF"]);

    const began = Date.now();
    agent.child.kill("SIGTERM");
    expect(await agent.exit, agent.err()).toBe(0);
    // figures, not limits (shared machines): the target is ≤ 2 s
    process.stdout.write(`agent-process: SIGTERM to exit ${Date.now() - began} ms\n`);
    const stopped = agent.out().match(/"compute\.stopped"/g) ?? [];
    expect(stopped).toHaveLength(1);
    expect(agent.out()).toMatch(/"signal":"SIGTERM"/);
    // no warning or error of the agent's own (Node's own warnings, e.g. the SDK's Node 20 notice, aside)
    expect(
      agent
        .err()
        .split("\n")
        .filter((l) => l.startsWith("{")),
    ).toEqual([]);
  } finally {
    agent.child.kill("SIGKILL");
  }
}, 90_000);

/** The spooled reports on the agent's disk (their bodies). */
function spooled(): string[] {
  const at = join(dir, "reports");
  if (!existsSync(at)) return [];
  return readdirSync(at)
    .filter((f) => f.endsWith(".json"))
    .map((f) => (JSON.parse(readFileSync(join(at, f), "utf8")) as { body: string }).body);
}

it("keeps a report compute-events cannot take on disk through SIGTERM, and the next start delivers it", async () => {
  const conf = writeConf();
  const env = { NOVALESS_NOVALESS_COMPUTE_QUEUE_PREFIX: resources().computeQueuePrefix };
  const fn = "novaless-compute-events";
  let held: (() => void)[] = [];
  const release = () => {
    for (const r of held) r();
    held = [];
  };
  let agent = startAgent(["--config-file", conf, "--host", HOST], env);
  try {
    await eventually(
      async () => agent.out(),
      (o) => o.includes(`novaless-compute ${HOST}: driver fake`),
      30_000,
    );
    // compute-events is throttled from now on: every slot of its reserved concurrency is taken,
    // so Lambda answers each report 429 (what a storm does, for as long as it lasts)
    const reserved = runtime.concurrency.reservedOf(fn)!;
    held = Array.from({ length: reserved }, () => runtime.concurrency.acquire(fn));
    const id = await client.as(ADMIN).createServer({ name: "spooled", availability_zone: `nova:${HOST}` });
    // the host took the cast and spooled its build_started (compute-events never saw it)
    await eventually(
      async () => spooled(),
      (bodies) => bodies.some((b) => b.includes('"build_started"') && b.includes(id)),
      30_000,
    );
    expect((await getInstance(id))?.task_state).not.toBe("spawning");

    // SIGTERM: the agent does not wait on compute-events; the report stays on disk
    const began = Date.now();
    agent.child.kill("SIGTERM");
    expect(await agent.exit, agent.err()).toBe(0);
    const stopMs = Date.now() - began;
    process.stdout.write(`agent-process: SIGTERM to exit with a report unsent ${stopMs} ms\n`);
    expect(stopMs).toBeLessThan(10_000); // the unit's TimeoutStopSec
    expect(spooled().some((b) => b.includes('"build_started"') && b.includes(id))).toBe(true);
    expect(agent.out()).toMatch(/"compute\.spool_kept"/);

    // compute-events takes reports again; the next start sends what the spool kept
    release();
    agent = startAgent(["--config-file", conf, "--host", HOST], env);
    const active = await client.waitForStatus(id, ["ACTIVE"]);
    expect(active["OS-EXT-SRV-ATTR:host"]).toBe(HOST);
    // built on its first attempt: the report was delivered, not replaced by the watchdog's resend
    expect((await getInstance(id))?.attempt).toBe(1);
    expect(agent.out()).toMatch(/"compute\.spool_resumed"/);
    await eventually(
      async () => spooled(),
      (bodies) => bodies.length === 0,
      10_000,
    );
    agent.child.kill("SIGTERM");
    expect(await agent.exit, agent.err()).toBe(0);
  } finally {
    release();
    agent.child.kill("SIGKILL");
  }
}, 120_000);
