// The embedded AWS: dynalite (DynamoDB, with transactions: dynalite-tx.ts) and fauxqs (SQS, and S3) in this process, and optionally the
// local Step Functions endpoint, all on 127.0.0.1. The handlers reach them through the standard
// AWS_ENDPOINT_URL_* variables (see lib/aws/clients.ts), exactly as they reach AWS. With `iam`,
// those variables point at the IAM gateway (iam/gateway.ts) in front of all three instead, and
// the default credentials are the operator's.
import { existsSync } from "node:fs";
import type { RequestListener } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { buildApp } from "fauxqs";
import { createDynalite } from "./dynalite-tx.js";
import { type Gateway, type GatewayPolicy, startGateway, type Upstream } from "./iam/gateway.js";
import { identityOf, OPERATOR } from "./iam/identities.js";
import { listenerUpstream } from "./in-process.js";
import { type SfnServer, type SfnServerOptions, startSfnServer } from "./sfn-server.js";
import { callRaw, startThread, type Thread } from "./threads.js";

const HOST = "127.0.0.1";

export interface EmulatorOptions {
  /** 0 (the default) lets the OS pick a free port */
  dynamodbPort?: number;
  /** dynalite in a worker thread of its own (dynalite-thread-worker.ts), not in this one */
  dynamodbThread?: boolean;
  sqsPort?: number;
  sfnPort?: number;
  /** start the local Step Functions endpoint too, serving Task states with these handlers */
  sfn?: Omit<SfnServerOptions, "port">;
  /** put the IAM gateway in front, holding each caller to this policy set */
  iam?: {
    policy: GatewayPolicy;
    /** probability that a DynamoDB item operation is throttled */
    dynamodbThrottleRate?: number;
    /** probability that a Step Functions StartExecution is throttled */
    startExecutionThrottleRate?: number;
    random?: () => number;
  };
}

export interface EmulatorEndpoints {
  dynamodb: string;
  sqs: string;
  sfn?: string;
  /** the IAM gateway in front of the others, when started with `iam` */
  gateway?: string;
}

export interface Emulators {
  endpoints: EmulatorEndpoints;
  /** AWS_ENDPOINT_URL_*, region and dummy credentials: what an SDK client needs to reach them */
  env: Record<string, string>;
  /** present when `sfn` was given */
  sfn?: SfnServer;
  /** present when `iam` was given */
  gateway?: Gateway;
  /** the emulators' worker threads (dynalite's with `dynamodbThread`) */
  threads: Pick<Thread, "name" | "utilization">[];
  /** stops everything that was started; safe to call twice */
  stop(): Promise<void>;
}

/** Sets the variables on process.env; returns a function that puts the previous values back. */
export function applyEnv(env: Record<string, string>): () => void {
  const previous = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  return () => {
    for (const [k, v] of Object.entries(previous)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
}

export async function startEmulators(opts: EmulatorOptions = {}): Promise<Emulators> {
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    // Reverse order of start; each stopper is consumed so a second stop() is a no-op.
    const errors: unknown[] = [];
    for (let stop = stops.pop(); stop; stop = stops.pop()) {
      await stop().catch((e: unknown) => errors.push(e));
    }
    if (errors.length > 0) throw new AggregateError(errors, "stopping the emulators failed");
  };
  try {
    const external = externalEndpoints();
    const dynamodb =
      external?.dynamodb ??
      (opts.dynamodbThread
        ? await startDynaliteThread(opts.dynamodbPort ?? 0)
        : await startDynalite(opts.dynamodbPort ?? 0));
    stops.push(dynamodb.stop);
    const sqs = external?.sqs ?? (await startSqs(opts.sqsPort ?? 0));
    stops.push(sqs.stop);
    let sfn: SfnServer | undefined;
    if (opts.sfn) {
      sfn = await startSfnServer({ ...opts.sfn, port: opts.sfnPort ?? 0 });
      stops.push(() => sfn!.stop());
    }
    let gateway: Gateway | undefined;
    if (opts.iam) {
      gateway = await startGateway({
        upstreams: { dynamodb: dynamodb.endpoint, sqs: sqs.endpoint, ...(sfn ? { sfn: sfn.endpoint } : {}) },
        // the embedded emulators without a socket; they listen too, for other callers
        inProcess: {
          ...(dynamodb.inProcess ? { dynamodb: dynamodb.inProcess } : {}),
          ...(sqs.inProcess ? { sqs: sqs.inProcess } : {}),
          ...(sfn ? { states: listenerUpstream(sfn.listener).call } : {}),
        },
        policy: opts.iam.policy,
        dynamodbThrottleRate: opts.iam.dynamodbThrottleRate,
        startExecutionThrottleRate: opts.iam.startExecutionThrottleRate,
        random: opts.iam.random,
      });
      stops.push(() => gateway!.stop());
    }
    const front = (endpoint: string) => gateway?.endpoint ?? endpoint;
    const operator = identityOf(OPERATOR);
    const env: Record<string, string> = {
      AWS_ENDPOINT_URL_DYNAMODB: front(dynamodb.endpoint),
      AWS_ENDPOINT_URL_SQS: front(sqs.endpoint),
      // fauxqs serves S3 beside SQS (the images bucket)
      AWS_ENDPOINT_URL_S3: front(sqs.endpoint),
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: gateway ? operator.accessKeyId : "novaless-local",
      AWS_SECRET_ACCESS_KEY: gateway ? operator.secretAccessKey : "novaless-local",
    };
    if (sfn) env.AWS_ENDPOINT_URL_SFN = front(sfn.endpoint);
    return {
      endpoints: {
        dynamodb: dynamodb.endpoint,
        sqs: sqs.endpoint,
        ...(sfn ? { sfn: sfn.endpoint } : {}),
        ...(gateway ? { gateway: gateway.endpoint } : {}),
      },
      env,
      ...(sfn ? { sfn } : {}),
      ...(gateway ? { gateway } : {}),
      threads: dynamodb.thread ? [dynamodb.thread] : [],
      stop: stopAll,
    };
  } catch (e) {
    await stopAll().catch(() => {});
    throw e;
  }
}

/**
 * NOVALESS_EXTERNAL_AWS=1: use the DynamoDB and SQS the AWS_ENDPOINT_URL_* variables already
 * point at (LocalStack on http://localhost:4566, say) instead of starting the embedded ones.
 * Step Functions stays embedded: its Task states run this process's handlers.
 */
function externalEndpoints(): { dynamodb: Started; sqs: Started } | undefined {
  if (process.env.NOVALESS_EXTERNAL_AWS !== "1") return undefined;
  const shared = process.env.AWS_ENDPOINT_URL;
  const dynamodb = process.env.AWS_ENDPOINT_URL_DYNAMODB ?? shared;
  const sqs = process.env.AWS_ENDPOINT_URL_SQS ?? shared;
  if (!dynamodb || !sqs) {
    throw new Error("NOVALESS_EXTERNAL_AWS=1 needs AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_DYNAMODB and _SQS)");
  }
  const nothing = async () => {};
  return { dynamodb: { endpoint: dynamodb, stop: nothing }, sqs: { endpoint: sqs, stop: nothing } };
}

interface Started {
  endpoint: string;
  stop: () => Promise<void>;
  /** the emulator called in this process (embedded ones) */
  inProcess?: Upstream;
  thread?: Thread;
}

async function startDynalite(port: number): Promise<Started> {
  // dynalite, with DynamoDB's transactions added (dynalite-tx.ts).
  const server = createDynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, HOST, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port: actual } = server.address() as AddressInfo;
  const [listener] = server.listeners("request") as RequestListener[];
  const inProcess = listener ? listenerUpstream(listener) : undefined;
  return {
    endpoint: `http://${HOST}:${actual}`,
    ...(inProcess ? { inProcess: inProcess.call } : {}),
    stop: async () => {
      await inProcess?.close();
      await new Promise<void>((resolve, reject) => {
        server.close((err?: Error) => (err ? reject(err) : resolve()));
        // SDK clients keep connections alive; close() alone would wait for them.
        server.closeAllConnections();
      });
    },
  };
}

async function startDynaliteThread(port: number): Promise<Started> {
  const thread = await startThread("dynalite", "./dynalite-thread-worker.ts", { port });
  return {
    thread,
    endpoint: (thread.ready as { endpoint: string }).endpoint,
    inProcess: callRaw(thread.rpc, "dynamodb"),
    stop: async () => {
      await thread.rpc.call("close", {});
      await thread.stop();
    },
  };
}

/**
 * fauxqs, bound to 127.0.0.1 (its startFauxqs() listens on 0.0.0.0, so the app is built and
 * listened here). Queue URLs: by default fauxqs names them `http://sqs.<region>.localhost:<port>/…`,
 * a host that does not resolve everywhere, and the SQS client sends each call to its QueueUrl's
 * host (useQueueUrlAsEndpoint) unless the client's `endpoint` is set in code, which ours is not.
 * With an empty store host, fauxqs builds the URL from the request's Host header instead, so
 * queue URLs are `http://127.0.0.1:<port>/000000000000/<name>`: the endpoint itself.
 */
/** S3's limit on one PutObject (5 GB). */
const S3_PUT_MAX_BYTES = 5 * 1024 ** 3;

async function startSqs(port: number): Promise<Started> {
  const { SqsStore } = await importFauxqsInternal<{ SqsStore: new () => { host: string } }>(
    "sqs/sqsStore.js",
  );
  const { SnsStore } = await importFauxqsInternal<{ SnsStore: new () => object }>("sns/snsStore.js");
  const { S3Store } = await importFauxqsInternal<{ S3Store: new () => object }>("s3/s3Store.js");
  const sqsStore = new SqsStore();
  sqsStore.host = "";
  const stores = { sqsStore, snsStore: new SnsStore(), s3Store: new S3Store() };
  const app = buildApp({
    logger: false,
    stores: stores as NonNullable<Parameters<typeof buildApp>[0]>["stores"],
  });
  // fauxqs takes 11 MiB a request, S3 5 GB a PutObject (an image's upload is one PUT): its S3
  // parser again, with S3's limit
  app.removeContentTypeParser("*");
  app.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: S3_PUT_MAX_BYTES }, (_req, body, done) => {
    done(null, body);
  });
  await app.listen({ port, host: HOST });
  const { port: actual } = app.server.address() as AddressInfo;
  // fastify's own in-process requests (light-my-request underneath)
  const inProcess: Upstream = async (req) => {
    const res = await app.inject({
      method: req.method as "POST",
      url: req.path,
      headers: req.headers as Record<string, string>,
      payload: req.body,
    });
    return { status: res.statusCode, headers: res.headers, body: res.rawPayload };
  };
  return { endpoint: `http://${HOST}:${actual}`, inProcess, stop: () => app.close() };
}

/** A module of fauxqs that its package `exports` does not list, found where Node finds fauxqs. */
async function importFauxqsInternal<T>(relative: string): Promise<T> {
  const dirs = createRequire(import.meta.url).resolve.paths("fauxqs") ?? [];
  const root = dirs.map((d) => join(d, "fauxqs")).find((d) => existsSync(join(d, "package.json")));
  if (!root) throw new Error("fauxqs is not installed");
  const file = join(root, "dist", relative);
  try {
    return (await import(pathToFileURL(file).href)) as T;
  } catch (e) {
    throw new Error(`cannot load ${file}: fauxqs 1.9.x is expected`, { cause: e });
  }
}
