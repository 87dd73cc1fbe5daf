// A guest's power state counts as reported only once compute-events applied the report that
// carried it: the periodic sync sends it again after a report was refused (it told the control
// plane nothing), and does not spool the same state again while a report of it still waits.
import { expect, it } from "vitest";
import { BuildPath, type Reporter } from "../../../lib/compute/build-path.js";
import { POWER_STATE } from "../../../lib/compute/drivers/driver.js";
import { FakeDriver } from "../../../lib/compute/drivers/fake.js";
import { log } from "../../../lib/log.js";
import { guestSpec } from "../../drivers/guest.js";

const ID = "6f1c2d3e-0000-4000-8000-0000000000a1";

it("marks a power state reported when its report is applied, not when it is spooled", async () => {
  const driver = new FakeDriver({ host: "h", buildMs: 0, failAll: false });
  driver.adopt(guestSpec("i", { instance_uuid: ID }));
  const sent: { kind: string; power: unknown; settle: (applied: boolean) => void }[] = [];
  // the spool as BuildPath sees it: kept at once, applied (or refused) when the test says
  const reporter = {
    send: async (kind: string, body: Record<string, unknown>) => {
      let settle!: (applied: boolean) => void;
      const delivered = new Promise<boolean>((r) => {
        settle = r;
      });
      sent.push({ kind, power: body.power_state, settle });
      return { delivered };
    },
  } as unknown as Reporter;
  const path = new BuildPath("h", driver, reporter, log);
  const settled = () => new Promise((r) => setTimeout(r, 0));

  expect(await path.syncPowerStates()).toBe(1);
  expect(sent.map((s) => [s.kind, s.power])).toEqual([["power_state", POWER_STATE.RUNNING]]);
  // still in the spool: not sent again, at a sync of changes or of all
  expect(await path.syncPowerStates()).toBe(0);
  expect(await path.syncPowerStates(true)).toBe(0);

  // compute-events refused it: nothing was reported, so the next sync sends it again
  sent[0]!.settle(false);
  await settled();
  expect(await path.syncPowerStates()).toBe(1);
  sent[1]!.settle(true);
  await settled();
  // applied: a sync of changes has nothing to say
  expect(await path.syncPowerStates()).toBe(0);

  // the guest stops on its own: the lifecycle event reports it; until that is applied, the
  // change is not reported again
  driver.crash(ID);
  await settled();
  expect(sent.at(-1)).toMatchObject({ kind: "power_state", power: POWER_STATE.SHUTDOWN });
  expect(await path.syncPowerStates()).toBe(0);
  sent.at(-1)!.settle(true);
  await settled();
  expect(await path.syncPowerStates()).toBe(0);
  expect(sent).toHaveLength(3);
});
