// What a host's build reports leave to its heartbeat: a success after no failure writes nothing
// to the host item (num_io_ops comes with the next heartbeat, once for every build that ended
// since), and only a success after a failure resets failed_builds at once.
import { expect, it } from "vitest";
import { BuildPath, type Reporter } from "../../../lib/compute/build-path.js";
import { FAKE_FAIL_PROPERTY, FakeDriver } from "../../../lib/compute/drivers/fake.js";
import { log } from "../../../lib/log.js";
import type { SpawnInstance } from "../../../lib/messages/compute.js";
import { guestSpec } from "../../drivers/guest.js";

const guest = (id: string, fail = false) =>
  guestSpec("i", {
    instance_uuid: id,
    image: { id: "i", name: "cirros", properties: fail ? { [FAKE_FAIL_PROPERTY]: "true" } : {} },
  });
const spawn = (n: number, fail = false): SpawnInstance =>
  ({
    version: 1,
    kind: "spawn_instance",
    request_id: `req-${n}`,
    instance_uuid: `6f1c2d3e-0000-4000-8000-00000000000${n}`,
    host: "h",
    attempt: 1,
    guest: guest(`6f1c2d3e-0000-4000-8000-00000000000${n}`, fail),
  }) as SpawnInstance;

it("a success after none failed leaves num_io_ops to the next heartbeat; after a failure it resets at once", async () => {
  const sent: { kind: string; body: Record<string, unknown> }[] = [];
  const reporter = {
    send: async (kind: string, body: Record<string, unknown>) => void sent.push({ kind, body }),
  } as unknown as Reporter;
  const built = new BuildPath("h", new FakeDriver({ host: "h", buildMs: 0, failAll: false }), reporter, log);
  const path = built as unknown as { spawn(msg: SpawnInstance, l: typeof log): Promise<void> };
  const ends = () =>
    sent.filter((s) => s.kind.startsWith("build_")).map((s) => [s.kind, s.body.after_failures]);

  // nothing ended yet (registration set num_io_ops and failed_builds to 0): no in_flight
  expect(built.heartbeatIo()).toEqual({});
  // successes write nothing to the host
  await path.spawn(spawn(1), log);
  await path.spawn(spawn(2), log);
  expect(ends()).toEqual([
    ["build_succeeded", false],
    ["build_succeeded", false],
  ]);
  expect(built.heartbeatIo()).toEqual({ in_flight: 0 });
  built.heartbeatSent();
  expect(built.heartbeatIo()).toEqual({});

  await path.spawn(spawn(3, true), log);
  await path.spawn(spawn(4), log);
  expect(ends().slice(2)).toEqual([
    ["build_failed", undefined],
    ["build_succeeded", true],
  ]);
  // a build that ends between a heartbeat's composing and its send is still owed
  expect(built.heartbeatIo()).toEqual({ in_flight: 0 });
  await path.spawn(spawn(5), log);
  built.heartbeatSent();
  expect(built.heartbeatIo()).toEqual({ in_flight: 0 });
});
