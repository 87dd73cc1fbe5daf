// npm run bench:cold-start [-- --hosts 10000 --changed 20 --runs 3]
//
// A cold scheduler container's first decision, from the fleet snapshot (lib/conductor/
// fleet-snapshots.ts) and from the Scan it replaces. On the in-process emulators (dynalite, and
// fauxqs's S3) with the real SDK clients, metered at the SDK boundary (lib/aws/meter.ts,
// ReturnConsumedCapacity INDEXES): `--hosts` hosts registered as their agents register them; a warm
// scheduler's view written as the snapshot; then `--changed` hosts claimed on (the feed's entries
// a cold start reads after the snapshot's position); then a new container's selectDestinations for
// one instance, timed from the call to its answer, with every DynamoDB read unit it consumed (the
// host states, the instance, the catalog). Then the same with no snapshot: the Scan. `--runs`
// times each (after one uncounted warm-up of each), the snapshot rewritten and the changes made
// again before each. The emulators run in this process: their work is in the times.
// Prints the goal lines (≤ 50 read units, ≤ 200 ms) MET or MISSED for both paths.

import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { CreateBucketCommand, DeleteObjectCommand } from "@aws-sdk/client-s3";
import { BatchWriteCommand, DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { resetClients, s3Client } from "../../lib/aws/clients.js";
import { type MeterReading, meterReading, startMeter, stopMeter } from "../../lib/aws/meter.js";
import { inventoriesFor } from "../../lib/compute/inventory.js";
import { COLD_START_SCOPE, fleetCacheStats, keepFleetSnapshot } from "../../lib/conductor/fleet-snapshots.js";
import {
  hostManager,
  resetHostManagers,
  selectDestinations,
} from "../../lib/conductor/select-destinations.js";
import { resources, schedulerConfig } from "../../lib/config.js";
import { conductorRequest } from "../../lib/instances/request-spec.js";
import { createInstances } from "../../lib/instances/server-writes.js";
import type { ConductorInput } from "../../lib/messages/scheduled.js";
import { readChanges } from "../../lib/placement/change-log.js";
import { claim } from "../../lib/placement/claims.js";
import { FEED_RETENTION_S } from "../../lib/placement/feed.js";
import { FLEET_SNAPSHOT_KEY } from "../../lib/placement/fleet-snapshot-store.js";
import { getHost, readAllHosts, readHosts, registerHost } from "../../lib/placement/hosts.js";
import { HostManager } from "../../lib/scheduler/host-manager.js";
import { applyEnv, startEmulators } from "../../local/emulators.js";
import { createTables, localTables } from "../../local/tables.js";
import { record } from "../unit/api/records.js";
import { load, machine, quietLogs } from "./support.js";

const { values } = parseArgs({
  options: {
    hosts: { type: "string", default: "10000" },
    changed: { type: "string", default: "20" },
    runs: { type: "string", default: "3" },
  },
});
const size = Number(values.hosts);
const changed = Number(values.changed);
const runs = Number(values.runs);
const GOAL_UNITS = 50;
const GOAL_MS = 200;

quietLogs();
process.env.NOVALESS_LOG_LEVEL = "warn";

const emulators = await startEmulators();
const tables = localTables("-coldstart");
applyEnv({
  ...emulators.env,
  ...Object.fromEntries(tables.map((t) => [t.env, t.localName])),
  NOVALESS_IMAGES_BUCKET: "novaless-images-coldstart",
});
resetClients();
await createTables(new DynamoDBClient({}), tables);
await s3Client().send(new CreateBucketCommand({ Bucket: resources().imagesBucket }));

console.log(`bench:cold-start — ${size} hosts, ${changed} changed after the snapshot, ${runs} runs per path`);
console.log(`machine: ${machine()}; ${load()}`);

const names = Array.from({ length: size }, (_, i) => `compute-${String(i).padStart(5, "0")}`);
const registered = performance.now();
// The first host as its agent registers it; the others its item with their own names and
// addresses, 25 to a BatchWriteItem (registering 10,000 one by one takes minutes on the emulator).
const first = names[0]!;
await registerHost({
  host: first,
  availability_zone: "az0",
  inventories: inventoriesFor({ vcpus: 64, memory_mb: 256 * 1024, local_gb: 2000 }),
  traits: ["HW_CPU_X86_AVX2", "HW_CPU_X86_SSE42", "COMPUTE_NET_VIF_MODEL_VIRTIO"],
  hypervisor_type: "QEMU",
  hypervisor_version: 8002000,
  host_ip: "10.0.0.0",
  supported_instances: [["x86_64", "qemu", "hvm"]],
  queue_url: `https://sqs.eu-west-1.amazonaws.com/000000000000/novalessstack-compute-${first}`,
});
const template = (await getHost(first))!;
const doc = DynamoDBDocumentClient.from(new DynamoDBClient({}));
for (let i = 1; i < names.length; i += 25) {
  let items: Record<string, unknown>[] = names.slice(i, i + 25).map((host, k) => ({
    ...template,
    host,
    node: host,
    availability_zone: `az${(i + k) % 3}`,
    host_ip: `10.${(i + k) >> 16}.${((i + k) >> 8) & 255}.${(i + k) & 255}`,
    queue_url: `https://sqs.eu-west-1.amazonaws.com/000000000000/novalessstack-compute-${host}`,
    changed_at: new Date().toISOString(),
  }));
  while (items.length) {
    const r = await doc.send(
      new BatchWriteCommand({
        RequestItems: { [resources().hostsTable]: items.map((Item) => ({ PutRequest: { Item } })) },
      }),
    );
    items = (r.UnprocessedItems?.[resources().hostsTable] ?? []).map((w) => w.PutRequest!.Item!);
  }
}
console.log(`registered ${size} hosts in ${((performance.now() - registered) / 1000).toFixed(1)} s\n`);

const READS = {
  all: () => readAllHosts(),
  changes: readChanges,
  hosts: readHosts,
  retentionMs: FEED_RETENTION_S * 1000,
};

/** A warm scheduler's view, written as the snapshot (as a warm decision does when due). */
async function writeSnapshot(): Promise<{ ms: number; bytes: number }> {
  const warm = new HostManager(READS);
  await warm.hostStates([], schedulerConfig());
  const before = fleetCacheStats().writes;
  const started = performance.now();
  await keepFleetSnapshot(warm, 0);
  const ms = performance.now() - started;
  const stats = fleetCacheStats();
  if (stats.writes !== before + 1) throw new Error("the snapshot was not written");
  return { ms, bytes: stats.lastBytes };
}

/** `changed` hosts claimed on: the feed's entries after the snapshot. */
async function change(): Promise<void> {
  for (let k = 0; k < changed; k++) {
    const host = names[Math.floor(Math.random() * names.length)]!;
    await claim(host, randomUUID(), { VCPU: 1, MEMORY_MB: 512, DISK_GB: 1 }, 1);
  }
}

async function building(): Promise<ConductorInput> {
  const id = randomUUID();
  const base = record({ id, request_id: `req-${randomUUID()}` });
  await createInstances([base]);
  return { ...conductorRequest(base, base.request_id), config: { max_attempts: 3 } };
}

const readUnits = (r: MeterReading | Record<string, MeterReading[string] | undefined>) =>
  Object.values(r).reduce(
    (sum, u) => sum + Object.values(u?.tables ?? {}).reduce((s, t) => s + t.read + t.indexRead, 0),
    0,
  );

interface Run {
  ms: number;
  units: number;
  loadUnits: number;
  requests: Record<string, number>;
  kind: string;
  read: number;
  refreshMs: number;
  wrote: boolean;
}

/** A new container's first decision, timed and metered. */
async function coldDecision(): Promise<Run> {
  const input = await building();
  resetHostManagers();
  const writes = fleetCacheStats().writes;
  startMeter();
  const started = performance.now();
  await selectDestinations(input, schedulerConfig());
  const ms = performance.now() - started;
  stopMeter();
  const reading = meterReading();
  const requests: Record<string, number> = {};
  for (const u of Object.values(reading))
    for (const [k, n] of Object.entries(u.requests)) requests[k] = (requests[k] ?? 0) + n;
  const refresh = hostManager().lastRefresh!;
  return {
    ms,
    units: readUnits(reading),
    loadUnits: readUnits({ x: fleetCacheStats().coldStartUsage }),
    requests,
    kind: refresh.kind,
    read: refresh.read,
    refreshMs: refresh.ms,
    wrote: fleetCacheStats().writes > writes,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const goal = (what: string, value: number, limit: number, unit: string) =>
  console.log(
    `  ${what}: ${value.toFixed(1)} ${unit} (goal ≤ ${limit}) ${value <= limit ? "MET" : "MISSED"}`,
  );

function report(path: string, rs: Run[]): void {
  console.log(`${path} (${rs.length} runs; refresh kind ${[...new Set(rs.map((r) => r.kind))].join(",")})`);
  for (const [i, r] of rs.entries())
    console.log(
      `  run ${i + 1}: ${r.ms.toFixed(1)} ms (host states ${r.refreshMs.toFixed(1)} ms, ${r.read} provider items read), ` +
        `${r.units.toFixed(1)} read units (host states ${r.loadUnits.toFixed(1)})${r.wrote ? ", wrote the snapshot" : ""}; ` +
        Object.entries(r.requests)
          .sort()
          .map(([k, n]) => `${k.replace("dynamodb:", "")} ${n}`)
          .join(", "),
    );
  goal(
    `cold decision at ${size} hosts, read units (median)`,
    median(rs.map((r) => r.units)),
    GOAL_UNITS,
    "RU",
  );
  goal(`cold decision at ${size} hosts, time (median)`, median(rs.map((r) => r.ms)), GOAL_MS, "ms");
}

const snapshotRuns: Run[] = [];
const scanRuns: Run[] = [];
const written: { ms: number; bytes: number }[] = [];
// run 0 is the process's warm-up (JIT, SDK clients, the emulators' first requests): not counted
for (let run = 0; run <= runs; run++) {
  written.push(await writeSnapshot());
  await change();
  fleetCacheStats({ reset: true });
  const fromSnapshot = await coldDecision();
  await s3Client().send(
    new DeleteObjectCommand({ Bucket: resources().imagesBucket, Key: FLEET_SNAPSHOT_KEY }),
  );
  fleetCacheStats({ reset: true });
  const fromScan = await coldDecision();
  if (run === 0) continue;
  snapshotRuns.push(fromSnapshot);
  scanRuns.push(fromScan);
}
console.log(
  `snapshot: ${(median(written.map((w) => w.bytes)) / 1024).toFixed(0)} KiB gzipped for ${size} hosts, ` +
    `written (encode, gzip, PUT) in ${median(written.map((w) => w.ms)).toFixed(0)} ms (median)\n`,
);
report("from the snapshot + the feed since it", snapshotRuns);
console.log();
report("from a Scan of the Hosts table (the old path)", scanRuns);
console.log(`\n(${COLD_START_SCOPE}: the host states' reads, metered apart)`);

await emulators.stop();
process.exit(0);
