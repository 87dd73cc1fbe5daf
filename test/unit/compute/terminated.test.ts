// A host never brings back a guest it terminated: a failed move's start of its source guest and
// the delete's terminate can reach the host in either order (the host reads no database), and a
// start that finds its guest gone recreates it from the message, as Nova's start does. The soak
// found the deleted server's guest running on its source after exactly that race.
import { describe, expect, it } from "vitest";
import { BuildPath, type Reporter } from "../../../lib/compute/build-path.js";
import { FakeDriver } from "../../../lib/compute/drivers/fake.js";
import { log } from "../../../lib/log.js";
import type { PowerAction, SpawnInstance } from "../../../lib/messages/compute.js";
import { guestSpec } from "./guest-fixture.js";

const ID = "6f1c2d3e-0000-4000-8000-000000000002";
const guest = guestSpec(ID);
const start: PowerAction = {
  version: 1,
  kind: "power_action",
  action: "start",
  request_id: "req-1",
  instance_uuid: ID,
  host: "h",
  guest,
} as PowerAction;

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
  // the private steps, as handle() calls them once a message is parsed
  const path = new BuildPath("h", driver, reporter, log) as unknown as {
    tombstone(id: string, attempt: number): void;
    powerAction(msg: PowerAction, l: typeof log): Promise<void>;
    spawn(msg: SpawnInstance, l: typeof log): Promise<void>;
  };
  return { driver, sent, path };
}

describe("a start after a terminate", () => {
  it("recreates a guest a host reboot took (Nova's start from the database)", async () => {
    const { driver, path } = setup();
    await path.powerAction(start, log);
    expect(driver.has(ID)).toBe(true);
  });

  it("does not bring back a guest this host terminated, and says why", async () => {
    const { driver, path, sent } = setup();
    driver.adopt(guest);
    path.tombstone(ID, Number.POSITIVE_INFINITY);
    await driver.destroy(ID);
    await path.powerAction(start, log);
    expect(driver.has(ID)).toBe(false);
    const done = sent.find((s) => s.kind === "action_done")!.body;
    expect(done.ok).toBe(false);
    expect(done.details).toBe(`instance ${ID} was terminated on host h: a start does not bring it back`);
  });
});

describe("a spawn redelivered after its attempt ended here", () => {
  const spawn = (attempt: number): SpawnInstance =>
    ({
      version: 1,
      kind: "spawn_instance",
      request_id: "req-1",
      instance_uuid: ID,
      host: "h",
      attempt,
      guest,
    }) as SpawnInstance;

  it("builds nothing again for that attempt and repeats its failure; a later attempt builds", async () => {
    const { driver, path, sent } = setup();
    const failing = new FakeDriver({ host: "h", buildMs: 0, failAll: true });
    // attempt 1 fails here (the host destroys what it half built), the build goes elsewhere
    const broken = new BuildPath(
      "h",
      failing,
      { send: async () => ({ delivered: Promise.resolve(true) }) } as unknown as Reporter,
      log,
    ) as unknown as {
      spawn(msg: SpawnInstance, l: typeof log): Promise<void>;
      gone: Map<string, number>;
    };
    await broken.spawn(spawn(1), log);
    expect(broken.gone.get(ID)).toBe(1);
    // the same host's memory, on a driver that would now succeed: the late copy is refused
    path.tombstone(ID, 1);
    await path.spawn(spawn(1), log);
    expect(driver.has(ID)).toBe(false);
    expect(sent.at(-1)).toMatchObject({ kind: "build_failed", body: { attempt: 1 } });
    await path.spawn(spawn(3), log);
    expect(driver.has(ID)).toBe(true);
  });
});
