// A host's answer to get_diagnostics (BuildPath): the driver's figures for a running guest, the
// power state of one not running (the API's 409 names it, as Nova's InstanceInvalidState), and an
// error naming the host and the instance when the guest is not there or the driver cannot read it.
import { describe, expect, it } from "vitest";
import { BuildPath, type Reporter } from "../../../lib/compute/build-path.js";
import { FakeDriver } from "../../../lib/compute/drivers/fake.js";
import { log } from "../../../lib/log.js";
import type { GetDiagnostics } from "../../../lib/messages/compute.js";
import { guestSpec } from "./guest-fixture.js";

const ID = "6f1c2d3e-0000-4000-8000-0000000000d1";
const ask: GetDiagnostics = {
  version: 1,
  kind: "get_diagnostics",
  request_id: "req-d",
  instance_uuid: ID,
  host: "h",
};
const guest = guestSpec(ID, { vcpus: 2 });

function setup() {
  const driver = new FakeDriver({ host: "h", buildMs: 0, failAll: false });
  const sent: { kind: string; body: Record<string, unknown> }[] = [];
  const reporter = {
    // kept and applied at once, as the spool does when compute-events answers
    send: async (kind: string, body: Record<string, unknown>) => {
      sent.push({ kind, body });
      return { delivered: Promise.resolve(true) };
    },
  } as unknown as Reporter;
  const path = new BuildPath("h", driver, reporter, log) as unknown as {
    diagnostics(msg: GetDiagnostics): Promise<void>;
  };
  return { driver, sent, path };
}

describe("get_diagnostics on a host", () => {
  it("answers a running guest's figures", async () => {
    const { driver, sent, path } = setup();
    await driver.spawn(guest);
    await path.diagnostics(ask);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.kind).toBe("diagnostics");
    expect(sent[0]!.body).toMatchObject({ request_id: "req-d", error: null });
    expect((sent[0]!.body.diagnostics as { cpu_details: unknown[] }).cpu_details).toHaveLength(2);
  });

  it("answers the power state of a guest that is not running, with no figures", async () => {
    const { driver, sent, path } = setup();
    await driver.spawn(guest);
    await driver.powerOff(ID);
    await path.diagnostics(ask);
    expect(sent[0]!.body).toMatchObject({ diagnostics: null, power_state: 4, error: null });
  });

  it("names the host and the instance when the guest is not there or the driver fails", async () => {
    const { driver, sent, path } = setup();
    await path.diagnostics(ask);
    expect(sent[0]!.body.error).toBe(`instance ${ID} is not defined on host h`);

    await driver.spawn(guest);
    driver.diagnostics = async () => {
      throw new Error("the hypervisor is gone");
    };
    await path.diagnostics(ask);
    expect(sent[1]!.body.error).toBe(
      `host h cannot read the diagnostics of instance ${ID}: the hypervisor is gone`,
    );
  });
});
