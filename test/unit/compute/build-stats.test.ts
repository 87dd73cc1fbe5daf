// What a host's build reports leave to its heartbeat: a success that leaves builds in flight
// writes nothing to the host item (num_io_ops comes with the next heartbeat, once for every build
// that ended since); the last success in flight sets it in its own report; only a success after a
// failure resets failed_builds at once.
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

it("the last build in flight settles num_io_ops in its report, once a heartbeat check; the rest wait for the heartbeat; after a failure a success resets at once", async () => {
  const sent: { kind: string; body: Record<string, unknown> }[] = [];
  const reporter = {
    // kept and applied at once, as the spool does when compute-events answers
    send: async (kind: string, body: Record<string, unknown>) => {
      sent.push({ kind, body });
      return { delivered: Promise.resolve(true) };
    },
  } as unknown as Reporter;
  const built = new BuildPath("h", new FakeDriver({ host: "h", buildMs: 30, failAll: false }), reporter, log);
  const path = built as unknown as { spawn(msg: SpawnInstance, l: typeof log): Promise<void> };
  const last = () => {
    const s = sent.filter((x) => x.kind.startsWith("build_")).at(-1)!;
    return [s.kind, s.body.in_flight, s.body.after_failures, s.body.settles_io_ops];
  };

  // nothing ended yet (registration set num_io_ops and failed_builds to 0): no in_flight
  expect(built.heartbeatIo()).toEqual({});
  // the only build: its report settles num_io_ops (compute-events writes 0), the heartbeat owes nothing
  await path.spawn(spawn(1), log);
  expect(last()).toEqual(["build_succeeded", 0, false, true]);
  expect(built.heartbeatIo()).toEqual({});

  // two at once: the first to end leaves one in flight, owed to the heartbeat; the last settles
  const second = path.spawn(spawn(2), log);
  await new Promise((r) => setTimeout(r, 10));
  const third = path.spawn(spawn(3), log);
  await second;
  expect(last()).toEqual(["build_succeeded", 1, false, undefined]);
  await third;
  expect(last()).toEqual(["build_succeeded", 0, false, true]);
  // another in the same check does not settle again: the heartbeat carries it
  await path.spawn(spawn(4), log);
  expect(last()).toEqual(["build_succeeded", 0, false, undefined]);
  expect(built.heartbeatIo()).toEqual({ in_flight: 0 });
  built.heartbeatSent();

  // a failure is owed to the heartbeat (its report writes, but only when it applies)...
  await path.spawn(spawn(5, true), log);
  expect(last()).toEqual(["build_failed", 0, undefined, undefined]);
  expect(built.heartbeatIo()).toEqual({ in_flight: 0 });
  built.heartbeatSent();
  // ...a new check: the success after it resets failed_builds and settles
  expect(built.heartbeatIo()).toEqual({});
  await path.spawn(spawn(6), log);
  expect(last()).toEqual(["build_succeeded", 0, true, true]);
  expect(built.heartbeatIo()).toEqual({});
});
