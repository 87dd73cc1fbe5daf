// `npm run test:external [vitest args]`: the integration and e2e suites against a DynamoDB and an
// SQS that run OUTSIDE the test process, through NOVALESS_EXTERNAL_AWS=1 and AWS_ENDPOINT_URL_*,
// the way they would run against LocalStack. Unless those variables are already set (LocalStack,
// say), it starts dynalite with transactions (local/dynalite-server.ts) and fauxqs
// (test/external/sqs-server.ts) as child processes on 127.0.0.1, runs vitest, stops both whatever
// happened, and exits with vitest's code.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { EXTERNAL_SUITES } from "./suites.js";

const READY_MS = 30_000;
const STOP_MS = 5_000;

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));

interface Endpoints {
  dynamodb: string;
  sqs: string;
}

/** Spawns `name` and resolves with the first match of `ready` on its stdout. */
function startProcess(
  children: ChildProcess[],
  name: string,
  args: string[],
  ready: RegExp,
): Promise<string> {
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"], detached: true });
  children.push(child);
  let output = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name} did not report ready within ${READY_MS} ms: ${output}`)),
      READY_MS,
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
      resolve(m[1]);
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
  return { dynamodb, sqs };
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
  const given = givenEndpoints();
  const endpoints = given ?? (await startEmulatorProcesses(children));
  process.stdout.write(
    `external AWS (${given ? "given" : "dynalite and fauxqs, separate processes"}): ` +
      `DynamoDB ${endpoints.dynamodb}, SQS ${endpoints.sqs}\n`,
  );
  const args = process.argv.slice(2);
  code = await runVitest(
    children,
    endpoints,
    args.some((a) => !a.startsWith("-")) ? args : [...EXTERNAL_SUITES, ...args],
  );
} catch (e) {
  process.stderr.write(`test:external: ${e instanceof Error ? e.message : String(e)}\n`);
} finally {
  await stopAll();
}
process.exit(code);
