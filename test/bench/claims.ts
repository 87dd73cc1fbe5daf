// `npm run bench:claims`: claims per second against the embedded DynamoDB (dynalite) and, where
// Java is present, Amazon's DynamoDB Local, with 1, 8, 32 and 128 concurrent claimers, on one
// host and spread over 1,000 hosts; in the same run, a bare conditional UpdateItem with the same
// concurrency, and the ratio claim ÷ bare per row. Not part of `npm test`. BENCH_BACKENDS
// (default `dynalite,dynamodb-local`) picks the backends.
//
// Both sides do the same amount of useful work, so the ratio means something:
// - every row offers exactly as many operations as there is room for (a host with room for N
//   claims gets N claims), so every claim and every bare write succeeds. On a host that fills
//   up, every later claim would be a conflict that also reads the items to say why, while a bare
//   write would just fail: that measures conflicts, not claims (the last row shows it anyway);
// - the bare write is the cheapest conditional write on the same kind of item:
//   `SET free_units = free_units - 1 IF free_units >= 1`; a claim is one transaction of two
//   writes: the provider's usage, free, counters, generation and changed_at under two comparisons
//   per class (free, and claim_limit: max_unit for a class whose min_unit and step_size are 1, as
//   Nova's standard classes' are), and the allocation item's put if absent. A transaction costs
//   DynamoDB two units per item written, so the ratio is expected to be lower than with the
//   single-item claims the bench measured before.
// After each row every host item and its allocation items are read back: usage must equal the
// sum of its allocations and stay within capacity (overcommit 0), num_instances must count them,
// and the bare counters must not go below zero.
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { BatchWriteCommand, ScanCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo, resetClients } from "../../lib/aws/clients.js";
import { inventoriesFor } from "../../lib/compute/inventory.js";
import { resources } from "../../lib/config.js";
import { claimLimits, freeFor, sumAllocations } from "../../lib/placement/capacity.js";
import { claim } from "../../lib/placement/claims.js";
import { stampNew } from "../../lib/placement/feed.js";
import {
  type AllocationRecord,
  capacity,
  type HostRecord,
  type Inventory,
  type Resources,
} from "../../lib/placement/types.js";
import { javaAvailable, startDynamoDbLocal } from "../../local/dynamodb-local.js";
import { applyEnv, startEmulators } from "../../local/emulators.js";
import { createTables, localTables } from "../../local/tables.js";

const CONCURRENCY = [1, 8, 32, 128];
/** operations per row */
const SINGLE_HOST_OPS = Number(process.env.BENCH_SINGLE_HOST_OPS ?? 400);
const SPREAD_HOSTS = 1000;
const SPREAD_OPS = Number(process.env.BENCH_SPREAD_OPS ?? 2000);
/** Nova's m1.small: 1 VCPU, 2048 MB, 20 GB */
const REQUEST: Resources = { VCPU: 1, MEMORY_MB: 2048, DISK_GB: 20 };

interface Row {
  backend: string;
  layout: string;
  concurrency: number;
  ops: number;
  claimsPerSecond: number;
  barePerSecond: number;
  conflicts: number;
  overcommit: number;
}

/** A host with room for exactly `slots` claims of REQUEST. */
function hostItem(name: string, slots: number): HostRecord & { free_units: number } {
  const inventories = inventoriesFor({
    vcpus: slots,
    memory_mb: 2048 * slots,
    local_gb: 20 * slots,
    cpu_allocation_ratio: 1,
    ram_allocation_ratio: 1,
    reserved_host_memory_mb: 0,
  });
  const usage: Resources = { VCPU: 0, MEMORY_MB: 0, DISK_GB: 0 };
  return {
    ...stampNew({
      host: name,
      node: name,
      availability_zone: "nova",
      aggregates: [],
      traits: [],
      inventories,
      claim_limit: claimLimits(inventories),
      usage,
      free: freeFor(inventories, usage),
      generation: 1,
      num_instances: 0,
      num_io_ops: 0,
      hypervisor_type: "fake",
      hypervisor_version: 1000,
      host_ip: "10.0.0.1",
      supported_instances: [["x86_64", "fake", "hvm"]],
      stats: { failed_builds: 0 },
      service: { disabled: false, disabled_reason: null, forced_down: false },
      queue_url: "http://unused",
    }),
    free_units: slots,
  };
}

async function putAll(items: object[]): Promise<void> {
  const table = resources().hostsTable;
  const batches: object[][] = [];
  for (let i = 0; i < items.length; i += 25) batches.push(items.slice(i, i + 25));
  await runConcurrently(batches.length, 16, async (i) => {
    let pending: Record<string, unknown>[] | undefined = batches[i]!.map((Item) => ({
      PutRequest: { Item },
    }));
    while (pending?.length) {
      const r = await dynamo().send(new BatchWriteCommand({ RequestItems: { [table]: pending } }));
      pending = r.UnprocessedItems?.[table] as Record<string, unknown>[] | undefined;
    }
  });
}

/** Run op(0..n-1) with `concurrency` workers; returns the wall time in seconds. */
async function runConcurrently(
  n: number,
  concurrency: number,
  op: (i: number) => Promise<unknown>,
): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      for (let i = next++; i < n; i = next++) await op(i);
    }),
  );
  return (performance.now() - started) / 1000;
}

async function scanPrefixed<T>(table: string, key: string, prefix: string): Promise<T[]> {
  const out: T[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const r = await dynamo().send(
      new ScanCommand({
        TableName: table,
        ConsistentRead: true,
        ExclusiveStartKey: start,
        FilterExpression: "begins_with(#k, :p)",
        ExpressionAttributeNames: { "#k": key },
        ExpressionAttributeValues: { ":p": prefix },
      }),
    );
    out.push(...((r.Items ?? []) as T[]));
    start = r.LastEvaluatedKey;
  } while (start);
  return out;
}

/** Hosts over capacity, or whose usage, free or num_instances disagree with their allocations. */
function overcommitted(hosts: HostRecord[], allocations: AllocationRecord[]): number {
  const byHost = new Map<string, AllocationRecord[]>();
  for (const a of allocations) byHost.set(a.host, [...(byHost.get(a.host) ?? []), a]);
  let bad = 0;
  for (const h of hosts) {
    const held = byHost.get(h.host) ?? [];
    const sum = sumAllocations(held);
    if (h.num_instances !== held.length) {
      bad++;
      continue;
    }
    for (const [rc, inv] of Object.entries(h.inventories) as [keyof Resources, Inventory][]) {
      const used = h.usage[rc] ?? 0;
      if (used > capacity(inv) || used !== (sum[rc] ?? 0) || h.free[rc] !== capacity(inv) - used) {
        bad++;
        break;
      }
    }
  }
  return bad;
}

/**
 * One row. Both sides get their own fresh items, then run in alternating slices (bare, claims,
 * claims, bare, …) so whatever else runs on the machine weighs on both alike; each side's
 * throughput is its operations over the time its slices took.
 */
async function row(
  backend: string,
  layout: "single" | "spread" | "oversubscribed",
  concurrency: number,
  tag: string,
): Promise<Row> {
  const hosts = layout === "spread" ? SPREAD_HOSTS : 1;
  const ops = layout === "spread" ? SPREAD_OPS : SINGLE_HOST_OPS;
  const slots = layout === "oversubscribed" ? ops / 2 : ops / hosts;
  const bareName = (i: number) => `b-${tag}-${String(i % hosts).padStart(4, "0")}`;
  const claimName = (i: number) => `c-${tag}-${String(i % hosts).padStart(4, "0")}`;
  await putAll(Array.from({ length: hosts }, (_, i) => hostItem(bareName(i), slots)));
  await putAll(Array.from({ length: hosts }, (_, i) => hostItem(claimName(i), slots)));
  const table = resources().hostsTable;
  let bareFailed = 0;
  let conflicts = 0;
  const bareOp = async (i: number) => {
    try {
      await dynamo().send(
        new UpdateCommand({
          TableName: table,
          Key: { host: bareName(i) },
          UpdateExpression: "SET free_units = free_units - :one",
          ConditionExpression: "free_units >= :one",
          ExpressionAttributeValues: { ":one": 1 },
        }),
      );
    } catch (e) {
      if ((e as { name?: string }).name !== "ConditionalCheckFailedException") throw e;
      bareFailed++;
    }
  };
  const claimOp = async (i: number) => {
    const r = await claim(
      claimName(i),
      `${tag}-${String(i).padStart(8, "0")}-0000-4000-8000-000000000000`,
      REQUEST,
      1,
    );
    if (!r.claimed) conflicts++;
  };
  // Slices of at least two operations per claimer, so every slice reaches the concurrency.
  const slices = Math.max(1, Math.min(8, Math.floor(ops / (2 * concurrency))));
  let bareSeconds = 0;
  let claimSeconds = 0;
  for (let k = 0; k < slices; k++) {
    const from = Math.floor((k * ops) / slices);
    const n = Math.floor(((k + 1) * ops) / slices) - from;
    const bare = async () => {
      bareSeconds += await runConcurrently(n, concurrency, (i) => bareOp(from + i));
    };
    const claims = async () => {
      claimSeconds += await runConcurrently(n, concurrency, (i) => claimOp(from + i));
    };
    if (k % 2 === 0) {
      await bare();
      await claims();
    } else {
      await claims();
      await bare();
    }
  }
  const claimed = await scanPrefixed<HostRecord>(table, "host", `c-${tag}-`);
  const bare = await scanPrefixed<HostRecord & { free_units?: number }>(table, "host", `b-${tag}-`);
  const allocations = await scanPrefixed<AllocationRecord>(resources().allocationsTable, "host", `c-${tag}-`);
  const allocated = allocations.length;
  const overcommit =
    overcommitted(claimed, allocations) +
    bare.filter((h) => (h.free_units ?? 0) < 0).length +
    (allocated === ops - conflicts ? 0 : 1);
  if (layout !== "oversubscribed" && (conflicts || bareFailed)) {
    throw new Error(
      `${layout} row at ${concurrency}: ${conflicts} claim conflicts, ${bareFailed} bare failures`,
    );
  }
  const label = {
    single: "1 host",
    spread: `${SPREAD_HOSTS} hosts`,
    oversubscribed: "1 host, 2× oversubscribed",
  }[layout];
  return {
    backend,
    layout: label,
    concurrency,
    ops,
    claimsPerSecond: ops / claimSeconds,
    barePerSecond: ops / bareSeconds,
    conflicts,
    overcommit,
  };
}

function print(r: Row): void {
  const ratio = r.claimsPerSecond / r.barePerSecond;
  process.stdout.write(
    `| ${r.backend.padEnd(14)} | ${r.layout.padEnd(25)} | ${String(r.concurrency).padStart(3)} | ${String(r.ops).padStart(5)} | ` +
      `${r.claimsPerSecond.toFixed(0).padStart(8)} | ${r.barePerSecond.toFixed(0).padStart(8)} | ${ratio.toFixed(2).padStart(5)} | ` +
      `${String(r.conflicts).padStart(9)} | ${String(r.overcommit).padStart(10)} |\n`,
  );
}

async function bench(
  backend: string,
  start: () => Promise<{ env: Record<string, string>; stop(): Promise<void> }>,
) {
  const started = await start();
  const tables = localTables(`-bench-${Date.now()}`);
  const restore = applyEnv({
    ...started.env,
    ...Object.fromEntries(tables.map((t) => [t.env, t.localName])),
  });
  resetClients();
  const rows: Row[] = [];
  try {
    await createTables(
      new DynamoDBClient({}),
      tables.filter((t) => t.id === "Hosts" || t.id === "Allocations"),
    );
    // Warm up the client, the JIT and (for DynamoDB Local) the JVM.
    await row(backend, "spread", 32, "warm");
    let n = 0;
    for (const layout of ["single", "spread"] as const) {
      for (const c of CONCURRENCY) {
        const r = await row(backend, layout, c, `r${n++}`);
        rows.push(r);
        print(r);
      }
    }
    const over = await row(backend, "oversubscribed", 32, `r${n++}`);
    rows.push(over);
    print(over);
  } finally {
    resetClients();
    restore();
    await started.stop();
  }
  return rows;
}

process.env.NOVALESS_LOG_LEVEL ??= "warn";
process.stdout.write(
  "| DynamoDB       | layout                    |   C |   ops | claims/s |   bare/s | ratio | conflicts | overcommit |\n" +
    "|----------------|---------------------------|-----|-------|----------|----------|-------|-----------|------------|\n",
);
const backends = (process.env.BENCH_BACKENDS ?? "dynalite,dynamodb-local").split(",");
const all: Row[] = [];
if (backends.includes("dynalite")) all.push(...(await bench("dynalite", () => startEmulators())));
const java = javaAvailable();
if (!backends.includes("dynamodb-local")) process.stdout.write("DynamoDB Local not asked for\n");
else if (java.ok) all.push(...(await bench("DynamoDB Local", () => startDynamoDbLocal())));
else process.stdout.write(`DynamoDB Local skipped: ${java.reason}\n`);
const measured = all.filter((r) => !r.layout.includes("oversubscribed"));
const below = measured.filter((r) => r.claimsPerSecond / r.barePerSecond < 0.8);
process.stdout.write(
  `\n${measured.length - below.length}/${measured.length} rows at ratio ≥ 0.8; overcommit in ${all.filter((r) => r.overcommit).length} row(s)\n`,
);
process.exit(all.some((r) => r.overcommit) ? 1 : 0);
