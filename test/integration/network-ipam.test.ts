// The Networking store's address allocation over the real AWS SDK (the local emulators): ports
// racing for the last addresses of a /28 get distinct ones and the rest Neutron's 409, a fixed IP
// goes to one port only, a released address is reused, a redelivered allocation gets its own
// address back, a port's delete frees what it holds, and an IPv6 /124 allocates as a /28 does.
import { randomUUID } from "node:crypto";
import { PutCommand } from "@aws-sdk/lib-dynamodb";
import { describe, expect, it } from "vitest";
import { dynamo } from "../../lib/aws/clients.js";
import { meterReading, startMeter, stopMeter } from "../../lib/aws/meter.js";
import { defaultGateway, defaultPools, NetworkingError, parseCidr } from "../../lib/network/cidr.js";
import { addressHolder, allocateAddress, releaseAddress } from "../../lib/network/store/addresses.js";
import { createNetwork, deleteNetwork } from "../../lib/network/store/networks.js";
import { bindPort, createPort, deletePort } from "../../lib/network/store/ports.js";
import { createSubnet, deleteSubnet } from "../../lib/network/store/subnets.js";
import {
  getNetwork,
  getPort,
  getSubnet,
  networkingTable,
  type Subnet,
} from "../../lib/network/store/table.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

async function network(): Promise<string> {
  const id = randomUUID();
  expect(await createNetwork({ id, name: `net-${id.slice(0, 4)}`, project_id: "p1", shared: true })).toBe(
    true,
  );
  return id;
}

async function subnet(networkId: string, cidrText: string): Promise<Subnet> {
  const cidr = parseCidr(cidrText);
  const gateway_ip = defaultGateway(cidr);
  const s: Subnet = {
    id: randomUUID(),
    network_id: networkId,
    project_id: "p1",
    ip_version: cidr.version,
    cidr: cidr.text,
    gateway_ip,
    allocation_pools: defaultPools(cidr, gateway_ip),
  };
  expect(await createSubnet(s)).toBe(true);
  return s;
}

async function port(networkId: string): Promise<string> {
  const id = randomUUID();
  expect(
    await createPort({ id, network_id: networkId, project_id: "p1", device_owner: "compute:nova" }),
  ).toBe(true);
  return id;
}

async function refusal(p: Promise<unknown>): Promise<{ status: number; type: string; message: string }> {
  try {
    await p;
  } catch (e) {
    if (!(e instanceof NetworkingError)) throw e;
    return { status: e.status, type: e.type, message: e.message };
  }
  throw new Error("not refused");
}

describe("address allocation (one conditional write per address)", () => {
  it("40 ports racing for a /28's 13 free addresses: 13 win distinct ones, 27 get Neutron's 409", async () => {
    const net = await network();
    const s = await subnet(net, "192.168.7.0/28");
    const ports = await Promise.all(Array.from({ length: 40 }, () => port(net)));
    const outcomes = await Promise.allSettled(ports.map((p) => allocateAddress(s, p)));
    const won = outcomes.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []));
    expect(won).toHaveLength(13);
    expect(new Set(won).size).toBe(13);
    expect([...won].sort((a, b) => Number(a.split(".")[3]) - Number(b.split(".")[3]))).toEqual(
      Array.from({ length: 13 }, (_, i) => `192.168.7.${i + 2}`),
    );
    for (const o of outcomes) {
      if (o.status === "rejected") {
        expect(o.reason).toBeInstanceOf(NetworkingError);
        expect((o.reason as NetworkingError).status).toBe(409);
        expect((o.reason as NetworkingError).message).toBe(
          `No more IP addresses available on network ${net}.`,
        );
      }
    }
    // each winner's port records its address, and the address item names the port
    for (const [i, o] of outcomes.entries()) {
      if (o.status !== "fulfilled") continue;
      expect((await getPort(ports[i]!))!.fixed_ips).toEqual([{ subnet_id: s.id, ip_address: o.value }]);
      expect(await addressHolder(s.id, o.value)).toBe(ports[i]);
    }
  });

  it("an unasked allocation on a roomy subnet is O(1): the port, the cursor, the address, the record", async () => {
    const net = await network();
    const s = await subnet(net, "10.20.0.0/16");
    for (let i = 0; i < 5; i++) await allocateAddress(s, await port(net));
    const p = await port(net);
    startMeter();
    try {
      expect(await allocateAddress(s, p)).toBe("10.20.0.7");
      const requests: Record<string, number> = {};
      for (const usage of Object.values(meterReading()))
        for (const [op, n] of Object.entries(usage.requests)) requests[op] = (requests[op] ?? 0) + n;
      expect(requests).toEqual({ "dynamodb:GetItem": 1, "dynamodb:UpdateItem": 2, "dynamodb:PutItem": 1 });
    } finally {
      stopMeter();
    }
  });

  it("a fixed IP asked by two ports at once goes to one; the other gets IpAddressAlreadyAllocated", async () => {
    const net = await network();
    const s = await subnet(net, "10.30.0.0/24");
    const [a, b] = [await port(net), await port(net)];
    const outcomes = await Promise.allSettled([
      allocateAddress(s, a, "10.30.0.50"),
      allocateAddress(s, b, "10.30.0.50"),
    ]);
    expect(
      outcomes
        .filter((o) => o.status === "fulfilled")
        .map((o) => (o as PromiseFulfilledResult<string>).value),
    ).toEqual(["10.30.0.50"]);
    const lost = outcomes.find((o) => o.status === "rejected") as PromiseRejectedResult;
    expect(lost.reason).toMatchObject({
      status: 409,
      type: "IpAddressAlreadyAllocated",
      message: `IP address 10.30.0.50 already allocated in subnet ${s.id}`,
    });
  });

  it("a fixed IP may be outside the pools but not outside the subnet (Neutron's 400)", async () => {
    const net = await network();
    const s = await subnet(net, "10.31.0.0/24");
    // the gateway's own address is outside the pool, and valid in the subnet
    expect(await allocateAddress(s, await port(net), "10.31.0.1")).toBe("10.31.0.1");
    const elsewhere = await port(await network());
    expect(await refusal(allocateAddress(s, elsewhere))).toEqual({
      status: 400,
      type: "InvalidInput",
      message: `Invalid input for operation: Failed to create port on network ${(await getPort(elsewhere))!.network_id}, because fixed_ips included invalid subnet ${s.id}.`,
    });
    for (const bad of ["10.32.0.5", "10.31.0.255", "10.31.0.0", "nonsense"]) {
      expect(await refusal(allocateAddress(s, await port(net), bad))).toEqual({
        status: 400,
        type: "InvalidIpForSubnet",
        message: `IP address ${bad} is not a valid IP for the specified subnet.`,
      });
    }
  });

  it("a released address goes back to the pool: a full subnet gives it to the next port", async () => {
    const net = await network();
    const s = await subnet(net, "10.40.0.0/29"); // pool: .2 – .6
    const ports = [];
    for (let i = 0; i < 5; i++) ports.push(await port(net));
    const addresses = [];
    for (const p of ports) addresses.push(await allocateAddress(s, p));
    expect(addresses).toEqual(["10.40.0.2", "10.40.0.3", "10.40.0.4", "10.40.0.5", "10.40.0.6"]);
    const late = await port(net);
    expect((await refusal(allocateAddress(s, late))).type).toBe("IpAddressGenerationFailure");
    // releasing is conditioned on the holder: another port cannot free it, the holder can, once
    expect(await releaseAddress(s.id, "10.40.0.4", late)).toBe(false);
    expect(await releaseAddress(s.id, "10.40.0.4", ports[2]!)).toBe(true);
    expect(await releaseAddress(s.id, "10.40.0.4", ports[2]!)).toBe(false);
    expect((await getPort(ports[2]!))!.fixed_ips).toEqual([]);
    expect(await allocateAddress(s, late)).toBe("10.40.0.4");
  });

  it("the cursor keeps a released address out of reuse until it comes round, then wraps to it", async () => {
    const net = await network();
    const s = await subnet(net, "10.41.0.0/29"); // pool: .2 – .6
    const first = await port(net);
    expect(await allocateAddress(s, first)).toBe("10.41.0.2");
    expect(await allocateAddress(s, await port(net))).toBe("10.41.0.3");
    expect(await releaseAddress(s.id, "10.41.0.2", first)).toBe(true);
    const next = [];
    for (let i = 0; i < 4; i++) next.push(await allocateAddress(s, await port(net)));
    expect(next).toEqual(["10.41.0.4", "10.41.0.5", "10.41.0.6", "10.41.0.2"]);
  });

  it("redelivery is idempotent: the same port asking again, even at once, gets its own address", async () => {
    const net = await network();
    const s = await subnet(net, "10.50.0.0/24");
    const p = await port(net);
    const concurrent = await Promise.all([
      allocateAddress(s, p),
      allocateAddress(s, p),
      allocateAddress(s, p),
    ]);
    expect(new Set(concurrent).size).toBe(1);
    expect(await allocateAddress(s, p)).toBe(concurrent[0]);
    expect((await getPort(p))!.fixed_ips).toEqual([{ subnet_id: s.id, ip_address: concurrent[0] }]);
    // the addresses the other deliveries won were freed: the next port gets the next one
    const next = await allocateAddress(s, await port(net));
    expect(next).not.toBe(concurrent[0]);
    // a fixed IP asked again by its holder comes back too
    const q = await port(net);
    expect(await allocateAddress(s, q, "10.50.0.200")).toBe("10.50.0.200");
    expect(await allocateAddress(s, q, "10.50.0.200")).toBe("10.50.0.200");
  });

  it("a port's delete frees its addresses, including one a crash kept off the port item", async () => {
    const net = await network();
    const s = await subnet(net, "10.60.0.0/29");
    const p = await port(net);
    const address = await allocateAddress(s, p);
    // a build that won an address and died before recording it on the port: the address item alone
    const other = await subnet(net, "10.61.0.0/29");
    await dynamo().send(
      new PutCommand({
        TableName: networkingTable(),
        Item: { pk: `ip#${other.id}#10.61.0.3`, holder: p, subnet_id: other.id, ip_address: "10.61.0.3" },
      }),
    );
    expect((await getPort(p))!.fixed_ips).toEqual([{ subnet_id: s.id, ip_address: address }]);
    expect(await addressHolder(other.id, "10.61.0.3")).toBe(p);
    expect(await deletePort(p)).toBe(true);
    expect(await addressHolder(s.id, address)).toBeUndefined();
    expect(await addressHolder(other.id, "10.61.0.3")).toBeUndefined();
    expect(await deletePort(p)).toBe(false);
    expect(await allocateAddress(s, await port(net), address)).toBe(address);
  });

  it("IPv6 /124: 15 addresses after the network's, distinct under a race, then the 409", async () => {
    const net = await network();
    const s = await subnet(net, "2001:db8:0:7::/124");
    expect(s.gateway_ip).toBe("2001:db8:0:7::");
    const ports = await Promise.all(Array.from({ length: 20 }, () => port(net)));
    const outcomes = await Promise.allSettled(ports.map((p) => allocateAddress(s, p)));
    const won = outcomes.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []));
    expect(new Set(won)).toEqual(
      new Set(Array.from({ length: 15 }, (_, i) => `2001:db8:0:7::${(i + 1).toString(16)}`)),
    );
    expect(outcomes.filter((o) => o.status === "rejected")).toHaveLength(5);
    expect(await refusal(allocateAddress(s, await port(net), "2001:db8:0:7::5"))).toMatchObject({
      status: 409,
      message: `IP address 2001:db8:0:7::5 already allocated in subnet ${s.id}`,
    });
  });
});

describe("a port's MAC address", () => {
  it("is one port's on its network: a second gets Neutron's MacAddressInUse; another network may have it; a delete frees it", async () => {
    const [net, other] = [await network(), await network()];
    const mac = "fa:16:3e:00:00:01";
    const ids = [randomUUID(), randomUUID()];
    const mk = (networkId: string, id = randomUUID()) =>
      createPort({ id, network_id: networkId, project_id: "p1", mac_address: mac });
    const racers = await Promise.allSettled(ids.map((id) => mk(net, id)));
    expect(racers.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const lost = racers.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect(lost.reason).toMatchObject({
      status: 409,
      type: "MacAddressInUse",
      message: `Unable to complete operation for network ${net}. The mac address ${mac} is in use.`,
    });
    expect(await mk(other)).toBe(true);
    const winner = ids[racers.findIndex((r) => r.status === "fulfilled")]!;
    expect(await deletePort(winner)).toBe(true);
    expect(await mk(net)).toBe(true);
  });
});

describe("networks and subnets", () => {
  it("records subnets on the network, refuses an overlapping one, and refuses deletes in use", async () => {
    const net = await network();
    const [a, b] = await Promise.allSettled([
      subnet(net, "10.70.0.0/24"),
      (async () => {
        const cidr = parseCidr("10.70.0.0/25");
        return createSubnet({
          id: randomUUID(),
          network_id: net,
          project_id: "p1",
          ip_version: 4,
          cidr: cidr.text,
          gateway_ip: null,
          allocation_pools: defaultPools(cidr, null),
        });
      })(),
    ]);
    // two overlapping subnets created at once: exactly one is refused
    expect([a, b].filter((o) => o.status === "rejected")).toHaveLength(1);
    const network6 = await getNetwork(net);
    expect(network6!.subnets).toHaveLength(1);
    const kept = (await getSubnet(network6!.subnets[0]!))!;
    const p = await port(net);
    await allocateAddress(kept, p);
    expect((await refusal(deleteSubnet(kept))).type).toBe("SubnetInUse");
    expect(await refusal(deleteNetwork(net))).toMatchObject({
      status: 409,
      message: `Unable to complete operation on network ${net}. There are one or more ports still in use on the network.`,
    });
    expect(await deletePort(p)).toBe(true);
    expect(await deleteNetwork(net)).toBe(true);
    expect(await getNetwork(net)).toBeUndefined();
  });
});

describe("a port's binding", () => {
  const on = (host: string, device: string, attempt?: number) => ({
    device_id: device,
    device_owner: "compute:nova",
    "binding:host_id": host,
    updated_at: new Date().toISOString(),
    ...(attempt === undefined ? {} : { binding_attempt: attempt }),
  });

  it("is one server's; a late write of an earlier attempt cannot take it back from a later one", async () => {
    const net = await network();
    const p = randomUUID();
    // as the API makes a user's port: no device yet
    expect(
      await createPort({ id: p, network_id: net, project_id: "p1", device_id: "", device_owner: "" }),
    ).toBe(true);
    const server = randomUUID();
    expect((await bindPort(p, on("host-11", server, 1), server))!["binding:host_id"]).toBe("host-11");
    // rescheduled (or moved) to host-1 at attempt 2; then attempt 1's delayed write lands
    expect((await bindPort(p, on("host-1", server, 2), server))!["binding:host_id"]).toBe("host-1");
    expect(await bindPort(p, on("host-11", server, 1), server)).toBeUndefined();
    // the same attempt again (a redelivery, or a shelve offload's unbinding) still writes
    expect((await bindPort(p, on("", server, 2), server))!["binding:host_id"]).toBe("");
    // another server cannot take it while it is bound
    expect(await bindPort(p, on("host-2", randomUUID(), 9), randomUUID())).toBeUndefined();
    // unbound by its server (a delete), it is anyone's, at any attempt
    expect((await bindPort(p, on("", ""), server))!.device_id).toBe("");
    const next = randomUUID();
    expect((await bindPort(p, on("host-3", next, 1), next))!["binding:host_id"]).toBe("host-3");
  });
});
