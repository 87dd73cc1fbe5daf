// Client factories. Endpoints are never set here: the SDK reads AWS_ENDPOINT_URL_DYNAMODB,
// AWS_ENDPOINT_URL_SQS and AWS_ENDPOINT_URL_SFN itself, so the same code reaches AWS, the
// embedded emulators or LocalStack. Credentials: those of the current identity (identity.ts) when
// one is set, one client per access key; otherwise the SDK's default chain (what runs on AWS).
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { S3Client } from "@aws-sdk/client-s3";
import { SFNClient } from "@aws-sdk/client-sfn";
import { SQSClient } from "@aws-sdk/client-sqs";
import { DynamoDBDocumentClient, DynamoDBDocumentClientCommand } from "@aws-sdk/lib-dynamodb";
import type { AwsCredentialIdentityProvider } from "@aws-sdk/types";
import { SignatureV4 } from "@smithy/signature-v4";
import type { HttpHandlerOptions, HttpRequest, HttpResponse, RequestHandler } from "@smithy/types";
import { currentIdentity, type Identity } from "./identity.js";
import { attachMeter } from "./meter.js";

interface Clients {
  ddb?: DynamoDBDocumentClient;
  sqs?: SQSClient;
  sfn?: SFNClient;
  s3?: S3Client;
  url?: FunctionUrlSigning;
}

/** What signs a request to a function URL (SigV4 for "lambda") and what sends it. */
export interface FunctionUrlSigning {
  signer: SignatureV4;
  requestHandler: SdkRequestHandler;
}

/** by access key id; "" is the default chain */
const cache = new Map<string, Clients>();

/**
 * What "" (no identity set) signs with: the SDK's default chain unless a process set a provider
 * of its own (the compute agent assuming its host role with session tags).
 */
let defaultCredentials: AwsCredentialIdentityProvider | undefined;

/**
 * What every client sends its signed requests through: the SDK's own HTTP handler unless a
 * process set one (the local runtime hands them to its IAM gateway in process, without a socket).
 */
let requestHandler: SdkRequestHandler | undefined;

/** What an SDK client takes as its requestHandler. */
export type SdkRequestHandler = RequestHandler<HttpRequest, HttpResponse, HttpHandlerOptions>;

/** The clients' transport from now on (resets cached clients); undefined: the SDK's own. */
export function useRequestHandler(handler: SdkRequestHandler | undefined): void {
  requestHandler = handler;
  resetClients();
}

/** The process's credentials from now on, for calls outside any runAs (resets cached clients). */
export function useDefaultCredentials(provider: AwsCredentialIdentityProvider | undefined): void {
  defaultCredentials = provider;
  resetClients();
}

function clientsFor(): {
  clients: Clients;
  credentials?: Identity | AwsCredentialIdentityProvider;
  caller: string;
  transport: { requestHandler?: SdkRequestHandler };
} {
  const identity = currentIdentity();
  const key = identity?.accessKeyId ?? "";
  let clients = cache.get(key);
  if (!clients) {
    clients = {};
    cache.set(key, clients);
  }
  const transport = requestHandler ? { requestHandler } : {};
  return identity
    ? {
        clients,
        credentials: { accessKeyId: identity.accessKeyId, secretAccessKey: identity.secretAccessKey },
        caller: key,
        transport,
      }
    : { clients, caller: key, transport, ...(defaultCredentials ? { credentials: defaultCredentials } : {}) };
}

const COMMON = { maxAttempts: 5 } as const;
/**
 * cacheMiddleware: the resolved middleware stack is kept per command class instead of rebuilt
 * (sorted, merged) on every call; our middleware (the meter) is added once, at creation, which is
 * what the SDK asks of that option. lib-dynamodb refuses it for the document client, whose commands
 * then go through a cached client of their own (documentClient below).
 */
const CACHED = { ...COMMON, cacheMiddleware: true } as const;

/** A document command's parts the SDK keeps protected: its low-level command, and its (un)marshalling. */
interface DocumentCommandParts {
  clientCommand: Parameters<DynamoDBClient["send"]>[0];
  addMarshallingMiddleware(config: DynamoDBDocumentClient["config"]): void;
}

type Send = (...args: unknown[]) => Promise<unknown>;

/**
 * The document client, its commands sent through a second client with cacheMiddleware: the
 * middleware stack a command class resolves to (the marshalling of that class's keys included) is
 * built once, not on every call, where the document client refuses that option. A call with
 * options (an abort signal), and every call once its stack was changed after creation (a test's
 * injected fault), goes the document client's own way, its middleware resolved per call.
 */
function documentClient(client: DynamoDBClient, cached: DynamoDBClient): DynamoDBDocumentClient {
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  let changed = false;
  const stack = doc.middlewareStack as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const method of ["add", "addRelativeTo", "use", "remove", "removeByTag"]) {
    const original = stack[method]!.bind(stack);
    stack[method] = (...args) => {
      changed = true;
      return original(...args);
    };
  }
  // the command classes whose stack (their marshalling included) the cached client holds already
  const resolved = new WeakSet<object>();
  const own = doc.send.bind(doc) as Send;
  (doc as unknown as { send: Send }).send = (command, ...rest) => {
    if (changed || rest.length > 0 || !(command instanceof DynamoDBDocumentClientCommand))
      return own(command, ...rest);
    const parts = command as unknown as DocumentCommandParts;
    if (!resolved.has(command.constructor)) {
      parts.addMarshallingMiddleware(doc.config);
      resolved.add(command.constructor);
    }
    return cached.send(parts.clientCommand);
  };
  return doc;
}

export function dynamo(): DynamoDBDocumentClient {
  const { clients, credentials, caller, transport } = clientsFor();
  if (!clients.ddb) {
    const client = new DynamoDBClient({ ...COMMON, credentials, ...transport });
    const cached = new DynamoDBClient({ ...CACHED, credentials, ...transport });
    attachMeter(client, "dynamodb", caller);
    attachMeter(cached, "dynamodb", caller);
    clients.ddb = documentClient(client, cached);
  }
  return clients.ddb;
}

export function sqsClient(): SQSClient {
  const { clients, credentials, caller, transport } = clientsFor();
  // Every call to the configured endpoint, whatever host a queue URL names: locally that endpoint
  // is the IAM gateway (an external SQS may hand out URLs of its own host); on AWS both agree.
  if (!clients.sqs) {
    clients.sqs = new SQSClient({ ...CACHED, credentials, useQueueUrlAsEndpoint: false, ...transport });
    attachMeter(clients.sqs, "sqs", caller);
  }
  return clients.sqs;
}

export function sfnClient(): SFNClient {
  const { clients, credentials, caller, transport } = clientsFor();
  if (!clients.sfn) {
    clients.sfn = new SFNClient({ ...CACHED, credentials, ...transport });
    attachMeter(clients.sfn, "sfn", caller);
  }
  return clients.sfn;
}

/**
 * S3 (the images bucket). Path-style where an endpoint is configured (the local gateway, LocalStack
 * name no bucket hosts); AWS's virtual-hosted style otherwise.
 */
export function s3Client(): S3Client {
  const { clients, credentials, transport } = clientsFor();
  if (!clients.s3) {
    const forcePathStyle = Boolean(process.env.AWS_ENDPOINT_URL_S3 ?? process.env.AWS_ENDPOINT_URL);
    // not metered: the meter counts the request-priced services of a build (bench:cost)
    clients.s3 = new S3Client({ ...CACHED, credentials, forcePathStyle, ...transport });
  }
  return clients.s3;
}

/**
 * The SDK clients' region, hash and transport: the same for every identity (only credentials
 * differ), so one client's configuration serves the function URL signers of all of them.
 */
let shared: SQSClient | undefined;

/**
 * A function URL's signer as the current identity (cached per access key, as the clients are),
 * with the SQS client's region, hash and transport: a SigV4 signer, not a client, for each
 * identity. A simulated fleet's hosts each post their registration as their own session; an SQS
 * client made for each of them only to borrow its configuration cost about 0.4 ms of CPU a host.
 */
export function functionUrlSigning(): FunctionUrlSigning {
  const { clients, credentials, transport } = clientsFor();
  if (!clients.url) {
    // without an identity, the default chain's client (what runs on AWS) and its credentials
    const identity = currentIdentity();
    if (identity && !shared) shared = new SQSClient({ ...CACHED, ...transport });
    const base = identity && shared ? shared : sqsClient();
    const { region, sha256, requestHandler } = base.config;
    clients.url = {
      signer: new SignatureV4({
        credentials: identity ? credentials! : base.config.credentials,
        region,
        service: "lambda",
        sha256,
        uriEscapePath: true,
      }),
      requestHandler: requestHandler as SdkRequestHandler,
    };
  }
  return clients.url;
}

/** Forget cached clients (the local runtime and tests change endpoints between runs). */
export function resetClients(): void {
  shared?.destroy();
  shared = undefined;
  for (const c of cache.values()) {
    c.ddb?.destroy();
    c.sqs?.destroy();
    c.sfn?.destroy();
    c.s3?.destroy();
  }
  cache.clear();
}
