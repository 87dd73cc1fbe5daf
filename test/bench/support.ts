// What the cost and end-to-end benchmarks share: fleet sizes from the command line, a deadline per
// size, the local runtime on the chosen DynamoDB, creates through the public API, the machine.
import { readFileSync } from "node:fs";
import { Agent, request as httpRequest } from "node:http";
import { availableParallelism, cpus, loadavg } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { App } from "aws-cdk-lib";
import type { CfnFunction } from "aws-cdk-lib/aws-lambda";
import { NovalessStack } from "../../infra/stacks/novaless-stack.js";
import { javaAvailable, startDynamoDbLocal } from "../../local/dynamodb-local.js";
import { type Emulators, startEmulators } from "../../local/emulators.js";
import type { FunctionComponent } from "../../local/iam/identities.js";
import { type Runtime, type RuntimeOptions, startRuntime } from "../../local/runtime.js";

/** Benchmarks create far more servers than Nova's default instance quota lets one project have. */
function liftQuotas(opts: RuntimeOptions): RuntimeOptions {
  const unlimited = { NOVALESS_QUOTA_INSTANCES: "-1", NOVALESS_QUOTA_CORES: "-1", NOVALESS_QUOTA_RAM: "-1" };
  return { ...opts, env: { ...unlimited, ...opts.env } };
}

/** The demo member token of the local API (local/ seeds it). */
export const DEMO_TOKEN = "demo-token";

export function sizesOf(list: string): number[] {
  const sizes = list.split(",").map((s) => Number(s.trim()));
  const bad = sizes.find((n) => !Number.isInteger(n) || n < 1);
  if (bad !== undefined) throw new Error(`--hosts: ${list} is not a list of positive integers`);
  return sizes;
}

export function machine(): string {
  return `${availableParallelism()} cores (${cpus()[0]?.model ?? "unknown cpu"}), node ${process.version}, ${process.platform}/${process.arch}`;
}

/** The 1/5/15-minute load averages: other processes on the machine change every figure here. */
export function load(): string {
  return `load average ${loadavg()
    .map((n) => n.toFixed(1))
    .join(" / ")} (1/5/15 min) on ${availableParallelism()} cores`;
}

/** Exits the bench if its sizes together outlive their deadlines (a stuck start, say). */
export function hardStop(bench: string, ms: number): void {
  setTimeout(() => {
    console.log(`${bench}: overall deadline passed, exiting`);
    process.exit(2);
  }, ms).unref();
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

export class TimedOut extends Error {
  override name = "TimedOut";
}

/** `work`, or TimedOut once `deadline` (epoch ms) has passed; `work` itself cannot be stopped. */
export async function before<T>(deadline: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new TimedOut(`${what}: past the deadline`)),
      Math.max(0, deadline - Date.now()),
    );
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Where DynamoDB runs for the benches: Amazon's DynamoDB Local when Java 17 is here, else dynalite. */
export interface Backend {
  name: "DynamoDB Local" | "dynalite";
  /** why this one */
  note: string;
  /** starts a runtime on it (the SQS and Step Functions stay embedded) */
  start(opts: RuntimeOptions): Promise<Runtime>;
  stop(): Promise<void>;
}

export async function backend(choice: "auto" | "local" | "dynalite"): Promise<Backend> {
  const java = choice === "dynalite" ? undefined : javaAvailable();
  if (choice === "local" && !java?.ok)
    throw new Error(`--dynamodb local: ${java && !java.ok ? java.reason : ""}`);
  if (!java?.ok) {
    return {
      name: "dynalite",
      note: java ? `${java.reason}` : "--dynamodb dynalite",
      start: (opts) => startRuntime(liftQuotas(opts)),
      stop: async () => {},
    };
  }
  const local = await startDynamoDbLocal();
  // The runtime takes an external DynamoDB only together with an external SQS: a bare set of
  // embedded emulators (fauxqs; its dynalite stays unused) serves SQS for each run.
  return {
    name: "DynamoDB Local",
    note: `java ${java.version}`,
    async start(opts) {
      const sqs: Emulators = await startEmulators();
      const previous = {
        NOVALESS_EXTERNAL_AWS: process.env.NOVALESS_EXTERNAL_AWS,
        AWS_ENDPOINT_URL_DYNAMODB: process.env.AWS_ENDPOINT_URL_DYNAMODB,
        AWS_ENDPOINT_URL_SQS: process.env.AWS_ENDPOINT_URL_SQS,
      };
      Object.assign(process.env, {
        NOVALESS_EXTERNAL_AWS: "1",
        AWS_ENDPOINT_URL_DYNAMODB: local.endpoint,
        AWS_ENDPOINT_URL_SQS: sqs.endpoints.sqs,
      });
      // Put back only once the runtime has stopped: it sets (and restores) its own gateway's
      // endpoints on top of these.
      const restore = () => {
        for (const [k, v] of Object.entries(previous)) {
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
        }
      };
      const stopSqs = sqs;
      try {
        const runtime = await startRuntime(liftQuotas(opts));
        return {
          ...runtime,
          get agents() {
            return runtime.agents;
          },
          async stop() {
            await runtime.stop();
            restore();
            await stopSqs.stop();
          },
        };
      } catch (e) {
        restore();
        await stopSqs.stop();
        throw e;
      }
    },
    stop: () => local.stop(),
  };
}

/**
 * The benches' HTTP client: node's http over kept-alive sockets, as the demo member. It shares the
 * CPU with the runtime it measures, and fetch (undici) costs it several times as much a request.
 */
const keepAlive = new Agent({ keepAlive: true, maxSockets: 64 });

export function demoRequest(
  method: string,
  url: string,
  body?: string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method,
        agent: keepAlive,
        headers: {
          "x-auth-token": DEMO_TOKEN,
          ...(body === undefined
            ? {}
            : { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** POST /v2.1/servers as the demo member; the new server's id, and how long the POST took. */
export async function createServer(url: string, name: string): Promise<{ id: string; ms: number }> {
  const t0 = performance.now();
  const res = await demoRequest(
    "POST",
    `${url}/v2.1/servers`,
    JSON.stringify({ server: { name, flavorRef: "1", imageRef: "cirros" } }),
  );
  const text = res.text;
  const ms = performance.now() - t0;
  if (res.status !== 202) throw new Error(`create ${name}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return { id: (JSON.parse(text) as { server: { id: string } }).server.id, ms };
}

/** Runs `task(i)` for i in [0, n) with at most `concurrency` at once; stops starting new ones past `deadline`. */
export async function pool(
  n: number,
  concurrency: number,
  deadline: number,
  task: (i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n && Date.now() < deadline) {
      const i = next++;
      await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
}

/** Polls `status()` until it answers one of `want`; throws past the deadline or on a final other state. */
export async function until(
  what: string,
  deadline: number,
  status: () => Promise<string | undefined>,
  want: string,
  intervalMs = 10,
): Promise<void> {
  for (;;) {
    const s = await status();
    if (s === want) return;
    if (s === "ERROR" || s === "error") throw new Error(`${what}: ${s}`);
    if (Date.now() > deadline) throw new TimedOut(`${what}: still ${s ?? "absent"} at the deadline`);
    await sleep(intervalMs);
  }
}

/**
 * Each function's MemorySize, from the stack itself (synthesized without bundling, as the local
 * IAM does): what Lambda bills GB-seconds at.
 */
export function stackMemory(): Record<FunctionComponent, number> {
  const cdkJson = JSON.parse(readFileSync(new URL("../../cdk.json", import.meta.url), "utf8")) as {
    context: Record<string, unknown>;
  };
  const app = new App({ context: { ...cdkJson.context, "aws:cdk:bundling-stacks": [] } });
  const stack = new NovalessStack(app, "NovalessStack", { computeQueuePrefix: "novaless-bench-" });
  const fns: Record<FunctionComponent, { node: { defaultChild?: unknown } }> = {
    api: stack.apiFunction,
    "build-intake": stack.buildIntakeFunction,
    scheduler: stack.schedulerFunction,
    conductor: stack.conductorFunction,
    "build-watchdog": stack.buildWatchdogFunction,
    "compute-events": stack.computeEventsFunction,
  };
  return Object.fromEntries(
    Object.entries(fns).map(([c, fn]) => [
      c,
      Number((fn.node.defaultChild as CfnFunction).memorySize ?? 128),
    ]),
  ) as Record<FunctionComponent, number>;
}

/**
 * What the synthesized stack bills a month whatever the traffic, by kind: its CloudWatch alarms
 * and dashboards and its Secrets Manager secrets (bundling skipped: only the template is read).
 */
export function stackFixedResources(): { alarms: number; dashboards: number; secrets: number } {
  const cdkJson = JSON.parse(readFileSync(new URL("../../cdk.json", import.meta.url), "utf8")) as {
    context: Record<string, unknown>;
  };
  const app = new App({ context: { ...cdkJson.context, "aws:cdk:bundling-stacks": [] } });
  const stack = new NovalessStack(app, "NovalessStack", { computeQueuePrefix: "novaless-bench-" });
  const resources = Object.values(
    (app.synth().getStackByName(stack.stackName).template as { Resources: Record<string, { Type: string }> })
      .Resources,
  );
  const count = (type: string) => resources.filter((r) => r.Type === type).length;
  return {
    alarms: count("AWS::CloudWatch::Alarm"),
    dashboards: count("AWS::CloudWatch::Dashboard"),
    secrets: count("AWS::SecretsManager::Secret"),
  };
}

/** The SDK's warning that a client's sockets are all taken (50 by default), counted apart. */
export const socketWarnings = { count: 0 };

/**
 * Keeps the components' JSON log lines (and the SDK's socket warnings) off the terminal, handing
 * each log line to `onLogLine` with the stream it was written to; the bench's own lines pass.
 */
export function quietLogs(onLogLine: (text: string, stderr: boolean) => void = () => {}): void {
  // The SDK's Node 20 notice is known (Lambda runs 22), as in the tests.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream) as (chunk: unknown, ...rest: unknown[]) => boolean;
    stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      const text = typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
      const isLog = text.startsWith("{");
      const isSocketWarning = text.includes("socket usage at capacity");
      if (!isLog && !isSocketWarning) return write(chunk, ...rest);
      if (isLog) onLogLine(text, stream === process.stderr);
      else socketWarnings.count++;
      (rest.find((r) => typeof r === "function") as (() => void) | undefined)?.();
      return true;
    }) as typeof stream.write;
  }
}
