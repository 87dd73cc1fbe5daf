// The aggregates' list without a Scan: one index item (ids and a revision every change bumps, in
// the change's transaction), read by key; the aggregates read again only when it moved. What an
// older release stored (no index) is indexed by the seed.
import { randomUUID } from "node:crypto";
import { PutCommand } from "@aws-sdk/lib-dynamodb";
import { expect, it } from "vitest";
import { dynamo } from "../../lib/aws/clients.js";
import { runAs } from "../../lib/aws/identity.js";
import { meterReading, startMeter, stopMeter } from "../../lib/aws/meter.js";
import {
  createAggregate,
  deleteAggregate,
  getAggregateRevision,
  indexAggregates,
  listAggregates,
  saveAggregate,
} from "../../lib/catalog/aggregates.js";
import type { Aggregate } from "../../lib/catalog/types.js";
import { resources } from "../../lib/config.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

const aggregate = (name: string): Aggregate => ({
  id: randomUUID(),
  number: 0,
  name,
  availability_zone: null,
  hosts: [],
  metadata: {},
  created_at: "2026-11-26T00:00:00.000000",
  updated_at: "2026-11-26T00:00:00.000000",
});
/** another process's cache (each component is its own Lambda) */
const scheduler = <T>(fn: () => Promise<T>) => runAs({ accessKeyId: "SCHEDULER", secretAccessKey: "x" }, fn);
const operations = () =>
  Object.values(meterReading({ reset: true })).flatMap((c) => Object.entries(c.requests));

it("lists by key, reads the aggregates again only after a change, and sees creates, updates and deletes", async () => {
  const a = await createAggregate(aggregate("rack-1"));
  expect(a.ok).toBe(true);
  const id = (a as { aggregate: Aggregate }).aggregate.id;
  startMeter();
  try {
    expect((await scheduler(() => listAggregates({ fresh: true }))).map((x) => x.name)).toEqual(["rack-1"]);
    expect(operations().map(([op]) => op)).not.toContain("dynamodb:Scan");

    // nothing changed: one GetItem of the index
    await scheduler(() => listAggregates({ fresh: true }));
    expect(operations()).toEqual([["dynamodb:GetItem", 1]]);

    const read = (await getAggregateRevision(id))!;
    expect(await saveAggregate({ ...read.aggregate, hosts: ["host-7"] }, read.revision)).toBe(true);
    // a lost race changes nothing and says so
    expect(await saveAggregate({ ...read.aggregate, hosts: ["host-8"] }, read.revision)).toBe(false);
    operations();
    expect((await scheduler(() => listAggregates({ fresh: true })))[0]!.hosts).toEqual(["host-7"]);
    expect(operations().map(([op]) => op)).toEqual(["dynamodb:GetItem", "dynamodb:BatchGetItem"]);

    const b = await createAggregate(aggregate("rack-0"));
    expect((await scheduler(() => listAggregates({ fresh: true }))).map((x) => x.name)).toEqual([
      "rack-0",
      "rack-1",
    ]);
    const gone = (await getAggregateRevision((b as { aggregate: Aggregate }).aggregate.id))!;
    expect(await deleteAggregate(gone.aggregate.id, gone.revision)).toBe(true);
    expect((await scheduler(() => listAggregates({ fresh: true }))).map((x) => x.name)).toEqual(["rack-1"]);
    expect(Object.values(meterReading()).flatMap((c) => Object.keys(c.requests))).not.toContain(
      "dynamodb:Scan",
    );
  } finally {
    stopMeter();
  }
});

it("an aggregate an older release stored (no index) is listed once the seed indexes it", async () => {
  const old = { ...aggregate("legacy"), number: 99 };
  await dynamo().send(
    new PutCommand({
      TableName: resources().catalogTable,
      Item: { ...old, pk: `aggregate#${old.id}`, kind: "aggregate", revision: 1 },
    }),
  );
  expect((await listAggregates({ fresh: true })).map((x) => x.name)).not.toContain("legacy");
  expect(await indexAggregates()).toBe(1);
  expect(await indexAggregates()).toBe(0);
  expect((await listAggregates({ fresh: true })).map((x) => x.name)).toContain("legacy");
});
