// A new host's registration as one TransactWriteItems (lib/placement/registration.ts), on the
// embedded DynamoDB with the real SDK clients: the provider item, its change-feed entry and its
// first heartbeat land together, and a host already there is left as it was for registerHost.
import { beforeAll, describe, expect, it } from "vitest";
import { dynamo } from "../../lib/aws/clients.js";
import { readChanges } from "../../lib/placement/change-log.js";
import { getHost, type HostRegistration, registerHost } from "../../lib/placement/hosts.js";
import { getServiceHeartbeat } from "../../lib/placement/liveness.js";
import { registerNewHost } from "../../lib/placement/registration.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

/** Every request that reached DynamoDB, as the SDK sent it. */
const sent: string[] = [];
beforeAll(() => {
  dynamo().middlewareStack.add(
    (next, context) => async (args) => {
      sent.push(context.commandName ?? "");
      return next(args);
    },
    { step: "build", name: "countRequests" },
  );
});

const registration = (host: string, vcpus = 8): HostRegistration => ({
  host,
  availability_zone: "nova",
  inventories: {
    VCPU: { total: vcpus, reserved: 0, allocation_ratio: 1, min_unit: 1, max_unit: vcpus, step_size: 1 },
  },
  hypervisor_type: "fake",
  hypervisor_version: 1,
  host_ip: "10.0.0.1",
  supported_instances: [["x86_64", "fake", "hvm"]],
  queue_url: `http://queue/${host}`,
});

describe("registerNewHost", () => {
  it("writes a new host's provider, its feed entry and its first heartbeat in one request", async () => {
    const since = new Date(Date.now() - 1000).toISOString();
    const now = new Date();
    sent.length = 0;
    const created = await registerNewHost(registration("reg-new"), now);
    expect(sent).toEqual(["TransactWriteItemsCommand"]);
    expect(created?.generation).toBe(1);
    const host = await getHost("reg-new");
    expect(host).toMatchObject({
      host: "reg-new",
      generation: 1,
      num_instances: 0,
      queue_url: "http://queue/reg-new",
    });
    expect(host?.changed_at).toBe(created?.changed_at);
    expect(await getServiceHeartbeat("reg-new")).toEqual({
      host: "reg-new",
      last_heartbeat: now.toISOString(),
    });
    const entries = (await readChanges(since)).filter((c) => c.host === "reg-new");
    expect(entries.map((c) => c.changed_at)).toEqual([host?.changed_at]);
  });

  it("leaves a host that is there already untouched: no provider, feed or heartbeat write", async () => {
    await registerHost(registration("reg-known"));
    const before = await getHost("reg-known");
    const heartbeatBefore = await getServiceHeartbeat("reg-known");
    const since = new Date().toISOString();
    expect(await registerNewHost(registration("reg-known", 16))).toBeUndefined();
    expect(await getHost("reg-known")).toEqual(before);
    expect(await getServiceHeartbeat("reg-known")).toEqual(heartbeatBefore);
    expect((await readChanges(since)).filter((c) => c.host === "reg-known")).toEqual([]);
    // ...and registerHost, told it is there, updates it (generation moves on, the new inventory)
    const updated = await registerHost(registration("reg-known", 16), { known: true });
    expect(updated.generation).toBe(2);
    expect(updated.inventories.VCPU?.total).toBe(16);
  });

  it("makes one host of twenty concurrent first registrations, and one feed entry", async () => {
    const since = new Date(Date.now() - 1000).toISOString();
    const results = await Promise.all(
      Array.from({ length: 20 }, () => registerNewHost(registration("reg-race"))),
    );
    expect(results.filter((r) => r !== undefined)).toHaveLength(1);
    expect((await readChanges(since)).filter((c) => c.host === "reg-race")).toHaveLength(1);
  });
});
