// Servers: a filterable table (a member sees its project's, never a host; an admin sees every
// project's, with hosts), and a server's page: its timeline (every action and event, across
// attempts and hosts), its fault, its reschedules, and for admins the decision explainer.
import { useEffect, useState } from "preact/hooks";
import { currentSession, get } from "../api.js";
import { ago, Badge, ErrorNote } from "../components.js";
import { usePoll } from "../hooks.js";
import { reschedules, timeline } from "../model.js";
import type { InstanceAction, Scheduling, Server } from "../types.js";
import { Explainer } from "./explainer.js";

const STATUSES = ["", "ACTIVE", "BUILD", "ERROR", "SHUTOFF", "REBOOT", "HARD_REBOOT", "DELETED"];

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
            {admin && <td>{s.tenant_id}</td>}
            {admin && (
              <td>
                {s["OS-EXT-SRV-ATTR:host"] ? (
                  <a href={`#/hosts/${encodeURIComponent(s["OS-EXT-SRV-ATTR:host"])}`}>
                    {s["OS-EXT-SRV-ATTR:host"]}
                  </a>
                ) : (
                  ""
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
  const q = new URLSearchParams();
  if (admin) q.set("all_tenants", "1");
  if (status) q.set("status", status);
  if (name) q.set("name", name);
  if (admin && project) q.set("project_id", project);
  if (admin && host) q.set("host", host);
  q.set("limit", "500");
  const { data, error } = usePoll<{ servers: Server[] }>(`/v2.1/servers/detail?${q}`, 3_000);
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
function useActions(id: string, everyMs: number): { actions: InstanceAction[]; error?: string } {
  const [actions, setActions] = useState<InstanceAction[]>([]);
  const [error, setError] = useState<string>();
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
  }, [id, everyMs]);
  return { actions, ...(error ? { error } : {}) };
}

export function ServerView({ id }: { id: string }) {
  const admin = currentSession()?.admin ?? false;
  const server = usePoll<{ server: Server }>(`/v2.1/servers/${id}`, 2_000);
  const { actions, error } = useActions(id, 4_000);
  const scheduling = usePoll<{ scheduling: Scheduling | null }>(
    admin ? `/v2.1/servers/${id}/os-scheduling` : null,
    5_000,
  );
  const s = server.data?.server;
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
          <dd>{s.flavor?.original_name ?? ""}</dd>
          <dt>Zone</dt>
          <dd>{s["OS-EXT-AZ:availability_zone"] ?? ""}</dd>
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
      {s?.fault && (
        <div class="fault" role="note" aria-label="Fault">
          <strong>Fault {s.fault.code}:</strong> {s.fault.message}
          {s.fault.details && <pre>{s.fault.details}</pre>}
        </div>
      )}
      <h2>Why here</h2>
      {admin ? (
        <>
          <ErrorNote error={scheduling.error} />
          {scheduling.data?.scheduling?.explanation ? (
            <Explainer
              explanation={scheduling.data.scheduling.explanation}
              summary={scheduling.data.scheduling.summary}
            />
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
            {e.attempt !== undefined && <span> (attempt {e.attempt})</span>}
            {e.result && <> · {e.result}</>}
            {e.host && <> · on {e.host}</>}
            {e.details && <div class="details">{e.details}</div>}
          </li>
        ))}
      </ol>
    </div>
  );
}
