// Security group membership reaching the hosts as Neutron's agents get it: a build's port joining
// the default group marks the group, and one member sync per window (build-requests →
// build-intake) casts each affected host its guests' fresh filters (refresh_port_filters). On the
// local runtime with fake hosts and the seeded `public` network, with a window of 4 s, so that the
// builds of one create fall in one window however loaded the machine is.
import { SendMessageCommand } from "@aws-sdk/client-sqs";
import { GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dynamo, sqsClient } from "../../lib/aws/clients.js";
import { peekDeadLetters } from "../../lib/aws/dead-letters.js";
import type { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { resources } from "../../lib/config.js";
import { MARK_STALE_MS, markedAt } from "../../lib/instances/security-group-refresh.js";
import type { PortFilter } from "../../lib/messages/port-filter.js";
import { defaultGroupId } from "../../lib/network/security-groups.js";
import { networkingTable } from "../../lib/network/store/table.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, startTestRuntime } from "./harness.js";
import { admitted, publicAddressOf } from "./port-filters.js";

const WINDOW_S = 4;

let runtime: Runtime;
let demo: Client;
let admin: Client;

beforeAll(async () => {
  ({ runtime, client: demo } = await startTestRuntime({
    hosts: 2,
    buildMs: 20,
    seedNetwork: true,
    env: { NOVALESS_SECURITY_GROUP_MEMBER_SYNC_WINDOW: String(WINDOW_S) },
  }));
  admin = demo.as(ADMIN);
});
afterAll(async () => runtime?.stop());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function hostOf(id: string): Promise<FakeDriver> {
  const host = (await admin.get(`/v2.1/servers/${id}`)).body.server["OS-EXT-SRV-ATTR:host"];
  return runtime.hosts.get(host)!.driver as FakeDriver;
}

/** The one port's filter a server's host enforces. */
const filterOf = async (id: string): Promise<PortFilter | undefined> =>
  [...((await hostOf(id)).portFilters.get(id)?.values() ?? [])][0];

/** How many refreshes the server's host applied to it (a spawn is not one). */
const applies = async (id: string) => (await hostOf(id)).filterApplies.get(id) ?? 0;

const addressOf = (id: string) => publicAddressOf(demo, id);

async function active(id: string): Promise<void> {
  const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"]);
  expect(s.status, JSON.stringify(s.fault)).toBe("ACTIVE");
}

/** The project's default group's mark, written as a change whose message was lost would leave it. */
async function leaveMark(at: number): Promise<void> {
  await dynamo().send(
    new UpdateCommand({
      TableName: networkingTable(),
      Key: { pk: `sgsync#${defaultGroupId("demo")}` },
      UpdateExpression: "SET marked_at = :at",
      ExpressionAttributeValues: { ":at": at },
    }),
  );
}

/** Wait until no sync of the default group is pending (its mark gone) and the window has passed. */
async function settled(): Promise<void> {
  await eventually(
    () => markedAt(defaultGroupId("demo")),
    (m) => m === undefined,
    60_000,
  );
  await sleep(WINDOW_S * 1000 + 1000);
}

describe("membership changes gathered per group", () => {
  let old: string;

  it("the builds of one window make one sync, and the old member admits each new one", async () => {
    old = await demo.createServer({ name: "sync-old" });
    await active(old);
    await settled();
    const before = await applies(old);

    const created = await demo.post("/v2.1/servers", {
      server: {
        name: "sync-new",
        flavorRef: "1",
        imageRef: "cirros",
        min_count: 3,
        max_count: 3,
        ...demo.networksDefault(),
      },
    });
    expect(created.status).toBe(202);
    const ids = (await demo.get("/v2.1/servers?name=^sync-new")).body.servers.map(
      (s: { id: string }) => s.id,
    ) as string[];
    expect(ids).toHaveLength(3);
    for (const id of ids) await active(id);
    const ips = await Promise.all(ids.map(addressOf));
    // within the window the old member's host admits all three
    const f = await eventually(
      () => filterOf(old),
      (x) => ips.every((ip) => admitted(x).includes(`${ip}/32`)),
      30_000,
    );
    for (const ip of ips) expect(admitted(f)).toContain(`${ip}/32`);
    await settled();
    // one sync for the three: one refresh of the old member, not three
    expect((await applies(old)) - before).toBe(1);
    // each new member's own filter (its spawn's, then the sync's) admits the old one
    const ipOld = await addressOf(old);
    for (const id of ids) expect(admitted(await filterOf(id))).toContain(`${ipOld}/32`);
    for (const id of ids) await demo.delete(`/v2.1/servers/${id}`);
    for (const id of ids) await admin.waitForStatus(id, ["GONE"]);
    // their deletes are one membership change too: the old member no longer admits them
    const gone = await eventually(
      () => filterOf(old),
      (x) => ips.every((ip) => !admitted(x).includes(`${ip}/32`)),
      30_000,
    );
    for (const ip of ips) expect(admitted(gone)).not.toContain(`${ip}/32`);
  });

  it("a mark whose message was lost holds until it is stale; the next change then sends again", async () => {
    await settled();
    // a fresh mark without its message: the change made now sends nothing (the mark says one is
    // on its way), so the old member does not hear of it
    await leaveMark(Date.now());
    const c = await demo.createServer({ name: "sync-lost" });
    await active(c);
    const ipC = await addressOf(c);
    await sleep(WINDOW_S * 1000 + 3000);
    expect(admitted(await filterOf(old))).not.toContain(`${ipC}/32`);
    // the same mark, now stale: the next change re-arms it, and its sync brings both
    await leaveMark(Date.now() - MARK_STALE_MS - 1000);
    const d = await demo.createServer({ name: "sync-rearmed" });
    await active(d);
    const ipD = await addressOf(d);
    const f = await eventually(
      () => filterOf(old),
      (x) => admitted(x).includes(`${ipC}/32`) && admitted(x).includes(`${ipD}/32`),
      30_000,
    );
    expect(admitted(f)).toEqual(expect.arrayContaining([`${ipC}/32`, `${ipD}/32`]));
    for (const id of [c, d, old]) await demo.delete(`/v2.1/servers/${id}`);
    for (const id of [c, d, old]) await admin.waitForStatus(id, ["GONE"]);
  });

  it("a new member's filter takes the old members' addresses from their memberships, which follow a port's new address", async () => {
    await settled();
    const a = await demo.createServer({ name: "addr-a" });
    await active(a);
    const ports = (await admin.get(`/networking/v2.0/ports?device_id=${a}`)).body.ports as {
      id: string;
      fixed_ips: { subnet_id: string; ip_address: string }[];
    }[];
    expect(ports).toHaveLength(1);
    const port = ports[0]!;
    const ip = port.fixed_ips[0]!;
    const membership = async () =>
      (
        await dynamo().send(
          new GetCommand({
            TableName: networkingTable(),
            Key: { pk: `sgmember#${defaultGroupId("demo")}#${port.id}` },
            ConsistentRead: true,
          }),
        )
      ).Item;
    expect((await membership())?.addresses).toEqual([ip.ip_address]);
    // the membership says another address: a new member's spawn admits that one, not the port's
    // (read from the memberships, not from every member's port)
    await dynamo().send(
      new UpdateCommand({
        TableName: networkingTable(),
        Key: { pk: `sgmember#${defaultGroupId("demo")}#${port.id}` },
        UpdateExpression: "SET addresses = :a",
        ExpressionAttributeValues: { ":a": ["192.0.2.77"] },
      }),
    );
    const b = await demo.createServer({ name: "addr-b" });
    await active(b);
    expect(admitted(await filterOf(b))).toContain("192.0.2.77/32");
    expect(admitted(await filterOf(b))).not.toContain(`${ip.ip_address}/32`);
    // the port's address changed through Networking: its membership holds the new one
    const last = ip.ip_address.split(".");
    const moved = [...last.slice(0, 3), String(((Number(last[3]) + 100) % 250) + 2)].join(".");
    const put = await admin.call("PUT", `/networking/v2.0/ports/${port.id}`, {
      port: { fixed_ips: [{ subnet_id: ip.subnet_id, ip_address: moved }] },
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect((await membership())?.addresses).toEqual([moved]);
    const f = await eventually(
      () => filterOf(b),
      (x) => admitted(x).includes(`${moved}/32`),
      30_000,
    );
    expect(admitted(f)).not.toContain("192.0.2.77/32");
    for (const id of [a, b]) await demo.delete(`/v2.1/servers/${id}`);
    for (const id of [a, b]) await admin.waitForStatus(id, ["GONE"]);
  });

  it("a malformed member sync goes to build-requests' DLQ with its reason", async () => {
    const body = JSON.stringify({ version: 1, kind: "security_groups_member_updated", request_id: "req-x" });
    await sqsClient().send(
      new SendMessageCommand({ QueueUrl: resources().buildRequestsQueueUrl, MessageBody: body }),
    );
    const letters = await eventually(
      () => peekDeadLetters(resources().buildRequestsDlqUrl),
      (ls) => ls.some((l) => l.body === body),
      30_000,
    );
    expect(letters.find((l) => l.body === body)?.reason).toMatch(/security_group_id/);
  });
});
