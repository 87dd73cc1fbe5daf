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

const probeDefinition = JSON.stringify({
  StartAt: "Start",
  States: {
    Start: { Type: "Pass", Next: "Each" },
    Each: {
      Type: "Map",
      MaxConcurrency: 1,
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
});

describe("local Step Functions execution observer", () => {
  let server: SfnServer;
  let client: SFNClient;
  const logged: { group: string; line: Record<string, unknown> }[] = [];
  const group = (name: string) =>
    `arn:aws:logs:us-east-1:000000000000:log-group:/aws/vendedlogs/states/${name}:*`;
  const withLogging = async (name: string, level: "ALL" | "ERROR", input: unknown) => {
    const sm = await client.send(
      new CreateStateMachineCommand({
        name,
        type: "EXPRESS",
        roleArn: "arn:aws:iam::000000000000:role/probe",
        definition: probeDefinition,
        loggingConfiguration: {
          level,
          includeExecutionData: false,
          destinations: [{ cloudWatchLogsLogGroup: { logGroupArn: group(name) } }],
        },
        tracingConfiguration: { enabled: level === "ALL" },
      }),
    );
    const seen: ExecutionRecordSummary[] = [];
    const stop = observeExecutions((e) => seen.push(e));
    logged.length = 0;
    const out = await client.send(
      new StartSyncExecutionCommand({ stateMachineArn: sm.stateMachineArn, input: JSON.stringify(input) }),
    );
    await server.waitForIdle();
    stop();
    return { out, summary: seen[0]!, lines: logged.map((l) => l.line), groups: logged.map((l) => l.group) };
  };

  beforeAll(async () => {
    server = await startSfnServer({
      taskHandlers: {
        probe: { Work: async (input: number) => input * 2 },
        "probe-all": { Work: async (input: number) => input * 2 },
        "probe-error": {
          Work: async (input: number) => {
            if (input === 2) throw Object.assign(new Error("no two"), { name: "Probe.Failed" });
            return input;
          },
        },
      },
      onLog: (group, line) => logged.push({ group, line: JSON.parse(line) }),
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
        definition: probeDefinition,
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

  it("logs an execution's history events at its level, in AWS's shape, and counts their bytes", async () => {
    const all = await withLogging("probe-all", "ALL", [1, 2]);
    expect(all.out.status).toBe("SUCCEEDED");
    expect(all.lines.map((l) => l.type)).toEqual([
      "ExecutionStarted",
      "PassStateEntered",
      "PassStateExited",
      "MapStateEntered",
      "MapStateStarted",
      ...["MapIterationStarted", "TaskStateEntered", "LambdaFunctionScheduled", "LambdaFunctionStarted"],
      ...["LambdaFunctionSucceeded", "TaskStateExited", "MapIterationSucceeded"],
      ...["MapIterationStarted", "TaskStateEntered", "LambdaFunctionScheduled", "LambdaFunctionStarted"],
      ...["LambdaFunctionSucceeded", "TaskStateExited", "MapIterationSucceeded"],
      "MapStateSucceeded",
      "MapStateExited",
      "ExecutionSucceeded",
    ]);
    // numbered in order, each after the one before; no execution data (includeExecutionData false)
    expect(all.lines.map((l) => [l.id, l.previous_event_id])).toEqual(
      all.lines.map((_, i) => [String(i + 1), String(i)]),
    );
    expect(all.lines[0]).toMatchObject({
      details: { roleArn: "arn:aws:iam::000000000000:role/probe" },
      execution_arn: expect.stringMatching(/^arn:aws:states:us-east-1:000000000000:express:probe-all:/),
      redrive_count: "0",
    });
    expect(JSON.stringify(all.lines)).not.toMatch(/"(input|output)"/);
    expect(new Set(all.groups)).toEqual(new Set([group("probe-all")]));
    expect(all.summary.logBytes).toBe(
      all.lines.reduce((n, l) => n + Buffer.byteLength(JSON.stringify(l)), 0),
    );
    expect(all.summary.traced).toBe(true);

    // ERROR: a successful execution logs nothing; a failed one its failures only
    const ok = await withLogging("probe-error", "ERROR", [1, 3]);
    expect(ok.out.status).toBe("SUCCEEDED");
    expect(ok.lines).toEqual([]);
    expect(ok.summary).toMatchObject({ logBytes: 0, traced: false });
    const failed = await withLogging("probe-error", "ERROR", [1, 2]);
    expect(failed.out.status).toBe("FAILED");
    expect(failed.lines.map((l) => l.type)).toEqual(
      expect.arrayContaining(["LambdaFunctionFailed", "ExecutionFailed"]),
    );
    expect(failed.lines.every((l) => /Failed$/.test(String(l.type)))).toBe(true);
    expect(failed.lines.find((l) => l.type === "ExecutionFailed")).toMatchObject({
      details: { error: "Probe.Failed" },
    });
  });

  it("refuses a logging configuration AWS refuses", async () => {
    const create = (loggingConfiguration: Record<string, unknown>) =>
      client.send(
        new CreateStateMachineCommand({
          name: "probe-refused",
          type: "EXPRESS",
          roleArn: "arn:aws:iam::000000000000:role/probe",
          definition: probeDefinition,
          // biome-ignore lint/suspicious/noExplicitAny: invalid on purpose
          loggingConfiguration: loggingConfiguration as any,
        }),
      );
    await expect(create({ level: "ALL" })).rejects.toMatchObject({ name: "InvalidLoggingConfiguration" });
    await expect(
      create({
        level: "ERROR",
        destinations: [
          { cloudWatchLogsLogGroup: { logGroupArn: "arn:aws:logs:us-east-1:000000000000:log-group:x" } },
        ],
      }),
    ).rejects.toMatchObject({ name: "InvalidLoggingConfiguration" });
    await expect(create({ level: "SOME" })).rejects.toMatchObject({ name: "ValidationException" });
  });
});
