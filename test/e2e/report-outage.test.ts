// An outage of compute-events is not a dead fleet (issue 35, part 4): while its function URL
// refuses every report, heartbeats included, hosts opted in to automatic evacuation run builds and
// the watchdog runs throughout; it holds (lib/placement/report-path.ts): no host is marked down,
// fenced, forced down or evacuated, no build is resent, and every build ends ACTIVE once the path
// is back. A single host that then dies while the rest are heard is still caught and evacuated.
// Also the local fault switches (part 5) over HTTP: POST /local/faults/compute-events and
// POST /local/hosts/{host}/restart.
//
// The outage lasts NOVALESS_OUTAGE_SECONDS (default 30 s, two and a half service_down_times here);
// instance_build_timeout (NOVALESS_INSTANCE_BUILD_TIMEOUT) defaults to shorter, so builds pass
// their deadline during it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FunctionUrlError, postToFunctionUrl } from "../../lib/aws/function-url.js";
import { runAs } from "../../lib/aws/identity.js";
import type { WatchdogAction } from "../../lib/conductor/watchdog.js";
import { getInstance } from "../../lib/instances/queries.js";
import { getHost } from "../../lib/placement/hosts.js";
import { getServiceHeartbeat } from "../../lib/placement/liveness.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, startTestRuntime } from "./harness.js";

const SERVICE_DOWN_TIME = 12;
const OUTAGE_SECONDS = Number(process.env.NOVALESS_OUTAGE_SECONDS ?? 30);
const BUILD_TIMEOUT = Number(process.env.NOVALESS_INSTANCE_BUILD_TIMEOUT ?? Math.round(OUTAGE_SECONDS * 0.8));
const HOSTS = ["host-1", "host-2", "host-3", "host-4", "host-5", "host-6"];

let runtime: Runtime;
let client: Client;
let admin: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({
    hosts: HOSTS,
    buildMs: 5000,
    heartbeatSeconds: 1,
    watchdogIntervalMs: 0, // the test runs it every second, to see what it did
    env: {
      NOVALESS_SERVICE_DOWN_TIME: String(SERVICE_DOWN_TIME),
      // the control plane's report_interval is the hosts' (the rule reads it)
      NOVALESS_REPORT_INTERVAL: "1",
      NOVALESS_AUTO_EVACUATE_GRACE: "1",
      // shorter than the outage: builds pass their deadline while no report can get through
      NOVALESS_INSTANCE_BUILD_TIMEOUT: String(BUILD_TIMEOUT),
    },
  }));
  admin = client.as(ADMIN);
});
afterAll(async () => runtime?.stop());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the watchdog every second for `seconds`, as its schedule would; returns all it did. */
async function watchdogFor(seconds: number): Promise<WatchdogAction[]> {
  const actions: WatchdogAction[] = [];
  const until = Date.now() + seconds * 1000;
  while (Date.now() < until) {
    actions.push(...(await runtime.runWatchdog()));
    await sleep(1000);
  }
  return actions;
}

async function hypervisorStates(): Promise<Record<string, string>> {
  const hv = await admin.get("/v2.1/os-hypervisors/detail");
  return Object.fromEntries(
    (hv.body.hypervisors as { hypervisor_hostname: string; state: string }[]).map((h) => [
      h.hypervisor_hostname,
      h.state,
    ]),
  );
}

const everyHostUp = Object.fromEntries(HOSTS.map((h) => [h, "up"]));

describe("the local fault switches", () => {
  it("POST /local/faults/compute-events: admin only, a validated body, 503s at the URL until it ends", async () => {
    const path = "/local/faults/compute-events";
    expect((await client.as(undefined).post(path, { refuse_seconds: 5 })).status).toBe(401);
    const member = await client.post(path, { refuse_seconds: 5 });
    expect(member.status).toBe(403);
    expect(member.body).toEqual({
      forbidden: { code: 403, message: "Only an admin may inject a local fault." },
    });
    for (const bad of [
      {},
      { refuse_seconds: -1 },
      { refuse_seconds: 1.5 },
      { refuse_seconds: "5" },
      { refuse_seconds: 5, x: 1 },
    ]) {
      const r = await admin.post(path, bad);
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(r.body.badRequest).toMatchObject({ code: 400, message: expect.any(String) });
    }
    const notJson = await admin.call("POST", path, undefined, "{refuse");
    expect(notJson.status).toBe(400);
    expect(notJson.body.badRequest).toMatchObject({ code: 400 });

    const url = process.env.NOVALESS_COMPUTE_EVENTS_URL!;
    // a host's signed POST, as an agent sends a report (refused before the function reads it)
    const post = () =>
      runAs(runtime.hostCredentials("host-1"), () =>
        postToFunctionUrl(url, JSON.stringify({ kind: "nothing" }), { maxAttempts: 1 }),
      ).then(
        () => 200,
        (e: unknown) => (e instanceof FunctionUrlError ? e.status : Promise.reject(e)),
      );
    const on = await admin.post(path, { refuse_seconds: 600 });
    expect(on.status).toBe(202);
    expect(on.body).toEqual({ fault: "compute-events", refuse_seconds: 600 });
    expect(await post()).toBe(503);
    expect((await admin.post(path, { refuse_seconds: 0 })).status).toBe(202);
    // served again: the function answers (400, dead-lettered: not a report)
    expect(await post()).toBe(400);
    const ended = new Date().toISOString();
    const beat = await eventually(
      () => getServiceHeartbeat("host-2"),
      (s) => (s?.last_heartbeat ?? "") > ended,
    );
    expect(beat!.last_heartbeat > ended).toBe(true);
  });

  it("POST /local/hosts/{host}/restart: admin only, 404 for an unknown host, a new agent for a known one", async () => {
    expect((await client.as(undefined).post("/local/hosts/host-6/restart", {})).status).toBe(401);
    expect((await client.post("/local/hosts/host-6/restart", {})).status).toBe(403);
    const unknown = await admin.post("/local/hosts/host-99/restart", {});
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({
      itemNotFound: { code: 404, message: "Compute host host-99 could not be found." },
    });
    const before = runtime.hosts.get("host-6")!.agent;
    const r = await admin.post("/local/hosts/host-6/restart", {});
    expect(r.status).toBe(202);
    expect(r.body).toEqual({ host: "host-6", action: "restart" });
    expect(runtime.hosts.get("host-6")!.agent).not.toBe(before);
    // the new agent reports: the host is up and takes builds
    const at = new Date().toISOString();
    const s = await eventually(
      () => getServiceHeartbeat("host-6"),
      (h) => (h?.last_heartbeat ?? "") > at,
    );
    expect(s!.last_heartbeat > at).toBe(true);
  });
});

describe(`an outage of compute-events (${OUTAGE_SECONDS} s)`, () => {
  const residents: string[] = [];
  const before: string[] = [];
  const during: string[] = [];

  it("setup: every host opted in to automatic evacuation, servers on them", async () => {
    const agg = await admin.post("/v2.1/os-aggregates", { aggregate: { name: "ha" } });
    expect(agg.status).toBe(200);
    const id = agg.body.aggregate.id;
    for (const host of HOSTS)
      expect((await admin.post(`/v2.1/os-aggregates/${id}/action`, { add_host: { host } })).status).toBe(200);
    const meta = await admin.post(`/v2.1/os-aggregates/${id}/action`, {
      set_metadata: { metadata: { "novaless:auto_evacuate": "true" } },
    });
    expect(meta.status).toBe(200);
    for (const host of HOSTS) {
      const sid = await admin.createServer({ name: `resident-${host}`, availability_zone: `nova:${host}` });
      expect((await admin.waitForStatus(sid, ["ACTIVE", "ERROR"])).status).toBe("ACTIVE");
      residents.push(sid);
    }
    expect(await hypervisorStates()).toEqual(everyHostUp);
  });

  it("holds: no host marked down, fenced, forced down or evacuated, no build resent; all end ACTIVE after", async () => {
    // builds in flight when the path goes
    for (let k = 0; k < 6; k++) before.push(await client.createServer({ name: `before-${k}` }));
    await eventually(
      async () => Promise.all(before.map((id) => getInstance(id))),
      (recs) => recs.every((r) => r?.task_state === "spawning" || r?.vm_state === "active"),
    );
    runtime.refuseComputeEvents(OUTAGE_SECONDS);
    const outageEnds = Date.now() + OUTAGE_SECONDS * 1000;
    // those still in flight as it began (some may have finished first, and a report the function
    // had taken before the switch still lands: read once those are through)
    await sleep(2000);
    const inFlight: string[] = [];
    for (const id of before) if ((await getInstance(id))?.vm_state === "building") inFlight.push(id);
    expect(inFlight.length).toBeGreaterThan(0);
    // builds asked for during it
    for (let k = 0; k < 4; k++) during.push(await client.createServer({ name: `during-${k}` }));

    // the watchdog through the outage; what it left is read a few seconds before the outage ends
    const actions = await watchdogFor((outageEnds - Date.now()) / 1000 - 3);
    // nothing but holding (without the rule: hosts marked down, builds fenced and resent, hosts
    // forced down and evacuated)
    expect(actions.filter((a) => a.action !== "held")).toEqual([]);
    expect(await hypervisorStates()).toEqual(everyHostUp);
    if (BUILD_TIMEOUT < OUTAGE_SECONDS) {
      // the builds in flight passed their deadline unheard, and were not fenced for it
      const now = new Date().toISOString();
      for (const id of inFlight) {
        const r = (await getInstance(id))!;
        expect([r.vm_state, r.build_deadline! < now], id).toEqual(["building", true]);
      }
    }
    expect(Date.now()).toBeLessThan(outageEnds);
    actions.push(...(await watchdogFor((outageEnds - Date.now()) / 1000)));
    expect(actions.filter((a) => a.action !== "held")).toEqual([]);
    // and it did hold: a fleet silent for longer than service_down_time, every host spared
    const held = actions.filter((a) => a.action === "held");
    expect(new Set(held.map((a) => a.host))).toEqual(new Set(HOSTS));

    // the path is back: builds end ACTIVE within a minute, the watchdog still running meanwhile
    const after = Date.now();
    const watching = watchdogFor(SERVICE_DOWN_TIME + 5);
    for (const id of [...before, ...during]) {
      const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"], 60_000 - (Date.now() - after));
      expect(s.status, id).toBe("ACTIVE");
      // built by its first attempt: the watchdog resent nothing
      expect((await getInstance(id))!.attempt, id).toBe(1);
    }
    const late = await watching;
    expect(late.filter((a) => a.action !== "held")).toEqual([]);
    expect(await hypervisorStates()).toEqual(everyHostUp);
    for (const host of HOSTS) {
      const h = (await getHost(host))!;
      expect(h.service.forced_down, host).toBe(false);
      expect(h.service.down_since, host).toBeUndefined();
    }
    const migrations = await admin.get("/v2.1/os-migrations");
    expect(migrations.body.migrations).toEqual([]);
  });

  it("then a single host that dies while the rest are heard is caught and evacuated as before", async () => {
    const dead = "host-3";
    const onIt: string[] = [];
    for (const id of [...residents, ...before, ...during])
      if ((await getInstance(id))?.host === dead) onIt.push(id);
    expect(onIt.length).toBeGreaterThan(0);
    await runtime.killHost(dead);
    const actions: WatchdogAction[] = [];
    const evacuated = () =>
      new Set(actions.filter((a) => a.action === "evacuated").map((a) => a.instance_uuid));
    await eventually(
      async () => {
        actions.push(...(await runtime.runWatchdog()));
        return evacuated();
      },
      (e) => onIt.every((id) => e.has(id)),
      (SERVICE_DOWN_TIME + 15) * 1000,
    );
    expect(actions.filter((a) => a.action === "held")).toEqual([]);
    expect([...evacuated()].sort()).toEqual([...onIt].sort());
    expect((await hypervisorStates())[dead]).toBe("down");
    expect((await getHost(dead))!.service.forced_down).toBe(true);
    for (const id of onIt) {
      const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"]);
      expect(s.status, id).toBe("ACTIVE");
      expect((await getInstance(id))!.host, id).not.toBe(dead);
    }
  });
});
