// A running local novaless for a test file, and a small OpenStack client for it.

import { readdirSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { ListExecutionsCommand } from "@aws-sdk/client-sfn";
import { sfnClient } from "../../lib/aws/clients.js";
import { consumerAllocations, listAllocations } from "../../lib/placement/allocations.js";
import { getHost, listHosts } from "../../lib/placement/hosts.js";
import type { HostRecord } from "../../lib/placement/types.js";
import { type Runtime, type RuntimeOptions, startRuntime } from "../../local/runtime.js";

export const ADMIN = "admin-token";
export const DEMO = "demo-token";

// biome-ignore lint/suspicious/noExplicitAny: API bodies are arbitrary JSON; the assertions check their shape
type Json = any;

export interface Reply<T = Record<string, Json>> {
  status: number;
  body: T;
  headers: Headers;
}

export class Client {
  constructor(
    readonly url: string,
    readonly token: string | undefined,
    /** the compute microversion asked for (OpenStack-API-Version); 2.1 when absent, as Nova */
    readonly version?: string,
  ) {}

  async call<T = Record<string, Json>>(
    method: string,
    path: string,
    body?: unknown,
    raw?: string,
  ): Promise<Reply<T>> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.token) headers["x-auth-token"] = this.token;
    if (this.version) headers["openstack-api-version"] = `compute ${this.version}`;
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers,
      body: raw ?? (body === undefined ? undefined : JSON.stringify(body)),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as T, headers: res.headers };
  }

  get<T = Record<string, Json>>(path: string) {
    return this.call<T>("GET", path);
  }

  post<T = Record<string, Json>>(path: string, body: unknown) {
    return this.call<T>("POST", path, body);
  }

  delete(path: string) {
    return this.call("DELETE", path);
  }

  /** `networks: "none"` at 2.37 and later, where Nova requires the key; nothing before. */
  networksDefault(): { networks?: "none" } {
    const v = this.version;
    const minor = v === undefined ? 1 : v === "latest" ? Number.POSITIVE_INFINITY : Number(v.split(".")[1]);
    return minor >= 37 ? { networks: "none" } : {};
  }

  as(token: string | undefined): Client {
    return new Client(this.url, token, this.version);
  }

  /** This client at a microversion. */
  at(version: string): Client {
    return new Client(this.url, this.token, version);
  }

  async createServer(server: Record<string, unknown>, hints?: Record<string, unknown>): Promise<string> {
    const r = await this.post("/v2.1/servers", {
      // from 2.37 Nova requires `networks`: none unless the test asks (no network is seeded here)
      server: { name: "vm", flavorRef: "1", imageRef: "cirros", ...this.networksDefault(), ...server },
      ...(hints ? { "os:scheduler_hints": hints } : {}),
    });
    if (r.status !== 202) throw new Error(`create failed: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.server.id as string;
  }

  /**
   * Polls until the server leaves BUILD (or disappears, for `gone`). 90 s: on a loaded 2-core
   * machine a report or cast SQS hides for its 60 s visibility timeout still arrives in time.
   */
  async waitForStatus(id: string, want: string[], timeoutMs = 90_000): Promise<Record<string, Json>> {
    const deadline = Date.now() + timeoutMs;
    let last: Reply | undefined;
    while (Date.now() < deadline) {
      last = await this.as(ADMIN).get(`/v2.1/servers/${id}`);
      if (last.status === 404 && want.includes("GONE")) return {};
      if (last.status === 200 && want.includes(last.body.server.status)) return last.body.server;
      await sleep(100);
    }
    throw new Error(`server ${id} did not reach ${want.join("/")}: last ${JSON.stringify(last?.body)}`);
  }
}

const UNLIMITED = { NOVALESS_QUOTA_INSTANCES: "-1", NOVALESS_QUOTA_CORES: "-1", NOVALESS_QUOTA_RAM: "-1" };

export async function startTestRuntime(
  opts: RuntimeOptions = {},
): Promise<{ runtime: Runtime; client: Client }> {
  // As DevStack's tempest raises quotas: the tests of building and scheduling create more servers
  // than Nova's default instance quota; the quota tests set their own (test/e2e/quotas.test.ts).
  const runtime = await startRuntime({
    port: 0,
    hosts: 4,
    buildMs: 50,
    ...opts,
    env: { ...UNLIMITED, ...opts.env },
  });
  return { runtime, client: new Client(runtime.url, DEMO) };
}

/** Every host's provider item (usage, num_instances), read straight from the table. */
export async function hostsByName(): Promise<Map<string, HostRecord>> {
  return new Map((await listHosts()).map((h) => [h.host, h]));
}

/** The hosts holding `consumer`'s allocations (its allocation items). */
export async function claimHosts(consumer: string): Promise<string[]> {
  return (await consumerAllocations(consumer)).map((a) => a.host);
}

/** No host holds any allocation and every usage is back to zero. */
export async function leakedClaims(): Promise<string[]> {
  const leaks: string[] = [];
  for (const a of await listAllocations()) leaks.push(`${a.host}: ${a.consumer} (attempt ${a.attempt})`);
  for (const h of (await hostsByName()).values()) {
    if (h.num_instances !== 0) leaks.push(`${h.host}: num_instances ${h.num_instances}`);
    for (const [rc, used] of Object.entries(h.usage))
      if (used !== 0) leaks.push(`${h.host}: ${rc} usage ${used}`);
  }
  return leaks;
}

/** Waits until no conductor execution is running (the flow between queue and host is quiet). */
export async function conductorExecutions(): Promise<number> {
  const r = await sfnClient().send(
    new ListExecutionsCommand({ stateMachineArn: process.env.NOVALESS_CONDUCTOR_ARN! }),
  );
  return r.executions?.length ?? 0;
}

/**
 * A host's provider item, once compute-events has written it: an agent starts as soon as its queue
 * exists, which compute-events creates a moment before the item.
 */
export async function registeredHost(name: string): Promise<HostRecord> {
  return (await eventually(
    () => getHost(name),
    (h) => h?.queue_url !== undefined,
  ))!;
}

export async function eventually<T>(
  fn: () => Promise<T>,
  ok: (v: T) => boolean,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let v = await fn();
  while (!ok(v) && Date.now() < deadline) {
    await sleep(100);
    v = await fn();
  }
  return v;
}

/** An exec guest's processes: those whose environment names the instance. */
export function processesOf(id: string): number[] {
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/environ`, "utf8")
          .split("\0")
          .includes(`NOVALESS_INSTANCE_UUID=${id}`);
      } catch {
        return false;
      }
    })
    .map(Number);
}
