// The fleet snapshot: every host's state as the scheduler reads it, at one position of the change
// feed, so that a cold scheduler reads one object and the feed since that position instead of a
// Scan of the Hosts table (lib/scheduler/host-manager.ts). A snapshot at position P is what a warm
// cache whose refresh read the feed up to P holds, and it is read as one: the feed's entries after
// P, then those hosts by key. It is never the authority: a claim is a conditional write, so a stale
// host in it costs a claim conflict, never an overcommit.
//
// The encoding is columnar: the fields that differ per host (usage, counters, stamps) as columns,
// the ones a fleet repeats (inventories, traits, hypervisor, service) as indexes into a table of
// distinct values. Stored gzipped (lib/placement/fleet-snapshot-store.ts).
import type { HostRecord } from "./types.js";

/** What the scheduler reads of a provider item: the host state's inputs, and what orders images. */
export const SCHEDULER_HOST_FIELDS = [
  "host",
  "node",
  "availability_zone",
  "traits",
  "inventories",
  "usage",
  "generation",
  "num_instances",
  "num_io_ops",
  "hypervisor_type",
  "hypervisor_version",
  "host_ip",
  "supported_instances",
  "stats",
  "service",
  "changed_at",
] as const satisfies readonly (keyof HostRecord)[];

/** A provider item as the scheduler holds it (a whole HostRecord is one too). */
export type SchedulerHost = Pick<HostRecord, (typeof SCHEDULER_HOST_FIELDS)[number]>;

/** The fields a fleet repeats from host to host: kept once in `values`, referenced by index. */
const SHARED = [
  "availability_zone",
  "traits",
  "inventories",
  "hypervisor_type",
  "hypervisor_version",
  "supported_instances",
  "stats",
  "service",
] as const;
type Shared = (typeof SHARED)[number];

export const SNAPSHOT_VERSION = 1;

/** A snapshot as stored (before gzip). */
export interface EncodedSnapshot {
  v: typeof SNAPSHOT_VERSION;
  /** the feed position it is current to: every entry at or before it is applied (ISO-8601) */
  position: string;
  /** when it was written (ISO-8601), for operators */
  written_at: string;
  /** distinct values of the SHARED fields, as JSON text */
  values: string[];
  host: string[];
  /** null where the node is the host's name (one node per host here) */
  node: (string | null)[];
  host_ip: string[];
  usage: Record<string, number>[];
  generation: number[];
  num_instances: number[];
  num_io_ops: number[];
  /** epoch ms where it round-trips to the ISO text, else the text */
  changed_at: (number | string)[];
  shared: Record<Shared, number[]>;
}

/** A snapshot as read: its position and the hosts. */
export interface FleetSnapshot {
  position: string;
  written_at: string;
  hosts: SchedulerHost[];
}

export function encodeSnapshot(s: FleetSnapshot): EncodedSnapshot {
  const index = new Map<string, number>();
  // hosts read from a snapshot share their values' objects: each is stringified once
  const byObject = new WeakMap<object, number>();
  const values: string[] = [];
  const ref = (v: unknown): number => {
    const known = typeof v === "object" && v !== null ? byObject.get(v) : undefined;
    if (known !== undefined) return known;
    const text = JSON.stringify(v ?? null);
    let i = index.get(text);
    if (i === undefined) {
      i = values.length;
      values.push(text);
      index.set(text, i);
    }
    if (typeof v === "object" && v !== null) byObject.set(v, i);
    return i;
  };
  const shared = Object.fromEntries(SHARED.map((f) => [f, [] as number[]])) as Record<Shared, number[]>;
  const out: EncodedSnapshot = {
    v: SNAPSHOT_VERSION,
    position: s.position,
    written_at: s.written_at,
    values,
    host: [],
    node: [],
    host_ip: [],
    usage: [],
    generation: [],
    num_instances: [],
    num_io_ops: [],
    changed_at: [],
    shared,
  };
  for (const h of s.hosts) {
    out.host.push(h.host);
    out.node.push(h.node === h.host ? null : h.node);
    out.host_ip.push(h.host_ip);
    out.usage.push(h.usage as Record<string, number>);
    out.generation.push(h.generation);
    out.num_instances.push(h.num_instances);
    out.num_io_ops.push(h.num_io_ops);
    const ms = Date.parse(h.changed_at);
    out.changed_at.push(
      Number.isFinite(ms) && new Date(ms).toISOString() === h.changed_at ? ms : h.changed_at,
    );
    for (const f of SHARED) shared[f].push(ref(h[f]));
  }
  return out;
}

/** The hosts back; throws for a snapshot of another version or one whose columns disagree. */
export function decodeSnapshot(e: EncodedSnapshot): FleetSnapshot {
  if (e.v !== SNAPSHOT_VERSION)
    throw new Error(`fleet snapshot: version ${String(e.v)}, expected ${SNAPSHOT_VERSION}`);
  const n = e.host.length;
  const columns = [e.node, e.host_ip, e.usage, e.generation, e.num_instances, e.num_io_ops, e.changed_at];
  if (columns.some((c) => c.length !== n) || SHARED.some((f) => e.shared[f]?.length !== n))
    throw new Error("fleet snapshot: its columns differ in length");
  // one object per distinct value: hosts that shared it share it again (the Fleet's classes)
  const values = e.values.map((t) => JSON.parse(t) as unknown);
  const hosts: SchedulerHost[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const at = e.changed_at[i]!;
    const h = {
      host: e.host[i]!,
      node: e.node[i] ?? e.host[i]!,
      host_ip: e.host_ip[i]!,
      usage: e.usage[i]!,
      generation: e.generation[i]!,
      num_instances: e.num_instances[i]!,
      num_io_ops: e.num_io_ops[i]!,
      changed_at: typeof at === "number" ? new Date(at).toISOString() : at,
    } as Record<string, unknown>;
    for (const f of SHARED) h[f] = values[e.shared[f][i]!];
    hosts[i] = h as unknown as SchedulerHost;
  }
  return { position: e.position, written_at: e.written_at, hosts };
}

/** The scheduler's fields of a provider item, and nothing else (what a snapshot keeps of it). */
export function schedulerFieldsOf(h: SchedulerHost): SchedulerHost {
  const out: Record<string, unknown> = {};
  for (const f of SCHEDULER_HOST_FIELDS) out[f] = h[f];
  return out as unknown as SchedulerHost;
}
