// The API's execution actions: StartExecution, StartSyncExecution (EXPRESS only), StopExecution,
// DescribeExecution, ListExecutions; with the state machine actions, the operations the endpoint
// serves by X-Amz-Target.
import { randomUUID } from "node:crypto";
import type { Executions } from "./executions.js";
import type { Machines } from "./machines.js";
import { checkName, epoch, requireString, SfnError } from "./protocol.js";
import type { Runner } from "./runner.js";
import { type ExecutionRecord, MAX_PAYLOAD_BYTES } from "./types.js";

export type Operation = (body: Record<string, unknown>) => unknown;

export class Actions {
  /** set once the endpoint stops: no execution starts after that */
  stopping = false;

  constructor(
    private readonly machines: Machines,
    private readonly executions: Executions,
    private readonly runner: Runner,
  ) {}

  /** by operation name (X-Amz-Target without its prefix) */
  readonly operations: Record<string, Operation> = {
    CreateStateMachine: (body) => this.machines.create(body),
    DescribeStateMachine: (body) => this.machines.describe(body),
    ListStateMachines: () => this.machines.list(),
    StartExecution: (body) => {
      const { info } = this.start(body);
      return { executionArn: info.executionArn, startDate: epoch(info.startDate) };
    },
    StartSyncExecution: (body) => this.startSync(body),
    DescribeExecution: (body) => this.describe(body),
    ListExecutions: (body) => this.list(body),
    StopExecution: (body) => this.stop(body),
  };

  private start(body: Record<string, unknown>): ExecutionRecord {
    if (this.stopping)
      throw new SfnError("ServiceUnavailable", "the local Step Functions endpoint is stopping");
    const m = this.machines.get(body.stateMachineArn);
    const name = body.name === undefined ? randomUUID() : requireString(body.name, "name");
    checkName(name);
    const input = body.input === undefined ? "{}" : requireString(body.input, "input");
    if (Buffer.byteLength(input) > MAX_PAYLOAD_BYTES) {
      throw new SfnError(
        "ValidationException",
        `1 validation error detected: Value at 'input' failed to satisfy constraint: Member must have length less than or equal to ${MAX_PAYLOAD_BYTES}`,
      );
    }
    let parsedInput: unknown;
    try {
      parsedInput = JSON.parse(input);
    } catch (e) {
      throw new SfnError(
        "InvalidExecutionInput",
        `Invalid State Machine Execution Input: ${(e as Error).message}`,
      );
    }
    const { record, started } = this.executions.open(m, name, input);
    if (started) record.settled = this.runner.run(m, record, parsedInput);
    return record;
  }

  stop(body: Record<string, unknown>) {
    const record = this.executions.require(body.executionArn);
    if (record.info.status === "RUNNING") {
      this.executions.finish(record, "ABORTED", {
        ...(typeof body.error === "string" ? { error: body.error } : {}),
        ...(typeof body.cause === "string" ? { cause: body.cause } : {}),
      });
      record.abort?.();
    }
    return { stopDate: epoch(record.info.stopDate ?? new Date()) };
  }

  private describe(body: Record<string, unknown>) {
    const { info } = this.executions.require(body.executionArn);
    return {
      executionArn: info.executionArn,
      stateMachineArn: info.stateMachineArn,
      name: info.name,
      status: info.status,
      startDate: epoch(info.startDate),
      ...(info.stopDate ? { stopDate: epoch(info.stopDate) } : {}),
      input: info.input,
      inputDetails: { included: true },
      ...(info.output !== undefined ? { output: info.output, outputDetails: { included: true } } : {}),
      ...(info.error !== undefined ? { error: info.error } : {}),
      ...(info.cause !== undefined ? { cause: info.cause } : {}),
    };
  }

  private list(body: Record<string, unknown>) {
    const m = this.machines.get(body.stateMachineArn);
    const filter = body.statusFilter;
    const maxResults = typeof body.maxResults === "number" && body.maxResults > 0 ? body.maxResults : 100;
    const offset = typeof body.nextToken === "string" ? Number(body.nextToken) : 0;
    if (!Number.isInteger(offset) || offset < 0) throw new SfnError("InvalidToken", "Invalid Token");
    const all = this.executions.list(m.arn, filter);
    const page = all.slice(offset, offset + maxResults);
    return {
      executions: page.map((i) => ({
        executionArn: i.executionArn,
        stateMachineArn: i.stateMachineArn,
        name: i.name,
        status: i.status,
        startDate: epoch(i.startDate),
        ...(i.stopDate ? { stopDate: epoch(i.stopDate) } : {}),
      })),
      ...(offset + maxResults < all.length ? { nextToken: String(offset + maxResults) } : {}),
    };
  }

  private async startSync(body: Record<string, unknown>) {
    const m = this.machines.get(body.stateMachineArn);
    if (m.type !== "EXPRESS") {
      throw new SfnError(
        "StateMachineTypeNotSupported",
        "This operation is not supported by this type of state machine",
      );
    }
    const record = this.start(body);
    await record.settled;
    const { info } = record;
    return {
      executionArn: info.executionArn,
      stateMachineArn: info.stateMachineArn,
      name: info.name,
      startDate: epoch(info.startDate),
      stopDate: epoch(info.stopDate ?? new Date()),
      status: info.status,
      input: info.input,
      inputDetails: { included: true },
      ...(info.output !== undefined ? { output: info.output, outputDetails: { included: true } } : {}),
      ...(info.error !== undefined ? { error: info.error } : {}),
      ...(info.cause !== undefined ? { cause: info.cause } : {}),
    };
  }
}
