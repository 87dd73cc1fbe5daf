// The warm scheduler's host states against the real tables (dynalite, with its transactions): a
// refresh reads only the provider items written since the last one, and a stale cache never
// overcommits: the claim is the authority, so a host whose capacity changed behind the cache costs
// a claim conflict, after which the claim loop moves to the next host and the cache learns it.

import { randomUUID } from "node:crypto";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DeleteCommand, DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { meterReading, startMeter, stopMeter } from "../../lib/aws/meter.js";
import {
  hostManager,
  resetHostManagers,
  selectDestinations,
} from "../../lib/conductor/select-destinations.js";
import { schedulerConfig } from "../../lib/config.js";
import { conductorRequest } from "../../lib/instances/request-spec.js";
import { createInstances } from "../../lib/instances/server-writes.js";
import type { ConductorInput } from "../../lib/messages/scheduled.js";
import { consumerAllocations } from "../../lib/placement/allocations.js";
import { readChanges } from "../../lib/placement/change-log.js";
import { claim } from "../../lib/placement/claims.js";
import { changeItem, FEED_RETENTION_S, FEED_SHARDS } from "../../lib/placement/feed.js";
import { getHost, readAllHosts, readHosts, registerHost } from "../../lib/placement/hosts.js";
import { HostManager } from "../../lib/scheduler/host-manager.js";
import { record } from "../unit/api/records.js";
import { fakeHostRegistration } from "../unit/conductor/workflow-fixtures.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

const GiB = 1024;

async function host(name: string, memoryGiB: number): Promise<void> {
  await registerHost(fakeHostRegistration(name, { vcpus: 16, memory_mb: memoryGiB * GiB, local_gb: 1000 }));
}

/** A new instance in BUILD of a flavor with `memory_mb`, and the conductor's input for attempt 1. */
async function building(memory_mb: number, hosts: string[] = []): Promise<ConductorInput> {
  const id = randomUUID();
  const base = record({ id, request_id: `req-${randomUUID()}`, flavor: { ...record().flavor, memory_mb } });
  await createInstances([base]);
  return {
    ...conductorRequest(base, base.request_id, { num_attempts: 1, hosts }),
    config: { max_attempts: 3 },
  };
}

const chosen = (s: Awaited<ReturnType<typeof selectDestinations>>) => s.hosts[s.selections[0]!.host]!.host;

beforeAll(() => resetHostManagers());
afterAll(() => resetHostManagers());
beforeEach(() => resetHostManagers());

describe("the warm scheduler's host states", () => {
  it("a refresh reads only the hosts written since the last one: one Query per feed shard, then those hosts, no Scan", async () => {
    const names = Array.from({ length: 60 }, (_, i) => `refresh-${String(i).padStart(2, "0")}`);
    for (const n of names) await host(n, 64);
    // lag 0: exactly what was written after the last refresh began (the feed's own lag is the
    // runtime's business, tested in the unit tests)
    const hm = new HostManager(
      {
        all: () => readAllHosts(),
        changes: readChanges,
        hosts: readHosts,
        retentionMs: FEED_RETENTION_S * 1000,
      },
      { lagMs: 0 },
    );
    await hm.hostStates([], schedulerConfig());
    expect(hm.lastRefresh).toMatchObject({ kind: "cold", read: names.length });

    for (const n of ["refresh-07", "refresh-31", "refresh-52"]) {
      const r = await claim(n, randomUUID(), { VCPU: 1, MEMORY_MB: 512, DISK_GB: 1 }, 1);
      expect(r.claimed).toBe(true);
    }
    startMeter();
    try {
      const fleet = await hm.hostStates([], schedulerConfig());
      expect(hm.lastRefresh).toMatchObject({ kind: "warm", read: 3, applied: 3 });
      expect(fleet.hosts.find((h) => h.host === "refresh-31")!.num_instances).toBe(1);
      const requests = Object.values(meterReading()).map((c) => c.requests);
      expect(requests).toEqual([{ "dynamodb:Query": FEED_SHARDS.length, "dynamodb:BatchGetItem": 1 }]);
      // Nothing written since: the next refresh reads nothing.
      await hm.hostStates([], schedulerConfig());
      expect(hm.lastRefresh).toMatchObject({ kind: "warm", read: 0, applied: 0 });
    } finally {
      stopMeter();
    }
  });

  it("a host filled behind the cache costs a claim conflict, the build goes to the next host, nothing is overcommitted", async () => {
    // The RAM weigher prefers the big host (and only it weighs): the cache will bet on it.
    const config = { ...schedulerConfig(), io_ops_weight_multiplier: 0 };
    await host("stale-big", 512);
    await host("stale-small", 256);
    const first = await building(2048);
    expect(chosen(await selectDestinations(first, config))).toBe("stale-big");

    // Another scheduler fills the big host; the feed does not show it to this one (its entries
    // are taken out, as if their writers had crashed before appending them).
    for (
      let big = (await getHost("stale-big"))!;
      big.free.MEMORY_MB! > 0;
      big = (await getHost("stale-big"))!
    ) {
      const amount = Math.min(big.free.MEMORY_MB!, big.inventories.MEMORY_MB!.max_unit);
      expect((await claim("stale-big", randomUUID(), { MEMORY_MB: amount }, 1)).claimed).toBe(true);
    }
    const feed = DynamoDBDocumentClient.from(new DynamoDBClient({}));
    for (const c of await readChanges("2000-01-01T00:00:00.000Z")) {
      if (c.host !== "stale-big") continue;
      const { feed: shard, at } = changeItem(c);
      await feed.send(
        new DeleteCommand({ TableName: process.env.NOVALESS_HOST_CHANGES_TABLE, Key: { feed: shard, at } }),
      );
    }

    const second = await building(2048);
    const placed = await selectDestinations(second, config);
    expect(chosen(placed)).toBe("stale-small");
    const held = await consumerAllocations(second.instance_uuids[0]!);
    expect(held.map((a) => a.host)).toEqual(["stale-small"]);
    const after = (await getHost("stale-big"))!;
    expect(after.free.MEMORY_MB).toBe(0);
    expect(after.num_instances).toBe(3);

    // The conflict taught the cache: it holds the big host as full, not as it bet.
    const cached = hostManager().cached("stale-big")!.resources.MEMORY_MB!;
    expect(cached.used).toBe(cached.capacity);
  });
});
