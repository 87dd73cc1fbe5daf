// The console's pure parts: the fleet map's grouping, layout and colors, the decision
// explainer's bars and funnel, the server timeline, a user's role assignments, a server's
// address and a subnet's used and free addresses. No DOM, no fetch: unit-tested in test/unit/console.
import { addressValue } from "../../lib/network/address.js";
import type {
  Explanation,
  FleetAggregate,
  FleetHost,
  InstanceAction,
  Port,
  Role,
  RoleAssignment,
  Server,
  Subnet,
} from "./types.js";

/** used / capacity of a resource class, or undefined when the host has none of it. */
export function utilization(h: FleetHost, rc: string): number | undefined {
  const r = h.resources[rc];
  if (!r || r[1] <= 0) return undefined;
  return r[0] / r[1];
}

export type HostMark = "up" | "down" | "disabled" | "forced-down";

export function markOf(h: FleetHost): HostMark {
  if (h.forced_down) return "forced-down";
  if (h.state === "down") return "down";
  if (h.status === "disabled") return "disabled";
  return "up";
}

/**
 * The utilization ramp, idle to full: ColorBrewer's YlOrRd (without its palest and darkest
 * classes, so idle still shows on white and full stays apart from a down host's slate).
 * Sequential in lightness, it reads the same to the colour-blind and in greyscale.
 */
export const UTILIZATION_RAMP = ["#ffeda0", "#fed976", "#feb24c", "#fd8d3c", "#fc4e2a", "#e31a1c", "#bd0026"];
/** a host without the chosen resource class */
export const NO_CLASS_COLOR = "#9aa5b1";
/** a host that is down or forced down */
export const DOWN_COLOR = "#323f4b";

const rgbOf = (hex: string): [number, number, number] => [
  Number.parseInt(hex.slice(1, 3), 16),
  Number.parseInt(hex.slice(3, 5), 16),
  Number.parseInt(hex.slice(5, 7), 16),
];

/** The ramp at t in [0, 1], interpolated in sRGB between its stops, as CSS gradients do. */
function rampAt(t: number): [number, number, number] {
  const span = t * (UTILIZATION_RAMP.length - 1);
  const i = Math.min(UTILIZATION_RAMP.length - 2, Math.floor(span));
  const f = span - i;
  const a = rgbOf(UTILIZATION_RAMP[i]!);
  const b = rgbOf(UTILIZATION_RAMP[i + 1]!);
  return [0, 1, 2].map((k) => Math.round(a[k]! + (b[k]! - a[k]!) * f)) as [number, number, number];
}

/** One color per percent: the map draws at most 101 colors, each in one fill. */
const RAMP_STEPS = 100;
const RAMP_TABLE = Array.from({ length: RAMP_STEPS + 1 }, (_, i) => {
  const [r, g, b] = rampAt(i / RAMP_STEPS);
  return `rgb(${r} ${g} ${b})`;
});
// a name on a cell: dark on the light end of the ramp, white where the ramp is dark
const LABEL_TABLE = Array.from({ length: RAMP_STEPS + 1 }, (_, i) =>
  luminance(rampAt(i / RAMP_STEPS)) > 0.3 ? "#1f2933" : "#ffffff",
);

function luminance([r, g, b]: [number, number, number]): number {
  const lin = (c: number) => (c / 255 <= 0.04045 ? c / 255 / 12.92 : ((c / 255 + 0.055) / 1.055) ** 2.4);
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

const rampIndex = (u: number) => Math.round(Math.max(0, Math.min(1, u)) * RAMP_STEPS);

/** Utilization to a color on the ramp (continuous to the percent); grey for no such class. */
export function utilizationColor(u: number | undefined): string {
  return u === undefined ? NO_CLASS_COLOR : RAMP_TABLE[rampIndex(u)]!;
}

/** The color a host's name is written in on its cell: readable on the cell's color. */
export function labelColor(u: number | undefined): string {
  return u === undefined ? "#1f2933" : LABEL_TABLE[rampIndex(u)]!;
}

/** The legend's bar: a CSS gradient through the same stops the cells are colored from. */
export const UTILIZATION_GRADIENT = `linear-gradient(to right, ${UTILIZATION_RAMP.map(
  (c, i) => `${c} ${Math.round((i / (UTILIZATION_RAMP.length - 1)) * 100)}%`,
).join(", ")})`;

/** The class the map is colored by: the one picked while the fleet has it, else VCPU, else the first. */
export function colorClass(picked: string | undefined, classes: readonly string[]): string {
  if (picked && classes.includes(picked)) return picked;
  return classes.includes("VCPU") || !classes.length ? "VCPU" : classes[0]!;
}

export interface HostGroup {
  name: string;
  hosts: FleetHost[];
}

/** Hosts by availability zone, or by aggregate (a host in several appears in each). */
export function groupHosts(
  hosts: readonly FleetHost[],
  by: "zone" | "aggregate",
  aggregates: readonly FleetAggregate[],
): HostGroup[] {
  const groups = new Map<string, FleetHost[]>();
  const add = (name: string, h: FleetHost) => {
    const g = groups.get(name) ?? [];
    g.push(h);
    groups.set(name, g);
  };
  const names = new Map(aggregates.filter((a) => a.id !== null).map((a) => [a.id!, a.name]));
  for (const h of hosts) {
    if (by === "zone") add(h.zone, h);
    else if (!h.aggregates.length) add("(in no aggregate)", h);
    else for (const id of h.aggregates) add(names.get(id) ?? `aggregate ${id}`, h);
  }
  return [...groups.entries()]
    .sort(([a], [b]) => (a.startsWith("(") ? 1 : b.startsWith("(") ? -1 : a.localeCompare(b)))
    .map(([name, hs]) => ({ name, hosts: hs }));
}

/** A cell side that keeps a fleet of this size on a screen or two. */
export function cellSize(hosts: number): number {
  if (hosts <= 100) return 28;
  if (hosts <= 1000) return 14;
  if (hosts <= 5000) return 8;
  return 6;
}

/** A cell's width and height: a square, or a tile wide enough for its host's name. */
export interface Tile {
  w: number;
  h: number;
}

/** Names are drawn on the map up to this many hosts (beyond, its canvas would be too tall). */
export const NAMES_MAX_HOSTS = 2_000;
/** ... and shown by default up to this many, about two screens of named tiles. */
export const NAMES_DEFAULT_HOSTS = 1_000;
export const NAME_TILE_HEIGHT = 20;

/**
 * The cell of a fleet of `hosts`: with names, as wide as the widest name (measured by the
 * caller's font) plus padding; else a square of cellSize.
 */
export function tileFor(hosts: number, nameWidth: number | undefined): Tile {
  if (nameWidth === undefined) {
    const s = cellSize(hosts);
    return { w: s, h: s };
  }
  return { w: Math.min(160, Math.max(40, Math.ceil(nameWidth) + 10)), h: NAME_TILE_HEIGHT };
}

export interface Cell {
  x: number;
  y: number;
  host: FleetHost;
  group: number;
}

/** A group's block of cells: `count` cells from `start`, in rows from `y`. */
export interface GroupBlock {
  start: number;
  count: number;
  y: number;
  rows: number;
}

export interface Layout {
  cells: Cell[];
  labels: { name: string; x: number; y: number; count: number }[];
  blocks: GroupBlock[];
  height: number;
  columns: number;
  w: number;
  h: number;
}

export const LABEL_HEIGHT = 22;
const GAP = 1;

/** Rows of cells per group, each group under its label, wrapped to `width`. */
export function layoutFleet(groups: readonly HostGroup[], width: number, tile: Tile): Layout {
  const stepX = tile.w + GAP;
  const stepY = tile.h + GAP;
  const columns = Math.max(1, Math.floor((width + GAP) / stepX));
  const cells: Cell[] = [];
  const labels: Layout["labels"] = [];
  const blocks: GroupBlock[] = [];
  let y = 0;
  groups.forEach((g, gi) => {
    labels.push({ name: g.name, x: 0, y, count: g.hosts.length });
    y += LABEL_HEIGHT;
    const rows = Math.ceil(g.hosts.length / columns);
    blocks.push({ start: cells.length, count: g.hosts.length, y, rows });
    g.hosts.forEach((host, i) => {
      cells.push({ x: (i % columns) * stepX, y: y + Math.floor(i / columns) * stepY, host, group: gi });
    });
    y += rows * stepY + 10;
  });
  return { cells, labels, blocks, height: Math.max(y, 40), columns, w: tile.w, h: tile.h };
}

/** The cell under a point, or -1: its group's block by y, then its row and column. */
export function cellAt(l: Layout, x: number, y: number): number {
  const stepX = l.w + GAP;
  const stepY = l.h + GAP;
  if (x < 0) return -1;
  const col = Math.floor(x / stepX);
  if (col >= l.columns || x - col * stepX >= l.w) return -1;
  for (const b of l.blocks) {
    if (y < b.y || y >= b.y + b.rows * stepY) continue;
    const row = Math.floor((y - b.y) / stepY);
    if (y - b.y - row * stepY >= l.h) return -1;
    const i = row * l.columns + col;
    return i < b.count ? b.start + i : -1;
  }
  return -1;
}

/** The cell a keyboard arrow moves to from `i`: left/right by one, up/down by a row. */
export function moveCursor(l: Layout, i: number, key: string): number {
  const n = l.cells.length;
  if (!n) return -1;
  if (i < 0) return 0;
  const here = l.cells[i]!;
  const step = l.h + GAP;
  if (key === "ArrowRight") return Math.min(n - 1, i + 1);
  if (key === "ArrowLeft") return Math.max(0, i - 1);
  if (key === "Home") return 0;
  if (key === "End") return n - 1;
  if (key === "ArrowDown" || key === "ArrowUp") {
    const dir = key === "ArrowDown" ? 1 : -1;
    // the nearest cell in the next row in that direction, same column when it has one
    let best = i;
    let bestScore = Number.POSITIVE_INFINITY;
    for (let j = i + dir; j >= 0 && j < n; j += dir) {
      const c = l.cells[j]!;
      const dy = (c.y - here.y) * dir;
      if (dy <= 0) continue;
      if (dy > step + LABEL_HEIGHT + 12 && bestScore < Number.POSITIVE_INFINITY) break;
      const score = dy * 10_000 + Math.abs(c.x - here.x);
      if (score < bestScore) {
        best = j;
        bestScore = score;
      }
    }
    return best;
  }
  return i;
}

/**
 * Changes-since rows applied to the fleet: new and changed hosts in, deleted services out. The
 * fleet stays in name order; it is sorted again only when a host joins, and an empty poll keeps
 * the same array (so the map's layout is not redone).
 */
export function mergeFleet(hosts: readonly FleetHost[], changes: readonly FleetHost[]): FleetHost[] {
  if (!changes.length) return hosts as FleetHost[];
  const at = new Map(hosts.map((h, i) => [h.host, i]));
  const next: (FleetHost | null)[] = hosts.slice();
  let joined = false;
  let left = false;
  for (const c of changes) {
    const i = at.get(c.host);
    const old = i === undefined ? null : next[i];
    // the feed may repeat an older copy (its look-back): keep the newest
    if (old && old.changed_at > c.changed_at) continue;
    if (c.deleted) {
      if (i !== undefined && old) {
        next[i] = null;
        left = true;
      }
    } else if (i !== undefined) next[i] = c;
    else {
      at.set(c.host, next.length);
      next.push(c);
      joined = true;
    }
  }
  const kept = left ? next.filter((h): h is FleetHost => h !== null) : (next as FleetHost[]);
  return joined ? kept.sort((a, b) => a.host.localeCompare(b.host)) : kept;
}

export interface FleetSummary {
  hosts: number;
  up: number;
  down: number;
  disabled: number;
  forcedDown: number;
  instances: number;
  building: number;
  used: number;
  capacity: number;
}

export function summarize(hosts: readonly FleetHost[], rc: string): FleetSummary {
  const s: FleetSummary = {
    hosts: hosts.length,
    up: 0,
    down: 0,
    disabled: 0,
    forcedDown: 0,
    instances: 0,
    building: 0,
    used: 0,
    capacity: 0,
  };
  for (const h of hosts) {
    const m = markOf(h);
    if (m === "up") s.up++;
    else if (m === "down") s.down++;
    else if (m === "disabled") s.disabled++;
    else s.forcedDown++;
    s.instances += h.instances;
    s.building += h.building;
    const r = h.resources[rc];
    if (r) {
      s.used += r[0];
      s.capacity += r[1];
    }
  }
  return s;
}

export interface WeightSegment {
  weigher: string;
  /** normalized × multiplier: what this weigher added to the host's weight */
  value: number;
}

export interface WeightBar {
  host: string;
  weight: number;
  chosen: boolean;
  segments: WeightSegment[];
}

/** Each ranked host's weight split by weigher, in the scheduler's order. */
export function weightBars(e: Explanation): WeightBar[] {
  return e.order.map((o) => ({
    host: o.host,
    weight: o.weight,
    chosen: e.chosen?.host === o.host,
    segments: e.weighers.map((w) => {
      const v = w.hosts.find((x) => x.host === o.host);
      return { weigher: w.weigher, value: v ? v.normalized * v.multiplier : 0 };
    }),
  }));
}

/** The extent of the bars: the most any host's segments reach left (negative) and right. */
export function barExtent(bars: readonly WeightBar[]): { min: number; max: number } {
  let min = 0;
  let max = 0;
  for (const b of bars) {
    const neg = b.segments.reduce((s, x) => s + Math.min(0, x.value), 0);
    const pos = b.segments.reduce((s, x) => s + Math.max(0, x.value), 0);
    min = Math.min(min, neg);
    max = Math.max(max, pos);
  }
  return { min, max: max === min ? min + 1 : max };
}

export interface FunnelStep {
  stage: string;
  hostsIn: number;
  passed: number;
  rejected: number;
  skipped?: string;
  reasons: { summary: string; count: number; sample: string[] }[];
}

/** Hosts in and out per filter stage, with the grouped reasons. */
export function funnel(e: Explanation): FunnelStep[] {
  return e.stages.map((s) => ({
    stage: s.stage,
    hostsIn: s.hosts_in,
    passed: s.hosts_passed,
    rejected: s.hosts_in - s.hosts_passed,
    ...(s.skipped ? { skipped: s.skipped } : {}),
    reasons: s.rejected.map((r) => ({ summary: r.summary, count: r.count, sample: r.sample })),
  }));
}

export interface TimelineEntry {
  at: string;
  kind: "action" | "event";
  title: string;
  result?: string | null;
  host?: string;
  finished?: string | null;
  /** the build attempt this event belongs to (1 = the first), for builds rescheduled */
  attempt?: number;
  details?: string | null;
  /** what Nova's action or event name means, in words (the moves' names are terse) */
  gloss?: string;
}

/** Words for the names of moves' actions and events (Nova's own names stay the titles). */
export const GLOSSES: Readonly<Record<string, string>> = {
  resize: "resize to another flavor",
  migrate: "cold migration to another host",
  confirmResize: "the move is confirmed",
  revertResize: "the move is reverted",
  cold_migrate: "the conductor picks a destination and claims it",
  compute_resize_instance: "the source stops the guest and hands it over",
  compute_finish_resize: "the destination starts it; it waits for confirm or revert",
  compute_confirm_resize: "the source lets its copy and its claim go",
  compute_revert_resize: "the destination lets the guest and its claim go",
  compute_finish_revert_resize: "the source takes the guest back with its old flavor",
  "live-migration": "live migration: the server keeps running while it moves",
  live_migration_force_complete: "the live migration is forced to complete",
  live_migration_cancel: "the live migration is aborted",
  conductor_live_migrate_instance: "the conductor checks the move, picks a destination and claims it",
  compute_pre_live_migration: "the destination gets ready for the guest",
  compute_live_migration: "the source copies the running guest over",
  compute_post_live_migration_at_destination:
    "the guest runs on the destination; the source lets its claim go",
  rebuild: "rebuild from an image on the same host",
  evacuate: "evacuation: rebuilt on another host, its own being down",
  conductor_rebuild_server: "the scheduler checks its host (rebuild) or picks another (evacuate)",
  compute_rebuild_instance: "the host builds the guest again from its image",
  stop: "the server is stopped",
  start: "the server is started",
  compute_stop_instance: "the host stops the guest",
  compute_start_instance: "the host starts the guest",
  pause: "the guest is frozen in memory, on its host",
  unpause: "the frozen guest runs on",
  suspend: "the guest's state is saved and it stops, on its host",
  resume: "the suspended guest is restored",
  compute_pause_instance: "the host freezes the guest",
  compute_unpause_instance: "the host lets the guest run on",
  compute_suspend_instance: "the host saves the guest's state and stops it",
  compute_resume_instance: "the host restores the guest",
  shelve: "stopped and kept as an image; its host keeps the claim until it is offloaded",
  shelveOffload: "its host lets it go: the claim is freed",
  unshelve: "back from the shelf: started on its host, or scheduled again when offloaded",
  compute_shelve_instance: "the host stops the guest and saves its image",
  compute_shelve_offload_instance: "the host destroys the guest and frees its claim",
  schedule_instances: "the conductor picks a host and claims it, as for a build",
  compute_unshelve_instance: "the host spawns the guest from its shelved image",
  createImage: "a snapshot of its disk becomes an image",
  createBackup: "a backup image; the oldest of its type beyond the rotation are deleted",
  compute_snapshot_instance: "the host copies the disk and uploads the image",
  compute_backup_instance: "the host copies the disk and uploads the backup",
  resetState: "an admin set its state; nothing was done on its host",
  trigger_crash_dump: "an NMI sent to the guest, for a crash dump",
  compute_trigger_crash_dump: "the host sends the guest an NMI (exec cannot)",
};

const BUILD_EVENT = "compute_build_and_run_instance";

/** Every action and its events in time order; a create's build events numbered by attempt. */
export function timeline(actions: readonly InstanceAction[]): TimelineEntry[] {
  const out: TimelineEntry[] = [];
  for (const a of actions) {
    out.push({
      at: a.start_time,
      kind: "action",
      title: a.action,
      result: a.message,
      ...(GLOSSES[a.action] ? { gloss: GLOSSES[a.action] } : {}),
    });
    let attempt = 0;
    for (const e of [...(a.events ?? [])].sort((x, y) => x.start_time.localeCompare(y.start_time))) {
      const isBuild = e.event === BUILD_EVENT;
      if (isBuild) attempt++;
      out.push({
        at: e.start_time,
        kind: "event",
        title: e.event,
        result: e.result,
        finished: e.finish_time,
        ...(e.host ? { host: e.host } : {}),
        ...(isBuild ? { attempt } : {}),
        ...(e.details ? { details: e.details } : {}),
        ...(GLOSSES[e.event] ? { gloss: GLOSSES[e.event] } : {}),
      });
    }
  }
  return out.sort((a, b) => a.at.localeCompare(b.at) || (a.kind === "action" ? -1 : 1));
}

/** How many times a create was rescheduled: build attempts after the first. */
export function reschedules(actions: readonly InstanceAction[]): number {
  const create = actions.find((a) => a.action === "create");
  const builds = (create?.events ?? []).filter((e) => e.event === BUILD_EVENT).length;
  return Math.max(0, builds - 1);
}

/** `key=value` lines (or JSON) into scheduler hints; a repeated key becomes a list. */
export function parseHints(text: string): Record<string, string | string[]> {
  const t = text.trim();
  if (!t) return {};
  if (t.startsWith("{")) return JSON.parse(t) as Record<string, string | string[]>;
  const out: Record<string, string | string[]> = {};
  for (const line of t.split(/\n/)) {
    const l = line.trim();
    if (!l) continue;
    const i = l.indexOf("=");
    if (i < 1) throw new Error(`hint "${l}": expected key=value`);
    const k = l.slice(0, i).trim();
    const v = l.slice(i + 1).trim();
    const had = out[k];
    out[k] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v];
  }
  return out;
}

/** What a servers list shows, as the API's filters: the polls of changes apply them here. */
export interface ServerFilters {
  allTenants: boolean;
  status?: string;
  /** Nova's name filter: a regular expression searched in the name (literal when invalid) */
  name?: string;
  project?: string;
  host?: string;
}

/** The full listing's query string (without limit). */
export function serverQuery(f: ServerFilters): URLSearchParams {
  const q = new URLSearchParams();
  if (f.allTenants) q.set("all_tenants", "1");
  if (f.status) q.set("status", f.status);
  if (f.name) q.set("name", f.name);
  if (f.project) q.set("project_id", f.project);
  if (f.host) q.set("host", f.host);
  return q;
}

/**
 * The changes poll's query string: only what a change cannot move a server out of (its project
 * never changes), since a server that changed status, name or host must reach the list to leave it.
 */
export function changesQuery(f: ServerFilters, since: string): URLSearchParams {
  const q = new URLSearchParams();
  if (f.allTenants) q.set("all_tenants", "1");
  if (f.project) q.set("project_id", f.project);
  q.set("changes-since", since);
  return q;
}

export function serverMatches(s: Server, f: ServerFilters): boolean {
  if (s.status === "DELETED") return false;
  if (f.status && s.status !== f.status) return false;
  if (f.project && s.tenant_id !== f.project) return false;
  if (f.host && s["OS-EXT-SRV-ATTR:host"] !== f.host) return false;
  if (f.name) {
    try {
      if (!new RegExp(f.name).test(s.name)) return false;
    } catch {
      if (!s.name.includes(f.name)) return false;
    }
  }
  return true;
}

/** The API's order: newest first, then by id. */
const newestFirst = (a: Server, b: Server) => b.created.localeCompare(a.created) || a.id.localeCompare(b.id);

/**
 * Changes-since rows applied to a servers list: changed ones that still match in (the newer copy
 * kept: the poll looks back), the others and the deleted out; the `limit` newest kept.
 */
export function mergeServers(
  held: readonly Server[],
  changes: readonly Server[],
  f: ServerFilters,
  limit?: number,
): Server[] {
  if (!changes.length) return held as Server[];
  const byId = new Map(held.map((s) => [s.id, s]));
  for (const c of changes) {
    const old = byId.get(c.id);
    if (old && old.updated > c.updated) continue;
    if (serverMatches(c, f)) byId.set(c.id, c);
    else byId.delete(c.id);
  }
  const out = [...byId.values()].sort(newestFirst);
  return limit === undefined ? out : out.slice(0, limit);
}

/** A user's roles on one target: a project (which the console can change), a domain or the system. */
export interface ScopedRoles {
  scope: "project" | "domain" | "system";
  /** the project's or domain's id ("" for the system) */
  id: string;
  name: string;
  roles: string[];
}

/**
 * GET /v3/role_assignments?user.id=…&include_names, one row per target with its roles by name:
 * projects first, by name. Group assignments (none here, but Keystone lists them) are left out.
 */
export function rolesByScope(assignments: readonly RoleAssignment[]): ScopedRoles[] {
  const rows = new Map<string, ScopedRoles>();
  for (const a of assignments) {
    if (!a.user) continue;
    const { project, domain } = a.scope;
    const [scope, ref]: [ScopedRoles["scope"], { id: string; name?: string } | undefined] = project
      ? ["project", project]
      : domain
        ? ["domain", domain]
        : ["system", undefined];
    const key = `${scope}/${ref?.id ?? ""}`;
    const row = rows.get(key) ?? { scope, id: ref?.id ?? "", name: ref?.name ?? ref?.id ?? "all", roles: [] };
    const role = a.role.name ?? a.role.id;
    if (!row.roles.includes(role)) row.roles.push(role);
    rows.set(key, row);
  }
  const rank = { project: 0, domain: 1, system: 2 };
  return [...rows.values()]
    .map((r) => ({ ...r, roles: r.roles.sort() }))
    .sort((a, b) => rank[a.scope] - rank[b.scope] || a.name.localeCompare(b.name));
}

/** The roles a console form offers: Keystone's defaults, least surprising first, then any others. */
export function roleChoices(roles: readonly Role[]): Role[] {
  const order = ["member", "reader", "admin"];
  const at = (r: Role) => (order.includes(r.name) ? order.indexOf(r.name) : order.length);
  return [...roles].sort((a, b) => at(a) - at(b) || a.name.localeCompare(b.name));
}

/** The address a servers list shows: its first IPv4 (what most people reach it by), else its first. */
export function firstAddress(s: Server): string | undefined {
  const all = Object.values(s.addresses ?? {}).flat();
  return (all.find((a) => a.version === 4) ?? all[0])?.addr;
}

export interface SubnetUsage {
  /** the addresses ports hold in the subnet */
  used: bigint;
  /** the addresses its allocation pools hold */
  size: bigint;
  /** those of the pools no port holds */
  free: bigint;
}

/**
 * A subnet's used and free addresses from its ports' fixed IPs. An address given outside the
 * pools (an admin may ask for any of the cidr's) is used but takes none of the pools' free ones.
 * BigInt: an IPv6 /64's pool is 2^64 addresses.
 */
export function subnetUsage(subnet: Subnet, ports: readonly Port[]): SubnetUsage {
  const pools = subnet.allocation_pools.map((p) => [addressValue(p.start), addressValue(p.end)] as const);
  const held = new Set<bigint>();
  for (const p of ports)
    for (const ip of p.fixed_ips) if (ip.subnet_id === subnet.id) held.add(addressValue(ip.ip_address));
  const size = pools.reduce((n, [start, end]) => n + (end - start + 1n), 0n);
  let inPools = 0n;
  for (const a of held) if (pools.some(([start, end]) => a >= start && a <= end)) inPools++;
  return { used: BigInt(held.size), size, free: size - inPools };
}
