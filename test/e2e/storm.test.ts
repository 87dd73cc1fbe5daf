// Starvation (issue 20): every host re-registers at once, again and again, while builds run, in
// an account whose Lambda concurrency is small enough to bite. With the stack's reserved
// concurrency (infra/constructs/functions.ts), compute-events takes at most its reservation (past
// it Lambda answers the hosts' POSTs 429 and they send again) and the builds end ACTIVE; the same
// storm without it takes the whole account and the build path's functions are throttled: build-intake
// (its event source backs off and the requests wait in build-requests) or the conductor's Lambda
// tasks (Lambda.TooManyRequestsException), whichever the storm catches first.
import { afterEach, expect, it } from "vitest";
import { seededRandom } from "../../lib/scheduler/scenario.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, startTestRuntime } from "./harness.js";

let runtime: Runtime | undefined;
afterEach(async () => {
  await runtime?.stop();
  runtime = undefined;
});

const HOSTS = 80;
/** the hosts the builds are forced onto (admin az:host), one build each */
const BUILDERS = Array.from({ length: 8 }, (_, i) => `host-${i + 1}`);
const BUILDS = BUILDERS.length;
/** each round every other host restarts once */
const ROUNDS = 2;
/** unprotected, rounds go on while the builds last, up to this many */
const MAX_ROUNDS = 40;
/** the runtime's availability zones alternate az1, az2 from host-1 */
const azOf = (host: string) => (Number(host.slice("host-".length)) % 2 === 1 ? "az1" : "az2");

interface Outcome {
  statuses: string[];
  faults: string[];
  throttles: Record<string, number>;
  peaks: Record<string, number>;
}

/** Throttles of the functions a build goes through: build-intake, then the conductor's tasks. */
function buildPathThrottles(throttles: Record<string, number>): number {
  return ["novaless-build-intake", "novaless-scheduler", "novaless-conductor"].reduce(
    (n, f) => n + (throttles[f] ?? 0),
    0,
  );
}

/** Builds started at the height of a re-registration storm; how they ended, and the account's counts. */
async function storm(unprotected: boolean): Promise<Outcome> {
  const started = await startTestRuntime({
    hosts: HOSTS,
    retryIntervalMs: 10,
    watchdogIntervalMs: 0,
    // An account of 25: the stack's reservations (compute-events 10, build-intake 5, which is also
    // its event source's MaximumConcurrency) leave 10 to the scheduler, conductor and watchdog,
    // enough for 8 builds (an execution runs one Task at a time). AWS's floor of 100 unreserved,
    // scaled down with the account.
    concurrency: { accountLimit: 25, unreservedMinimum: 5, unprotected },
    // A report takes compute-events about this long on AWS (its calls cross the network).
    // Unprotected, longer: the hosts back off between their 429s, and a registration that holds
    // its slot longer keeps the account full between their retries, as a fleet ten times this
    // one's would.
    faults: { random: seededRandom(20), computeEventsDelayMs: unprotected ? 2_000 : 500 },
  });
  runtime = started.runtime;
  const rt = runtime;
  const client: Client = started.client;
  // Every other host re-registers at once (restarts), round after round: a report per host each
  // round, far more than the build path's own. (The builders stay up: a restart may leave a cast
  // hidden for its visibility timeout, a delay of its own.)
  const storming = [...rt.hosts.keys()].filter((h) => !BUILDERS.includes(h));
  // Unprotected, the storm lasts until the build path is throttled (at most MAX_ROUNDS): how long
  // ROUNDS keep compute-events saturated depends on the machine's speed, and a storm that ends
  // before the builds' Lambda tasks would let them through.
  let ids: string[] = [];
  const throttled = () => buildPathThrottles(Object.fromEntries(rt.concurrency.throttles));
  // the builds have ended (or been given up on): no more rounds are needed to catch them
  let settled = false;
  const rounds = (async () => {
    for (
      let round = 0;
      round < ROUNDS || (unprotected && !settled && round < MAX_ROUNDS && throttled() === 0);
      round++
    )
      await Promise.all(storming.map((h) => rt.restartHost(h)));
  })();
  // The builds come at the storm's height: compute-events runs all it may (its reservation, or
  // without one the whole account).
  const cap = rt.concurrency.reservedOf("novaless-compute-events") ?? rt.concurrency.accountLimit;
  while (rt.concurrency.inFlightOf("novaless-compute-events") < cap)
    await new Promise((r) => setTimeout(r, 10));
  const admin = client.as(ADMIN);
  ids = await Promise.all(
    BUILDERS.map((host, i) =>
      admin.createServer({ name: `storm-${i}`, availability_zone: `${azOf(host)}:${host}` }),
    ),
  );
  // ACTIVE once the storm's backlog is through compute-events: tens of seconds on a busy machine
  const servers = await Promise.all(
    // (unprotected, a build the storm left in BUILD counts as not ACTIVE: no need to wait it out)
    ids.map((id) =>
      client
        .waitForStatus(id, ["ACTIVE", "ERROR"], unprotected ? 20_000 : 90_000)
        .catch(() => ({ status: "BUILD" })),
    ),
  );
  settled = true;
  await rounds;
  const faults = await Promise.all(
    ids.map(async (id) => {
      const s = (await client.as(ADMIN).get(`/v2.1/servers/${id}`)).body.server;
      return String(s.fault?.message ?? "");
    }),
  );
  return {
    statuses: servers.map((s) => String(s.status)),
    faults,
    throttles: Object.fromEntries(rt.concurrency.throttles),
    peaks: Object.fromEntries(rt.concurrency.peaks),
  };
}

it("with the stack's reservations a re-registration storm leaves the build path alone: builds end ACTIVE", async () => {
  const out = await storm(false);
  expect(out.statuses).toEqual(Array(BUILDS).fill("ACTIVE"));
  const reserved = runtime!.concurrency.reservedOf("novaless-compute-events")!;
  expect(reserved).toBeGreaterThan(0);
  // compute-events never ran more than its reservation: past it Lambda answered the hosts 429
  // (they sent their reports again) ...
  expect(out.peaks["novaless-compute-events"]).toBeLessThanOrEqual(reserved);
  expect(out.throttles["novaless-compute-events"]).toBeGreaterThan(0);
  // ... and nothing else was throttled: the scheduler and conductor had the rest of the account
  expect(Object.keys(out.throttles)).toEqual(["novaless-compute-events"]);
  // build-requests' event source starts the builds: never more invocations than its
  // MaximumConcurrency, which is build-intake's reservation, so it was never throttled (above)
  const intake = runtime!.policies.eventSources[0]!.maximumConcurrency!;
  expect(runtime!.concurrency.reservedOf("novaless-build-intake")).toBe(intake);
  expect(out.peaks["novaless-build-intake"]).toBeGreaterThan(0);
  expect(out.peaks["novaless-build-intake"]).toBeLessThanOrEqual(intake);
}, 300_000);

it("the same storm without it takes the account: the build path's functions are throttled", async () => {
  const out = await storm(true);
  expect(buildPathThrottles(out.throttles), JSON.stringify(out.throttles)).toBeGreaterThan(0);
  expect(out.peaks["novaless-compute-events"]).toBeGreaterThan(runtime!.concurrency.accountLimit / 2);
  // The conductor retries a throttled task within its budget, so a build may still land; one that
  // does not ends in ERROR with the throttle as its fault (or is left in BUILD by the storm).
  for (const [i, s] of out.statuses.entries())
    if (s === "ERROR") expect(out.faults[i]).toContain("Lambda.TooManyRequestsException");
}, 300_000);
