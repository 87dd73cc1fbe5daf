// The state machines the endpoint holds: CreateStateMachine (as AWS, idempotent for the same
// definition and type), DescribeStateMachine, ListStateMachines.
import { StateMachine, type StateMachineDefinition } from "aws-local-stepfunctions";
import { type LoggingConfiguration, parseLoggingConfiguration } from "./history-log.js";
import { ACCOUNT, checkName, epoch, REGION, requireString, SfnError } from "./protocol.js";
import type { MachineRecord, StateMachineType } from "./types.js";

export class Machines {
  private readonly machines = new Map<string, MachineRecord>();

  get(arn: unknown): MachineRecord {
    const m = this.machines.get(requireString(arn, "stateMachineArn"));
    if (!m) {
      if (!/^arn:aws:states:[^:]+:\d{12}:stateMachine:[^:]+$/.test(String(arn))) {
        throw new SfnError("InvalidArn", `Invalid Arn: '${String(arn)}'`);
      }
      throw new SfnError("StateMachineDoesNotExist", `State Machine Does Not Exist: '${String(arn)}'`);
    }
    return m;
  }

  create(body: Record<string, unknown>) {
    const name = requireString(body.name, "name");
    checkName(name);
    const definition = requireString(body.definition, "definition");
    const type = (body.type ?? "STANDARD") as StateMachineType;
    if (type !== "STANDARD" && type !== "EXPRESS") {
      throw new SfnError("ValidationException", `type must be STANDARD or EXPRESS, not ${String(type)}`);
    }
    const logging = parseLoggingConfiguration(body.loggingConfiguration);
    const tracing = (body.tracingConfiguration as { enabled?: unknown } | undefined)?.enabled === true;
    const arn = `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${name}`;
    const existing = this.machines.get(arn);
    if (existing) {
      // As AWS: the same name, definition, type, logging and tracing is the same state machine;
      // anything else is a conflict.
      if (
        existing.definition === definition &&
        existing.type === type &&
        sameLogging(existing.logging, logging) &&
        existing.tracing === tracing
      ) {
        return { stateMachineArn: arn, creationDate: epoch(existing.creationDate) };
      }
      throw new SfnError("StateMachineAlreadyExists", `State Machine Already Exists: '${arn}'`);
    }
    let parsed: StateMachineDefinition;
    let machine: StateMachine;
    try {
      parsed = JSON.parse(definition) as StateMachineDefinition;
      machine = new StateMachine(parsed);
    } catch (e) {
      throw new SfnError("InvalidDefinition", `Invalid State Machine Definition: ${(e as Error).message}`);
    }
    const tasks = new Map<string, string>();
    const retrying: string[] = [];
    collectStates(parsed, tasks, retrying);
    const record: MachineRecord = {
      arn,
      name,
      type,
      definition,
      roleArn:
        typeof body.roleArn === "string" ? body.roleArn : `arn:aws:iam::${ACCOUNT}:role/novaless-local`,
      creationDate: new Date(),
      machine,
      tasks,
      retrying,
      logging,
      tracing,
    };
    this.machines.set(arn, record);
    return { stateMachineArn: arn, creationDate: epoch(record.creationDate) };
  }

  describe(body: Record<string, unknown>) {
    const m = this.get(body.stateMachineArn);
    return {
      stateMachineArn: m.arn,
      name: m.name,
      status: "ACTIVE",
      definition: m.definition,
      roleArn: m.roleArn,
      type: m.type,
      creationDate: epoch(m.creationDate),
      loggingConfiguration: {
        level: m.logging.level,
        includeExecutionData: m.logging.includeExecutionData,
        ...(m.logging.logGroupArn
          ? { destinations: [{ cloudWatchLogsLogGroup: { logGroupArn: m.logging.logGroupArn } }] }
          : {}),
      },
      tracingConfiguration: { enabled: m.tracing },
    };
  }

  list() {
    return {
      stateMachines: [...this.machines.values()].map((m) => ({
        stateMachineArn: m.arn,
        name: m.name,
        type: m.type,
        creationDate: epoch(m.creationDate),
      })),
    };
  }
}

function sameLogging(a: LoggingConfiguration, b: LoggingConfiguration): boolean {
  return (
    a.level === b.level &&
    a.includeExecutionData === b.includeExecutionData &&
    a.logGroupArn === b.logGroupArn
  );
}

/** Task and retrying state names, through Map ItemProcessors/Iterators and Parallel branches. */
function collectStates(
  def: Pick<StateMachineDefinition, "States">,
  tasks: Map<string, string>,
  retrying: string[],
): void {
  for (const [name, state] of Object.entries(def.States)) {
    const s = state as {
      Type: string;
      Resource?: string;
      Retry?: unknown[];
      ItemProcessor?: StateMachineDefinition;
      Iterator?: StateMachineDefinition;
      Branches?: StateMachineDefinition[];
    };
    if (s.Type === "Task" && s.Resource) tasks.set(name, s.Resource);
    if (s.Retry) retrying.push(name);
    const nested = s.ItemProcessor ?? s.Iterator;
    if (nested) collectStates(nested, tasks, retrying);
    for (const branch of s.Branches ?? []) collectStates(branch, tasks, retrying);
  }
}
