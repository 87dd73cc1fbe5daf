// A host's side of a live migration (lib/compute/live-path.ts) with the fake driver and a
// recording reporter: a redelivered cast joins the copy under way (one copy, the same outcome),
// an abort that overtakes its cast stops the copy before it begins, force_complete ends it now.
import { describe, expect, it } from "vitest";
import type { Reporter } from "../../../lib/compute/build-path.js";
import { FakeDriver } from "../../../lib/compute/drivers/fake.js";
import { LivePath } from "../../../lib/compute/live-path.js";
import { log } from "../../../lib/log.js";
import type { LiveMigrationControl, LiveMigrationStepMessage } from "../../../lib/messages/compute.js";
import { guestSpec } from "./guest-fixture.js";

const ID = "6f1c2d3e-0000-4000-8000-000000000001";
const MIG = "6f1c2d3e-0000-4000-8000-0000000000aa";
const guest = guestSpec(ID);

function setup(ms: number) {
  const driver = new FakeDriver({ host: "src", buildMs: 0, failAll: false, liveMigrationMs: ms });
  driver.adopt(guest);
  const sent: { kind: string; body: Record<string, unknown> }[] = [];
  const reporter = {
    // kept and applied at once, as the spool does when compute-events answers
    send: async (kind: string, body: Record<string, unknown>) => {
      sent.push({ kind, body });
      return { delivered: Promise.resolve(true) };
    },
  } as unknown as Reporter;
  const path = new LivePath(
    "src",
    driver,
    reporter,
    new Set(),
    () => undefined,
    () => false,
  );
  return { driver, sent, path };
}

const step = (attempt = 2): LiveMigrationStepMessage => ({
  version: 1,
  kind: "live_migration",
  request_id: "req-1",
  instance_uuid: ID,
  host: "src",
  migration_uuid: MIG,
  attempt,
  same_host: false,
  dest: "dst",
  dest_ip: "10.0.0.2",
  block_migration: null,
});
const control = (action: "abort" | "force_complete"): LiveMigrationControl => ({
  version: 1,
  kind: "live_migration_control",
  action,
  request_id: "req-2",
  instance_uuid: ID,
  host: "src",
  migration_uuid: MIG,
  attempt: 2,
  same_host: false,
});
const outcomes = (sent: { kind: string; body: Record<string, unknown> }[]) =>
  sent.filter((s) => s.kind === "move_step").map((s) => s.body.ok);

describe("LivePath", () => {
  it("joins a redelivered cast to the copy under way: one copy, the outcome reported twice", async () => {
    const { driver, sent, path } = setup(200);
    await Promise.all([path.step(step(), log), path.step(step(), log)]);
    expect(driver.liveMigrations.get(ID)).toBe(1);
    expect(outcomes(sent)).toEqual([true, true]);
    expect(driver.has(ID)).toBe(false);
    expect(sent.filter((s) => s.kind === "live_migration_progress").length).toBeGreaterThan(0);
    // and once more after it ended: the same outcome, nothing copied again
    await path.step(step(), log);
    expect(outcomes(sent)).toEqual([true, true, true]);
    expect(driver.liveMigrations.get(ID)).toBe(1);
  });

  it("an abort that overtakes its cast stops the copy before it begins; the guest stays", async () => {
    const { driver, sent, path } = setup(200);
    path.control(control("abort"), log);
    await path.step(step(), log);
    expect(outcomes(sent)).toEqual([false]);
    expect(driver.has(ID)).toBe(true);
  });

  it("an abort of another attempt's copy is not this one's", async () => {
    const { sent, path } = setup(100);
    path.control(control("abort"), log);
    await path.step(step(3), log);
    expect(outcomes(sent)).toEqual([true]);
  });

  it("force_complete ends a long copy at once", async () => {
    const { driver, sent, path } = setup(60_000);
    const t0 = Date.now();
    const done = path.step(step(), log);
    await new Promise((r) => setTimeout(r, 50));
    path.control(control("force_complete"), log);
    await done;
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(outcomes(sent)).toEqual([true]);
    expect(driver.has(ID)).toBe(false);
  });
});
