// Servers: a filterable table (a member sees its project's, never a host; an admin sees every
// project's, with hosts; each with its first IPv4), and a server's page: its addresses, its actions (server-actions.tsx: moves, pause,
// suspend, shelve and unshelve, snapshots and backups, and for admins reset-state), a live
// migration's progress with force complete and abort, its timeline (every action and event,
// across attempts and hosts), its fault, its reschedules, and for admins its diagnostics, its
// migration records and the decision explainer.
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { currentSession, get, post, request } from "../api.js";
import { ago, Badge, type ConfirmRequest, ErrorNote } from "../components.js";
import { type Polled, usePoll, useServerList } from "../hooks.js";
import { firstAddress, reschedules, timeline } from "../model.js";
import type {
  Flavor,
  Image,
  InstanceAction,
  LiveMigration,
  Migration,
  Scheduling,
  Server,
} from "../types.js";
import { DiagnosticsPanel } from "./diagnostics.js";
import { Explainer } from "./explainer.js";
import { ServerActionButtons } from "./server-actions.js";

const STATUSES = [
  "",
  "ACTIVE",
  "BUILD",
  "ERROR",
  "SHUTOFF",
  "REBOOT",
  "HARD_REBOOT",
  "RESIZE",
  "VERIFY_RESIZE",
  "REVERT_RESIZE",
  "MIGRATING",
  "REBUILD",
  "PAUSED",
  "SUSPENDED",
  "SHELVED",
  "SHELVED_OFFLOADED",
  "DELETED",
];

export function ServerTable({ servers, admin }: { servers: Server[]; admin: boolean }) {
  if (!servers.length) return <p>No servers.</p>;
  return (
    <table aria-label="Servers" data-testid="servers-table">
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Status</th>
          <th scope="col">Task</th>
          <th scope="col">Flavor</th>
          <th scope="col">Address</th>
          {admin && <th scope="col">Project</th>}
          {admin && <th scope="col">Host</th>}
          <th scope="col">Created</th>
        </tr>
      </thead>
      <tbody>
        {servers.map((s) => (
          <tr key={s.id} data-server={s.name} data-status={s.status}>
            <th scope="row">
              <a href={`#/servers/${s.id}`}>{s.name}</a>
            </th>
            <td>
              <Badge value={s.status} />
            </td>
            <td>{s["OS-EXT-STS:task_state"] ?? ""}</td>
            <td>{s.flavor?.original_name ?? ""}</td>
            <td data-testid="server-address">{firstAddress(s) ?? ""}</td>
            {admin && <td>{s.tenant_id}</td>}
            {admin && (
              <td>
                {s["OS-EXT-SRV-ATTR:host"] ? (
                  <a href={`#/hosts/${encodeURIComponent(s["OS-EXT-SRV-ATTR:host"])}`}>
                    {s["OS-EXT-SRV-ATTR:host"]}
                  </a>
                ) : (
                  <span class="note">none</span>
                )}
              </td>
            )}
            <td title={s.created}>{ago(s.created)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function ServersView() {
  const admin = currentSession()?.admin ?? false;
  const [status, setStatus] = useState("");
  const [name, setName] = useState("");
  const [project, setProject] = useState("");
  const [host, setHost] = useState("");
  // read whole once (and when a filter changes), then only what changed
  const { data, error } = useServerList(
    {
      allTenants: admin,
      status: status || undefined,
      name: name || undefined,
      project: (admin && project) || undefined,
      host: (admin && host) || undefined,
    },
    500,
    3_000,
  );
  return (
    <div>
      <h1>Servers</h1>
      <form class="controls" onSubmit={(e) => e.preventDefault()} aria-label="Filter servers">
        <label>
          Status
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s || "any"}
              </option>
            ))}
          </select>
        </label>
        <label>
          Name
          <input type="search" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        {admin && (
          <label>
            Project
            <input type="search" value={project} onInput={(e) => setProject(e.currentTarget.value)} />
          </label>
        )}
        {admin && (
          <label>
            Host
            <input type="search" value={host} onInput={(e) => setHost(e.currentTarget.value)} />
          </label>
        )}
      </form>
      <ErrorNote error={error} />
      <ServerTable servers={data?.servers ?? []} admin={admin} />
    </div>
  );
}

/** Each action with its events (the list has none; each action's own page has them). */
function useActions(
  id: string,
  everyMs: number,
): { actions: InstanceAction[]; error?: string; reload: () => void } {
  const [actions, setActions] = useState<InstanceAction[]>([]);
  const [error, setError] = useState<string>();
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let alive = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      try {
        const { instanceActions } = await get<{ instanceActions: InstanceAction[] }>(
          `/v2.1/servers/${id}/os-instance-actions`,
        );
        const full = await Promise.all(
          instanceActions.map(
            async (a) =>
              (
                await get<{ instanceAction: InstanceAction }>(
                  `/v2.1/servers/${id}/os-instance-actions/${a.request_id}`,
                )
              ).instanceAction,
          ),
        );
        if (alive) {
          setActions(full);
          setError(undefined);
        }
      } catch (e) {
        if (alive) setError((e as Error).message);
      }
      if (alive) timer = setTimeout(run, everyMs);
    };
    void run();
    return () => {
      alive = false;
      if (timer) clearTimeout(timer);
    };
  }, [id, everyMs, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { actions, reload, ...(error ? { error } : {}) };
}

const MIB = 2 ** 20;

/**
 * A live migration in progress (admins): its status and copy from GET /servers/{id}/migrations
 * (2.23), with force complete (running) and abort (queued, preparing or running: 2.65).
 */
function LiveMigrationPanel({
  server: s,
  onConfirm,
}: {
  server: Server;
  onConfirm: (r: ConfirmRequest) => void;
}) {
  const { data, error } = usePoll<{ migrations: LiveMigration[] }>(`/v2.1/servers/${s.id}/migrations`, 1_000);
  const m = data?.migrations[0];
  const total = m?.memory_total_bytes ?? 0;
  const done = m?.memory_processed_bytes ?? 0;
  const path = m && `/v2.1/servers/${s.id}/migrations/${m.id}`;
  return (
    <section aria-labelledby="live-title" data-testid="live-migration" data-status={m?.status ?? ""}>
      <h3 id="live-title">Live migration</h3>
      <ErrorNote error={error} />
      {!m ? (
        <p>{data ? "Finishing…" : "Loading…"}</p>
      ) : (
        <>
          <p>
            Migration {m.id}: <Badge value={m.status} /> from {m.source_compute} to{" "}
            {m.dest_compute ?? "a host not chosen yet"}.{" "}
            <span data-testid="live-progress">
              {total > 0
                ? `${Math.round((100 * done) / total)}% of ${Math.round(total / MIB)} MiB copied`
                : "no copy reported yet"}
            </span>
          </p>
          {total > 0 && <meter min={0} max={total} value={done} aria-label="Memory copied" />}
          <div class="buttons">
            <button
              type="button"
              data-action="force_complete"
              disabled={m.status !== "running"}
              onClick={() =>
                onConfirm({
                  title: `Force the live migration of ${s.name} to complete?`,
                  text: "The guest is paused so that its copy ends, and it resumes on the destination: a short pause rather than a copy that may never converge.",
                  confirm: "Force complete",
                  run: () => post(`${path}/action`, { force_complete: null }),
                })
              }
            >
              Force complete
            </button>
            <button
              type="button"
              data-action="abort"
              disabled={!["queued", "preparing", "running"].includes(m.status)}
              onClick={() =>
                onConfirm({
                  title: `Abort the live migration of ${s.name}?`,
                  text: `It stops, and the server keeps running on ${m.source_compute}; the destination's claim is let go.`,
                  confirm: "Abort",
                  run: () => request("DELETE", path!),
                })
              }
            >
              Abort
            </button>
          </div>
        </>
      )}
    </section>
  );
}

/** A server's migration records (os-migrations is admin only), newest first. */
function Migrations({
  migrations: { data, error },
  flavors,
}: {
  migrations: Polled<{ migrations: Migration[] }>;
  flavors: Flavor[];
}) {
  const flavorName = (fid: number | string) => flavors.find((f) => f.id === String(fid))?.name ?? String(fid);
  const rows = [...(data?.migrations ?? [])].sort(
    (a, b) => b.created_at.localeCompare(a.created_at) || b.id - a.id,
  );
  return (
    <>
      <h2>Migrations</h2>
      <ErrorNote error={error} />
      {!data ? (
        <p>Loading…</p>
      ) : !rows.length ? (
        <p>This server has not moved.</p>
      ) : (
        <table aria-label="Migrations" data-testid="migrations">
          <thead>
            <tr>
              <th scope="col">Id</th>
              <th scope="col">Type</th>
              <th scope="col">Status</th>
              <th scope="col">Source</th>
              <th scope="col">Destination</th>
              <th scope="col">Flavor</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((m) => (
              <tr key={m.id} data-type={m.migration_type} data-status={m.status}>
                <th scope="row">{m.id}</th>
                <td>{m.migration_type}</td>
                <td>
                  <Badge value={m.status} />
                </td>
                <td>{m.source_compute}</td>
                <td data-testid="migration-dest">{m.dest_compute ?? "not chosen yet"}</td>
                <td>
                  {m.old_instance_type_id === m.new_instance_type_id
                    ? flavorName(m.old_instance_type_id)
                    : `${flavorName(m.old_instance_type_id)} → ${flavorName(m.new_instance_type_id)}`}
                </td>
                <td title={m.created_at}>{ago(`${m.created_at}Z`)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

/** Nova's `addresses`: each network's addresses, with their MAC (the port's). */
function Addresses({ server: s }: { server: Server }) {
  const networks = Object.entries(s.addresses ?? {});
  if (!networks.length) return <span class="note">none</span>;
  return (
    <ul class="addresses">
      {networks.flatMap(([network, addrs]) =>
        addrs.map((a) => (
          <li key={`${network}/${a.addr}`} data-network={network} data-addr={a.addr}>
            {network}: <strong>{a.addr}</strong> (IPv{a.version}
            {a["OS-EXT-IPS:type"] ? `, ${a["OS-EXT-IPS:type"]}` : ""}
            {a["OS-EXT-IPS-MAC:mac_addr"] ? `, MAC ${a["OS-EXT-IPS-MAC:mac_addr"]}` : ""})
          </li>
        )),
      )}
    </ul>
  );
}

/** What a shelved server keeps and lets go (the claim is what an operator shelves it for). */
const SHELF_NOTES: Readonly<Record<string, (s: Server) => string>> = {
  SHELVED: (s) =>
    `Shelved: stopped, with its image kept. ${s["OS-EXT-SRV-ATTR:host"] ?? "Its host"} keeps its claim until it is offloaded; unshelve starts it there again.`,
  SHELVED_OFFLOADED: () =>
    "Shelved and offloaded: no host runs it and no host holds a claim for it; its quota stays counted. Unshelve schedules it again, as a build.",
};

export function ServerView({ id, onConfirm }: { id: string; onConfirm: (r: ConfirmRequest) => void }) {
  const admin = currentSession()?.admin ?? false;
  const [moving, setMoving] = useState(false);
  // poll faster while a task is in progress (a move's states pass in seconds)
  const server = usePoll<{ server: Server }>(`/v2.1/servers/${id}`, moving ? 1_000 : 2_000);
  const { actions, error, reload: reloadActions } = useActions(id, moving ? 2_000 : 4_000);
  const flavors = usePoll<{ flavors: Flavor[] }>("/v2.1/flavors/detail", 0);
  const images = usePoll<{ images: Image[] }>("/image/v2/images?limit=1000", 0);
  const scheduling = usePoll<{ scheduling: Scheduling | null }>(
    admin ? `/v2.1/servers/${id}/os-scheduling` : null,
    5_000,
  );
  // os-migrations is admin only: a member is never shown a migration's hosts
  const migrations = usePoll<{ migrations: Migration[] }>(
    admin ? `/v2.1/os-migrations?instance_uuid=${id}` : null,
    moving ? 1_000 : 5_000,
  );
  const { reload: reloadMigrations } = migrations;
  const { reload: reloadScheduling } = scheduling;
  const s = server.data?.server;
  const task = Boolean(s?.["OS-EXT-STS:task_state"]);
  const hadTask = useRef<boolean>();
  useEffect(() => {
    setMoving(task);
    const before = hadTask.current;
    hadTask.current = s ? task : undefined;
    if (before === undefined || before === task) return;
    // a task began or ended: the move's last events, record and decision are there now
    reloadActions();
    reloadMigrations();
    reloadScheduling();
  }, [s, task, reloadActions, reloadMigrations, reloadScheduling]);
  const reloadServer = server.reload;
  const ask = (r: ConfirmRequest) =>
    onConfirm({
      ...r,
      run: async (reason, choice) => {
        await r.run(reason, choice);
        reloadServer();
        reloadActions();
        reloadMigrations();
      },
    });
  const entries = timeline(actions);
  const moved = reschedules(actions);
  return (
    <div>
      <p>
        <a href="#/servers">← Servers</a>
      </p>
      <h1>{s?.name ?? id}</h1>
      <ErrorNote error={server.error} />
      {s && (
        <dl class="facts">
          <dt>Status</dt>
          <dd data-testid="server-status">
            <Badge value={s.status} /> {s["OS-EXT-STS:task_state"] ?? ""}
          </dd>
          <dt>Flavor</dt>
          <dd data-testid="server-flavor">{s.flavor?.original_name ?? ""}</dd>
          <dt>Zone</dt>
          <dd>{s["OS-EXT-AZ:availability_zone"] ?? ""}</dd>
          <dt>Addresses</dt>
          <dd data-testid="server-addresses">
            <Addresses server={s} />
          </dd>
          {admin && (
            <>
              <dt>Host</dt>
              <dd data-testid="server-host">
                {s["OS-EXT-SRV-ATTR:host"] ? (
                  <a href={`#/hosts/${encodeURIComponent(s["OS-EXT-SRV-ATTR:host"])}`}>
                    {s["OS-EXT-SRV-ATTR:host"]}
                  </a>
                ) : (
                  "none"
                )}
              </dd>
              <dt>Project</dt>
              <dd>{s.tenant_id}</dd>
            </>
          )}
          <dt>Created</dt>
          <dd>{s.created}</dd>
          <dt>Rescheduled</dt>
          <dd>{moved ? `${moved} time${moved > 1 ? "s" : ""}` : "no"}</dd>
        </dl>
      )}
      {s && SHELF_NOTES[s.status] && (
        <p class="note" data-testid="shelf-note">
          {SHELF_NOTES[s.status]!(s)}
        </p>
      )}
      {s?.fault && (
        <div class="fault" role="note" aria-label="Fault">
          <strong>Fault {s.fault.code}:</strong> {s.fault.message}
          {s.fault.details && <pre>{s.fault.details}</pre>}
        </div>
      )}
      {s && (
        <section aria-labelledby="server-actions-title" data-testid="server-actions">
          <h2 id="server-actions-title">Actions</h2>
          <ServerActionButtons
            server={s}
            admin={admin}
            flavors={flavors.data?.flavors ?? []}
            images={images.data?.images ?? []}
            onConfirm={ask}
          />
          {admin && s["OS-EXT-STS:task_state"] === "migrating" && (
            <LiveMigrationPanel server={s} onConfirm={ask} />
          )}
        </section>
      )}
      {admin && s && <DiagnosticsPanel server={s} />}
      <h2>Why here</h2>
      {admin ? (
        <>
          <ErrorNote error={scheduling.error} />
          {scheduling.data?.scheduling?.explanation ? (
            <>
              {s?.["OS-EXT-SRV-ATTR:host"] &&
                scheduling.data.scheduling.host &&
                scheduling.data.scheduling.host !== s["OS-EXT-SRV-ATTR:host"] && (
                  <p class="note">
                    The last decision chose {scheduling.data.scheduling.host}; the server is on{" "}
                    {s["OS-EXT-SRV-ATTR:host"]} (its move was reverted, failed, or has not finished).
                  </p>
                )}
              <Explainer
                explanation={scheduling.data.scheduling.explanation}
                summary={scheduling.data.scheduling.summary}
              />
            </>
          ) : (
            <p>{scheduling.data ? "No decision recorded for this server yet." : "Loading…"}</p>
          )}
        </>
      ) : (
        <p>The scheduler's explanation names hosts, which only administrators see.</p>
      )}
      <h2>Timeline</h2>
      <ErrorNote error={error} />
      <ol class="timeline" data-testid="timeline">
        {entries.map((e, i) => (
          <li key={`${e.at}-${i}`} class={`tl-${e.kind} ${e.result === "Error" ? "tl-error" : ""}`}>
            <time dateTime={e.at}>{e.at.replace("T", " ").slice(0, 23)}</time> <strong>{e.title}</strong>
            {e.gloss && <span class="gloss"> ({e.gloss})</span>}
            {e.attempt !== undefined && <span> (attempt {e.attempt})</span>}
            {e.result && <> · {e.result}</>}
            {e.host && <> · on {e.host}</>}
            {e.details && <div class="details">{e.details}</div>}
          </li>
        ))}
      </ol>
      {admin && <Migrations migrations={migrations} flavors={flavors.data?.flavors ?? []} />}
    </div>
  );
}
