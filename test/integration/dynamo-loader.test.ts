// Single-item reads asked in the same tick go as one BatchGetItem (lib/aws/dynamo-loader.ts), over
// the real SDK and the local emulators: each caller gets its own item (or none), a key asked twice
// is asked once, and a create's reads (flavor, image, quota, quota class) are one request.
import { PutCommand } from "@aws-sdk/lib-dynamodb";
import { describe, expect, it } from "vitest";
import { dynamo } from "../../lib/aws/clients.js";
import { loadItem } from "../../lib/aws/dynamo-loader.js";
import { meterReading, startMeter, stopMeter } from "../../lib/aws/meter.js";
import { getFlavor, getImage, seedCatalog } from "../../lib/catalog/repo.js";
import { SEED_FLAVORS, SEED_IMAGES } from "../../lib/catalog/seed.js";
import { resources } from "../../lib/config.js";
import { getProjectQuotas } from "../../lib/quotas/store.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

async function requests<T>(
  fn: () => Promise<T>,
): Promise<{ value: T; requests: Record<string, number>; readUnits: number }> {
  startMeter();
  try {
    const value = await fn();
    const requests: Record<string, number> = {};
    let readUnits = 0;
    for (const usage of Object.values(meterReading())) {
      for (const [op, n] of Object.entries(usage.requests)) requests[op] = (requests[op] ?? 0) + n;
      for (const t of Object.values(usage.tables)) readUnits += t.read;
    }
    return { value, requests, readUnits };
  } finally {
    stopMeter();
  }
}

describe("batched single-item reads", () => {
  it("reads asked together are one BatchGetItem; each gets its own item, a missing one undefined", async () => {
    const table = resources().catalogTable;
    for (const pk of ["loader#a", "loader#b"])
      await dynamo().send(new PutCommand({ TableName: table, Item: { pk, value: pk.toUpperCase() } }));
    const {
      value,
      requests: made,
      readUnits,
    } = await requests(() =>
      Promise.all(["loader#a", "loader#missing", "loader#b", "loader#a"].map((pk) => loadItem(table, pk))),
    );
    expect(value.map((i) => i?.value)).toEqual(["LOADER#A", undefined, "LOADER#B", "LOADER#A"]);
    expect(made).toEqual({ "dynamodb:BatchGetItem": 1 });
    // three keys read consistently, as AWS counts them: the one not found costs its minimum too
    expect(readUnits).toBe(3);
    // one after another: one request each
    const { requests: apart } = await requests(async () => {
      await loadItem(table, "loader#a");
      await loadItem(table, "loader#b");
    });
    expect(apart).toEqual({ "dynamodb:BatchGetItem": 2 });
  });

  it("a write is seen by the next read (consistent reads, nothing cached)", async () => {
    const table = resources().catalogTable;
    await dynamo().send(new PutCommand({ TableName: table, Item: { pk: "loader#c", value: 1 } }));
    expect((await loadItem(table, "loader#c"))?.value).toBe(1);
    await dynamo().send(new PutCommand({ TableName: table, Item: { pk: "loader#c", value: 2 } }));
    expect((await loadItem(table, "loader#c"))?.value).toBe(2);
  });

  it("a create's flavor, image and quotas, asked together, are one request", async () => {
    await seedCatalog();
    const flavor = SEED_FLAVORS[0]!;
    const image = SEED_IMAGES[0]!;
    const { value, requests: made } = await requests(() =>
      Promise.all([getFlavor(flavor.id), getImage(image.id), getProjectQuotas("loader-project")]),
    );
    expect(value[0]?.id).toBe(flavor.id);
    expect(value[1]?.id).toBe(image.id);
    expect(value[2].limits.instances).toBeGreaterThan(0);
    expect(made).toEqual({ "dynamodb:BatchGetItem": 1 });
  });
});
