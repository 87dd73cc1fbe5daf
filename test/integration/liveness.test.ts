// Host liveness on the embedded DynamoDB with the real SDK clients: heartbeats are writes to the
// Services table only, and the provider item (what the scheduler caches) is written once when a
// host goes down and once when it comes back, never in between.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { dynamo } from "../../lib/aws/clients.js";
import { resources } from "../../lib/config.js";
import { getHost } from "../../lib/placement/hosts.js";
import {
  getServiceHeartbeat,
  heartbeat,
  isHeartbeatAlive,
  isServiceUp,
  sweepLiveness,
} from "../../lib/placement/liveness.js";
import { setServiceStatus } from "../../lib/placement/services.js";
import { registerTestHost } from "./hosts.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

const DOWN_TIME = 120;
const T0 = Date.parse("2026-11-23T12:00:00.000Z");
const at = (seconds: number) => new Date(T0 + seconds * 1000);

/** Every write request that reached DynamoDB, by table, as the SDK sent it. */
const writes: { command: string; table: string }[] = [];
const WRITES = new Set([
  "PutItemCommand",
  "UpdateItemCommand",
  "DeleteItemCommand",
  "TransactWriteItemsCommand",
]);

beforeAll(() => {
  dynamo().middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { TableName?: string };
      if (WRITES.has(context.commandName ?? "") && input.TableName)
        writes.push({ command: context.commandName!, table: input.TableName });
      return next(args);
    },
    { step: "build", name: "countWrites" },
  );
});
afterEach(() => {
  writes.length = 0;
});

/** Runs `action` before the first request matching `when` goes on; returns the remover. */
function once(
  name: string,
  when: (input: { TableName?: string; UpdateExpression?: string }) => boolean,
  action: () => unknown,
): () => void {
  let done = false;
  dynamo().middlewareStack.add(
    (next) => async (args) => {
      const input = args.input as { TableName?: string; UpdateExpression?: string };
      if (!done && when(input)) {
        done = true;
        await action();
      }
      return next(args);
    },
    { step: "initialize", name },
  );
  return () => dynamo().middlewareStack.remove(name);
}

/**
 * The sweep at `seconds`, in a fleet whose report path is sound: a host of its own heartbeats just
 * before (a lone silent host would be a silent fleet, which the sweep holds on:
 * lib/placement/report-path.ts). That heartbeat's write is not counted.
 */
async function soundSweep(seconds: number) {
  const before = writes.length;
  await heartbeat("live-anchor", at(seconds));
  writes.splice(before);
  return sweepLiveness(DOWN_TIME, at(seconds));
}

const providerWrites = () => writes.filter((w) => w.table === resources().hostsTable).length;
const serviceWrites = () => writes.filter((w) => w.table === resources().servicesTable).length;

describe("liveness", () => {
  it("marks a silent host down on its provider once, and a heartbeat brings it back at once", async () => {
    await registerTestHost("live-a");
    await registerTestHost("live-b");
    writes.length = 0;

    await heartbeat("live-a", at(0));
    await heartbeat("live-b", at(0));
    expect([providerWrites(), serviceWrites()]).toEqual([0, 2]);
    writes.length = 0;

    // Within service_down_time: the sweep reads, writes nothing.
    expect((await soundSweep(100)).markedDown).toEqual([]);
    expect(writes).toEqual([]);

    // Both silent past service_down_time: one provider write each, stamped for the change feed.
    const sweep = await soundSweep(200);
    expect(sweep.markedDown.sort()).toEqual(["live-a", "live-b"]);
    expect(providerWrites()).toBe(2);
    const a = (await getHost("live-a"))!;
    expect(a.service.down_since).toBe(at(200).toISOString());
    // stamped with the writer's clock (not the heartbeat's age), so the scheduler's feed sees it
    expect((a as { changed_at?: string }).changed_at! > at(200).toISOString()).toBe(true);
    expect(isServiceUp(a)).toBe(false);

    // Still silent: the next sweeps find them marked and write nothing.
    writes.length = 0;
    expect((await soundSweep(260)).markedDown).toEqual([]);
    expect((await soundSweep(320)).markedDown).toEqual([]);
    expect(writes).toEqual([]);

    // live-a heartbeats again: its provider is cleared by that heartbeat, not by the next sweep.
    await heartbeat("live-a", at(330));
    expect(providerWrites()).toBe(1);
    expect(isServiceUp((await getHost("live-a"))!)).toBe(true);
    expect((await getServiceHeartbeat("live-a"))?.down_since).toBeUndefined();
    expect(isServiceUp((await getHost("live-b"))!)).toBe(false);

    // Further heartbeats and sweeps: Services writes only.
    writes.length = 0;
    await heartbeat("live-a", at(360));
    await heartbeat("live-a", at(400));
    const quiet = await soundSweep(420);
    expect(quiet.markedDown).toEqual([]);
    expect([providerWrites(), serviceWrites()]).toEqual([0, 2]);
    console.log(
      `liveness: 2 hosts down and 1 back = ${3} provider writes; 4 quiet sweeps and 4 heartbeats = 0 provider writes`,
    );
  });

  it("a heartbeat since the sweep read wins: the host is not marked", async () => {
    await registerTestHost("live-c");
    await heartbeat("live-c", at(0));
    // The sweep judges at 200 s, but the heartbeat it read is no longer the last one.
    await heartbeat("live-c", at(190));
    writes.length = 0;
    const sweep = await soundSweep(200);
    expect(sweep.markedDown).not.toContain("live-c");
    expect(isServiceUp((await getHost("live-c"))!)).toBe(true);
  });

  it("a heartbeat landing between the Services mark and the provider's: the mark is taken back", async () => {
    await registerTestHost("live-e");
    await heartbeat("live-e", at(0));
    // The sweep's provider write is held until the host has heartbeated (and cleared what it saw).
    let raced = false;
    dynamo().middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as { TableName?: string; UpdateExpression?: string };
        if (
          !raced &&
          input.TableName === resources().hostsTable &&
          input.UpdateExpression?.startsWith("SET service.down_since")
        ) {
          raced = true;
          await heartbeat("live-e", at(199));
        }
        return next(args);
      },
      { step: "initialize", name: "heartbeatMidSweep" },
    );
    try {
      const sweep = await soundSweep(200);
      expect(raced).toBe(true);
      expect(sweep.markedDown).not.toContain("live-e");
    } finally {
      dynamo().middlewareStack.remove("heartbeatMidSweep");
    }
    expect(isServiceUp((await getHost("live-e"))!)).toBe(true);
    expect((await getServiceHeartbeat("live-e"))?.down_since).toBeUndefined();
  });

  it("a sweep cut short after the Services mark is finished by the next one", async () => {
    await registerTestHost("live-f");
    await heartbeat("live-f", at(0));
    const stop = once(
      "cutShort",
      (input) => input.UpdateExpression?.startsWith("SET service.down_since") === true,
      () => {
        throw new Error("the sweep's Lambda timed out");
      },
    );
    await expect(soundSweep(200)).rejects.toThrow(/timed out/);
    stop();
    expect((await getServiceHeartbeat("live-f"))?.down_since).toBe(at(200).toISOString());
    expect(isServiceUp((await getHost("live-f"))!)).toBe(true);

    const sweep = await soundSweep(260);
    expect(sweep.markedDown).toContain("live-f");
    expect((await getHost("live-f"))!.service.down_since).toBe(at(200).toISOString());
    expect((await soundSweep(320)).markedDown).not.toContain("live-f");
  });

  it("a sweep finishing its mark between a heartbeat's two writes: the heartbeat clears it again", async () => {
    await registerTestHost("live-g");
    await heartbeat("live-g", at(0));
    const cut = once(
      "cutShort",
      (input) => input.UpdateExpression?.startsWith("SET service.down_since") === true,
      () => {
        throw new Error("the sweep's Lambda timed out");
      },
    );
    await expect(soundSweep(200)).rejects.toThrow(/timed out/);
    cut();
    // The host heartbeats; before it clears its Services mark, the next sweep finishes the old one.
    const stop = once(
      "sweepMidHeartbeat",
      (input) =>
        input.TableName === resources().servicesTable &&
        input.UpdateExpression === "REMOVE down_since, provider_marked",
      () => soundSweep(215),
    );
    await heartbeat("live-g", at(210));
    stop();
    expect(isServiceUp((await getHost("live-g"))!)).toBe(true);
    expect(await getServiceHeartbeat("live-g")).not.toHaveProperty("down_since");
  });

  it("forced_down is mirrored onto the heartbeat, where the watchdog reads liveness", async () => {
    await registerTestHost("live-d");
    await heartbeat("live-d", at(0));
    await setServiceStatus("live-d", { forced_down: true });
    const s = (await getServiceHeartbeat("live-d"))!;
    expect(s.forced_down).toBe(true);
    expect(isHeartbeatAlive(s, DOWN_TIME, at(1).getTime())).toBe(false);
    expect(isServiceUp((await getHost("live-d"))!)).toBe(false);
    await setServiceStatus("live-d", { forced_down: false });
    expect(isHeartbeatAlive((await getServiceHeartbeat("live-d"))!, DOWN_TIME, at(1).getTime())).toBe(true);
  });

  it("records the host's report spool in the heartbeat's one write, and clears it with the next that has none", async () => {
    await registerTestHost("live-s");
    writes.length = 0;
    await heartbeat("live-s", at(0), { reports: 3, oldest_seconds: 240 });
    expect([providerWrites(), serviceWrites()]).toEqual([0, 1]);
    expect((await getServiceHeartbeat("live-s"))?.report_spool).toEqual({ reports: 3, oldest_seconds: 240 });
    await heartbeat("live-s", at(40));
    expect([providerWrites(), serviceWrites()]).toEqual([0, 2]);
    expect(await getServiceHeartbeat("live-s")).not.toHaveProperty("report_spool");
  });
});
