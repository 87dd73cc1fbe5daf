// No report is lost (issue 35): a report compute-events cannot take waits in the host's spool,
// which outlives the agent (the runtime keeps it beside the driver, as a host's state directory
// outlives its agent process), and the host's next incarnation delivers it once compute-events
// answers again; the cast it answers was deleted only once the report was spooled. Compute-events
// is made unable to take reports honestly: every slot of its reserved concurrency is held, so
// Lambda answers each report 429, as in a storm. The simulated fleet and the long-polling agent
// (whose spool is on disk) alike.
import { GetQueueAttributesCommand } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sqsClient } from "../../lib/aws/clients.js";
import { postToFunctionUrl } from "../../lib/aws/function-url.js";
import { runAs } from "../../lib/aws/identity.js";
import { resources } from "../../lib/config.js";
import { getInstance } from "../../lib/instances/queries.js";
import { getHost } from "../../lib/placement/hosts.js";
import { getServiceHeartbeat } from "../../lib/placement/liveness.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, startTestRuntime } from "./harness.js";

const EVENTS = "novaless-compute-events";

describe.each(["simulated", "long-poll"] as const)("the report spool (%s hosts)", (transport) => {
  let runtime: Runtime;
  let client: Client;
  beforeAll(async () => {
    // no watchdog: a build that ends ACTIVE was saved by its report, not resent
    ({ runtime, client } = await startTestRuntime({ hosts: 2, transport, watchdogIntervalMs: 0 }));
  }, 120_000);
  afterAll(async () => {
    await runtime?.stop();
  });

  /** Every slot of compute-events' reserved concurrency, held until released. */
  function throttleComputeEvents(): () => void {
    const reserved = runtime.concurrency.reservedOf(EVENTS)!;
    const held = Array.from({ length: reserved }, () => runtime.concurrency.acquire(EVENTS));
    return () => {
      for (const r of held) r();
    };
  }

  it("keeps a report through a restart of the host's agent and delivers it once compute-events answers", async () => {
    const host = runtime.hosts.get("host-1")!;
    const release = throttleComputeEvents();
    let released = false;
    try {
      const id = await client.as(ADMIN).createServer({ name: "spooled", availability_zone: "nova:host-1" });
      // the host took the cast and spooled its answer; compute-events has not seen it
      const kept = await eventually(
        () => host.spool.load(),
        (reports) => reports.some((r) => r.key === id && r.body.includes('"build_started"')),
        30_000,
      );
      expect(kept.filter((r) => r.key === id)).toHaveLength(1);
      expect((await getInstance(id))?.task_state).not.toBe("spawning");
      // its cast is gone from the host's queue: deleted once the report was kept
      const queueUrl = (await getHost("host-1"))!.queue_url!;
      const counts = await eventually(
        async () =>
          (
            await sqsClient().send(
              new GetQueueAttributesCommand({
                QueueUrl: queueUrl,
                AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
              }),
            )
          ).Attributes ?? {},
        (a) => a.ApproximateNumberOfMessages === "0" && a.ApproximateNumberOfMessagesNotVisible === "0",
        10_000,
      );
      expect(counts.ApproximateNumberOfMessagesNotVisible).toBe("0");

      // the agent restarts while compute-events still refuses: its memory goes, its spool stays
      const restarted = runtime.restartHost("host-1");
      await new Promise((r) => setTimeout(r, 4000));
      expect((await host.spool.load()).some((r) => r.key === id)).toBe(true);
      release();
      released = true;
      await restarted;
      const active = await client.waitForStatus(id, ["ACTIVE"], 60_000);
      expect(active["OS-EXT-SRV-ATTR:host"]).toBe("host-1");
      expect((await getInstance(id))?.attempt).toBe(1);
      await eventually(
        () => host.spool.load(),
        (reports) => reports.length === 0,
        15_000,
      );
    } finally {
      if (!released) release();
    }
  }, 120_000);

  it("a host restarted while compute-events refuses registers once it answers, and a stop while it waits ends that at once", async () => {
    const release = throttleComputeEvents();
    let released = false;
    try {
      // restarted during the refusal: its registration waits (it is not given up)
      const first = runtime.restartHost("host-2");
      const outcome = first.then(
        () => "started",
        (e: Error) => e.message,
      );
      await new Promise((r) => setTimeout(r, 1500));
      // stopped meanwhile (an operator's stop, SIGTERM): at once, and that incarnation never starts
      const waiting = runtime.hosts.get("host-2")!.agent;
      const began = Date.now();
      await runAs(runtime.hostCredentials("host-2"), () => waiting.stop());
      expect(Date.now() - began).toBeLessThan(5000);
      expect(await outcome).not.toBe("started");
      // started again: it registers once compute-events answers, and builds
      const second = runtime.restartHost("host-2");
      await new Promise((r) => setTimeout(r, 1500));
      release();
      released = true;
      await second;
      const id = await client.as(ADMIN).createServer({ name: "after", availability_zone: "nova:host-2" });
      expect((await client.waitForStatus(id, ["ACTIVE"], 60_000))["OS-EXT-SRV-ATTR:host"]).toBe("host-2");
    } finally {
      if (!released) release();
    }
  }, 120_000);

  it("compute-events records what a heartbeat says of the host's spool, and the next heartbeat clears it", async () => {
    const asHost2 = <T>(fn: () => Promise<T>) => runAs(runtime.hostCredentials("host-2"), fn);
    const beat = (extra: object) =>
      asHost2(() =>
        postToFunctionUrl(
          resources().computeEventsUrl,
          JSON.stringify({
            version: 1,
            kind: "heartbeat",
            host: "host-2",
            sent_at: new Date().toISOString(),
            ...extra,
          }),
        ),
      );
    await beat({ spooled_reports: 4, spooled_oldest_seconds: 200 });
    expect((await getServiceHeartbeat("host-2"))?.report_spool).toEqual({ reports: 4, oldest_seconds: 200 });
    await beat({});
    expect(await getServiceHeartbeat("host-2")).not.toHaveProperty("report_spool");
  });
});
