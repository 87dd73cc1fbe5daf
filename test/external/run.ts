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
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startProcess, stopProcess } from "../../local/child-processes.js";
import { localstackInstalled, startLocalStack } from "../../local/localstack.js";
import { EXTERNAL_SUITES } from "./suites.js";

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));

interface Endpoints {
  dynamodb: string;
  sqs: string;
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

/** Endpoints the caller already points at (LocalStack, or emulators of their own). */
function givenEndpoints(): Endpoints | undefined {
  if (process.env.NOVALESS_EXTERNAL_AWS !== "1") return undefined;
  const shared = process.env.AWS_ENDPOINT_URL;
  const dynamodb = process.env.AWS_ENDPOINT_URL_DYNAMODB ?? shared;
  const sqs = process.env.AWS_ENDPOINT_URL_SQS ?? shared;
  return dynamodb && sqs ? { dynamodb, sqs } : undefined;
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
      const ls = await startLocalStack(children, ["dynamodb", "sqs", "s3", "sts", "iam"]);
      endpoints = { dynamodb: ls.endpoint, sqs: ls.endpoint };
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
