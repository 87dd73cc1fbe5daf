// Draining a host: every server on it cold-migrated elsewhere, as novaclient's
// host-servers-migrate does, each migration waited for and confirmed; or live-migrated, as its
// host-evacuate-live does, with a cold migration for the servers that cannot go live if asked.
// Shared by the console's "Drain host" and `novaless-drain` (bin/novaless-drain.ts): it only talks
// to the public Compute API through the `request` it is given, so it runs in the browser and in
// Node alike.

/**
 * One call to the Compute API (at `microversion`, else the caller's own); it throws an Error
 * carrying the API's message on a refusal.
 */
export type DrainRequest = <T>(
  method: string,
  path: string,
  body?: unknown,
  microversion?: string,
) => Promise<{ body: T; requestId: string | null }>;

export type DrainState = "waiting" | "migrating" | "confirming" | "migrated" | "failed" | "skipped";

export interface DrainOutcome {
  id: string;
  name: string;
  state: DrainState;
  /** where it went (migrated), or the host it is on */
  host: string | null;
  /**
   * why it failed or was skipped; "awaiting confirmation" for a move left in VERIFY_RESIZE; how
   * it went in a live drain ("live", or "cold, as it cannot go live: …"); a live copy's progress
   */
  detail: string;
  /** how it moves or moved, once it does */
  how?: "live" | "cold";
}

export interface DrainOptions {
  host: string;
  /** servers moved at once (default 2) */
  concurrency?: number;
  /** confirm each move (default true); otherwise it waits in VERIFY_RESIZE */
  confirm?: boolean;
  /** disable the host's compute service first, so nothing new lands on it (default true) */
  disable?: boolean;
  disabledReason?: string;
  /**
   * live-migrate each ACTIVE server (os-migrateLive, the scheduler picks the host) instead of
   * cold-migrating it, as novaclient's host-evacuate-live (default false)
   */
  live?: boolean;
  /** live: cold-migrate (and confirm) the servers that cannot go live instead of skipping them */
  fallbackCold?: boolean;
  /** how long each server may take to move and be confirmed (default 600 s) */
  timeoutMs?: number;
  pollMs?: number;
  /** each server's state as it changes */
  onUpdate?: (o: DrainOutcome) => void;
  /** what was done to the host (disabled, already disabled, left enabled) */
  onNote?: (text: string) => void;
}

export interface DrainResult {
  host: string;
  outcomes: DrainOutcome[];
  /** servers still on the host at the end, moved or not */
  remaining: number;
  /** every server left the host */
  ok: boolean;
}

interface Service {
  id: string | number;
  host: string;
  status: string;
  disabled_reason?: string | null;
}

interface ServerView {
  id: string;
  name: string;
  status: string;
  fault?: { message?: string };
  "OS-EXT-SRV-ATTR:host"?: string | null;
  "OS-EXT-STS:task_state"?: string | null;
}

interface ActionEvents {
  instanceAction: { events?: { event: string; result: string | null; details?: string | null }[] };
}

interface LiveMigrationView {
  id: number;
  status: string;
  memory_total_bytes?: number | null;
  memory_processed_bytes?: number | null;
}

const MOVABLE = ["ACTIVE", "SHUTOFF"];
const SETTLED = ["ACTIVE", "SHUTOFF", "VERIFY_RESIZE", "ERROR"];
export const DEFAULT_REASON = "draining for maintenance";
/**
 * os-migrateLive's microversion: block_migration "auto" (2.25), and before 2.34, so that the API
 * answers the conductor's checks and scheduling at once (a MigrationPreCheckError is its 400)
 * rather than as a migration in error found later.
 */
export const LIVE_MICROVERSION = "2.25";
/** Nova's texts for a server that cannot move live: its driver's pre-check, or a guest not running. */
const CANNOT_GO_LIVE = [
  /^Migration pre-check error/,
  /^Cannot 'os-migrateLive' instance \S+ while it is in (vm_state|power_state) /,
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const enc = encodeURIComponent;

export async function drainHost(request: DrainRequest, o: DrainOptions): Promise<DrainResult> {
  const host = o.host;
  const pollMs = o.pollMs ?? 500;
  const timeoutMs = o.timeoutMs ?? 600_000;
  const note = o.onNote ?? (() => undefined);

  const { body } = await request<{ services: Service[] }>(
    "GET",
    `/v2.1/os-services?binary=nova-compute&host=${enc(host)}`,
  );
  const service = body.services.find((s) => s.host === host);
  if (!service) throw new Error(`Compute host ${host} could not be found.`);
  if (o.disable === false) {
    note(
      `${host} left ${service.status}${service.status === "enabled" ? ": new servers may land on it" : ""}`,
    );
  } else if (service.status === "disabled") {
    note(`${host} was already disabled${service.disabled_reason ? ` (${service.disabled_reason})` : ""}`);
  } else {
    const reason = o.disabledReason ?? DEFAULT_REASON;
    await request("PUT", `/v2.1/os-services/${enc(String(service.id))}`, {
      status: "disabled",
      disabled_reason: reason,
    });
    note(`disabled ${host} (${reason}): the scheduler places nothing new on it`);
  }

  const servers = await serversOn(request, host);
  const outcomes = servers.map<DrainOutcome>((s) => ({
    id: s.id,
    name: s.name,
    state: "waiting",
    host,
    detail: "",
  }));
  const set = (i: number, patch: Partial<DrainOutcome>) => {
    outcomes[i] = { ...outcomes[i]!, ...patch };
    o.onUpdate?.(outcomes[i]!);
  };
  const cold = new Set<number>();
  servers.forEach((s, i) => {
    const task = s["OS-EXT-STS:task_state"];
    if (o.live && s.status === "SHUTOFF" && !task) {
      // only a running guest moves live (Nova's check_instance_state(vm_state=[ACTIVE, PAUSED]))
      const why = "cannot go live: SHUTOFF: only a running server can be live-migrated";
      if (o.fallbackCold) {
        cold.add(i);
        outcomes[i] = { ...outcomes[i]!, detail: why };
        o.onUpdate?.(outcomes[i]!);
      } else set(i, { state: "skipped", detail: why });
    } else if (!MOVABLE.includes(s.status) || task) {
      set(i, {
        state: "skipped",
        detail:
          s.status === "VERIFY_RESIZE" && !task
            ? "VERIFY_RESIZE: confirm or revert its move first"
            : `${s.status}${task ? ` (task ${task})` : ""}: only ACTIVE or SHUTOFF servers can be migrated`,
      });
    } else o.onUpdate?.(outcomes[i]!);
  });

  // a small pool of workers over the movable servers, as novaclient's loop but `concurrency` at a time
  const queue = outcomes.flatMap((x, i) => (x.state === "waiting" ? [i] : []));
  const worker = async () => {
    for (let i = queue.shift(); i !== undefined; i = queue.shift()) {
      const progress = (p: Partial<DrainOutcome>) => set(i, p);
      const coldMove = async (why?: string): Promise<Partial<DrainOutcome>> => {
        const r = await moveOne(
          request,
          outcomes[i]!,
          host,
          progress,
          o.confirm !== false,
          timeoutMs,
          pollMs,
        );
        if (!why) return r;
        // in a live drain, say why this one went cold
        const because = `cold, as it ${why}`;
        return r.state === "migrated" ? { ...r, detail: r.detail ? `${because}; ${r.detail}` : because } : r;
      };
      try {
        if (!o.live) set(i, await coldMove());
        else if (cold.has(i)) set(i, await coldMove(outcomes[i]!.detail));
        else {
          const r = await liveOne(request, outcomes[i]!, host, progress, timeoutMs, pollMs);
          if (!("cannot" in r)) set(i, r);
          else if (o.fallbackCold) set(i, await coldMove(`cannot go live: ${r.cannot}`));
          else set(i, { state: "skipped", detail: `cannot go live: ${r.cannot}` });
        }
      } catch (e) {
        set(i, { state: "failed", detail: (e as Error).message });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, o.concurrency ?? 2) }, worker));

  const remaining = (await serversOn(request, host)).length;
  return {
    host,
    outcomes,
    remaining,
    ok: remaining === 0 && outcomes.every((x) => x.state === "migrated"),
  };
}

async function serversOn(request: DrainRequest, host: string): Promise<ServerView[]> {
  const out: ServerView[] = [];
  const page = 1000; // Nova's osapi_max_limit
  for (let marker = ""; ; ) {
    const { body } = await request<{ servers: ServerView[] }>(
      "GET",
      `/v2.1/servers/detail?all_tenants=1&host=${enc(host)}&limit=${page}${marker && `&marker=${marker}`}`,
    );
    out.push(...body.servers);
    if (body.servers.length < page) return out;
    marker = body.servers[body.servers.length - 1]!.id;
  }
}

async function moveOne(
  request: DrainRequest,
  s: DrainOutcome,
  source: string,
  progress: (p: Partial<DrainOutcome>) => void,
  confirm: boolean,
  timeoutMs: number,
  pollMs: number,
): Promise<Partial<DrainOutcome>> {
  const deadline = Date.now() + timeoutMs;
  const path = `/v2.1/servers/${enc(s.id)}`;
  const { requestId } = await request("POST", `${path}/action`, { migrate: null });
  progress({ state: "migrating", how: "cold", detail: "" });
  // settled: no task in progress and a state a move ends in
  const settle = async (done: (v: ServerView) => boolean): Promise<ServerView> => {
    for (;;) {
      const { body } = await request<{ server: ServerView }>("GET", path);
      const v = body.server;
      if (!v["OS-EXT-STS:task_state"] && done(v)) return v;
      if (Date.now() > deadline) {
        const task = v["OS-EXT-STS:task_state"];
        throw new Error(`timed out after ${timeoutMs / 1000} s, ${v.status}${task ? ` (task ${task})` : ""}`);
      }
      await sleep(pollMs);
    }
  };
  let v = await settle((x) => SETTLED.includes(x.status));
  const at = () => v["OS-EXT-SRV-ATTR:host"] ?? null;
  if (v.status === "VERIFY_RESIZE") {
    if (!confirm) return { state: "migrated", host: at(), detail: "awaiting confirmation" };
    progress({ state: "confirming", host: at() });
    await request("POST", `${path}/action`, { confirmResize: null });
    v = await settle((x) => x.status !== "VERIFY_RESIZE");
  }
  if (MOVABLE.includes(v.status) && at() !== source) return { state: "migrated", host: at(), detail: "" };
  return { state: "failed", host: at(), detail: await whyFailed(request, v, requestId) };
}

/**
 * One server live-migrated: os-migrateLive with no host (the scheduler picks), then watched until
 * its task ends, its copy's progress reported meanwhile. `cannot` when it cannot go live.
 */
async function liveOne(
  request: DrainRequest,
  s: DrainOutcome,
  source: string,
  progress: (p: Partial<DrainOutcome>) => void,
  timeoutMs: number,
  pollMs: number,
): Promise<Partial<DrainOutcome> | { cannot: string }> {
  const deadline = Date.now() + timeoutMs;
  const path = `/v2.1/servers/${enc(s.id)}`;
  progress({ state: "migrating", how: "live", detail: "" });
  let requestId: string | null;
  try {
    ({ requestId } = await request(
      "POST",
      `${path}/action`,
      { "os-migrateLive": { host: null, block_migration: "auto" } },
      LIVE_MICROVERSION,
    ));
  } catch (e) {
    const message = (e as Error).message;
    if (CANNOT_GO_LIVE.some((r) => r.test(message))) return { cannot: message };
    // refused by the conductor (NoValidHost …): its event says more than the API's 400
    const event = await failedEvent(request, s.id, null, "live-migration");
    return { state: "failed", host: source, detail: `live migration refused: ${event ?? message}` };
  }
  let v: ServerView;
  for (;;) {
    v = (await request<{ server: ServerView }>("GET", path)).body.server;
    if (!v["OS-EXT-STS:task_state"] && v.status !== "MIGRATING") break;
    const copy = await liveProgress(request, s.id);
    if (copy) progress({ detail: copy });
    if (Date.now() > deadline) {
      const task = v["OS-EXT-STS:task_state"];
      throw new Error(`timed out after ${timeoutMs / 1000} s, ${v.status}${task ? ` (task ${task})` : ""}`);
    }
    await sleep(pollMs);
  }
  const at = v["OS-EXT-SRV-ATTR:host"] ?? null;
  if (at !== source && v.status === "ACTIVE") return { state: "migrated", host: at, detail: "live" };
  // back on its source: the migration's end (error, failed, cancelled) and its failed step
  const m = await lastLiveMigration(request, s.id);
  const event = await failedEvent(request, s.id, requestId, "live-migration");
  return {
    state: "failed",
    host: at,
    detail: `live migration ${m?.status ?? "ended"}${event ? `: ${event}` : `, ${v.status} on ${at ?? "no host"}`}`,
  };
}

/** "running, 40% of 512 MiB copied": the in-progress live migration (2.23), or undefined. */
async function liveProgress(request: DrainRequest, id: string): Promise<string | undefined> {
  try {
    const { body } = await request<{ migrations: LiveMigrationView[] }>(
      "GET",
      `/v2.1/servers/${enc(id)}/migrations`,
    );
    const m = body.migrations[0];
    if (!m) return undefined;
    const total = m.memory_total_bytes ?? 0;
    const done = m.memory_processed_bytes ?? 0;
    return total > 0
      ? `${m.status}, ${Math.round((100 * done) / total)}% of ${Math.round(total / 2 ** 20)} MiB copied`
      : m.status;
  } catch {
    return undefined; // progress is a courtesy
  }
}

async function lastLiveMigration(request: DrainRequest, id: string): Promise<LiveMigrationView | undefined> {
  try {
    const { body } = await request<{ migrations: LiveMigrationView[] }>(
      "GET",
      `/v2.1/os-migrations?instance_uuid=${enc(id)}&migration_type=live-migration`,
    );
    return [...body.migrations].sort((a, b) => b.id - a.id)[0];
  } catch {
    return undefined;
  }
}

/**
 * "event: details" of the action's failed event, as Nova records it: the action `requestId`, else
 * the newest action named `action`. The conductor's own failure says why no host was left; a
 * host's says what went wrong there.
 */
async function failedEvent(
  request: DrainRequest,
  id: string,
  requestId: string | null,
  action: string,
): Promise<string | undefined> {
  try {
    let rid = requestId;
    if (!rid) {
      const { body } = await request<{
        instanceActions: { action: string; request_id: string; start_time: string }[];
      }>("GET", `/v2.1/servers/${enc(id)}/os-instance-actions`);
      rid =
        body.instanceActions
          .filter((a) => a.action === action)
          .sort((a, b) => b.start_time.localeCompare(a.start_time))[0]?.request_id ?? null;
    }
    if (!rid) return undefined;
    const { body } = await request<ActionEvents>(
      "GET",
      `/v2.1/servers/${enc(id)}/os-instance-actions/${enc(rid)}`,
    );
    const failed = (body.instanceAction.events ?? []).filter((e) => e.result === "Error");
    const last =
      failed.find((e) => e.event === "cold_migrate" || e.event === "conductor_live_migrate_instance") ??
      failed[failed.length - 1];
    return last ? `${last.event}: ${last.details ?? "Error"}` : undefined;
  } catch {
    return undefined; // the reason is a courtesy: the state still says what happened
  }
}

/** The fault if the server has one (ERROR), else the migrate action's failed event, as Nova records it. */
async function whyFailed(request: DrainRequest, v: ServerView, requestId: string | null): Promise<string> {
  if (v.fault?.message) return v.fault.message;
  return (
    (await failedEvent(request, v.id, requestId, "migrate")) ??
    `${v.status} on ${v["OS-EXT-SRV-ATTR:host"] ?? "no host"}`
  );
}
