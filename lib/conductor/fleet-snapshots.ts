// The fleet snapshot on the scheduler's side (lib/placement/fleet-snapshot.ts): a cold container
// reads it, and warm containers keep it current. The writer is the scheduler itself, after a
// refresh: its view is then current to a feed position and costs nothing more to read, where any
// other writer (the watchdog's schedule, say, at most once a minute) would have to read the
// fleet's changes again, and a minute of the feed is more than a cold start should read after it.
// Writes are rare: a container writes only once its view is fleet_snapshot_interval past the
// newest snapshot it knows of, and first asks S3 (a HEAD) whether another container wrote a newer
// one meanwhile. Nothing here can fail a decision: a snapshot not read is a Scan, one not written
// is an older one.
import { meterScope, meterScopeReading } from "../aws/meter.js";
import { fleetSnapshotInterval } from "../config.js";
import { log } from "../log.js";
import type { FleetSnapshot } from "../placement/fleet-snapshot.js";
import {
  fleetSnapshotPosition,
  readFleetSnapshot,
  writeFleetSnapshot,
} from "../placement/fleet-snapshot-store.js";
import type { HostManager } from "../scheduler/host-manager.js";

/** The meter scope (lib/aws/meter.ts) of the reads of cold starts, snapshot and Scan alike. */
export const COLD_START_SCOPE = "scheduler.cold_start";

/** What this process's scheduler containers did about cold starts and the snapshot. */
export interface FleetCacheStats {
  /** cold starts from the snapshot and the feed, and from a Scan of the fleet */
  coldStarts: { snapshot: number; scan: number };
  /** the cold starts' refreshes, summed (ms) */
  coldStartMs: number;
  /** snapshot reads that failed (each then a Scan) */
  unreadable: number;
  /** HEADs asking the stored snapshot's position, and snapshots written */
  heads: number;
  writes: number;
  /** the last snapshot's size, gzipped */
  lastBytes: number;
}

const empty = (): FleetCacheStats => ({
  coldStarts: { snapshot: 0, scan: 0 },
  coldStartMs: 0,
  unreadable: 0,
  heads: 0,
  writes: 0,
  lastBytes: 0,
});
let stats = empty();

/**
 * The counts so far, with the DynamoDB requests and read units of the cold starts (counted only
 * while the meter runs, as the cost bench runs it); `reset` starts from zero.
 */
export function fleetCacheStats(opts: { reset?: boolean } = {}): FleetCacheStats & {
  coldStartUsage: ReturnType<typeof meterScopeReading>[string] | undefined;
} {
  const out = { ...structuredClone(stats), coldStartUsage: meterScopeReading()[COLD_START_SCOPE] };
  if (opts.reset) stats = empty();
  return out;
}

/** The snapshot for a cold start; one that cannot be read is none (the Scan serves). */
export async function snapshotForColdStart(): Promise<FleetSnapshot | undefined> {
  try {
    return await readFleetSnapshot();
  } catch (e) {
    stats.unreadable++;
    log.warn("scheduler.fleet_snapshot_unreadable", { error: e instanceof Error ? e.message : String(e) });
    return undefined;
  }
}

/** `refresh` (a HostManager's hostStates), its reads metered apart when it is a cold start. */
export async function countedRefresh<T>(hosts: HostManager, refresh: () => Promise<T>): Promise<T> {
  if (!hosts.isCold()) return refresh();
  const started = performance.now();
  const out = await meterScope(COLD_START_SCOPE, refresh);
  stats.coldStartMs += performance.now() - started;
  if (hosts.lastRefresh?.kind === "snapshot") stats.coldStarts.snapshot++;
  else stats.coldStarts.scan++;
  return out;
}

/**
 * After a refresh: rewrite the snapshot from this container's view if the newest one it knows of
 * is `intervalS` older than the view. Never throws.
 */
export async function keepFleetSnapshot(
  hosts: HostManager,
  intervalS = fleetSnapshotInterval(),
): Promise<void> {
  const view = hosts.view();
  if (!view) return;
  const due = () =>
    hosts.snapshotPosition === "" ||
    Date.parse(view.position) - Date.parse(hosts.snapshotPosition) >= intervalS * 1000;
  if (!due()) return;
  try {
    // A HEAD that fails (S3 answers 403, not 404, for a missing key to a role without
    // s3:ListBucket) says nothing: write.
    stats.heads++;
    const stored = await fleetSnapshotPosition().catch(() => undefined);
    if (stored && stored > hosts.snapshotPosition) hosts.snapshotPosition = stored;
    if (!due()) return;
    const written_at = new Date().toISOString();
    stats.lastBytes = await writeFleetSnapshot({ position: view.position, written_at, hosts: view.hosts });
    stats.writes++;
    hosts.snapshotPosition = view.position;
    log.debug("scheduler.fleet_snapshot_written", {
      position: view.position,
      hosts: view.hosts.length,
      bytes: stats.lastBytes,
    });
  } catch (e) {
    log.warn("scheduler.fleet_snapshot_not_written", { error: e instanceof Error ? e.message : String(e) });
  }
}
