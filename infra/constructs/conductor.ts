// The conductor state machine, from the SAME ASL the local runtime executes
// (infra/conductor/definition.ts); its steps are the scheduler and conductor functions.
import { CfnOutput, RemovalPolicy, type Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import * as sfn from "aws-cdk-lib/aws-stepfunctions";
import { NagSuppressions } from "cdk-nag";
import { conductorDefinition } from "../conductor/definition.js";
import type { Functions } from "./functions.js";
import { deploymentOption } from "./functions.js";
import { COMPUTE_QUEUES_REASON, computeQueuesFinding } from "./nag.js";
import type { Queues } from "./queues.js";

export type ConductorType = "EXPRESS" | "STANDARD";

export interface ConductorProps {
  type: ConductorType;
  functions: Functions;
  /** It sends each build to its host's queue. */
  queues: Queues;
  logRetention: logs.RetentionDays;
}

export class Conductor {
  readonly stateMachine: sfn.StateMachine;

  constructor(stack: Stack, props: ConductorProps) {
    const { functions, queues } = props;
    this.stateMachine = new sfn.StateMachine(stack, "ConductorStateMachine", {
      definitionBody: sfn.DefinitionBody.fromString(
        stack.toJsonString(
          conductorDefinition({
            conductorFunctionArn: functions.conductor.functionArn,
            schedulerFunctionArn: functions.scheduler.functionArn,
          }),
        ),
      ),
      stateMachineType:
        props.type === "EXPRESS" ? sfn.StateMachineType.EXPRESS : sfn.StateMachineType.STANDARD,
      // Express keeps no execution history: its events are only visible through these logs, at
      // the deployment's conductor_log_level (ERROR: failures only; ALL bills about 9 KB a build
      // as vended logs). Execution data stays out of them (requests carry user data).
      logs: {
        destination: new logs.LogGroup(stack, "ConductorStateMachineLogGroup", {
          logGroupName: `/aws/vendedlogs/states/${stack.stackName}-conductor`,
          retention: props.logRetention,
          removalPolicy: RemovalPolicy.DESTROY,
        }),
        level:
          sfn.LogLevel[
            deploymentOption<string>(stack, "conductor_log_level").toUpperCase() as keyof typeof sfn.LogLevel
          ],
        includeExecutionData: false,
      },
      // X-Ray bills every trace recorded: opt-in (conductor_tracing), as Nova's osprofiler
      tracingEnabled: deploymentOption<boolean>(stack, "conductor_tracing"),
    });
    functions.scheduler.grantInvoke(this.stateMachine);
    functions.conductor.grantInvoke(this.stateMachine);
    this.stateMachine.addToRolePolicy(
      new iam.PolicyStatement({ actions: ["sqs:SendMessage"], resources: [queues.computeQueuesArn] }),
    );
    new CfnOutput(stack, "ConductorStateMachineArn", { value: this.stateMachine.stateMachineArn });

    // cdk-nag (AwsSolutions): what is not fixed, and why.
    NagSuppressions.addResourceSuppressions(
      this.stateMachine,
      [
        {
          id: "AwsSolutions-IAM5",
          reason: COMPUTE_QUEUES_REASON,
          appliesTo: [computeQueuesFinding(queues.computeQueuePrefix)],
        },
        {
          id: "AwsSolutions-IAM5",
          reason:
            "Log delivery to CloudWatch Logs (logs:CreateLogDelivery and the like) and X-Ray's PutTraceSegments/PutTelemetryRecords support no resource-level permissions",
          appliesTo: ["Resource::*"],
        },
        {
          id: "AwsSolutions-IAM5",
          reason: "Invoking a function includes its qualified ARNs (<function>:<version or alias>)",
          appliesTo: [functions.scheduler, functions.conductor].map(
            (fn) => `Resource::<${stack.getLogicalId(fn.node.defaultChild as lambda.CfnFunction)}.Arn>:*`,
          ),
        },
        {
          id: "AwsSolutions-SF1",
          reason:
            "conductor_log_level chooses the level (ERROR by default): ALL bills about 9 KB of vended logs a build, and a build's steps are in its instance actions and the functions' logs",
        },
        {
          id: "AwsSolutions-SF2",
          reason:
            "conductor_tracing turns X-Ray on (off by default, as Nova's osprofiler): its default sampling records up to every execution, $5 a million",
        },
      ],
      true,
    );
  }
}
