// The alarms and the dashboard. Builds in ERROR come from the conductor's BuildsError metric
// (EMF), not from the execution's status: an execution that SUCCEEDED may well have put its build
// in ERROR (NoValidHost, max retries, an aborted build). Per-host DLQs are created at run time, and
// Metrics Insights' WHERE has only = and != (no LIKE to match their names), so their depth comes
// from the agents: each counts its own DLQ and reports it with its heartbeats while not empty,
// and compute-events records it as ComputeDeadLetters (alarms accept a query that returns one
// series, not SEARCH). The hosts' report spools reach the alarms the same way (SpooledReportAge).
import { CfnOutput, Duration, type Stack } from "aws-cdk-lib";
import type * as apigwv2 from "aws-cdk-lib/aws-apigatewayv2";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as sfn from "aws-cdk-lib/aws-stepfunctions";
import { METRIC, METRICS_NAMESPACE } from "../../lib/metrics.js";
import { BUILD_REQUESTS_QUEUE, TABLES } from "../../lib/resources.js";
import type { Data } from "./data.js";
import type { Functions } from "./functions.js";
import type { Queues } from "./queues.js";

export interface ObservabilityProps {
  data: Data;
  queues: Queues;
  functions: Functions;
  conductor: sfn.StateMachine;
  httpApi: apigwv2.HttpApi;
  /** Builds sent to ERROR (any reason) in five minutes that raise the alarm. */
  buildErrorAlarmThreshold: number;
  /** NoValidHost builds in five minutes that raise the alarm (the fleet is full). */
  noValidHostAlarmThreshold: number;
  alarmActions: cloudwatch.IAlarmAction[];
}

const fiveMinutes = Duration.minutes(5);
/** A report older than this in a host's spool raises SpooledReportsWaiting. */
export const SPOOL_AGE_ALARM_SECONDS = 180;
/** compute-events throttled in each of this many consecutive minutes raises its throttle alarm. */
export const SUSTAINED_THROTTLE_MINUTES = 10;
const oneMinute = Duration.minutes(1);
const sum = { period: fiveMinutes, statistic: cloudwatch.Stats.SUM };

const query = (label: string, expression: string, period = fiveMinutes) =>
  new cloudwatch.MathExpression({ label, expression, period });

const tableThrottles = (table: dynamodb.Table) =>
  new cloudwatch.MathExpression({
    label: "Read + write throttle events",
    // A period with only one kind of throttle still counts.
    expression: "FILL(r, 0) + FILL(w, 0)",
    usingMetrics: {
      r: table.metric("ReadThrottleEvents", sum),
      w: table.metric("WriteThrottleEvents", sum),
    },
    period: fiveMinutes,
  });

export class Observability {
  readonly alarms: cloudwatch.Alarm[];
  readonly dashboard: cloudwatch.Dashboard;

  constructor(stack: Stack, props: ObservabilityProps) {
    const { queues, conductor } = props;
    const { tables } = props.data;
    const functions = props.functions.all;
    const standard =
      (conductor.node.defaultChild as sfn.CfnStateMachine).stateMachineType === sfn.StateMachineType.STANDARD;
    const buildsError = `SELECT SUM(${METRIC.buildsError}) FROM SCHEMA("${METRICS_NAMESPACE}", reason, service)`;
    const computeDlqDepth = query(
      "Compute DLQs: most messages a host reported",
      `SELECT MAX(${METRIC.computeDeadLetters}) FROM SCHEMA("${METRICS_NAMESPACE}", service)`,
      fiveMinutes,
    );
    const alarm = (id: string, description: string, metric: cloudwatch.IMetric, threshold = 0) =>
      new cloudwatch.Alarm(stack, id, {
        alarmDescription: description,
        metric,
        threshold,
        comparisonOperator:
          threshold === 0
            ? cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD
            : cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    this.alarms = [
      alarm(
        "BuildRequestsDlqNotEmpty",
        `Build requests dead-lettered after ${BUILD_REQUESTS_QUEUE.maxReceiveCount} receives`,
        queues.buildRequestsDlq.metricApproximateNumberOfMessagesVisible({
          period: oneMinute,
          statistic: cloudwatch.Stats.MAXIMUM,
        }),
      ),
      alarm(
        "ComputeEventsDlqNotEmpty",
        "Compute hosts' reports the compute-events consumer could not apply (malformed, or a host speaking for another)",
        queues.computeEventsDlq.metricApproximateNumberOfMessagesVisible({
          period: oneMinute,
          statistic: cloudwatch.Stats.MAXIMUM,
        }),
      ),
      alarm(
        "ComputeDlqsNotEmpty",
        `A compute host's DLQ (${queues.computeQueuePrefix}<host>-dlq) holds build messages its agent could not process`,
        computeDlqDepth,
      ),
      alarm(
        "ConductorExecutionsFailed",
        "Conductor executions failed (builds may be stuck in BUILD)",
        conductor.metricFailed({ period: oneMinute, statistic: cloudwatch.Stats.SUM }),
      ),
      // An Express execution past its 5 minutes ends TIMED_OUT, which no Catch sees: its builds
      // stay in BUILD until the watchdog. The retries are bounded to fit
      // (test/unit/conductor/retry-budget.test.ts), so one means a step far slower than its budget.
      alarm(
        "ConductorExecutionsTimedOut",
        "Conductor executions timed out (builds stay in BUILD until the watchdog fails or resends them)",
        conductor.metricTimedOut({ period: oneMinute, statistic: cloudwatch.Stats.SUM }),
      ),
      // Only a Standard execution can be stopped (StopExecution "is not supported by EXPRESS
      // state machines"): an aborted one leaves its builds in BUILD as a timed-out one does.
      ...(standard
        ? [
            alarm(
              "ConductorExecutionsAborted",
              "Conductor executions were stopped (builds stay in BUILD until the watchdog fails or resends them)",
              conductor.metricAborted({ period: oneMinute, statistic: cloudwatch.Stats.SUM }),
            ),
          ]
        : []),
      alarm(
        "BuildsToError",
        "Builds went to ERROR (any reason: NoValidHost, MaxRetriesExceeded, BuildAborted), whatever their execution's status",
        query("Builds to ERROR", buildsError),
        props.buildErrorAlarmThreshold,
      ),
      alarm(
        "NoValidHostRate",
        "Builds went to ERROR with NoValidHost: the fleet has no room for what is asked",
        query("NoValidHost", `${buildsError} WHERE reason = 'NoValidHost'`),
        props.noValidHostAlarmThreshold,
      ),
      alarm(
        "AutoEvacuations",
        "The watchdog fenced a host opted in to automatic evacuation (novaless:auto_evacuate) and evacuated its servers",
        query(
          "Automatic evacuations",
          `SELECT SUM(${METRIC.autoEvacuations}) FROM SCHEMA("${METRICS_NAMESPACE}", service)`,
        ),
      ),
      // Hosts spool the reports compute-events cannot take and send them again, so what must not
      // happen is reports waiting for minutes: an outage or throttling that does not end, or a
      // report compute-events fails on every time (each host says in its heartbeats).
      new cloudwatch.Alarm(stack, "SpooledReportsWaiting", {
        alarmDescription: `Reports waited in a compute host's spool more than ${SPOOL_AGE_ALARM_SECONDS} s: compute-events has not taken them (an outage, sustained throttling, or a report it fails on every time)`,
        metric: query(
          "Oldest spooled report (s)",
          `SELECT MAX(${METRIC.spooledReportAge}) FROM SCHEMA("${METRICS_NAMESPACE}", service)`,
          oneMinute,
        ),
        threshold: SPOOL_AGE_ALARM_SECONDS,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      ...functions.flatMap(([name, fn]) => [
        alarm(`${name}FunctionErrors`, `The ${name} function failed invocations`, fn.metricErrors(sum)),
        name === "ComputeEvents"
          ? // Throttling is compute-events' storm control (its reserved concurrency; hosts spool
            // and send again): a burst is by design, throttling that does not end is not.
            new cloudwatch.Alarm(stack, `${name}FunctionThrottles`, {
              alarmDescription: `The ${name} function was throttled in each of ${SUSTAINED_THROTTLE_MINUTES} consecutive minutes: hosts' reports wait in their spools`,
              metric: fn.metricThrottles({ period: oneMinute, statistic: cloudwatch.Stats.SUM }),
              threshold: 0,
              comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
              evaluationPeriods: SUSTAINED_THROTTLE_MINUTES,
              datapointsToAlarm: SUSTAINED_THROTTLE_MINUTES,
              treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
            })
          : alarm(`${name}FunctionThrottles`, `The ${name} function was throttled`, fn.metricThrottles(sum)),
      ]),
      ...TABLES.map((spec) =>
        alarm(
          `${spec.id}TableThrottled`,
          `DynamoDB throttled reads or writes on the ${spec.id} table`,
          tableThrottles(tables[spec.id]),
        ),
      ),
    ];
    for (const a of this.alarms) a.addAlarmAction(...props.alarmActions);

    // The same signals, for an operator.
    const novaless = (stat: "SUM" | "AVG" | "MAX", metric: string, rest = "") =>
      `SELECT ${stat}(${metric}) FROM "${METRICS_NAMESPACE}"${rest}`;
    const graph = (title: string, left: cloudwatch.IMetric[], right: cloudwatch.IMetric[] = []) =>
      new cloudwatch.GraphWidget({ title, left, right, width: 12, height: 6 });
    const apiMetric = (metricName: string) =>
      new cloudwatch.Metric({
        namespace: "AWS/ApiGateway",
        metricName,
        dimensionsMap: { ApiId: props.httpApi.apiId, Stage: "$default" },
        ...sum,
      });
    this.dashboard = new cloudwatch.Dashboard(stack, "Dashboard", {
      dashboardName: `${stack.stackName}-builds`,
      widgets: [
        [new cloudwatch.AlarmStatusWidget({ title: "Alarms", alarms: this.alarms, width: 24, height: 4 })],
        [
          graph("Builds", [
            query("Started", novaless("SUM", METRIC.buildsStarted)),
            query("ACTIVE", novaless("SUM", METRIC.buildsActive)),
            query("ERROR", novaless("SUM", METRIC.buildsError)),
          ]),
          graph("Builds to ERROR by reason", [
            query("ERROR", novaless("SUM", METRIC.buildsError, " GROUP BY reason")),
          ]),
        ],
        [
          graph(
            "Scheduler (ms)",
            [
              query("Decision, average", novaless("AVG", METRIC.schedulerDecisionTime)),
              query("Decision, max", novaless("MAX", METRIC.schedulerDecisionTime)),
            ],
            [
              query("Fleet read, average", novaless("AVG", METRIC.schedulerFleetReadTime)),
              query("Fleet read, max", novaless("MAX", METRIC.schedulerFleetReadTime)),
            ],
          ),
          graph("Reschedules and claim conflicts", [
            query("Reschedules", novaless("SUM", METRIC.reschedules)),
            query("Claim conflicts", novaless("SUM", METRIC.claimConflicts)),
          ]),
        ],
        [
          graph(
            "Hosts' report spools (most a host said)",
            [query("Spooled reports", novaless("MAX", METRIC.spooledReports), oneMinute)],
            [query("Oldest spooled report (s)", novaless("MAX", METRIC.spooledReportAge), oneMinute)],
          ),
        ],
        [
          graph("Dead letters (messages visible)", [
            queues.buildRequestsDlq.metricApproximateNumberOfMessagesVisible({
              label: "build-requests DLQ",
              period: oneMinute,
              statistic: cloudwatch.Stats.MAXIMUM,
            }),
            computeDlqDepth,
          ]),
          graph("Conductor executions", [
            conductor.metricStarted(sum),
            conductor.metricSucceeded(sum),
            conductor.metricFailed(sum),
            conductor.metricTimedOut(sum),
          ]),
        ],
        [
          graph(
            "Lambda errors",
            functions.map(([name, fn]) => fn.metricErrors({ ...sum, label: name })),
          ),
          graph(
            "Lambda throttles",
            functions.map(([name, fn]) => fn.metricThrottles({ ...sum, label: name })),
          ),
        ],
        [
          graph(
            "DynamoDB throttle events",
            TABLES.map((spec) =>
              tables[spec.id].metric("ReadThrottleEvents", { ...sum, label: `${spec.id} reads` }),
            ),
            TABLES.map((spec) =>
              tables[spec.id].metric("WriteThrottleEvents", { ...sum, label: `${spec.id} writes` }),
            ),
          ),
          graph("API", [apiMetric("Count"), apiMetric("5xx")]),
        ],
      ],
    });
    new CfnOutput(stack, "DashboardName", { value: this.dashboard.dashboardName });
  }
}
