// The host's resize and cold migration steps (move-steps.ts) with a driver that carries the
// guest's disk (its `cold`: libvirt) and with one that does not (fake, exec): which of Nova's
// driver calls each step makes, and what each report says. The calls are recorded by a stand-in;
// test/drivers/libvirt-qemu.test.ts runs libvirt's on real QEMU.
import { describe, expect, it } from "vitest";
import { BuildPath, type Reporter } from "../../../lib/compute/build-path.js";
import type { ColdMigration, ColdMigrationDriver, GuestSpec } from "../../../lib/compute/drivers/driver.js";
import { FakeDriver } from "../../../lib/compute/drivers/fake.js";
import { log } from "../../../lib/log.js";
import type { FlavorSpec } from "../../../lib/messages/common.js";
import type { MoveStepMessage } from "../../../lib/messages/compute.js";
import { guestSpec } from "./guest-fixture.js";

const ID = "6f1c2d3e-0000-4000-8000-000000000003";
const MIGRATION = "7a2b3c4d-0000-4000-8000-000000000004";
const guest = guestSpec(ID, { id: "2", name: "m1.small", memory_mb: 2048, root_gb: 20 });

function step(kind: MoveStepMessage["kind"], sameHost = false): MoveStepMessage {
  const base = {
    version: 1 as const,
    request_id: "req-1",
    instance_uuid: ID,
    host: "h",
    migration_uuid: MIGRATION,
    attempt: 2,
    same_host: sameHost,
  };
  if (kind === "resize_instance") return { ...base, kind, new_flavor: guest.flavor };
  return (
    kind === "finish_resize" || kind === "finish_revert_resize" || kind === "rebuild_instance"
      ? { ...base, kind, guest, power_on: true }
      : { ...base, kind }
  ) as MoveStepMessage;
}

/** A host whose driver is the fake one, with a recording `cold` when `carries`. */
function setup(carries: boolean, failFinish = false) {
  const fake = new FakeDriver({ host: "h", buildMs: 0, failAll: false });
  const calls: [string, ...unknown[]][] = [];
  const cold: ColdMigrationDriver = {
    async migrateDiskAndPowerOff(id: string, m: ColdMigration, flavor?: FlavorSpec) {
      calls.push(["migrateDiskAndPowerOff", id, m, flavor?.name]);
      await fake.powerOff(id);
    },
    async finishMigration(g: GuestSpec, m: ColdMigration, powerOn: boolean) {
      calls.push(["finishMigration", g.instance_uuid, m, powerOn]);
      if (failFinish) throw new Error(`host h could not finish migration ${m.uuid} of instance ${ID}: lost`);
      fake.adopt(g);
    },
    async finishRevertMigration(g: GuestSpec, m: ColdMigration, powerOn: boolean) {
      calls.push(["finishRevertMigration", g.instance_uuid, m, powerOn]);
    },
    async confirmMigration(id: string, m: ColdMigration) {
      calls.push(["confirmMigration", id, m]);
    },
  };
  const driver = carries ? Object.assign(fake, { cold }) : fake;
  const reports: Record<string, unknown>[] = [];
  const reporter = {
    send: async (kind: string, body: Record<string, unknown>) => {
      if (kind === "move_step") reports.push(body);
      return { delivered: Promise.resolve(true) };
    },
  } as unknown as Reporter;
  // the private step, as handle() calls it once a message is parsed
  const path = new BuildPath("h", driver, reporter, log) as unknown as {
    moveStep(msg: MoveStepMessage, l: typeof log): Promise<void>;
  };
  return { fake, calls, reports, run: (m: MoveStepMessage) => path.moveStep(m, log) };
}

describe("a driver that carries the disk", () => {
  it("gets Nova's calls: migrate_disk_and_power_off, finish_migration, finish_revert_migration, confirm_migration", async () => {
    const { fake, calls, reports, run } = setup(true);
    const move = { uuid: MIGRATION, sameHost: false };
    fake.adopt(guest);
    await run(step("resize_instance"));
    await run(step("finish_resize"));
    await run(step("finish_revert_resize"));
    await run(step("confirm_resize"));
    expect(calls).toEqual([
      ["migrateDiskAndPowerOff", ID, move, "m1.small"],
      ["finishMigration", ID, move, true],
      ["finishRevertMigration", ID, move, true],
      ["confirmMigration", ID, move],
    ]);
    expect(reports.map((r) => [r.step, r.ok])).toEqual([
      ["resize_instance", true],
      ["finish_resize", true],
      ["finish_revert_resize", true],
      ["confirm_resize", true],
    ]);
  });

  it("on another host, revert_resize destroys the destination's guest; on its own, it leaves the guest to finish_revert_migration", async () => {
    const other = setup(true);
    other.fake.adopt(guest);
    await other.run(step("revert_resize"));
    expect(other.fake.has(ID)).toBe(false);
    const same = setup(true);
    same.fake.adopt(guest);
    await same.run(step("revert_resize", true));
    expect(same.fake.has(ID)).toBe(true);
    await same.run(step("finish_revert_resize", true));
    expect(same.calls).toEqual([["finishRevertMigration", ID, { uuid: MIGRATION, sameHost: true }, true]]);
  });

  it("a finish that fails is reported with the driver's words, and nothing of the guest stays", async () => {
    const { fake, reports, run } = setup(true, true);
    await run(step("finish_resize"));
    expect(reports).toMatchObject([
      {
        step: "finish_resize",
        ok: false,
        details: `host h could not finish migration ${MIGRATION} of instance ${ID}: lost`,
      },
    ]);
    expect(fake.has(ID)).toBe(false);
  });

  it("a source that no longer has the guest hands nothing over", async () => {
    const { calls, reports, run } = setup(true);
    await run(step("resize_instance"));
    expect(calls).toEqual([]);
    expect(reports.map((r) => r.ok)).toEqual([true]);
  });
});

describe("a driver that does not (fake, exec)", () => {
  it("creates the guest anew at the destination, and confirm destroys the source's", async () => {
    const dest = setup(false);
    await dest.run(step("finish_resize"));
    expect(dest.fake.has(ID)).toBe(true);
    const source = setup(false);
    source.fake.adopt(guest);
    await source.run(step("resize_instance"));
    expect(source.fake.has(ID)).toBe(true);
    await source.run(step("confirm_resize"));
    expect(source.fake.has(ID)).toBe(false);
    expect([...dest.reports, ...source.reports].map((r) => [r.step, r.ok])).toEqual([
      ["finish_resize", true],
      ["resize_instance", true],
      ["confirm_resize", true],
    ]);
  });
});
