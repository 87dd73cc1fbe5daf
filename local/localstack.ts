// Dev only: the project's LocalStack (scripts/localstack/install.sh) started in host mode, for the
// external suite (test/external/run.ts --localstack) and the deploy (scripts/deploy-localstack.ts).
// Its gateway listens on 127.0.0.1 only, and nothing is downloaded at run time: install.sh put
// Java and DynamoDB Local under its filesystem root (docs/localstack.md).
import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, startProcess } from "./child-processes.js";

/** LocalStack's first start in host mode loads its providers (about 10 s on 2 cores) */
const READY_MS = 90_000;

export const LOCALSTACK_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", ".localstack");

/** The version scripts/localstack/install.sh installed, or undefined when it could not. */
export function localstackInstalled(): string | undefined {
  const ready = join(LOCALSTACK_DIR, "ready");
  return existsSync(ready) ? readFileSync(ready, "utf8").trim() : undefined;
}

export interface LocalStack {
  /** every service's endpoint: LocalStack's gateway */
  endpoint: string;
  version: string;
}

/**
 * LocalStack with `services`, its process pushed onto `children` (stopProcess stops it and its
 * DynamoDB Local, one process group). OVERRIDE_IN_DOCKER: this machine has /.dockerenv, which
 * LocalStack would take for its own container, looking for its files under /usr/lib/localstack.
 */
export async function startLocalStack(
  children: ChildProcess[],
  services: readonly string[],
  env: NodeJS.ProcessEnv = {},
): Promise<LocalStack> {
  const port = await freePort();
  const root = join(LOCALSTACK_DIR, "fs");
  // an earlier run's state (queues, tables in files) is not this run's
  rmSync(join(root, "tmp"), { recursive: true, force: true });
  rmSync(join(root, "var", "lib", "localstack", "tmp"), { recursive: true, force: true });
  const started = await startProcess(
    children,
    "LocalStack",
    ["-m", "localstack.runtime.main"],
    /^(Ready)\.$/m,
    {
      command: join(LOCALSTACK_DIR, "venv", "bin", "python"),
      readyMs: READY_MS,
      env: {
        ...process.env,
        OVERRIDE_IN_DOCKER: "0",
        FILESYSTEM_ROOT: root,
        GATEWAY_LISTEN: `127.0.0.1:${port}`,
        SERVICES: services.join(","),
        // queue URLs name the host each request was sent to, as AWS's do (docs/localstack.md)
        SQS_ENDPOINT_STRATEGY: "dynamic",
        DYNAMODB_IN_MEMORY: "1",
        // no resolver of its own, no certificate, no analytics: nothing beyond 127.0.0.1
        DNS_ADDRESS: "0",
        SKIP_SSL_CERT_DOWNLOAD: "1",
        DISABLE_EVENTS: "1",
        LS_LOG: "warn",
        ...env,
      },
    },
  );
  const version = /LocalStack version: (\S+)/.exec(started.output)?.[1] ?? "(version not printed)";
  return { endpoint: `http://127.0.0.1:${port}`, version };
}
