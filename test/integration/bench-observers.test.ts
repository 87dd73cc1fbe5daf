// The counting hooks the cost benchmark reads: every invocation of a local Lambda function (with
// its memory, its event and whether it failed) and every settled Step Functions execution (with the states
// it entered, a Map's iterations included).
import { CreateStateMachineCommand, SFNClient, StartSyncExecutionCommand } from "@aws-sdk/client-sfn";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type InvocationRecord, localFunction, observeInvocations } from "../../local/lambda.js";
import {
  type ExecutionRecordSummary,
  observeExecutions,
  type SfnServer,
  startSfnServer,
} from "../../local/sfn-server.js";

describe("local Lambda invocation observer", () => {
  it("reports each invocation once, failed ones too, and stops when asked", async () => {
    const seen: InvocationRecord[] = [];
    const stop = observeInvocations((r) => seen.push(r));
    const fn = localFunction({
      name: "novaless-probe",
      arn: "arn:aws:lambda:us-east-1:000000000000:function:novaless-probe",
      timeoutSeconds: 3,
      memory: 256,
      handler: async (event: { fail?: boolean }) => {
        if (event.fail) throw new Error("probe failed");
        return "ok";
      },
    });
    await fn.invoke({});
    await expect(fn.invoke({ fail: true })).rejects.toThrow("probe failed");
    stop();
    await fn.invoke({});
    expect(seen.map((r) => [r.name, r.memory, r.ok])).toEqual([
      ["novaless-probe", 256, true],
      ["novaless-probe", 256, false],
    ]);
    expect(seen.every((r) => r.durationMs >= 0)).toBe(true);
    // each with the event its handler saw (the cost bench tells a batch's messages apart by it)
    expect(seen.map((r) => r.event)).toEqual([{}, { fail: true }]);
  });
});

describe("local Step Functions execution observer", () => {
  let server: SfnServer;
  let client: SFNClient;

  beforeAll(async () => {
    server = await startSfnServer({
      taskHandlers: { probe: { Work: async (input: number) => input * 2 } },
    });
    client = new SFNClient({
      // StartSyncExecution's endpoint has a "sync-" host prefix on AWS; the local server has one host.
      disableHostPrefix: true,
      endpoint: server.endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "probe", secretAccessKey: "probe" },
    });
  });

  afterAll(async () => {
    client.destroy();
    await server.stop();
  });

  it("counts the states an execution entered, Map iterations included", async () => {
    const seen: ExecutionRecordSummary[] = [];
    const stop = observeExecutions((e) => seen.push(e));
    const sm = await client.send(
      new CreateStateMachineCommand({
        name: "probe",
        type: "EXPRESS",
        roleArn: "arn:aws:iam::000000000000:role/probe",
        definition: JSON.stringify({
          StartAt: "Start",
          States: {
            Start: { Type: "Pass", Next: "Each" },
            Each: {
              Type: "Map",
              ItemProcessor: {
                ProcessorConfig: { Mode: "INLINE" },
                StartAt: "Work",
                States: {
                  Work: {
                    Type: "Task",
                    Resource: "arn:aws:lambda:us-east-1:000000000000:function:work",
                    End: true,
                  },
                },
              },
              End: true,
            },
          },
        }),
      }),
    );
    const out = await client.send(
      new StartSyncExecutionCommand({
        stateMachineArn: sm.stateMachineArn,
        input: JSON.stringify([1, 2, 3]),
      }),
    );
    expect(out.output).toBe("[2,4,6]");
    await server.waitForIdle();
    stop();
    expect(seen).toHaveLength(1);
    // Start, Each, and Work three times.
    expect(seen[0]).toMatchObject({
      stateMachineName: "probe",
      type: "EXPRESS",
      status: "SUCCEEDED",
      transitions: 5,
    });
  });
});
