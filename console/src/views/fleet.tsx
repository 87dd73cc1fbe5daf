// The fleet map: every host a cell on a canvas (fluid at 10,000; drawn by fleet-draw.ts), grouped
// by availability zone or aggregate, colored on a continuous ramp by the chosen resource class's
// utilization, marked down, disabled or forced down, and named on its tile while the fleet is
// small enough. Kept live by os-fleet?changes-since (only what changed). Keyboard: arrows move,
// Enter opens; the focused host is read out. Beside it, the newest servers, so a build can be
// watched.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { get, getFresh } from "../api.js";
import { Badge, type ConfirmRequest, ErrorNote, UsageBar } from "../components.js";
import { usePoll, useServerList } from "../hooks.js";
import {
  cellAt,
  colorClass,
  DOWN_COLOR,
  groupHosts,
  layoutFleet,
  markOf,
  mergeFleet,
  moveCursor,
  NAMES_DEFAULT_HOSTS,
  NAMES_MAX_HOSTS,
  NO_CLASS_COLOR,
  summarize,
  tileFor,
  UTILIZATION_GRADIENT,
  utilization,
} from "../model.js";
import type { Fleet, FleetHost } from "../types.js";
import { DrainHost } from "./drain.js";
import { drawCells, drawFocus, NAME_FONT } from "./fleet-draw.js";
import { ServiceButtons } from "./operations.js";
import { ServerTable } from "./servers.js";

const FLEET_POLL_MS = 2_000;
const ALL_TENANTS = { allTenants: true };

/** The same aggregates as before (as JSON): kept, so that the map's grouping is not redone. */
const sameAggregates = (a: Fleet["aggregates"], b: Fleet["aggregates"]) =>
  a.length === b.length && JSON.stringify(a) === JSON.stringify(b);

/**
 * The fleet, full once, then changes-since. A poll that changes nothing keeps the same object,
 * and one that changes hosts keeps the aggregates' array, so the map redoes only what changed.
 */
function useFleet(): { fleet: Fleet | undefined; error: string | undefined } {
  const [fleet, setFleet] = useState<Fleet>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    let alive = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let current: Fleet | undefined;
    let since = "";
    const run = async () => {
      try {
        const first = !current;
        if (first) performance.mark("fleet:request");
        const path = current ? `/v2.1/os-fleet?changes-since=${encodeURIComponent(since)}` : "/v2.1/os-fleet";
        const { fleet: f } = await get<{ fleet: Fleet }>(path);
        if (first) performance.mark("fleet:data");
        since = f.next_changes_since;
        const before = current;
        if (!before) current = f;
        else {
          const hosts = mergeFleet(before.hosts, f.hosts);
          const aggregates = sameAggregates(before.aggregates, f.aggregates)
            ? before.aggregates
            : f.aggregates;
          const classes =
            before.resource_classes.join() === f.resource_classes.join()
              ? before.resource_classes
              : f.resource_classes;
          if (
            hosts !== before.hosts ||
            aggregates !== before.aggregates ||
            classes !== before.resource_classes
          )
            current = { ...f, hosts, aggregates, resource_classes: classes, full: true };
        }
        if (alive) {
          if (current !== before) setFleet(current);
          setError(undefined);
        }
      } catch (e) {
        if (alive) setError((e as Error).message);
      }
      if (alive) timer = setTimeout(run, FLEET_POLL_MS);
    };
    void run();
    return () => {
      alive = false;
      if (timer) clearTimeout(timer);
    };
  }, []);
  return { fleet, error };
}

const MARK_LABEL = { up: "up", down: "down", disabled: "disabled", "forced-down": "forced down" } as const;

function describe(h: FleetHost, rc: string): string {
  const u = utilization(h, rc);
  const r = h.resources[rc];
  return `${h.host}, zone ${h.zone}, ${MARK_LABEL[markOf(h)]}, ${rc} ${r ? `${r[0]} of ${r[1]}` : "none"}${u === undefined ? "" : ` (${Math.round(u * 100)}%)`}, ${h.instances} instances${h.building ? `, ${h.building} building` : ""}`;
}

/** The widest host name in the map's name font (a canvas measures it). */
function widestName(hosts: readonly FleetHost[]): number {
  const g = document.createElement("canvas").getContext("2d")!;
  g.font = NAME_FONT;
  let widest = 0;
  for (const h of hosts) widest = Math.max(widest, g.measureText(h.host).width);
  return widest;
}

// The first drawing of a fleet is marked for the bench (test/bench/console.ts) and DevTools: from
// the data (fleet:data) to the frame that shows it (fleet:painted).
let painted = false;
function markPainted(): void {
  if (painted) return;
  painted = true;
  performance.mark("fleet:drawn");
  requestAnimationFrame(() => setTimeout(() => performance.mark("fleet:painted")));
}

function FleetCanvas({
  hosts,
  groupBy,
  rc,
  names,
  fleet,
}: {
  hosts: FleetHost[];
  groupBy: "zone" | "aggregate";
  rc: string;
  names: boolean;
  fleet: Fleet;
}) {
  const wrap = useRef<HTMLDivElement>(null);
  const canvas = useRef<HTMLCanvasElement>(null);
  const ring = useRef<HTMLCanvasElement>(null);
  const [width, setWidth] = useState(800);
  const [cursor, setCursor] = useState(-1);
  const [hover, setHover] = useState(-1);
  useEffect(() => {
    const el = wrap.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setWidth(el.clientWidth));
    ro.observe(el);
    setWidth(el.clientWidth);
    return () => ro.disconnect();
  }, []);
  const groups = useMemo(
    () => groupHosts(hosts, groupBy, fleet.aggregates),
    [hosts, groupBy, fleet.aggregates],
  );
  const tile = useMemo(() => tileFor(hosts.length, names ? widestName(hosts) : undefined), [hosts, names]);
  const layout = useMemo(() => layoutFleet(groups, width, tile), [groups, width, tile]);
  useEffect(() => {
    if (!canvas.current) return;
    drawCells(canvas.current, layout, width, rc, names);
    if (layout.cells.length) markPainted();
  }, [layout, rc, names, width]);
  useEffect(() => {
    if (ring.current) drawFocus(ring.current, layout, width, [cursor, hover]);
  }, [layout, cursor, hover, width]);
  // the host a key moved to stays in view on a map taller than the window (named tiles)
  const keepInView = (i: number) => {
    const cell = layout.cells[i];
    if (!cell || !canvas.current) return;
    const top = canvas.current.getBoundingClientRect().top + cell.y;
    if (top < 0) scrollBy(0, top - layout.h);
    else if (top + layout.h > innerHeight) scrollBy(0, top + 2 * layout.h - innerHeight);
  };
  const at = (e: MouseEvent) => {
    const r = canvas.current!.getBoundingClientRect();
    return cellAt(layout, e.clientX - r.left, e.clientY - r.top);
  };
  const open = (i: number) => {
    const h = layout.cells[i]?.host;
    if (h) location.hash = `#/hosts/${encodeURIComponent(h.host)}`;
  };
  const focused = layout.cells[cursor >= 0 ? cursor : hover]?.host;
  return (
    <div ref={wrap} class="fleet-canvas">
      <canvas
        ref={canvas}
        tabIndex={0}
        role="img"
        data-names={String(names)}
        aria-label={`Fleet map: ${hosts.length} hosts in ${groups.length} groups, colored by ${rc} utilization${names ? ", each named" : ""}. Arrow keys move between hosts, Enter opens one.`}
        onMouseMove={(e) => setHover(at(e))}
        onMouseLeave={() => setHover(-1)}
        onClick={(e) => open(at(e))}
        onKeyDown={(e) => {
          if (e.key === "Enter") return open(cursor);
          const next = moveCursor(layout, cursor, e.key);
          if (next !== cursor) {
            e.preventDefault();
            setCursor(next);
            keepInView(next);
          }
        }}
      />
      <canvas ref={ring} class="fleet-ring" />
      <p class="focused" aria-live="polite" data-testid="fleet-focused">
        {focused ? describe(focused, rc) : "Hover or focus the map to see a host."}
      </p>
    </div>
  );
}

function RecentServers() {
  // the 12 newest, kept by changes-since after the first read
  const { data, error } = useServerList(ALL_TENANTS, 12, 2_000);
  return (
    <aside class="recent" aria-labelledby="recent-title">
      <h2 id="recent-title">Newest servers</h2>
      <ErrorNote error={error} />
      <ul data-testid="recent-servers">
        {(data?.servers ?? []).map((s) => (
          <li key={s.id} data-server={s.name} data-status={s.status}>
            <a href={`#/servers/${s.id}`}>{s.name}</a> <Badge value={s.status} />
            <span class="host">{s["OS-EXT-SRV-ATTR:host"] ?? "no host"}</span>
          </li>
        ))}
      </ul>
    </aside>
  );
}

export function FleetView() {
  const { fleet, error } = useFleet();
  const [picked, setRc] = useState<string>();
  const classes = fleet?.resource_classes ?? [];
  // the class picked, while the fleet has it; until then VCPU (or the fleet's first class)
  const rc = colorClass(picked, classes);
  const [groupBy, setGroupBy] = useState<"zone" | "aggregate">("zone");
  const [filter, setFilter] = useState("");
  const [namesPicked, setNames] = useState<boolean>();
  const hosts = useMemo(
    () => (filter ? (fleet?.hosts ?? []).filter((h) => h.host.includes(filter)) : (fleet?.hosts ?? [])),
    [fleet, filter],
  );
  // names on the map by default while the fleet is small enough for named tiles to fit
  const namesFit = hosts.length <= NAMES_MAX_HOSTS;
  const names = namesFit && (namesPicked ?? hosts.length <= NAMES_DEFAULT_HOSTS);
  const sum = useMemo(() => summarize(hosts, rc), [hosts, rc]);
  return (
    <div class="fleet">
      <div class="fleet-main">
        <h1>Fleet</h1>
        <ErrorNote error={error} />
        <form class="controls" onSubmit={(e) => e.preventDefault()}>
          <label>
            Color by
            <select name="color" value={rc} onChange={(e) => setRc(e.currentTarget.value)}>
              {(classes.length ? classes : [rc]).map((c) => (
                <option key={c} value={c}>
                  {c}
                </option>
              ))}
            </select>
          </label>
          <label>
            Group by
            <select
              value={groupBy}
              onChange={(e) => setGroupBy(e.currentTarget.value as "zone" | "aggregate")}
            >
              <option value="zone">availability zone</option>
              <option value="aggregate">aggregate</option>
            </select>
          </label>
          <label>
            Host filter
            <input type="search" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} />
          </label>
          <label
            class="inline"
            title={
              namesFit ? undefined : `Names are drawn up to ${NAMES_MAX_HOSTS} hosts: filter to see them`
            }
          >
            <input
              type="checkbox"
              name="names"
              checked={names}
              disabled={!namesFit}
              onChange={(e) => setNames(e.currentTarget.checked)}
            />
            Host names
          </label>
        </form>
        <p class="fleet-summary" data-testid="fleet-summary" data-instances={sum.instances}>
          {sum.hosts} hosts: {sum.up} up, {sum.down} down, {sum.disabled} disabled, {sum.forcedDown} forced
          down · {sum.instances} instances, {sum.building} building · {rc} {sum.used} of {sum.capacity}
        </p>
        <ul class="legend" aria-label="Legend">
          <li class="ramp-item">
            {rc} used
            <span class="ramp" data-testid="fleet-ramp" style={{ background: UTILIZATION_GRADIENT }}>
              <span>0%</span>
              <span>50%</span>
              <span>100%</span>
            </span>
          </li>
          <li>
            <span class="swatch" style={{ background: NO_CLASS_COLOR }} /> no {rc}
          </li>
          <li>
            <span class="swatch" style={{ background: DOWN_COLOR }} /> down
          </li>
          <li>
            <span class="swatch swatch-disabled" /> disabled
          </li>
          <li>
            <span class="swatch swatch-forced" /> forced down
          </li>
          <li>
            <span class="swatch swatch-building" /> building
          </li>
        </ul>
        {fleet ? (
          <FleetCanvas hosts={hosts} groupBy={groupBy} rc={rc} names={names} fleet={fleet} />
        ) : (
          <p>Loading the fleet…</p>
        )}
      </div>
      <RecentServers />
    </div>
  );
}

interface Placement {
  hypervisor: {
    id: string;
    resource_provider_generation: number;
    inventories: Record<
      string,
      {
        total: number;
        reserved: number;
        allocation_ratio: number;
        min_unit: number;
        max_unit: number;
        step_size: number;
        capacity: number;
      }
    >;
    usages: Record<string, number>;
  };
}

export function HostView({ name, onConfirm }: { name: string; onConfirm: (r: ConfirmRequest) => void }) {
  const placement = usePoll<Placement>(`/v2.1/os-hypervisors/${encodeURIComponent(name)}/placement`, 3_000);
  const servers = useServerList({ allTenants: true, host: name }, undefined, 3_000);
  const [row, setRow] = useState<FleetHost>();
  useEffect(() => {
    let alive = true;
    const load = () =>
      getFresh<{ fleet: Fleet }>("/v2.1/os-fleet")
        .then((f) => alive && setRow(f.fleet.hosts.find((h) => h.host === name)))
        .catch(() => undefined);
    void load();
    const t = setInterval(load, 5_000);
    return () => {
      alive = false;
      clearInterval(t);
    };
  }, [name]);
  const inv = placement.data?.hypervisor;
  const list = servers.data?.servers ?? [];
  const failed = list.filter((s) => s.status === "ERROR");
  return (
    <div>
      <p>
        <a href="#/fleet">← Fleet</a>
      </p>
      <h1>{name}</h1>
      {row && (
        <p data-testid="host-row" data-instances={row.instances}>
          Zone <strong>{row.zone}</strong> · <Badge value={row.state} /> <Badge value={row.status} />
          {row.forced_down && <Badge value="forced down" />}
          {row.disabled_reason && <> · disabled: {row.disabled_reason}</>} · {row.instances} instances,{" "}
          {row.building} building, {row.failed_builds} recent failed builds (BuildFailureWeigher)
        </p>
      )}
      <ErrorNote error={placement.error} />
      {inv && (
        <table aria-label="Inventory and usage">
          <thead>
            <tr>
              <th scope="col">Resource class</th>
              <th scope="col">Total</th>
              <th scope="col">Reserved</th>
              <th scope="col">Ratio</th>
              <th scope="col">Capacity</th>
              <th scope="col" class="wide">
                Used
              </th>
            </tr>
          </thead>
          <tbody>
            {Object.entries(inv.inventories).map(([rc, i]) => (
              <tr key={rc} data-rc={rc} data-used={inv.usages[rc] ?? 0}>
                <th scope="row">{rc}</th>
                <td>{i.total}</td>
                <td>{i.reserved}</td>
                <td>{i.allocation_ratio}</td>
                <td>{i.capacity}</td>
                <td>
                  <UsageBar used={inv.usages[rc] ?? 0} capacity={i.capacity} label={`${rc} used`} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {row && <ServiceButtons host={row} onConfirm={onConfirm} />}
      <DrainHost key={name} host={name} servers={list.length} onConfirm={onConfirm} />
      <h2>Instances ({list.length})</h2>
      <ErrorNote error={servers.error} />
      <ServerTable servers={list} admin />
      <h2>Recent failures</h2>
      {failed.length ? (
        <ul>
          {failed.map((s) => (
            <li key={s.id}>
              <a href={`#/servers/${s.id}`}>{s.name}</a>: {s.fault?.message ?? "ERROR"}
            </li>
          ))}
        </ul>
      ) : (
        <p>No server in ERROR on this host. Failed builds counted here: {row?.failed_builds ?? 0}.</p>
      )}
    </div>
  );
}
