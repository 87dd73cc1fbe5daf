// The policy set the local runtime enforces comes from the synthesized stack, resolved against the
// local resource names: check that resolution and the grants each component's code needs.
import { beforeAll, describe, expect, it } from "vitest";
import { CONDUCTOR_FUNCTION_TIMEOUT_SECONDS } from "../../../infra/conductor/definition.js";
import { evaluate } from "../../../local/iam/evaluate.js";
import { functionArnOf } from "../../../local/iam/identities.js";
import { type StackPolicies, stackPolicies } from "../../../local/iam/stack-policies.js";

const ARN = "arn:aws:dynamodb:us-east-1:000000000000:table/";
const SQS = "arn:aws:sqs:us-east-1:000000000000:";
const SM = "arn:aws:states:us-east-1:000000000000:stateMachine:novaless-conductor";

let policies: StackPolicies;
let local: Parameters<typeof stackPolicies>[0];
beforeAll(async () => {
  local = {
    tables: {
      Hosts: "hosts-x",
      HostChanges: "host-changes-x",
      Allocations: "allocations-x",
      Instances: "instances-x",
      Catalog: "catalog-x",
      Services: "services-x",
      Scheduling: "scheduling-x",
      Identity: "identity-x",
      Migrations: "migrations-x",
      Networking: "networking-x",
    },
    buildRequestsQueue: "build-x",
    buildRequestsDlq: "build-x-dlq",
    computeEventsDlq: "events-x-dlq",
    computeQueuePrefix: "novaless-x-compute-",
    functionArns: {
      api: functionArnOf("api"),
      "build-intake": functionArnOf("build-intake"),
      scheduler: functionArnOf("scheduler"),
      conductor: functionArnOf("conductor"),
      "build-watchdog": functionArnOf("build-watchdog"),
      "compute-events": functionArnOf("compute-events"),
    },
    stateMachineArn: SM,
  };
  policies = await stackPolicies(local);
}, 120_000);

const can = (c: keyof StackPolicies["identity"], action: string, resource: string) =>
  evaluate(policies.identity[c], policies.resource, {
    action,
    resource,
    principalArn: "arn:aws:iam::000000000000:role/x",
    context: { "aws:SecureTransport": "true" },
  }).allowed;

describe("the stack's policies, resolved to the local resources", () => {
  it("resolves every ARN: no intrinsic is left in any statement", () => {
    const text = JSON.stringify(policies);
    expect(text).not.toMatch(/Fn::|"Ref"|AWS::/);
    expect(text).toContain(`${ARN}catalog-x`);
    expect(text).toContain(`${SQS}novaless-x-compute-*`);
  });

  it("the scheduler reads the Catalog (flavors, images, aggregates, server groups) and only updates it (group ledgers)", () => {
    expect(can("scheduler", "dynamodb:GetItem", `${ARN}catalog-x`)).toBe(true);
    expect(can("scheduler", "dynamodb:Scan", `${ARN}catalog-x`)).toBe(true);
    expect(can("scheduler", "dynamodb:PutItem", `${ARN}catalog-x`)).toBe(false);
    expect(can("scheduler", "dynamodb:DeleteItem", `${ARN}catalog-x`)).toBe(false);
    // a claim of a server group's member writes the group's ledger in its transaction
    expect(can("scheduler", "dynamodb:UpdateItem", `${ARN}catalog-x`)).toBe(true);
    for (const c of ["api", "conductor", "build-watchdog", "compute-events"] as const)
      expect(can(c, "dynamodb:UpdateItem", `${ARN}catalog-x`)).toBe(true);
    expect(can("scheduler", "dynamodb:UpdateItem", `${ARN}hosts-x`)).toBe(true);
  });

  it("every writer of a host item appends to the change feed, and only the scheduler and the API read it", () => {
    for (const c of ["api", "scheduler", "conductor", "build-watchdog", "compute-events"] as const) {
      expect(can(c, "dynamodb:PutItem", `${ARN}host-changes-x`)).toBe(true);
      expect(can(c, "dynamodb:UpdateItem", `${ARN}host-changes-x`)).toBe(false);
      expect(can(c, "dynamodb:DeleteItem", `${ARN}host-changes-x`)).toBe(false);
    }
    for (const c of ["api", "scheduler"] as const)
      expect(can(c, "dynamodb:Query", `${ARN}host-changes-x`)).toBe(true);
    for (const c of ["conductor", "build-watchdog", "compute-events", "build-intake"] as const)
      expect(can(c, "dynamodb:Query", `${ARN}host-changes-x`)).toBe(false);
    expect(can("build-intake", "dynamodb:PutItem", `${ARN}host-changes-x`)).toBe(false);
  });

  it("every sender of a build request sends it to build-requests; only build-intake starts the conductor", () => {
    // (the conductor's: a build's ports joining their groups send the window's member sync)
    for (const c of ["api", "build-watchdog", "compute-events", "conductor"] as const) {
      expect(can(c, "states:StartExecution", SM), c).toBe(false);
      expect(can(c, "sqs:SendMessage", `${SQS}build-x`), c).toBe(true);
      // the API's os-dead-letters reads the DLQ; none of them reads the queue itself
      expect(can(c, "sqs:ReceiveMessage", `${SQS}build-x`), c).toBe(false);
    }
    for (const c of ["scheduler", "conductor", "state-machine", "compute-host"] as const)
      expect(can(c, "states:StartExecution", SM), c).toBe(false);
    expect(can("build-intake", "states:StartExecution", `${SM}-other`)).toBe(false);
  });

  it("build-intake consumes build-requests through its event source and nothing reads what it must not", () => {
    expect(can("build-intake", "states:StartExecution", SM)).toBe(true);
    // what the event source's pollers do with the function's role, and intake's retry delay
    for (const action of [
      "sqs:ReceiveMessage",
      "sqs:DeleteMessage",
      "sqs:ChangeMessageVisibility",
      "sqs:GetQueueAttributes",
    ])
      expect(can("build-intake", action, `${SQS}build-x`), action).toBe(true);
    expect(can("build-intake", "sqs:SendMessage", `${SQS}build-x-dlq`)).toBe(true);
    expect(can("build-intake", "sqs:SendMessage", `${SQS}build-x`)).toBe(false);
    expect(can("build-intake", "sqs:ReceiveMessage", `${SQS}events-x`)).toBe(false);
    expect(can("build-intake", "sqs:PurgeQueue", `${SQS}build-x`)).toBe(false);
    // a member sync: a moving server's record read, never written; the group's mark deleted; one
    // cast per host (lib/instances/security-group-refresh.ts)
    expect(can("build-intake", "dynamodb:GetItem", `${ARN}instances-x`)).toBe(true);
    expect(can("build-intake", "dynamodb:Query", `${ARN}instances-x`)).toBe(false);
    expect(can("build-intake", "dynamodb:UpdateItem", `${ARN}instances-x`)).toBe(false);
    expect(can("build-intake", "dynamodb:Query", `${ARN}networking-x/index/by-kind`)).toBe(true);
    expect(can("build-intake", "dynamodb:BatchGetItem", `${ARN}networking-x`)).toBe(true);
    expect(can("build-intake", "dynamodb:DeleteItem", `${ARN}networking-x`)).toBe(true);
    expect(can("build-intake", "dynamodb:UpdateItem", `${ARN}networking-x`)).toBe(false);
    expect(can("build-intake", "dynamodb:PutItem", `${ARN}networking-x`)).toBe(false);
    expect(can("build-intake", "dynamodb:Query", `${ARN}migrations-x/index/open`)).toBe(true);
    expect(can("build-intake", "dynamodb:UpdateItem", `${ARN}migrations-x`)).toBe(false);
    expect(can("build-intake", "dynamodb:GetItem", `${ARN}hosts-x`)).toBe(true);
    expect(can("build-intake", "dynamodb:UpdateItem", `${ARN}hosts-x`)).toBe(false);
    expect(can("build-intake", "sqs:SendMessage", `${SQS}novaless-x-compute-host-1`)).toBe(true);
    expect(can("build-intake", "sqs:ReceiveMessage", `${SQS}novaless-x-compute-host-1`)).toBe(false);
    // the one mapping: build-requests to build-intake, batches with partial failures, bounded
    expect(policies.eventSources).toEqual([
      {
        function: "build-intake",
        functionName: "novaless-build-intake",
        queueArn: `${SQS}build-x`,
        batchSize: 10,
        functionResponseTypes: ["ReportBatchItemFailures"],
        maximumConcurrency: expect.any(Number),
      },
    ]);
    expect(policies.eventSources[0]!.maximumConcurrency).toBeGreaterThanOrEqual(2);
  });

  it("the state machine invokes its two functions and casts to compute queues only", () => {
    expect(can("state-machine", "lambda:InvokeFunction", functionArnOf("scheduler"))).toBe(true);
    expect(can("state-machine", "lambda:InvokeFunction", functionArnOf("conductor"))).toBe(true);
    expect(can("state-machine", "lambda:InvokeFunction", functionArnOf("api"))).toBe(false);
    expect(can("state-machine", "sqs:SendMessage", `${SQS}novaless-x-compute-host-1`)).toBe(true);
    expect(can("state-machine", "sqs:SendMessage", `${SQS}build-x`)).toBe(false);
  });

  it("a compute host: its own tagged queue and compute-events, no table at all", () => {
    const host = (h: string, queueTag?: string): Record<string, string> => ({
      "aws:SecureTransport": "true",
      "aws:userid": `AROAEXAMPLE:${h}`,
      "aws:PrincipalTag/novaless-host": h,
      ...(queueTag ? { "aws:ResourceTag/novaless-host": queueTag } : {}),
    });
    const as = (ctx: Record<string, string>, action: string, resource: string) =>
      evaluate(policies.identity["compute-host"], policies.resource, {
        action,
        resource,
        principalArn: "arn:aws:iam::000000000000:role/x",
        context: ctx,
      }).allowed;
    const q1 = `${SQS}novaless-x-compute-host-1-abc`;
    expect(as(host("host-1", "host-1"), "sqs:ReceiveMessage", q1)).toBe(true);
    expect(as(host("host-1", "host-1"), "sqs:DeleteMessage", q1)).toBe(true);
    expect(as(host("host-2", "host-1"), "sqs:ReceiveMessage", q1)).toBe(false);
    expect(as(host("host-1"), "sqs:ReceiveMessage", q1)).toBe(false);
    expect(as(host("host-1", "host-1"), "sqs:CreateQueue", q1)).toBe(false);
    // reports: compute-events' function URL (AWS_IAM), and InvokeFunction only through it
    const events = functionArnOf("compute-events");
    const url = { "lambda:FunctionUrlAuthType": "AWS_IAM" };
    const viaUrl = { "lambda:InvokedViaFunctionUrl": "true" };
    expect(as({ ...host("host-1"), ...url }, "lambda:InvokeFunctionUrl", events)).toBe(true);
    expect(as({ ...host("host-1"), ...viaUrl }, "lambda:InvokeFunction", events)).toBe(true);
    expect(as(host("host-1"), "lambda:InvokeFunction", events)).toBe(false);
    expect(as({ ...host("host-1"), ...url }, "lambda:InvokeFunctionUrl", functionArnOf("api"))).toBe(false);
    // a session not named after its tag cannot report
    expect(
      as(
        { ...host("host-1"), ...url, "aws:userid": "AROAEXAMPLE:host-2" },
        "lambda:InvokeFunctionUrl",
        events,
      ),
    ).toBe(false);
    expect(as(host("host-1"), "sqs:SendMessage", `${SQS}build-x`)).toBe(false);
    expect(as(host("host-1"), "sqs:SendMessage", `${SQS}events-x-dlq`)).toBe(false);
    for (const t of ["hosts-x", "instances-x", "allocations-x", "services-x", "catalog-x", "scheduling-x"])
      for (const a of ["dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:PutItem", "dynamodb:Query"])
        expect(as(host("host-1"), a, `${ARN}${t}`), `${a} ${t}`).toBe(false);
  });

  it("compute-events applies reports: hosts, instances, claims released, queues created", () => {
    expect(can("compute-events", "dynamodb:UpdateItem", `${ARN}hosts-x`)).toBe(true);
    expect(can("compute-events", "dynamodb:UpdateItem", `${ARN}instances-x`)).toBe(true);
    expect(can("compute-events", "dynamodb:Query", `${ARN}instances-x/index/by-host`)).toBe(true);
    expect(can("compute-events", "dynamodb:DeleteItem", `${ARN}allocations-x`)).toBe(true);
    // a revert hands the source's allocation back from the migration to the instance (a Put)
    expect(can("compute-events", "dynamodb:PutItem", `${ARN}allocations-x`)).toBe(true);
    expect(can("compute-events", "dynamodb:UpdateItem", `${ARN}migrations-x`)).toBe(true);
    expect(can("compute-events", "sqs:CreateQueue", `${SQS}novaless-x-compute-host-1-abc`)).toBe(true);
    expect(can("compute-events", "sqs:SendMessage", `${SQS}build-x`)).toBe(true);
    expect(can("compute-events", "sqs:ReceiveMessage", `${SQS}novaless-x-compute-host-1-abc`)).toBe(false);
  });

  it("Allocations: the claimers (and the revert or failure of a move: compute-events, the watchdog) put and delete, the releasers only delete, nobody updates", () => {
    const t = `${ARN}allocations-x`;
    for (const c of ["scheduler", "conductor", "compute-events", "build-watchdog"] as const) {
      expect(can(c, "dynamodb:PutItem", t), c).toBe(true);
      expect(can(c, "dynamodb:DeleteItem", t), c).toBe(true);
      expect(can(c, "dynamodb:Query", t), c).toBe(true);
    }
    for (const c of ["api"] as const) {
      expect(can(c, "dynamodb:PutItem", t), c).toBe(false);
      expect(can(c, "dynamodb:DeleteItem", t), c).toBe(true);
      expect(can(c, "dynamodb:GetItem", t), c).toBe(true);
    }
    for (const c of [
      "api",
      "scheduler",
      "conductor",
      "build-watchdog",
      "compute-events",
      "compute-host",
    ] as const)
      expect(can(c, "dynamodb:UpdateItem", t), c).toBe(false);
    expect(can("build-intake", "dynamodb:GetItem", t)).toBe(false);
  });

  it("heartbeats and explanations: each table only to whom reads or writes it", () => {
    // A host heartbeats (one UpdateItem); the watchdog sweeps; the API shows and mirrors forced_down.
    expect(can("compute-events", "dynamodb:UpdateItem", `${ARN}services-x`)).toBe(true);
    expect(can("compute-host", "dynamodb:UpdateItem", `${ARN}services-x`)).toBe(false);
    expect(can("build-watchdog", "dynamodb:Scan", `${ARN}services-x`)).toBe(true);
    expect(can("build-watchdog", "dynamodb:UpdateItem", `${ARN}services-x`)).toBe(true);
    expect(can("api", "dynamodb:Scan", `${ARN}services-x`)).toBe(true);
    expect(can("api", "dynamodb:UpdateItem", `${ARN}services-x`)).toBe(true);
    expect(can("scheduler", "dynamodb:GetItem", `${ARN}services-x`)).toBe(false);
    // The scheduler writes its explanations; the API reads them; nobody else touches them.
    expect(can("scheduler", "dynamodb:PutItem", `${ARN}scheduling-x`)).toBe(true);
    expect(can("api", "dynamodb:GetItem", `${ARN}scheduling-x`)).toBe(true);
    expect(can("api", "dynamodb:PutItem", `${ARN}scheduling-x`)).toBe(false);
    expect(can("compute-host", "dynamodb:GetItem", `${ARN}scheduling-x`)).toBe(false);
  });

  it("Networking: the API (the /networking front) and the conductor (a server's ports) write it; compute-events, the watchdog and build-intake read it", () => {
    for (const action of [
      "dynamodb:PutItem",
      "dynamodb:UpdateItem",
      "dynamodb:DeleteItem",
      "dynamodb:GetItem",
      "dynamodb:BatchGetItem",
    ])
      expect(can("api", action, `${ARN}networking-x`)).toBe(true);
    expect(can("api", "dynamodb:Query", `${ARN}networking-x/index/by-holder`)).toBe(true);
    expect(can("conductor", "dynamodb:PutItem", `${ARN}networking-x`)).toBe(true);
    expect(can("conductor", "dynamodb:Query", `${ARN}networking-x/index/by-holder`)).toBe(true);
    expect(can("compute-events", "dynamodb:GetItem", `${ARN}networking-x`)).toBe(true);
    expect(can("compute-events", "dynamodb:PutItem", `${ARN}networking-x`)).toBe(false);
    expect(can("scheduler", "dynamodb:GetItem", `${ARN}networking-x`)).toBe(false);
    // build-intake's member syncs read it and delete a group's mark, nothing else
    expect(can("build-intake", "dynamodb:GetItem", `${ARN}networking-x`)).toBe(true);
    expect(can("build-intake", "dynamodb:PutItem", `${ARN}networking-x`)).toBe(false);
  });

  it("the queues' enforceSSL policies are kept as resource policies", () => {
    expect(policies.resource.some((s) => s.Effect === "Deny" && s.Resource?.includes(`${SQS}build-x`))).toBe(
      true,
    );
  });

  it("a runtime started with another fleet_size enforces the template sized for it (not a cached one)", async () => {
    expect(policies.reservedConcurrency["compute-events"]).toBe(10);
    const saved = process.env.NOVALESS_FLEET_SIZE;
    process.env.NOVALESS_FLEET_SIZE = "5000";
    try {
      const larger = await stackPolicies(local);
      expect(larger.reservedConcurrency["compute-events"]).toBe(50);
      // build-intake's reservation and its event source's bound grow with the fleet too
      expect(larger.reservedConcurrency["build-intake"]).toBe(25);
      expect(larger.eventSources[0]?.maximumConcurrency).toBe(25);
    } finally {
      if (saved === undefined) delete process.env.NOVALESS_FLEET_SIZE;
      else process.env.NOVALESS_FLEET_SIZE = saved;
    }
    expect((await stackPolicies(local)).reservedConcurrency["compute-events"]).toBe(10);
  }, 60_000);

  it("each function's timeout comes from the template", () => {
    expect(policies.timeouts).toEqual({
      api: 29,
      "build-intake": 30,
      scheduler: CONDUCTOR_FUNCTION_TIMEOUT_SECONDS.scheduler,
      conductor: CONDUCTOR_FUNCTION_TIMEOUT_SECONDS.conductor,
      "build-watchdog": 55,
      "compute-events": 30,
    });
  });
});
