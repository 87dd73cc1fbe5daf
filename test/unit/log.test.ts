// lib/log.ts through Powertools' Logger: what lands on stdout and stderr, line by line.
import type { Context } from "aws-lambda";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { inInvocation, log, logger } from "../../lib/log.js";

let out: Record<string, unknown>[];
let err: Record<string, unknown>[];
const saved = process.env.NOVALESS_LOG_LEVEL;

function capture(into: () => Record<string, unknown>[]) {
  return (chunk: string | Uint8Array) => {
    for (const l of String(chunk).split("\n").filter(Boolean)) into().push(JSON.parse(l));
    return true;
  };
}

beforeEach(() => {
  out = [];
  err = [];
  vi.spyOn(process.stdout, "write").mockImplementation(capture(() => out));
  vi.spyOn(process.stderr, "write").mockImplementation(capture(() => err));
  process.env.NOVALESS_LOG_LEVEL = "info";
});
afterEach(() => {
  vi.restoreAllMocks();
  process.env.NOVALESS_LOG_LEVEL = saved;
});

describe("log", () => {
  it("writes one JSON line per event with its name, level, request_id and instance_uuid", () => {
    log.info("conductor.cast_build", { request_id: "req-1", instance_uuid: "i-1", host: "host-7" });
    expect(err).toEqual([]);
    expect(out).toHaveLength(1);
    expect(out[0]).toMatchObject({
      level: "info",
      event: "conductor.cast_build",
      request_id: "req-1",
      instance_uuid: "i-1",
      host: "host-7",
    });
    expect(Date.parse(out[0]!.time as string)).not.toBeNaN();
  });

  it("sends warnings and errors to stderr, with the stack and the whole cause chain", () => {
    const cause = new Error("ProvisionedThroughputExceededException on Hosts");
    const e = new Error("claim on host-3 failed (attempt 2)", { cause });
    logger({ host: "host-3" }).child({ attempt: 2 }).error("compute.message_failed", { error: e });
    log.warn("compute.heartbeat_failed", {});
    expect(out).toEqual([]);
    expect(err.map((l) => l.level)).toEqual(["error", "warn"]);
    const error = err[0]!.error as Record<string, Record<string, unknown>>;
    expect(err[0]).toMatchObject({ event: "compute.message_failed", host: "host-3", attempt: 2 });
    expect(error).toMatchObject({ name: "Error", message: "claim on host-3 failed (attempt 2)" });
    expect(error.stack).toContain("log.test.ts");
    expect(error.cause).toMatchObject({ message: "ProvisionedThroughputExceededException on Hosts" });
    expect(error.cause!.stack).toContain("log.test.ts");
  });

  it("follows NOVALESS_LOG_LEVEL as it changes", () => {
    log.debug("scheduler.detail", {});
    process.env.NOVALESS_LOG_LEVEL = "debug";
    log.debug("scheduler.detail", { n: 1 });
    process.env.NOVALESS_LOG_LEVEL = "error";
    log.warn("compute.killed", {});
    log.info("compute.started", {});
    expect(out).toEqual([expect.objectContaining({ level: "debug", n: 1 })]);
    expect(err).toEqual([]);
  });

  it("keeps a caller's field that Powertools reserves, renamed instead of dropped", () => {
    log.info("api.request", { message: "body of a fault", service: "compute" });
    expect(out).toEqual([
      expect.objectContaining({
        event: "api.request",
        message_field: "body of a fault",
        service_field: "compute",
      }),
    ]);
  });

  it("stamps each line of a Lambda invocation with its aws_request_id, its function and its cold start", async () => {
    const context = (fn: string, id: string) =>
      ({
        awsRequestId: id,
        functionName: fn,
        functionVersion: "$LATEST",
        invokedFunctionArn: `arn:aws:lambda:eu-west-1:123456789012:function:${fn}`,
        memoryLimitInMB: "512",
      }) as Context;
    await inInvocation(context("NovalessStack-Conductor", "c6af9ac6-7b61-11e6-9a41-93e812345678"), async () =>
      log.info("conductor.cast_build", { request_id: "req-2" }),
    );
    expect(out[0]).toMatchObject({
      aws_request_id: "c6af9ac6-7b61-11e6-9a41-93e812345678",
      function_name: "NovalessStack-Conductor",
      cold_start: true,
      request_id: "req-2",
    });
  });

  it("keeps two invocations at once apart (the local runtime's functions share one process), and none outside them", async () => {
    const context = (fn: string, id: string) => ({ awsRequestId: id, functionName: fn }) as Context;
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const scheduler = inInvocation(context("novaless-scheduler", "req-s"), async () => {
      await held;
      log.info("scheduler.decided", {});
    });
    await inInvocation(context("novaless-compute-events", "req-c"), async () => {
      log.info("compute_events.registered", {});
    });
    log.info("runtime.ready", {});
    release();
    await scheduler;
    await inInvocation(context("novaless-scheduler", "req-s2"), async () =>
      log.info("scheduler.decided", {}),
    );
    const seen = out.map((l) => [l.event, l.function_name, l.aws_request_id, l.cold_start]);
    expect(seen).toEqual([
      ["compute_events.registered", "novaless-compute-events", "req-c", true],
      ["runtime.ready", undefined, undefined, undefined],
      ["scheduler.decided", "novaless-scheduler", "req-s", true],
      ["scheduler.decided", "novaless-scheduler", "req-s2", false],
    ]);
  });
});
