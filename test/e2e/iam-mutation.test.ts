// IAM enforcement bites: with one statement taken out of the stack's policy set (here, not in the
// stack), a create fails, and the failure says which component, action and resource; with the
// stack's policies as they are, the same create goes ACTIVE.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Statement } from "../../local/iam/evaluate.js";
import type { Component } from "../../local/iam/identities.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, startTestRuntime } from "./harness.js";

type Removal = (component: Component, statement: Statement) => boolean;

function withRuntime(removeStatement?: Removal) {
  const ctx = {} as { runtime: Runtime; client: Client };
  beforeAll(async () => {
    Object.assign(
      ctx,
      await startTestRuntime({
        hosts: 2,
        retryIntervalMs: 10,
        ...(removeStatement ? { iam: { removeStatement } } : {}),
      }),
    );
  });
  afterAll(async () => {
    await ctx.runtime?.stop();
  });
  return ctx;
}

/** The admin's view of the server's fault, once the build left BUILD. */
async function faultOf(client: Client, id: string): Promise<string> {
  const server = await client.waitForStatus(id, ["ACTIVE", "ERROR"]);
  expect(server.status).toBe("ERROR");
  const admin = await client.as(ADMIN).get(`/v2.1/servers/${id}`);
  return JSON.stringify(admin.body.server.fault);
}

/** The Catalog table's ARN in this runtime (its name may carry a run suffix). */
const catalogArn = () =>
  `arn:aws:dynamodb:us-east-1:000000000000:table/${process.env.NOVALESS_CATALOG_TABLE}`;

describe("the stack's policies as they are", () => {
  const ctx = withRuntime();
  it("a create goes ACTIVE", async () => {
    const id = await ctx.client.createServer({ name: "allowed" });
    const server = await ctx.client.waitForStatus(id, ["ACTIVE", "ERROR"]);
    expect(server.status).toBe("ACTIVE");
  });
});

describe("without the scheduler's read of the Catalog", () => {
  const ctx = withRuntime(
    (c, s) => c === "scheduler" && (s.Resource ?? []).some((r) => r.includes(":table/novaless-catalog")),
  );
  it("the build fails with AccessDenied naming the scheduler, the read and the Catalog table", async () => {
    const id = await ctx.client.createServer({ name: "no-catalog" });
    const fault = await faultOf(ctx.client, id);
    expect(fault).toContain("AccessDeniedException");
    expect(fault).toContain("assumed-role/novaless-scheduler/novaless-scheduler");
    expect(fault).toMatch(
      /is not authorized to perform: dynamodb:(GetItem|BatchGetItem|Query|Scan) on resource:/,
    );
    expect(fault).toContain(catalogArn());
  });
});

describe("without the state machine's sqs:SendMessage to compute queues", () => {
  const ctx = withRuntime((c, s) => c === "state-machine" && (s.Action ?? []).includes("sqs:SendMessage"));
  it("the cast fails as Step Functions reports it, naming the role, the action and the host's queue", async () => {
    const id = await ctx.client.createServer({ name: "no-cast" });
    const fault = await faultOf(ctx.client, id);
    expect(fault).toContain("SQS.AmazonSQSException");
    expect(fault).toContain("assumed-role/novaless-state-machine/");
    expect(fault).toContain(
      `is not authorized to perform: sqs:SendMessage on resource: arn:aws:sqs:us-east-1:000000000000:${process.env.NOVALESS_COMPUTE_QUEUE_PREFIX}host-`,
    );
  });
});

describe("without the state machine's lambda:InvokeFunction", () => {
  const ctx = withRuntime(
    (c, s) => c === "state-machine" && (s.Action ?? []).includes("lambda:InvokeFunction"),
  );
  it("no Task runs: the execution fails with Lambda.AWSLambdaException and the build never leaves BUILD", async () => {
    const id = await ctx.client.createServer({ name: "no-invoke" });
    const sfn = ctx.runtime.emulators.sfn!;
    const failed = await new Promise<ReturnType<typeof sfn.getExecution>>((resolve) => {
      const poll = setInterval(async () => {
        const { ListExecutionsCommand } = await import("@aws-sdk/client-sfn");
        const { sfnClient } = await import("../../lib/aws/clients.js");
        const list = await sfnClient().send(
          new ListExecutionsCommand({
            stateMachineArn: process.env.NOVALESS_CONDUCTOR_ARN!,
            statusFilter: "FAILED",
          }),
        );
        const arn = list.executions?.[0]?.executionArn;
        if (arn) {
          clearInterval(poll);
          resolve(sfn.getExecution(arn));
        }
      }, 200);
    });
    expect(failed?.error).toBe("Lambda.AWSLambdaException");
    expect(failed?.cause).toMatch(
      /assumed-role\/novaless-state-machine\/.* is not authorized to perform: lambda:InvokeFunction on resource: arn:aws:lambda:us-east-1:000000000000:function:novaless-(scheduler|conductor)/,
    );
    const server = await ctx.client.as(ADMIN).get(`/v2.1/servers/${id}`);
    expect(server.body.server.status).toBe("BUILD");
  });
});
