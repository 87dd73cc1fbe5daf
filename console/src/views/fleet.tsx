// The fleet map: every host a cell on a canvas (fluid at 10,000), grouped by availability zone or
// aggregate, colored by the chosen resource class's utilization, marked down, disabled or forced
// down. Kept live by os-fleet?changes-since (only what changed). Keyboard: arrows move, Enter
// opens; the focused host is read out. Beside it, the newest servers, so a build can be watched.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { get, getFresh } from "../api.js";
import { Badge, type ConfirmRequest, ErrorNote, UsageBar } from "../components.js";
import { usePoll, useServerList } from "../hooks.js";
import {
  cellAt,
  cellSize,
  groupHosts,
  LABEL_HEIGHT,
  layoutFleet,
  markOf,
  mergeFleet,
  moveCursor,
  summarize,
  utilization,
  utilizationColor,
} from "../model.js";
import type { Fleet, FleetHost } from "../types.js";
import { DrainHost } from "./drain.js";
import { ServiceButtons } from "./operations.js";
import { ServerTable } from "./servers.js";

const FLEET_POLL_MS = 2_000;
const ALL_TENANTS = { allTenants: true };

/** The fleet, full once, then changes-since. */
function useFleet(): { fleet: Fleet | undefined; error: string | undefined } {
  const [fleet, setFleet] = useState<Fleet>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    let alive = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let current: Fleet | undefined;
    const run = async () => {
      try {
        const path = current
          ? `/v2.1/os-fleet?changes-since=${encodeURIComponent(current.next_changes_since)}`
          : "/v2.1/os-fleet";
        const { fleet: f } = await get<{ fleet: Fleet }>(path);
        current = current ? { ...f, hosts: mergeFleet(current.hosts, f.hosts), full: true } : f;
        if (alive) {
          setFleet(current);
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

function FleetCanvas({
  hosts,
  groupBy,
  rc,
  fleet,
}: {
  hosts: FleetHost[];
  groupBy: "zone" | "aggregate";
  rc: string;
  fleet: Fleet;
}) {
  const wrap = useRef<HTMLDivElement>(null);
  const canvas = useRef<HTMLCanvasElement>(null);
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
  const layout = useMemo(
    () => layoutFleet(groups, width, cellSize(hosts.length)),
    [groups, width, hosts.length],
  );
  useEffect(() => {
    const c = canvas.current;
    if (!c) return;
    const dpr = devicePixelRatio || 1;
    c.width = width * dpr;
    c.height = layout.height * dpr;
    c.style.height = `${layout.height}px`;
    const g = c.getContext("2d")!;
    g.scale(dpr, dpr);
    g.clearRect(0, 0, width, layout.height);
    g.font = "600 13px system-ui, sans-serif";
    g.fillStyle = "#1f2933";
    for (const l of layout.labels) g.fillText(`${l.name} · ${l.count} hosts`, l.x, l.y + LABEL_HEIGHT - 7);
    const s = layout.size;
    layout.cells.forEach((cell, i) => {
      const h = cell.host;
      const mark = markOf(h);
      g.fillStyle =
        mark === "down" || mark === "forced-down" ? "#323f4b" : utilizationColor(utilization(h, rc));
      g.fillRect(cell.x, cell.y, s, s);
      if (mark === "disabled") {
        g.strokeStyle = "#1f2933";
        g.lineWidth = 1;
        g.beginPath();
        g.moveTo(cell.x, cell.y + s);
        g.lineTo(cell.x + s, cell.y);
        g.stroke();
      }
      if (mark === "forced-down") {
        g.strokeStyle = "#a855f7";
        g.lineWidth = Math.max(1, s / 7);
        g.strokeRect(cell.x + 0.5, cell.y + 0.5, s - 1, s - 1);
      }
      if (h.building > 0 && s >= 8) {
        g.fillStyle = "#ffffff";
        g.beginPath();
        g.arc(cell.x + s / 2, cell.y + s / 2, s / 5, 0, Math.PI * 2);
        g.fill();
      }
      if (i === cursor || i === hover) {
        g.strokeStyle = "#0b69a3";
        g.lineWidth = 2;
        g.strokeRect(cell.x - 1, cell.y - 1, s + 2, s + 2);
      }
    });
  }, [layout, rc, cursor, hover, width]);
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
        aria-label={`Fleet map: ${hosts.length} hosts in ${groups.length} groups, colored by ${rc} utilization. Arrow keys move between hosts, Enter opens one.`}
        onMouseMove={(e) => setHover(at(e))}
        onMouseLeave={() => setHover(-1)}
        onClick={(e) => open(at(e))}
        onKeyDown={(e) => {
          if (e.key === "Enter") return open(cursor);
          const next = moveCursor(layout, cursor, e.key);
          if (next !== cursor) {
            e.preventDefault();
            setCursor(next);
          }
        }}
      />
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
  const [rc, setRc] = useState("VCPU");
  const [groupBy, setGroupBy] = useState<"zone" | "aggregate">("zone");
  const [filter, setFilter] = useState("");
  const hosts = useMemo(
    () => (fleet?.hosts ?? []).filter((h) => !filter || h.host.includes(filter)),
    [fleet, filter],
  );
  const sum = summarize(hosts, rc);
  return (
    <div class="fleet">
      <div class="fleet-main">
        <h1>Fleet</h1>
        <ErrorNote error={error} />
        <form class="controls" onSubmit={(e) => e.preventDefault()}>
          <label>
            Color by
            <select value={rc} onChange={(e) => setRc(e.currentTarget.value)}>
              {(fleet?.resource_classes ?? ["VCPU"]).map((c) => (
                <option key={c}>{c}</option>
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
        </form>
        <p class="fleet-summary" data-testid="fleet-summary" data-instances={sum.instances}>
          {sum.hosts} hosts: {sum.up} up, {sum.down} down, {sum.disabled} disabled, {sum.forcedDown} forced
          down · {sum.instances} instances, {sum.building} building · {rc} {sum.used} of {sum.capacity}
        </p>
        <ul class="legend" aria-label="Legend">
          <li>
            <span class="swatch" style={{ background: utilizationColor(0) }} /> idle
          </li>
          <li>
            <span class="swatch" style={{ background: utilizationColor(0.6) }} /> 60%
          </li>
          <li>
            <span class="swatch" style={{ background: utilizationColor(1) }} /> full
          </li>
          <li>
            <span class="swatch" style={{ background: "#323f4b" }} /> down
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
          <FleetCanvas hosts={hosts} groupBy={groupBy} rc={rc} fleet={fleet} />
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
