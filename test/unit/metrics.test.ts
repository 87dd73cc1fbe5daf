// lib/metrics.ts: the EMF lines Powertools writes, one metric of each kind, and when they are written.
import type { Context } from "aws-lambda";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { METRIC, METRICS_NAMESPACE, metrics, publishMetrics, withObservability } from "../../lib/metrics.js";

interface Emf {
  _aws: {
    Timestamp: number;
    CloudWatchMetrics: {
      Namespace: string;
      Dimensions: string[][];
      Metrics: { Name: string; Unit: string }[];
    }[];
  };
  [key: string]: unknown;
}

let lines: Emf[];
const ENV = ["POWERTOOLS_METRICS_DISABLED", "AWS_LAMBDA_FUNCTION_NAME"] as const;
const saved = Object.fromEntries(ENV.map((k) => [k, process.env[k]]));

beforeEach(() => {
  lines = [];
  vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    for (const l of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(l) as Emf);
    return true;
  });
  for (const k of ENV) delete process.env[k];
});
afterEach(() => {
  vi.restoreAllMocks();
  for (const k of ENV) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});

/** The one metric of an EMF line: its definition, dimensions and value. */
function single(line: Emf) {
  const [directive] = line._aws.CloudWatchMetrics;
  expect(line._aws.CloudWatchMetrics).toHaveLength(1);
  expect(directive!.Metrics).toHaveLength(1);
  const def = directive!.Metrics[0]!;
  return {
    namespace: directive!.Namespace,
    dimensions: directive!.Dimensions,
    name: def.Name,
    unit: def.Unit,
    value: line[def.Name],
    service: line.service,
    reason: line.reason,
  };
}

describe("metrics outside Lambda (a compute host, the local runtime)", () => {
  it("print nothing unless POWERTOOLS_METRICS_DISABLED=false asks for them", () => {
    metrics.buildActive();
    metrics.claimConflict();
    publishMetrics();
    expect(lines).toEqual([]);
  });

  it("publish each metric as it happens, in the novaless namespace with the service dimension", () => {
    process.env.POWERTOOLS_METRICS_DISABLED = "false";
    metrics.buildsStarted(3);
    metrics.buildActive();
    metrics.reschedule();
    metrics.claimConflict();
    metrics.schedulerDecisionTime(12.5);
    metrics.schedulerFleetReadTime(4);
    expect(lines.map(single)).toEqual(
      [
        [METRIC.buildsStarted, "Count", 3],
        [METRIC.buildsActive, "Count", 1],
        [METRIC.reschedules, "Count", 1],
        [METRIC.claimConflicts, "Count", 1],
        [METRIC.schedulerDecisionTime, "Milliseconds", 12.5],
        [METRIC.schedulerFleetReadTime, "Milliseconds", 4],
      ].map(([name, unit, value]) => ({
        namespace: METRICS_NAMESPACE,
        dimensions: [["service"]],
        name,
        unit,
        value,
        service: "novaless",
        reason: undefined,
      })),
    );
    for (const l of lines) expect(Math.abs(l._aws.Timestamp - Date.now())).toBeLessThan(60_000);
  });

  it("give BuildsError its reason dimension", () => {
    process.env.POWERTOOLS_METRICS_DISABLED = "false";
    metrics.buildsError("NoValidHost", 2);
    metrics.buildsError("MaxRetriesExceeded");
    expect(lines.map(single)).toEqual([
      expect.objectContaining({
        name: METRIC.buildsError,
        unit: "Count",
        value: 2,
        dimensions: [["service", "reason"]],
        reason: "NoValidHost",
      }),
      expect.objectContaining({ name: METRIC.buildsError, value: 1, reason: "MaxRetriesExceeded" }),
    ]);
  });

  it("are switched off by POWERTOOLS_METRICS_DISABLED=true", () => {
    process.env.POWERTOOLS_METRICS_DISABLED = "true";
    metrics.buildsError("BuildAborted");
    expect(lines).toEqual([]);
  });
});

describe("metrics in Lambda", () => {
  it("are stored during the invocation and published once when it ends, even when it throws", async () => {
    process.env.AWS_LAMBDA_FUNCTION_NAME = "NovalessStack-Conductor";
    const context = { awsRequestId: "req-aws-1", functionName: "NovalessStack-Conductor" } as Context;
    const failing = withObservability(context, async () => {
      metrics.buildsError("BuildAborted");
      metrics.buildsError("BuildAborted");
      metrics.claimConflict();
      expect(lines).toEqual([]);
      throw new Error("conductor step failed");
    });
    await expect(failing).rejects.toThrow("conductor step failed");
    const byName = Object.fromEntries(lines.map((l) => [single(l).name, single(l)]));
    expect(lines).toHaveLength(2);
    expect(byName[METRIC.buildsError]).toMatchObject({ value: [1, 1], reason: "BuildAborted" });
    expect(byName[METRIC.claimConflicts]).toMatchObject({ value: 1, dimensions: [["service"]] });

    await withObservability(context, async () => undefined);
    expect(lines).toHaveLength(2);
  });
});
