// A cold scheduler from the fleet snapshot (lib/conductor/fleet-snapshots.ts), on the in-process
// DynamoDB and S3 with the real SDK clients: the snapshot and the feed's changes since its position
// give the Scan's view, without a Scan; a missing, stale or unreadable snapshot is a Scan; the
// snapshot is rewritten only when due; and a stale snapshot costs a claim conflict, never an
// overcommit (the claim is a conditional write).

import { randomUUID } from "node:crypto";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { CreateBucketCommand, DeleteObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { DeleteCommand, DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { s3Client } from "../../../lib/aws/clients.js";
import { meterReading, startMeter, stopMeter } from "../../../lib/aws/meter.js";
import {
  fleetCacheStats,
  keepFleetSnapshot,
  snapshotForColdStart,
} from "../../../lib/conductor/fleet-snapshots.js";
import { resetHostManagers, selectDestinations } from "../../../lib/conductor/select-destinations.js";
import { resources, schedulerConfig } from "../../../lib/config.js";
import { conductorRequest } from "../../../lib/instances/request-spec.js";
import { createInstances } from "../../../lib/instances/server-writes.js";
import type { ConductorInput } from "../../../lib/messages/scheduled.js";
import { consumerAllocations } from "../../../lib/placement/allocations.js";
import { readChanges } from "../../../lib/placement/change-log.js";
import { claim } from "../../../lib/placement/claims.js";
import { changeItem, FEED_RETENTION_S, FEED_SHARDS } from "../../../lib/placement/feed.js";
import { schedulerFieldsOf } from "../../../lib/placement/fleet-snapshot.js";
import {
  FLEET_SNAPSHOT_KEY,
  fleetSnapshotPosition,
  readFleetSnapshot,
  writeFleetSnapshot,
} from "../../../lib/placement/fleet-snapshot-store.js";
import { getHost, readAllHosts, readHosts, registerHost } from "../../../lib/placement/hosts.js";
import { setServiceStatus } from "../../../lib/placement/services.js";
import { HostManager, type HostReads } from "../../../lib/scheduler/host-manager.js";
import { useLocalAws } from "../../integration/local-aws.js";
import { record } from "../api/records.js";
import { fakeHostRegistration } from "../conductor/workflow-fixtures.js";

useLocalAws();

const GiB = 1024;

beforeAll(async () => {
  await s3Client()
    .send(new CreateBucketCommand({ Bucket: resources().imagesBucket }))
    .catch((e: { name?: string }) => {
      if (e.name !== "BucketAlreadyOwnedByYou") throw e;
    });
});

beforeEach(async () => {
  await s3Client().send(
    new DeleteObjectCommand({ Bucket: resources().imagesBucket, Key: FLEET_SNAPSHOT_KEY }),
  );
  resetHostManagers();
  fleetCacheStats({ reset: true });
});

async function host(name: string, memoryGiB = 64): Promise<void> {
  await registerHost(fakeHostRegistration(name, { vcpus: 16, memory_mb: memoryGiB * GiB, local_gb: 1000 }));
}

/** The scheduler Lambda's reads (select-destinations' HOST_READS), the feed's lag 0. */
const reads = (withSnapshot: boolean): HostReads => ({
  all: () => readAllHosts(),
  changes: readChanges,
  hosts: readHosts,
  ...(withSnapshot ? { snapshot: snapshotForColdStart } : {}),
  retentionMs: FEED_RETENTION_S * 1000,
});

const byHost = <T extends { host: string }>(xs: T[]) => [...xs].sort((a, b) => a.host.localeCompare(b.host));

/** A scheduler's host states, as data, in host order. */
async function statesOf(hm: HostManager) {
  const fleet = await hm.hostStates([], schedulerConfig());
  return byHost(fleet.hosts.map((h) => structuredClone(h)));
}

describe("a cold scheduler from the fleet snapshot", () => {
  it("snapshot + the feed since its position = the Scan's view: the changed hosts read by key, no Scan", async () => {
    const names = Array.from({ length: 40 }, (_, i) => `snap-${randomUUID().slice(0, 8)}-${i}`);
    for (const n of names) await host(n);
    const warm = new HostManager(reads(false), { lagMs: 0 });
    await warm.hostStates([], schedulerConfig());
    await keepFleetSnapshot(warm, 5);
    expect(fleetCacheStats().writes).toBe(1);
    const stored = await readFleetSnapshot();
    expect(stored?.position).toBe(warm.view()!.position);

    // After the snapshot: claims, a release's worth of change, a service disabled, a new host.
    for (const n of [names[3]!, names[17]!, names[17]!]) {
      expect((await claim(n, randomUUID(), { VCPU: 2, MEMORY_MB: 4096, DISK_GB: 10 }, 1)).claimed).toBe(true);
    }
    await setServiceStatus(names[25]!, { disabled: true, disabled_reason: "maintenance" });
    const joined = `snap-${randomUUID().slice(0, 8)}-new`;
    await host(joined);

    startMeter();
    const cold = new HostManager(reads(true), { lagMs: 0 });
    let fromSnapshot: Awaited<ReturnType<typeof statesOf>>;
    try {
      fromSnapshot = await statesOf(cold);
      const requests = Object.values(meterReading()).map((c) => c.requests);
      expect(requests).toEqual([{ "dynamodb:Query": FEED_SHARDS.length, "dynamodb:BatchGetItem": 1 }]);
    } finally {
      stopMeter();
    }
    expect(cold.lastRefresh).toMatchObject({ kind: "snapshot", read: 4 });

    const scanned = new HostManager(reads(false), { lagMs: 0 });
    const fromScan = await statesOf(scanned);
    expect(scanned.lastRefresh?.kind).toBe("cold");
    expect(fromSnapshot.map((h) => h.host)).toContain(joined);
    expect(fromSnapshot).toEqual(fromScan);
    // what each holds of the providers, field by field
    expect(byHost(cold.view()!.hosts.map(schedulerFieldsOf))).toEqual(
      byHost(scanned.view()!.hosts.map(schedulerFieldsOf)),
    );
    expect(fromSnapshot.find((h) => h.host === names[17])!.num_instances).toBe(2);
    expect(fromSnapshot.find((h) => h.host === names[25])!.service.disabled).toBe(true);

    // the scheduler Lambda's containers count it as a cold start from the snapshot
    resetHostManagers();
    fleetCacheStats({ reset: true });
    const input = await building(512);
    await selectDestinations(input, schedulerConfig());
    expect(fleetCacheStats().coldStarts).toEqual({ snapshot: 1, scan: 0 });
  });

  it("with no snapshot, a stale one or one it cannot read, reads the fleet (Scan)", async () => {
    await host(`fallback-${randomUUID().slice(0, 8)}`);
    const cold = async () => {
      const hm = new HostManager(reads(true), { lagMs: 0 });
      await hm.hostStates([], schedulerConfig());
      return hm.lastRefresh?.kind;
    };
    expect(await fleetSnapshotPosition()).toBeUndefined();
    expect(await cold()).toBe("cold");

    // older than the feed keeps its entries (less a minute's margin): what came after is lost
    const warm = new HostManager(reads(false), { lagMs: 0 });
    await warm.hostStates([], schedulerConfig());
    const old = new Date(Date.now() - (FEED_RETENTION_S - 30) * 1000).toISOString();
    await writeFleetSnapshot({ position: old, written_at: old, hosts: warm.view()!.hosts });
    expect(await cold()).toBe("cold");
    // a usable one, for contrast
    await writeFleetSnapshot({ ...warm.view()!, written_at: new Date().toISOString() });
    expect(await cold()).toBe("snapshot");

    await s3Client().send(
      new PutObjectCommand({ Bucket: resources().imagesBucket, Key: FLEET_SNAPSHOT_KEY, Body: "not gzip" }),
    );
    expect(await cold()).toBe("cold");
    expect(fleetCacheStats().unreadable).toBe(1);
  });

  it("is rewritten only when due: after the interval, and not when another container wrote a newer one", async () => {
    await host(`due-${randomUUID().slice(0, 8)}`);
    const t0 = Date.now();
    const a = new HostManager(reads(false), { lagMs: 0 });
    await a.hostStates([], schedulerConfig(), t0);
    await keepFleetSnapshot(a, 5);
    expect(fleetCacheStats()).toMatchObject({ heads: 1, writes: 1 });
    // 1 s later: not due, not even a HEAD
    await a.hostStates([], schedulerConfig(), t0 + 1_000);
    await keepFleetSnapshot(a, 5);
    expect(fleetCacheStats()).toMatchObject({ heads: 1, writes: 1 });
    // another container wrote at t0 + 6 s; at t0 + 7 s this one learns it by a HEAD and writes nothing
    const b = new HostManager(reads(false), { lagMs: 0 });
    await b.hostStates([], schedulerConfig(), t0 + 6_000);
    await keepFleetSnapshot(b, 5);
    await a.hostStates([], schedulerConfig(), t0 + 7_000);
    await keepFleetSnapshot(a, 5);
    expect(fleetCacheStats()).toMatchObject({ heads: 3, writes: 2 });
    expect(a.snapshotPosition).toBe(b.view()!.position);
    // 11 s: due again
    await a.hostStates([], schedulerConfig(), t0 + 12_000);
    await keepFleetSnapshot(a, 5);
    expect(fleetCacheStats()).toMatchObject({ heads: 4, writes: 3 });
    expect(await fleetSnapshotPosition()).toBe(a.view()!.position);
  });

  it("a host full behind a stale snapshot costs a claim conflict: the build goes to the next host, nothing overcommitted", async () => {
    const config = { ...schedulerConfig(), io_ops_weight_multiplier: 0 };
    const big = `stale-big-${randomUUID().slice(0, 8)}`;
    const small = `stale-small-${randomUUID().slice(0, 8)}`;
    await host(big, 512);
    await host(small, 256);
    // a warm scheduler's decision writes the snapshot (the first it knows of is none: due)
    expect(chosen(await selectDestinations(await building(2048), config))).toBe(big);
    expect(fleetCacheStats().writes).toBe(1);

    // Another scheduler fills the big host; its feed entries are lost (their writers crashed).
    for (let h = (await getHost(big))!; h.free.MEMORY_MB! > 0; h = (await getHost(big))!) {
      const amount = Math.min(h.free.MEMORY_MB!, h.inventories.MEMORY_MB!.max_unit);
      expect((await claim(big, randomUUID(), { MEMORY_MB: amount }, 1)).claimed).toBe(true);
    }
    const feed = DynamoDBDocumentClient.from(new DynamoDBClient({}));
    for (const c of await readChanges("2000-01-01T00:00:00.000Z")) {
      if (c.host !== big) continue;
      const { feed: shard, at } = changeItem(c);
      await feed.send(
        new DeleteCommand({ TableName: process.env.NOVALESS_HOST_CHANGES_TABLE, Key: { feed: shard, at } }),
      );
    }

    // A new container: the snapshot shows the big host with room, the claim says otherwise.
    resetHostManagers();
    const second = await building(2048);
    expect(chosen(await selectDestinations(second, config))).toBe(small);
    expect(fleetCacheStats().coldStarts.snapshot).toBe(1);
    expect((await consumerAllocations(second.instance_uuids[0]!)).map((a) => a.host)).toEqual([small]);
    expect((await getHost(big))!.free.MEMORY_MB).toBe(0);
  });
});

/** A new instance in BUILD of a flavor with `memory_mb`, and the conductor's input for attempt 1. */
async function building(memory_mb: number): Promise<ConductorInput> {
  const id = randomUUID();
  const base = record({ id, request_id: `req-${randomUUID()}`, flavor: { ...record().flavor, memory_mb } });
  await createInstances([base]);
  return { ...conductorRequest(base, base.request_id), config: { max_attempts: 3 } };
}

const chosen = (s: Awaited<ReturnType<typeof selectDestinations>>) => s.hosts[s.selections[0]!.host]!.host;
