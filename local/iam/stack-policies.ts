// The IAM policies the deployed stack gives each component, taken from the stack itself:
// NovalessStack is synthesized in this process with bundling skipped (no esbuild: seconds, not a
// full synth), and the template's intrinsics are resolved against the LOCAL resources (table and
// queue names with the runtime's suffix, the local function and state machine ARNs), so the local
// gateway checks every call against exactly what AWS would.
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { CfnElement, Stack } from "aws-cdk-lib";
import type { NovalessStack } from "../../infra/stacks/novaless-stack.js";
import { DEPLOYMENT_OPTIONS, option } from "../../lib/config.js";
import type { TableSpec } from "../../lib/resources.js";
import type { EventSourceMapping } from "../event-source.js";
import type { Statement } from "./evaluate.js";
import {
  ACCOUNT,
  COMPONENTS,
  type Component,
  type FunctionComponent,
  PARTITION,
  REGION,
  roleArnOf,
} from "./identities.js";

/** The local names and ARNs of what the stack creates. */
export interface LocalResources {
  /** table id in the stack → local table name */
  tables: Record<TableSpec["id"], string>;
  buildRequestsQueue: string;
  buildRequestsDlq: string;
  computeEventsDlq: string;
  /** the local compute hosts' queue prefix (the stack's computeQueuePrefix) */
  computeQueuePrefix: string;
  /** the images bucket's local name (default: the resource images_bucket's default) */
  imagesBucket?: string;
  functionArns: Record<FunctionComponent, string>;
  stateMachineArn: string;
}

export interface StackPolicies {
  /** identity-based statements per component, intrinsics resolved */
  identity: Record<Component, Statement[]>;
  /** resource-based statements (the queues' policies), each with its Resource */
  resource: Statement[];
  /** each function's Timeout from the template, seconds */
  timeouts: Record<FunctionComponent, number>;
  /** the functions' ReservedConcurrentExecutions, where the template sets one */
  reservedConcurrency: Partial<Record<FunctionComponent, number>>;
  /**
   * The template's SQS event source mappings, the only ones the local runtime runs: Lambda
   * long-polls each, idle or not (the cost bench charges them)
   */
  eventSources: StackEventSource[];
  /**
   * The conductor state machine's LoggingConfiguration and TracingConfiguration, as
   * CreateStateMachine takes them (the destination: its log group's name in a local ARN)
   */
  stateMachine: {
    loggingConfiguration?: {
      level: "ALL" | "ERROR" | "FATAL" | "OFF";
      includeExecutionData: boolean;
      destinations?: { cloudWatchLogsLogGroup: { logGroupArn: string } }[];
    };
    tracingConfiguration?: { enabled: boolean };
  };
}

/** A mapping of the template; `function` undefined: not one of the stack's functions. */
export interface StackEventSource extends EventSourceMapping {
  function: FunctionComponent | undefined;
}

type Json = unknown;
interface CfnResource {
  Type: string;
  Properties?: Record<string, Json>;
}
interface Template {
  Resources: Record<string, CfnResource>;
}

interface Synthesized {
  template: Template;
  /** logical id → component, for roles, functions and the state machine */
  roles: Map<string, Component>;
  functions: Map<string, FunctionComponent>;
  tables: Map<string, TableSpec["id"]>;
  buildRequestsQueue: string;
  buildRequestsDlq: string;
  computeEventsDlq: string;
  stateMachine: string;
}

/**
 * The prefix the stack is synthesized with once per process; each runtime's own prefix replaces
 * it in the template (a synth costs about a second, and every runtime has a prefix of its own).
 */
const PREFIX_SENTINEL = "novalesslocalprefixsentinel-";
/** by environmentKey(): a process may start runtimes under different deployment options */
const synthesized = new Map<string, Promise<Synthesized>>();

/**
 * What the synth reads from the environment besides the sources: the deployment options
 * (NOVALESS_FLEET_SIZE… sizes the reserved concurrency). Part of the cache's key, or a runtime
 * started with another value would enforce a template sized for the first.
 */
function environmentKey(): string {
  return DEPLOYMENT_OPTIONS.map((o) => `${o.env}=${process.env[o.env] ?? ""}`).join("\n");
}

/** The stack as synthesized with `computeQueuePrefix`. */
async function synthesizeStack(computeQueuePrefix: string): Promise<Synthesized> {
  // a prefix the stack would refuse: synthesize with it, for the stack's own error
  if (!/^[A-Za-z0-9_-]{1,60}$/.test(computeQueuePrefix)) return synthesizeOnce(computeQueuePrefix);
  const key = environmentKey();
  if (!synthesized.has(key)) synthesized.set(key, cachedSynth());
  const s = await synthesized.get(key)!;
  return {
    ...s,
    template: JSON.parse(
      JSON.stringify(s.template).replaceAll(PREFIX_SENTINEL, computeQueuePrefix),
    ) as Template,
  };
}

/**
 * What the stack is made of: every source file it can import (infra/, lib/, this file), cdk.json,
 * the locked package versions and the deployment options in the environment. Equal hashes, equal
 * templates.
 */
function sourcesHash(): string {
  const root = fileURLToPath(new URL("../../", import.meta.url));
  const hash = createHash("sha256");
  const files = ["infra", "lib"].flatMap((dir) =>
    readdirSync(join(root, dir), { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".ts"))
      .map((f) => join(dir, f)),
  );
  for (const f of [...files.sort(), "cdk.json", "package-lock.json", "local/iam/stack-policies.ts"])
    hash
      .update(f)
      .update("\0")
      .update(readFileSync(join(root, f)))
      .update("\0");
  return hash.update(environmentKey()).digest("hex").slice(0, 32);
}

interface CachedSynth extends Omit<Synthesized, "roles" | "functions" | "tables"> {
  roles: [string, Component][];
  functions: [string, FunctionComponent][];
  tables: [string, TableSpec["id"]][];
}

/**
 * The sentinel synth, from node_modules/.cache when the sources are unchanged: every test file
 * starts runtimes in a fresh process, and loading aws-cdk-lib and synthesizing cost each about
 * 1.5 s of CPU. Any change to a source the stack imports changes the hash, and so the file.
 */
async function cachedSynth(): Promise<Synthesized> {
  const dir = fileURLToPath(new URL("../../node_modules/.cache/novaless/", import.meta.url));
  const file = join(dir, `stack-${sourcesHash()}.json`);
  try {
    const c = JSON.parse(readFileSync(file, "utf8")) as CachedSynth;
    return { ...c, roles: new Map(c.roles), functions: new Map(c.functions), tables: new Map(c.tables) };
  } catch {
    // not cached yet (or unreadable): synthesize and keep it
  }
  const s = await synthesizeOnce(PREFIX_SENTINEL);
  const c: CachedSynth = { ...s, roles: [...s.roles], functions: [...s.functions], tables: [...s.tables] };
  try {
    mkdirSync(dir, { recursive: true });
    // several processes may write it at once: each writes its own file, and the rename is atomic
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(c));
    renameSync(tmp, file);
  } catch {
    // a read-only tree: synthesize every time
  }
  return s;
}

async function synthesizeOnce(computeQueuePrefix: string): Promise<Synthesized> {
  // loaded only when synthesizing: aws-cdk-lib alone takes a second to import
  const [{ Annotations, App }, { NovalessStack }] = await Promise.all([
    import("aws-cdk-lib"),
    import("../../infra/stacks/novaless-stack.js"),
  ]);
  const cdkJson = JSON.parse(readFileSync(new URL("../../cdk.json", import.meta.url), "utf8")) as {
    context: Record<string, unknown>;
  };
  // The template is validated where it is deployed (`cdk synth`, test/infra); here the
  // validator's WebAssembly engine would cost each runtime's start seconds of CPU.
  const app = new App({
    context: { ...cdkJson.context, "aws:cdk:bundling-stacks": [] },
    builtinCloudFormationValidation: false,
  });
  const stack = new NovalessStack(app, "NovalessStack", { computeQueuePrefix });
  // The local runtime has its own tokens; the deploy-time warning about them is noise here.
  Annotations.of(stack.apiFunction).acknowledgeWarning("novaless:apiAuthTokens");
  const id = (c: { node: { defaultChild?: unknown } }) => logicalId(stack, c);
  const fns: Record<FunctionComponent, NovalessStack["apiFunction"]> = {
    api: stack.apiFunction,
    "build-intake": stack.buildIntakeFunction,
    scheduler: stack.schedulerFunction,
    conductor: stack.conductorFunction,
    "build-watchdog": stack.buildWatchdogFunction,
    "compute-events": stack.computeEventsFunction,
  };
  const roles = new Map<string, Component>();
  const functions = new Map<string, FunctionComponent>();
  for (const [c, fn] of Object.entries(fns) as [FunctionComponent, NovalessStack["apiFunction"]][]) {
    functions.set(id(fn), c);
    if (fn.role) roles.set(id(fn.role as unknown as { node: { defaultChild?: unknown } }), c);
  }
  roles.set(id(stack.conductor.role as unknown as { node: { defaultChild?: unknown } }), "state-machine");
  roles.set(id(stack.computeHostRole), "compute-host");
  const result: Synthesized = {
    template: app.synth().getStackByName(stack.stackName).template as Template,
    roles,
    functions,
    tables: new Map(Object.entries(stack.tables).map(([t, table]) => [id(table), t as TableSpec["id"]])),
    buildRequestsQueue: id(stack.buildRequestsQueue),
    buildRequestsDlq: id(stack.buildRequestsDlq),
    computeEventsDlq: id(stack.computeEventsDlq),
    stateMachine: id(stack.conductor),
  };
  return result;
}

function logicalId(stack: Stack, construct: { node: { defaultChild?: unknown } }): string {
  const child = (construct.node.defaultChild ?? construct) as CfnElement;
  return stack.getLogicalId(child);
}

/** The stack's policies, resolved against the local resources. */
export async function stackPolicies(local: LocalResources): Promise<StackPolicies> {
  const s = await synthesizeStack(local.computeQueuePrefix);
  const resolve = resolver(s, local);
  const identity = Object.fromEntries(COMPONENTS.map((c) => [c, [] as Statement[]])) as Record<
    Component,
    Statement[]
  >;
  const resource: Statement[] = [];
  const timeouts = {} as Record<FunctionComponent, number>;
  const reservedConcurrency: StackPolicies["reservedConcurrency"] = {};
  const eventSources: StackPolicies["eventSources"] = [];
  const stateMachine: StackPolicies["stateMachine"] = {};
  // Customer managed policies by logical id: a role names them in ManagedPolicyArns.
  const managed = new Map<string, Statement[]>();
  for (const [logical, r] of Object.entries(s.template.Resources))
    if (r.Type === "AWS::IAM::ManagedPolicy")
      managed.set(logical, statementsOf(resolve(r.Properties?.PolicyDocument)));
  for (const [logical, r] of Object.entries(s.template.Resources)) {
    const p = r.Properties ?? {};
    if (r.Type === "AWS::IAM::Policy") {
      const statements = statementsOf(resolve(p.PolicyDocument));
      for (const role of (p.Roles ?? []) as { Ref: string }[]) {
        const c = s.roles.get(role.Ref);
        if (c) identity[c].push(...statements);
      }
    } else if (r.Type === "AWS::IAM::Role") {
      const c = s.roles.get(logical);
      for (const inline of (p.Policies ?? []) as { PolicyDocument: Json }[])
        if (c) identity[c].push(...statementsOf(resolve(inline.PolicyDocument)));
      for (const arn of (p.ManagedPolicyArns ?? []) as { Ref?: string }[])
        if (c && arn.Ref) identity[c].push(...(managed.get(arn.Ref) ?? []));
    } else if (r.Type === "AWS::IAM::ManagedPolicy") {
      // attached to the roles it names, as AWS applies it
      const statements = statementsOf(resolve(p.PolicyDocument));
      for (const role of (p.Roles ?? []) as { Ref: string }[]) {
        const c = s.roles.get(role.Ref);
        if (c) identity[c].push(...statements);
      }
    } else if (r.Type === "AWS::SQS::QueuePolicy") {
      resource.push(...statementsOf(resolve(p.PolicyDocument)));
    } else if (r.Type === "AWS::Lambda::Function") {
      const c = s.functions.get(logical);
      if (c) timeouts[c] = Number(p.Timeout ?? 3);
      if (c && p.ReservedConcurrentExecutions !== undefined)
        reservedConcurrency[c] = Number(p.ReservedConcurrentExecutions);
    } else if (r.Type === "AWS::StepFunctions::StateMachine") {
      const logging = p.LoggingConfiguration as
        | {
            Level?: string;
            IncludeExecutionData?: boolean;
            Destinations?: { CloudWatchLogsLogGroup?: { LogGroupArn?: { "Fn::GetAtt"?: string[] } } }[];
          }
        | undefined;
      if (logging) {
        const groupId = logging.Destinations?.[0]?.CloudWatchLogsLogGroup?.LogGroupArn?.["Fn::GetAtt"]?.[0];
        const groupName = groupId
          ? String(s.template.Resources[groupId]?.Properties?.LogGroupName ?? groupId)
          : undefined;
        stateMachine.loggingConfiguration = {
          level: (logging.Level ?? "OFF") as "ALL" | "ERROR" | "FATAL" | "OFF",
          includeExecutionData: logging.IncludeExecutionData === true,
          ...(groupName
            ? {
                destinations: [
                  {
                    cloudWatchLogsLogGroup: {
                      logGroupArn: `arn:${PARTITION}:logs:${REGION}:${ACCOUNT}:log-group:${groupName}:*`,
                    },
                  },
                ],
              }
            : {}),
        };
      }
      const tracing = p.TracingConfiguration as { Enabled?: boolean } | undefined;
      if (tracing) stateMachine.tracingConfiguration = { enabled: tracing.Enabled === true };
    } else if (r.Type === "AWS::Lambda::EventSourceMapping") {
      const name = p.FunctionName as { Ref?: string } | string | undefined;
      const c = s.functions.get(typeof name === "object" ? (name.Ref ?? "") : "");
      const scaling = p.ScalingConfig as { MaximumConcurrency?: number } | undefined;
      eventSources.push({
        function: c,
        functionName: c ? `novaless-${c}` : JSON.stringify(name),
        queueArn: String(resolve(p.EventSourceArn)),
        ...(p.BatchSize !== undefined ? { batchSize: Number(p.BatchSize) } : {}),
        ...(p.MaximumBatchingWindowInSeconds !== undefined
          ? { maximumBatchingWindowSeconds: Number(p.MaximumBatchingWindowInSeconds) }
          : {}),
        ...(p.FunctionResponseTypes !== undefined
          ? { functionResponseTypes: (p.FunctionResponseTypes as Json[]).map(String) }
          : {}),
        ...(scaling?.MaximumConcurrency !== undefined
          ? { maximumConcurrency: Number(scaling.MaximumConcurrency) }
          : {}),
        ...(p.Enabled !== undefined ? { enabled: p.Enabled !== false && p.Enabled !== "false" } : {}),
      });
    }
  }
  return { identity, resource, timeouts, reservedConcurrency, eventSources, stateMachine };
}

function statementsOf(document: Json): Statement[] {
  const raw = (document as { Statement?: Json }).Statement;
  return ([raw].flat().filter(Boolean) as Record<string, Json>[]).map(normalize);
}

const list = (v: Json): string[] | undefined => (v === undefined ? undefined : [v].flat().map(String));

function normalize(s: Record<string, Json>): Statement {
  const condition = s.Condition as Record<string, Record<string, Json>> | undefined;
  return {
    ...(s.Sid ? { Sid: String(s.Sid) } : {}),
    Effect: s.Effect === "Deny" ? "Deny" : "Allow",
    ...(s.Action !== undefined ? { Action: list(s.Action) } : {}),
    ...(s.NotAction !== undefined ? { NotAction: list(s.NotAction) } : {}),
    ...(s.Resource !== undefined ? { Resource: list(s.Resource) } : {}),
    ...(s.NotResource !== undefined ? { NotResource: list(s.NotResource) } : {}),
    ...(s.Principal !== undefined ? { Principal: s.Principal as Statement["Principal"] } : {}),
    ...(condition
      ? {
          Condition: Object.fromEntries(
            Object.entries(condition).map(([op, keys]) => [
              op,
              Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, list(v) ?? []])),
            ]),
          ),
        }
      : {}),
  };
}

/** Resolves CloudFormation intrinsics against the local resources. */
function resolver(s: Synthesized, local: LocalResources): (v: Json) => Json {
  const queueUrl = (name: string) => `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${name}`;
  const sqsArn = (name: string) => `arn:${PARTITION}:sqs:${REGION}:${ACCOUNT}:${name}`;
  // logical id → Ref value and attributes
  const known = new Map<string, { ref: string; attrs: Record<string, string> }>();
  for (const [logical, t] of s.tables) {
    const name = local.tables[t];
    const arn = `arn:${PARTITION}:dynamodb:${REGION}:${ACCOUNT}:table/${name}`;
    known.set(logical, { ref: name, attrs: { Arn: arn, StreamArn: `${arn}/stream/*` } });
  }
  for (const [logical, name] of [
    [s.buildRequestsQueue, local.buildRequestsQueue],
    [s.buildRequestsDlq, local.buildRequestsDlq],
    [s.computeEventsDlq, local.computeEventsDlq],
  ] as const) {
    known.set(logical, {
      ref: queueUrl(name),
      attrs: { Arn: sqsArn(name), QueueName: name, QueueUrl: queueUrl(name) },
    });
  }
  for (const [logical, c] of s.functions) {
    const arn = local.functionArns[c];
    known.set(logical, { ref: arn.split(":").pop()!, attrs: { Arn: arn } });
  }
  for (const [logical, c] of s.roles) {
    const arn = roleArnOf(c);
    known.set(logical, { ref: arn.split("/").pop()!, attrs: { Arn: arn } });
  }
  // the stack's one bucket, the images bucket (S3 ARNs name no region or account)
  const bucket = local.imagesBucket ?? String(option("imagesBucket").default);
  for (const [logical, r] of Object.entries(s.template.Resources))
    if (r.Type === "AWS::S3::Bucket")
      known.set(logical, { ref: bucket, attrs: { Arn: `arn:${PARTITION}:s3:::${bucket}` } });
  known.set(s.stateMachine, {
    ref: local.stateMachineArn,
    attrs: { Arn: local.stateMachineArn, Name: local.stateMachineArn.split(":").pop()! },
  });
  const pseudo: Record<string, string> = {
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::Partition": PARTITION,
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackName": "NovalessStack",
  };
  // A resource with no local counterpart (a secret, a log group…) resolves to a name no local
  // call uses, so its statements stay in the set without granting anything here.
  const ref = (name: string): string => pseudo[name] ?? known.get(name)?.ref ?? `novaless-not-local-${name}`;
  const getAtt = (logical: string, attr: string): string =>
    known.get(logical)?.attrs[attr] ?? `arn:${PARTITION}:not-local:${REGION}:${ACCOUNT}:${logical}/${attr}`;
  const resolve = (v: Json): Json => {
    if (Array.isArray(v)) return v.map(resolve);
    if (v === null || typeof v !== "object") return v;
    const o = v as Record<string, Json>;
    const keys = Object.keys(o);
    if (keys.length === 1) {
      const [k] = keys as [string];
      const arg = o[k];
      switch (k) {
        case "Ref":
          return ref(String(arg));
        case "Fn::GetAtt": {
          const [logical, attr] = Array.isArray(arg) ? arg.map(String) : String(arg).split(".");
          return getAtt(logical!, attr!);
        }
        case "Fn::Join": {
          const [sep, parts] = arg as [string, Json[]];
          return (resolve(parts) as Json[]).map(String).join(sep);
        }
        case "Fn::Sub": {
          const [text, vars] = Array.isArray(arg)
            ? (arg as [string, Record<string, Json>])
            : [String(arg), {}];
          const values = resolve(vars) as Record<string, Json>;
          return text.replace(/\$\{([^}!][^}]*)\}/g, (_, name: string) => {
            if (name in values) return String(values[name]);
            if (name.includes(".") && !name.startsWith("AWS::")) {
              const [logical, attr] = name.split(".") as [string, string];
              return getAtt(logical, attr);
            }
            return ref(name);
          });
        }
        case "Fn::Select": {
          const [index, items] = arg as [Json, Json];
          return (resolve(items) as Json[])[Number(resolve(index))];
        }
        case "Fn::Split": {
          const [sep, text] = arg as [string, Json];
          return String(resolve(text)).split(sep);
        }
      }
    }
    return Object.fromEntries(keys.map((k) => [k, resolve(o[k])]));
  };
  return resolve;
}
