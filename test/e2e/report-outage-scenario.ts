// Issue 35's outage, as a scenario the fake-driver and exec-driver files both run: hosts opted in
// to automatic evacuation, builds in flight, compute-events refusing every report (heartbeats
// included) for NOVALESS_OUTAGE_SECONDS, one host's agent restarted in the middle of it (its
// memory lost, its spool kept), and the watchdog running every second throughout. It must hold
// (lib/placement/report-path.ts): no host marked down, fenced, forced down or evacuated, no build
// resent; every build started before or during the outage ends ACTIVE, by its first attempt,
// within a minute after it, its claim on its host. Then a single host that dies while the rest
// are heard is still caught and evacuated.
//
// The outage lasts NOVALESS_OUTAGE_SECONDS (20 s by default, two and a half service_down_times
// here; `NOVALESS_OUTAGE_SECONDS=300 npx vitest run test/e2e/report-outage` runs issue 35's five
// minutes). instance_build_timeout is shorter than the outage, so builds pass their deadline
// while no report can get through.
import { expect, it } from "vitest";
import type { WatchdogAction } from "../../lib/conductor/watchdog.js";
import { getInstance } from "../../lib/instances/queries.js";
import { getHost } from "../../lib/placement/hosts.js";
import type { Runtime, RuntimeOptions } from "../../local/runtime.js";
import { ADMIN, type Client, claimHosts, eventually } from "./harness.js";

export const SERVICE_DOWN_TIME = 8;
export const OUTAGE_SECONDS = Number(process.env.NOVALESS_OUTAGE_SECONDS ?? 20);
const BUILD_TIMEOUT = Number(process.env.NOVALESS_INSTANCE_BUILD_TIMEOUT ?? Math.round(OUTAGE_SECONDS * 0.8));
export const OUTAGE_HOSTS = ["host-1", "host-2", "host-3", "host-4", "host-5", "host-6"];

/** The runtime's options for the scenario: short liveness timings, the watchdog run by the test. */
export function outageRuntimeOptions(opts: RuntimeOptions): RuntimeOptions {
  return {
    hosts: OUTAGE_HOSTS,
    heartbeatSeconds: 1,
    watchdogIntervalMs: 0, // the test runs it every second, to see what it did
    ...opts,
    env: {
      NOVALESS_SERVICE_DOWN_TIME: String(SERVICE_DOWN_TIME),
      // the control plane's report_interval is the hosts' (the rule reads it)
      NOVALESS_REPORT_INTERVAL: "1",
      NOVALESS_AUTO_EVACUATE_GRACE: "1",
      // shorter than the outage: builds pass their deadline while no report can get through
      NOVALESS_INSTANCE_BUILD_TIMEOUT: String(BUILD_TIMEOUT),
      ...opts.env,
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A server's create events (attempt, host, result, traceback) and fault, for a failure's message. */
async function whyRetried(id: string): Promise<string> {
  const rec = await getInstance(id);
  const events = Object.values(rec?.actions ?? {}).find((a) => a.action === "create")?.events ?? {};
  return `${id} built by attempt ${rec?.attempt}: ${JSON.stringify({ events, fault: rec?.fault })}`;
}

export interface OutageScenario {
  runtime: () => Runtime;
  client: () => Client;
  /** what a server is built from (the exec driver's servers are processes of `sleeper`) */
  server?: Record<string, unknown>;
  /**
   * Whether the builds started before the outage are first let reach their host's spawn (the
   * fake driver's builds take seconds); otherwise the outage begins as soon as they are accepted.
   */
  waitForSpawning: boolean;
}

export function outageScenario(s: OutageScenario): void {
  const residents: string[] = [];
  const before: string[] = [];
  const during: string[] = [];
  const admin = () => s.client().as(ADMIN);

  async function watchdogFor(seconds: number): Promise<WatchdogAction[]> {
    const actions: WatchdogAction[] = [];
    const until = Date.now() + seconds * 1000;
    while (Date.now() < until) {
      actions.push(...(await s.runtime().runWatchdog()));
      await sleep(1000);
    }
    return actions;
  }

  async function hypervisorStates(): Promise<Record<string, string>> {
    const hv = await admin().get("/v2.1/os-hypervisors/detail");
    return Object.fromEntries(
      (hv.body.hypervisors as { hypervisor_hostname: string; state: string }[]).map((h) => [
        h.hypervisor_hostname,
        h.state,
      ]),
    );
  }

  const everyHostUp = Object.fromEntries(OUTAGE_HOSTS.map((h) => [h, "up"]));

  it("setup: every host opted in to automatic evacuation, servers on them", async () => {
    const agg = await admin().post("/v2.1/os-aggregates", { aggregate: { name: "ha" } });
    expect(agg.status).toBe(200);
    const id = agg.body.aggregate.id;
    for (const host of OUTAGE_HOSTS)
      expect((await admin().post(`/v2.1/os-aggregates/${id}/action`, { add_host: { host } })).status).toBe(
        200,
      );
    const meta = await admin().post(`/v2.1/os-aggregates/${id}/action`, {
      set_metadata: { metadata: { "novaless:auto_evacuate": "true" } },
    });
    expect(meta.status).toBe(200);
    residents.push(
      ...(await Promise.all(
        OUTAGE_HOSTS.map((host) =>
          admin().createServer({ ...s.server, name: `resident-${host}`, availability_zone: `nova:${host}` }),
        ),
      )),
    );
    for (const sid of residents)
      expect((await admin().waitForStatus(sid, ["ACTIVE", "ERROR"])).status).toBe("ACTIVE");
    expect(await hypervisorStates()).toEqual(everyHostUp);
  });

  it(
    `holds through ${OUTAGE_SECONDS} s and a host's restart; every build ends ACTIVE within a minute after`,
    async () => {
      const runtime = s.runtime();
      // builds in flight when the path goes
      for (let k = 0; k < 6; k++)
        before.push(await s.client().createServer({ ...s.server, name: `before-${k}` }));
      if (s.waitForSpawning)
        await eventually(
          async () => Promise.all(before.map((id) => getInstance(id))),
          (recs) => recs.every((r) => r?.task_state === "spawning" || r?.vm_state === "active"),
        );
      const outageEnds = Date.now() + OUTAGE_SECONDS * 1000;
      expect(
        (await admin().post("/local/faults/compute-events", { refuse_seconds: OUTAGE_SECONDS })).status,
      ).toBe(202);
      // those still in flight as it began (a report the function had taken before the switch still
      // lands: read once those are through)
      await sleep(2000);
      const inFlight: string[] = [];
      for (const id of before) if ((await getInstance(id))?.vm_state === "building") inFlight.push(id);
      expect(inFlight.length).toBeGreaterThan(0);
      // builds asked for during it
      for (let k = 0; k < 4; k++)
        during.push(await s.client().createServer({ ...s.server, name: `during-${k}` }));
      // a host's agent restarted in the middle of it: one that has a build in flight, so that what
      // it spooled must outlive its memory
      const restarted = (await getInstance(inFlight[0]!))?.host ?? "host-1";
      const beforeAgent = runtime.hosts.get(restarted)!.agent;
      expect((await admin().post(`/local/hosts/${restarted}/restart`, {})).status).toBe(202);
      expect(runtime.hosts.get(restarted)!.agent).not.toBe(beforeAgent);

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
      expect(new Set(held.map((a) => a.host))).toEqual(new Set(OUTAGE_HOSTS));

      // the path is back: builds end ACTIVE within a minute, the watchdog still running meanwhile
      const after = Date.now();
      const watching = watchdogFor(SERVICE_DOWN_TIME + 5);
      let lastActiveMs = 0;
      for (const id of [...before, ...during]) {
        const sv = await admin().waitForStatus(
          id,
          ["ACTIVE", "ERROR"],
          Math.max(1, 60_000 - (Date.now() - after)),
        );
        expect(sv.status, id).toBe("ACTIVE");
        lastActiveMs = Math.max(lastActiveMs, Date.now() - outageEnds);
        const rec = (await getInstance(id))!;
        // built by its first attempt: the watchdog resent nothing, no report was lost (otherwise
        // the create's events say which attempt failed, where, and why)
        expect(rec.attempt, rec.attempt === 1 ? id : await whyRetried(id)).toBe(1);
        // its claim is where it runs, once
        expect(await claimHosts(id), id).toEqual([rec.host]);
      }
      // the figure issue 35 asks about (polled every 100 ms, so an upper bound)
      console.info(
        `report outage of ${OUTAGE_SECONDS} s: every build ACTIVE ${(lastActiveMs / 1000).toFixed(1)} s after it ended`,
      );
      const late = await watching;
      expect(late.filter((a) => a.action !== "held")).toEqual([]);
      expect(await hypervisorStates()).toEqual(everyHostUp);
      for (const host of OUTAGE_HOSTS) {
        const h = (await getHost(host))!;
        expect(h.service.forced_down, host).toBe(false);
        expect(h.service.down_since, host).toBeUndefined();
      }
      const migrations = await admin().get("/v2.1/os-migrations");
      expect(migrations.body.migrations).toEqual([]);
    },
    (OUTAGE_SECONDS + 120) * 1000,
  );

  it("then a single host that dies while the rest are heard is caught and evacuated as before", async () => {
    const runtime = s.runtime();
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
      const sv = await admin().waitForStatus(id, ["ACTIVE", "ERROR"]);
      expect(sv.status, id).toBe("ACTIVE");
      expect((await getInstance(id))!.host, id).not.toBe(dead);
    }
  });
}
