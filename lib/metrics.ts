// Build metrics in CloudWatch's Embedded Metric Format, through Powertools for AWS Lambda's
// Metrics: namespace `novaless`, dimension `service` (the function, from POWERTOOLS_SERVICE_NAME),
// plus `reason` on BuildsError. In Lambda they are stored and published once per invocation
// (withObservability); elsewhere (a compute host, the local runtime) each is published as it
// happens, and only when POWERTOOLS_METRICS_DISABLED=false asks for it, so local runs and tests
// print no EMF.
import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import type { Context } from "aws-lambda";
import { inLambda, observabilityOptions } from "./config.js";
import { inInvocation } from "./log.js";

export const METRICS_NAMESPACE = "novaless";

/** The metric names, shared with the stack's alarms and dashboard. */
export const METRIC = {
  buildsStarted: "BuildsStarted",
  buildsActive: "BuildsActive",
  buildsError: "BuildsError",
  reschedules: "Reschedules",
  claimConflicts: "ClaimConflicts",
  schedulerDecisionTime: "SchedulerDecisionTime",
  schedulerFleetReadTime: "SchedulerFleetReadTime",
  autoEvacuations: "AutoEvacuations",
  reportPathSuspect: "ReportPathSuspect",
  computeDeadLetters: "ComputeDeadLetters",
  spooledReports: "SpooledReports",
  spooledReportAge: "SpooledReportAge",
} as const;

/** Why a build went to ERROR: the value of BuildsError's `reason` dimension. */
export type BuildErrorReason = "NoValidHost" | "MaxRetriesExceeded" | "BuildAborted";

function enabled(): boolean {
  const disabled = observabilityOptions().metricsDisabled;
  return disabled === null ? inLambda() : !disabled;
}

/** One Powertools recorder per dimension set: Powertools' dimensions apply to a whole EMF line. */
const recorders = new Map<string, Metrics>();

function recorder(dimensions: Record<string, string>): Metrics {
  const key = JSON.stringify(dimensions);
  let r = recorders.get(key);
  if (!r) {
    r = new Metrics({
      namespace: METRICS_NAMESPACE,
      serviceName: observabilityOptions().serviceName,
      defaultDimensions: dimensions,
    });
    recorders.set(key, r);
  }
  return r;
}

type Unit = (typeof MetricUnit)[keyof typeof MetricUnit];

function record(name: string, unit: Unit, value: number, dimensions: Record<string, string> = {}): void {
  if (!enabled()) return;
  const r = recorder(dimensions).addMetric(name, unit, value);
  if (!inLambda()) r.publishStoredMetrics();
}

export const metrics = {
  /** Instances the API accepted and queued for building. */
  buildsStarted: (count: number) => record(METRIC.buildsStarted, MetricUnit.Count, count),
  /** An instance went ACTIVE. */
  buildActive: () => record(METRIC.buildsActive, MetricUnit.Count, 1),
  /** Instances sent to ERROR by the conductor, by reason. */
  buildsError: (reason: BuildErrorReason, count = 1) =>
    record(METRIC.buildsError, MetricUnit.Count, count, { reason }),
  /** A failed attempt sent back down the failure path (by its host or by the watchdog). */
  reschedule: () => record(METRIC.reschedules, MetricUnit.Count, 1),
  /** A claim's conditional write failed (full, changed meanwhile, or held by another attempt). */
  claimConflict: () => record(METRIC.claimConflicts, MetricUnit.Count, 1),
  /** Servers the watchdog evacuated off a fenced, opted-in host. */
  autoEvacuations: (count: number) => record(METRIC.autoEvacuations, MetricUnit.Count, count),
  /** Silent hosts a watchdog run spared because the report path is suspect (lib/placement/report-path.ts). */
  reportPathSuspect: (silentHosts: number) => record(METRIC.reportPathSuspect, MetricUnit.Count, silentHosts),
  /** Messages in a host's dead-letter queue, as its agent last counted them (sent while not 0). */
  computeDeadLetters: (count: number) => record(METRIC.computeDeadLetters, MetricUnit.Count, count),
  /**
   * Reports waiting in a host's spool and how long the oldest has waited, as its heartbeat said
   * (sent while any waits: compute-events refused or could not take them for a while).
   */
  reportSpool: (reports: number, oldestSeconds: number) => {
    record(METRIC.spooledReports, MetricUnit.Count, reports);
    record(METRIC.spooledReportAge, MetricUnit.Seconds, oldestSeconds);
  },
  /** select_destinations, from its first read to its last claim. */
  schedulerDecisionTime: (ms: number) => record(METRIC.schedulerDecisionTime, MetricUnit.Milliseconds, ms),
  /** Reading hosts, aggregates, building instances and the server group for one decision. */
  schedulerFleetReadTime: (ms: number) => record(METRIC.schedulerFleetReadTime, MetricUnit.Milliseconds, ms),
};

/** Publish what this invocation stored (one EMF line per dimension set). */
export function publishMetrics(): void {
  for (const r of recorders.values()) if (r.hasStoredMetrics()) r.publishStoredMetrics();
}

/**
 * A Lambda handler's body with its invocation's context on every log line and its metrics
 * published when it ends, whether it returns or throws.
 */
export function withObservability<T>(context: Context | undefined, body: () => Promise<T>): Promise<T> {
  return inInvocation(context, async () => {
    try {
      return await body();
    } finally {
      publishMetrics();
    }
  });
}
