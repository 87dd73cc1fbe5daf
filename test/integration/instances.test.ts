// The instance model on the embedded DynamoDB with the real SDK clients: the building index is
// sharded and projects what the watchdog reads, the by-project listing reads keys then items, and
// the scheduling explanation lives apart from the instance item.
import { createRequire } from "node:module";
import { DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import { GetCommand } from "@aws-sdk/lib-dynamodb";
import { describe, expect, it } from "vitest";
import { dynamo } from "../../lib/aws/clients.js";
import { runWatchdog } from "../../lib/conductor/watchdog.js";
import { resources, SCHEDULER_DEFAULTS } from "../../lib/config.js";
import { markActive, placeInstance, startSpawn } from "../../lib/instances/build.js";
import { EVENT_BUILD, EVENT_SCHEDULE } from "../../lib/instances/codec.js";
import { getInstance, listInstances } from "../../lib/instances/queries.js";
import { requestSpecOf } from "../../lib/instances/request-spec.js";
import { getSchedulingDecision, recordSchedulingDecision } from "../../lib/instances/scheduling-decisions.js";
import { createInstances, markDeleted } from "../../lib/instances/server-writes.js";
import { event } from "../../lib/instances/transition.js";
import type { SchedulingRecord } from "../../lib/instances/types.js";
import { listBuilding } from "../../lib/instances/watch.js";
import { WATCHED_ATTRIBUTES } from "../../lib/resources.js";
import { record } from "../unit/api/records.js";
import { useBuildRequestsQueue } from "./hosts.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

useBuildRequestsQueue();

const uuid = (n: number) => `6a1f0b8e-2222-4000-8000-${n.toString().padStart(12, "0")}`;

const rawItem = async (table: string, id: string) =>
  (await dynamo().send(new GetCommand({ TableName: table, Key: { id }, ConsistentRead: true }))).Item!;

describe("the builds in flight (by-vm-state's building partition)", () => {
  const ids = Array.from({ length: 12 }, (_, n) => uuid(n));

  it("the watchdog's list finds every one, with only what it reads; a build that ends leaves it", async () => {
    await createInstances(ids.map((id) => record({ id, project_id: "in-flight" })));
    const building = await listBuilding();
    expect(building.map((b) => b.id).sort()).toEqual([...ids].sort());
    const allowed = new Set(["id", "build_deadline", ...WATCHED_ATTRIBUTES]);
    for (const b of building) {
      expect(Object.keys(b).filter((k) => !allowed.has(k))).toEqual([]);
      expect(b).toMatchObject({ request_id: expect.any(String), retry_hosts: [], attempt: 0 });
    }

    // A build that ends leaves the list.
    await markDeleted(ids[0]!);
    expect((await listBuilding()).map((b) => b.id)).not.toContain(ids[0]);
  });

  it("the watchdog resends a lost build request for every one", async () => {
    const left = (await listBuilding()).map((b) => b.id);
    expect(left).toHaveLength(ids.length - 1);
    // Past every deadline: none of them reached a conductor.
    const later = new Date(Date.now() + 3600_000);
    const actions = await runWatchdog(later, { ...SCHEDULER_DEFAULTS });
    expect(actions.map((a) => a.instance_uuid).sort()).toEqual([...left].sort());
    expect(actions.every((a) => a.action === "resent")).toBe(true);
  });
});

describe("instance items", () => {
  it("keep the request spec without what the record carries; the spec is whole again when read", async () => {
    const rec = record({ id: uuid(900_001), project_id: "spec" });
    rec.request_spec = {
      project_id: rec.project_id,
      user_id: rec.user_id,
      flavor: rec.flavor,
      image: rec.image,
      scheduler_hints: { group: "g1" },
      num_instances: 1,
    };
    await createInstances([rec]);
    const raw = await rawItem(resources().instancesTable, rec.id);
    expect(Object.keys(raw.request_spec)).toEqual(["scheduler_hints"]);
    expect(requestSpecOf((await getInstance(rec.id))!)).toEqual(rec.request_spec);
  });

  it("a project's listing reads its live instances whole, newest first", async () => {
    const ids = [uuid(800_001), uuid(800_002), uuid(800_003)];
    await createInstances(
      ids.map((id, i) => record({ id, project_id: "listing", created_at: `2026-03-01T12:00:0${i}.000Z` })),
    );
    await markDeleted(ids[1]!);
    const listed = await listInstances("listing");
    expect(listed.map((r) => r.id)).toEqual([ids[2], ids[0]]);
    expect(listed[0]!.flavor.name).toBe("m1.tiny");
  });
});

describe("an instance's item through its build", () => {
  it("m1.tiny, an image without properties, two alternates: within one write unit (1 KB) at every step", async () => {
    const { itemSize } = createRequire(import.meta.url)("dynalite/db/index.js") as {
      itemSize: (item: Record<string, unknown>) => number;
    };
    const rec = record({ id: uuid(600_001), request_id: "req-6a1f0b8e-3333-4000-8000-000000000001" });
    rec.actions = {
      [rec.request_id]: {
        action: "create",
        request_id: rec.request_id,
        user_id: rec.user_id,
        project_id: rec.project_id,
        start_time: rec.created_at,
        message: null,
        events: {},
      },
    };
    rec.request_spec = { ...requestSpecOf(rec), num_instances: 1 };
    const sizes: [string, number][] = [];
    const measure = async (step: string) => {
      const r = await new DynamoDBClient({}).send(
        new GetItemCommand({ TableName: resources().instancesTable, Key: { id: { S: rec.id } } }),
      );
      sizes.push([step, itemSize(r.Item!)]);
    };
    const dest = (host: string) => ({ host, nodename: host, availability_zone: "az1" });
    await createInstances([rec]);
    await measure("created");
    const t = new Date();
    await placeInstance(
      rec,
      1,
      dest("host-1"),
      [dest("host-2"), dest("host-3")],
      event(EVENT_SCHEDULE, 1, "Success", "host-1", "scheduled to host-1 (attempt 1)", t),
    );
    await measure("placed");
    await startSpawn(rec, "host-1", 1, event(EVENT_BUILD, 1, null, "host-1", null, t, null));
    await measure("spawning");
    await markActive(rec, "host-1", 1, event(EVENT_BUILD, 1, "Success", "host-1", null, t));
    await measure("active");
    console.log(`instance item through its build: ${sizes.map(([s, n]) => `${s} ${n} B`).join(", ")}`);
    for (const [, n] of sizes) expect(n).toBeLessThanOrEqual(1024);
  });
});

describe("the scheduling explanation", () => {
  const explanation = {
    hosts_in: 8,
    filters: Array.from({ length: 20 }, (_, i) => ({ name: `Filter${i}`, passed: [`host-${i}`], out: [] })),
  };
  const decision = (attempt: number, host: string): SchedulingRecord => ({
    attempt,
    decided_at: `2026-03-01T12:00:0${attempt}.000Z`,
    host,
    summary: `chose ${host}`,
    explanation,
  });

  it("is kept apart from the instance, compressed, and a stale attempt cannot overwrite it", async () => {
    const id = uuid(700_001);
    await createInstances([record({ id })]);
    expect(await recordSchedulingDecision(id, decision(1, "host-1"))).toBe(true);
    expect(await recordSchedulingDecision(id, decision(2, "host-2"))).toBe(true);
    expect(await recordSchedulingDecision(id, decision(1, "host-1"))).toBe(false);
    expect(await getSchedulingDecision(id)).toEqual(decision(2, "host-2"));

    expect((await rawItem(resources().instancesTable, id)).scheduling).toBeUndefined();
    const stored = await rawItem(resources().schedulingTable, id);
    const raw = Buffer.byteLength(JSON.stringify(explanation));
    expect(stored.explanation_gz.length).toBeLessThan(raw);
    console.log(`explanation: ${raw} B as JSON, ${stored.explanation_gz.length} B stored (gzip)`);
    expect(await getSchedulingDecision(uuid(700_002))).toBeUndefined();
  });
});
