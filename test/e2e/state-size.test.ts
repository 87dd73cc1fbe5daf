// The conductor's state stays small whatever the request: a create at the API's own max_count
// with 100 scheduler hints goes ACTIVE, and no state of its execution comes near Step
// Functions' 256 KiB (States.DataLimitExceeded, which no Catch can handle on AWS). The state is
// measured at the Task states' handlers, which the local Step Functions server calls with the
// Parameters applied to it ("request.$": "$" is the whole state) and whose result it merges
// into the state at the Task's ResultPath; each Map iteration's input is one cast.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import type { Runtime } from "../../infra/local/runtime.js";
import { apiSettings } from "../../lib/api/settings.js";
import { ADMIN, type Client, eventually, leakedClaims, startTestRuntime } from "./harness.js";

/** the largest payload seen of each kind, in bytes, and the step it was seen at */
const seen = vi.hoisted(() => {
  const largest: Record<string, { bytes: number; step: string }> = {};
  const note = (kind: string, step: string, value: unknown) => {
    const bytes = Buffer.byteLength(JSON.stringify(value ?? null), "utf8");
    if (bytes > (largest[kind]?.bytes ?? -1)) largest[kind] = { bytes, step };
  };
  /** where each step's result goes in the state (the ASL's ResultPath) */
  const resultPath: Record<string, string> = {
    select_destinations: "scheduled",
    claim_alternate: "scheduled",
    build_instances: "build",
  };
  /** one Task: the payload it gets, the state it had, the state it leaves, its Map items */
  const task = (step: string, event: { request: Record<string, unknown> }, out: unknown) => {
    note("task input", step, event);
    note("state", step, event.request);
    const key = resultPath[step];
    if (key) note("state", step, { ...event.request, [key]: out });
    for (const cast of (out as { casts?: unknown[] } | undefined)?.casts ?? []) note("map item", step, cast);
  };
  return { largest, task };
});

vi.mock("../../functions/conductor/handler.js", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../functions/conductor/handler.js")>();
  return {
    handler: async (event: Parameters<typeof real.handler>[0]) => {
      const out = await real.handler(event);
      seen.task(event.action, event as never, out);
      return out;
    },
  };
});

vi.mock("../../functions/scheduler/handler.js", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../functions/scheduler/handler.js")>();
  return {
    handler: async (event: Parameters<typeof real.handler>[0]) => {
      const out = await real.handler(event);
      seen.task("select_destinations", event as never, out);
      return out;
    },
  };
});

/** Room to spare: a quarter of Step Functions' 256 KiB. */
const ROOM = 64 * 1024;

let runtime: Runtime;
let client: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({ hosts: 8, buildMs: 20 }));
});
afterAll(async () => runtime?.stop());

it("max_count servers with 100 scheduler hints go ACTIVE, every state under 64 KiB", async () => {
  const maxCount = apiSettings().maxCount;
  expect(maxCount).toBeGreaterThanOrEqual(100);
  // 100 hints: different_host naming 100 instances (long gone, so it excludes no host) and 99
  // that no filter reads, each with a long value, as a request may carry.
  const hints: Record<string, unknown> = {
    different_host: Array.from({ length: 100 }, () => randomUUID()),
  };
  for (let i = 1; i < 100; i++) hints[`novaless:label-${i}`] = `${"x".repeat(150)}-${i}`;
  const hintBytes = Buffer.byteLength(JSON.stringify(hints));

  const r = await client.post("/v2.1/servers", {
    server: { name: "wide", flavorRef: "1", imageRef: "cirros", min_count: maxCount, max_count: maxCount },
    "os:scheduler_hints": hints,
  });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  const reservation = r.body.reservation_id as string;

  const admin = client.as(ADMIN);
  const servers = async () =>
    (await admin.get(`/v2.1/servers/detail?all_tenants=1&reservation_id=${reservation}`)).body.servers as {
      status: string;
      fault?: unknown;
    }[];
  const done = await eventually(
    servers,
    (s) => s.length === maxCount && s.every((x) => x.status !== "BUILD"),
    120_000,
  );
  expect(done).toHaveLength(maxCount);
  for (const s of done) expect(s.status, JSON.stringify(s.fault)).toBe("ACTIVE");

  const { largest } = seen;
  expect(Object.keys(largest), "the conductor's and the scheduler's handlers were observed").toEqual([
    "task input",
    "state",
    "map item",
  ]);
  process.stdout.write(
    `state-size: ${maxCount} servers, hints ${hintBytes} B; largest ` +
      Object.entries(largest)
        .map(([kind, { bytes, step }]) => `${kind} ${bytes} B (${step})`)
        .join(", ") +
      `; limit 262144 B\n`,
  );
  // The whole request spec (its hints alone are hintBytes) would have been in every one of these.
  expect(largest.state!.bytes).toBeLessThanOrEqual(ROOM);
  expect(largest["task input"]!.bytes).toBeLessThanOrEqual(ROOM);
  expect(largest["map item"]!.bytes).toBeLessThanOrEqual(1024);
  expect(largest["map item"]!.bytes).toBeLessThan(hintBytes);

  const ids = (await admin.get(`/v2.1/servers?all_tenants=1&reservation_id=${reservation}`)).body.servers as {
    id: string;
  }[];
  for (const { id } of ids) await client.delete(`/v2.1/servers/${id}`);
  expect(await eventually(leakedClaims, (l) => l.length === 0, 60_000)).toEqual([]);
});
