// `npm run test:external [--localstack] [vitest args]`: the integration and e2e suites against a
// DynamoDB and an SQS that run OUTSIDE the test process, through NOVALESS_EXTERNAL_AWS=1 and
// AWS_ENDPOINT_URL_*. Unless those variables are already set, it starts them as child processes on
// 127.0.0.1: with --localstack, LocalStack itself in host mode (installed by
// scripts/localstack/install.sh); otherwise dynalite with transactions (local/dynalite-server.ts)
// and fauxqs (test/external/sqs-server.ts). It runs vitest, stops what it started whatever
// happened, and exits with vitest's code. LocalStack not installed: one line says so and the run
// uses dynalite and fauxqs, except in CI, where that fails it.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { EXTERNAL_SUITES } from "./suites.js";

const READY_MS = 30_000;
/** LocalStack's first start in host mode loads its providers (about 10 s on 2 cores) */
const LOCALSTACK_READY_MS = 90_000;
const STOP_MS = 5_000;

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));

interface Endpoints {
  dynamodb: string;
  sqs: string;
}

const top = join(here, "..", "..");

interface Started {
  /** the ready pattern's first group */
  value: string;
  /** everything it printed until then */
  output: string;
}

/** Spawns `name` and resolves with the first match of `ready` on its stdout. */
function startProcess(
  children: ChildProcess[],
  name: string,
  args: string[],
  ready: RegExp,
  opts: { command?: string; env?: NodeJS.ProcessEnv; readyMs?: number } = {},
): Promise<Started> {
  const child = spawn(opts.command ?? process.execPath, args, {
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
    env: opts.env ?? process.env,
  });
  children.push(child);
  let output = "";
  const readyMs = opts.readyMs ?? READY_MS;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name} did not report ready within ${readyMs} ms: ${output}`)),
      readyMs,
    );
    const onOutput = (chunk: Buffer) => {
      output += chunk.toString();
    };
    const onData = (chunk: Buffer) => {
      onOutput(chunk);
      const m = ready.exec(output);
      if (!m?.[1]) return;
      clearTimeout(timer);
      // Ready: from now on its output is read and dropped, so the pipes never fill.
      child.stdout?.off("data", onData).resume();
      child.stderr?.off("data", onOutput).resume();
      resolve({ value: m[1], output });
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onOutput);
    child.once("error", (e) => {
      clearTimeout(timer);
      reject(new Error(`${name} could not start: ${e.message}`));
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (code ${code}, signal ${signal}) before it was ready: ${output}`));
    });
  });
}

async function startEmulatorProcesses(children: ChildProcess[]): Promise<Endpoints> {
  const [dynamodb, sqs] = await Promise.all([
    // dynalite with DynamoDB's transactions (local/dynalite-tx.ts), on a port it picks.
    startProcess(
      children,
      "dynalite",
      ["--import", "tsx", join(here, "..", "..", "local", "dynalite-server.ts")],
      /Dynalite listening at: (\S+)/,
    ),
    startProcess(children, "fauxqs", ["--import", "tsx", join(here, "sqs-server.ts")], /listening (\S+)/),
  ]);
  return { dynamodb: dynamodb.value, sqs: sqs.value };
}

const LOCALSTACK = join(top, ".localstack");

/** The version scripts/localstack/install.sh installed, or undefined when it could not. */
function localstackInstalled(): string | undefined {
  const ready = join(LOCALSTACK, "ready");
  return existsSync(ready) ? readFileSync(ready, "utf8").trim() : undefined;
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, "close");
  return port;
}

/**
 * LocalStack in host mode, its gateway on 127.0.0.1 only, with the services the suites use, and
 * nothing downloaded at run time (install.sh put Java and DynamoDB Local under its filesystem
 * root). OVERRIDE_IN_DOCKER: this machine has /.dockerenv, which LocalStack would take for its
 * own container and look for its files under /usr/lib/localstack.
 */
async function startLocalStack(children: ChildProcess[]): Promise<Endpoints & { version: string }> {
  const port = await freePort();
  const root = join(LOCALSTACK, "fs");
  // its state of an earlier run (queues, tables in files) is not this run's
  rmSync(join(root, "tmp"), { recursive: true, force: true });
  rmSync(join(root, "var", "lib", "localstack", "tmp"), { recursive: true, force: true });
  const started = await startProcess(
    children,
    "LocalStack",
    ["-m", "localstack.runtime.main"],
    /^(Ready)\.$/m,
    {
      command: join(LOCALSTACK, "venv", "bin", "python"),
      readyMs: LOCALSTACK_READY_MS,
      env: {
        ...process.env,
        OVERRIDE_IN_DOCKER: "0",
        FILESYSTEM_ROOT: root,
        GATEWAY_LISTEN: `127.0.0.1:${port}`,
        SERVICES: "dynamodb,sqs,s3,sts,iam",
        // queue URLs name the host each request was sent to, as AWS's do (docs/localstack.md)
        SQS_ENDPOINT_STRATEGY: "dynamic",
        DYNAMODB_IN_MEMORY: "1",
        // no resolver of its own, no certificate, no analytics: nothing beyond 127.0.0.1
        DNS_ADDRESS: "0",
        SKIP_SSL_CERT_DOWNLOAD: "1",
        DISABLE_EVENTS: "1",
        LS_LOG: "warn",
      },
    },
  );
  const version = /LocalStack version: (\S+)/.exec(started.output)?.[1] ?? "(version not printed)";
  const endpoint = `http://127.0.0.1:${port}`;
  return { dynamodb: endpoint, sqs: endpoint, version };
}

/** Endpoints the caller already points at (LocalStack, or emulators of their own). */
function givenEndpoints(): Endpoints | undefined {
  if (process.env.NOVALESS_EXTERNAL_AWS !== "1") return undefined;
  const shared = process.env.AWS_ENDPOINT_URL;
  const dynamodb = process.env.AWS_ENDPOINT_URL_DYNAMODB ?? shared;
  const sqs = process.env.AWS_ENDPOINT_URL_SQS ?? shared;
  return dynamodb && sqs ? { dynamodb, sqs } : undefined;
}

/**
 * Every child runs in a process group of its own (detached), and the whole group is signalled: a
 * child's own children (tsx's node, vitest's workers) go with it instead of being orphaned.
 */
async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const group = -child.pid;
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(group, signal);
    } catch {
      // the group is gone already
    }
  };
  const exited = once(child, "exit");
  signalGroup("SIGTERM");
  const timer = setTimeout(() => signalGroup("SIGKILL"), STOP_MS);
  await exited;
  clearTimeout(timer);
}

async function runVitest(children: ChildProcess[], endpoints: Endpoints, args: string[]): Promise<number> {
  const vitest = join(dirname(require.resolve("vitest/package.json")), "vitest.mjs");
  const child = spawn(process.execPath, [vitest, "run", ...args], {
    stdio: "inherit",
    detached: true,
    env: {
      ...process.env,
      NOVALESS_EXTERNAL_AWS: "1",
      AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
      AWS_ENDPOINT_URL_SQS: endpoints.sqs,
    },
  });
  children.push(child);
  const [code, signal] = (await once(child, "exit")) as [number | null, NodeJS.Signals | null];
  return code ?? (signal ? 128 : 1);
}

const children: ChildProcess[] = [];
const stopAll = () => Promise.all(children.map(stopProcess));
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    void stopAll().finally(() => process.exit(130));
  });
}

let code = 1;
try {
  const args = process.argv.slice(2).filter((a) => a !== "--localstack");
  const given = givenEndpoints();
  let what = "given";
  let endpoints = given;
  if (!endpoints && process.argv.includes("--localstack")) {
    const installed = localstackInstalled();
    if (installed) {
      const ls = await startLocalStack(children);
      endpoints = ls;
      what = `LocalStack ${ls.version}, host mode`;
    } else if (process.env.CI === "true") {
      throw new Error(
        "LocalStack is not installed (scripts/localstack/install.sh said why, in npm run test:tools); CI does not skip it",
      );
    } else {
      process.stdout.write(
        "test:external: SKIPPED: LocalStack is not installed (scripts/localstack/install.sh said why): dynalite and fauxqs instead\n",
      );
    }
  }
  if (!endpoints) {
    endpoints = await startEmulatorProcesses(children);
    what = "dynalite and fauxqs, separate processes";
  }
  process.stdout.write(`external AWS (${what}): DynamoDB ${endpoints.dynamodb}, SQS ${endpoints.sqs}\n`);
  code = await runVitest(
    children,
    endpoints,
    args.some((a) => !a.startsWith("-")) ? args : [...EXTERNAL_SUITES, ...args],
  );
  process.stdout.write(`test:external against ${what}: vitest exited ${code}\n`);
} catch (e) {
  process.stderr.write(`test:external: ${e instanceof Error ? e.message : String(e)}\n`);
} finally {
  await stopAll();
}
process.exit(code);
