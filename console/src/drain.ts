// Draining a host: every server on it cold-migrated elsewhere, as novaclient's
// host-servers-migrate does, each migration waited for and confirmed. Shared by the console's
// "Drain host" and `novaless-drain` (bin/novaless-drain.ts): it only talks to the public Compute
// API through the `request` it is given, so it runs in the browser and in Node alike. Live
// migration (host-evacuate-live) is not built: os-migrateLive answers 501.

/** One call to the Compute API; it throws an Error carrying the API's message on a refusal. */
export type DrainRequest = <T>(
  method: string,
  path: string,
  body?: unknown,
) => Promise<{ body: T; requestId: string | null }>;

export type DrainState = "waiting" | "migrating" | "confirming" | "migrated" | "failed" | "skipped";

export interface DrainOutcome {
  id: string;
  name: string;
  state: DrainState;
  /** where it went (migrated), or the host it is on */
  host: string | null;
  /** why it failed or was skipped; "awaiting confirmation" for a move left in VERIFY_RESIZE */
  detail: string;
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

const MOVABLE = ["ACTIVE", "SHUTOFF"];
const SETTLED = ["ACTIVE", "SHUTOFF", "VERIFY_RESIZE", "ERROR"];
export const DEFAULT_REASON = "draining for maintenance";

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
  servers.forEach((s, i) => {
    const task = s["OS-EXT-STS:task_state"];
    if (!MOVABLE.includes(s.status) || task) {
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
      try {
        set(
          i,
          await moveOne(
            request,
            outcomes[i]!,
            host,
            (p) => set(i, p),
            o.confirm !== false,
            timeoutMs,
            pollMs,
          ),
        );
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
  progress({ state: "migrating" });
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

/** The fault if the server has one (ERROR), else the migrate action's failed event, as Nova records it. */
async function whyFailed(request: DrainRequest, v: ServerView, requestId: string | null): Promise<string> {
  if (v.fault?.message) return v.fault.message;
  if (requestId) {
    try {
      const { body } = await request<ActionEvents>(
        "GET",
        `/v2.1/servers/${enc(v.id)}/os-instance-actions/${enc(requestId)}`,
      );
      const failed = (body.instanceAction.events ?? []).filter((e) => e.result === "Error");
      // the conductor's own failure says why no host was left; a host's says what went wrong there
      const last = failed.find((e) => e.event === "cold_migrate") ?? failed[failed.length - 1];
      if (last) return `${last.event}: ${last.details ?? "Error"}`;
    } catch {
      // the reason is a courtesy: the state below still says what happened
    }
  }
  return `${v.status} on ${v["OS-EXT-SRV-ATTR:host"] ?? "no host"}`;
}
