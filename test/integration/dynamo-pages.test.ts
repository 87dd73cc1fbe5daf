// queryAll/scanAll follow every page (a small Limit forces several), against the real emulator.
import { PutCommand } from "@aws-sdk/lib-dynamodb";
import { expect, it } from "vitest";
import { dynamo } from "../../lib/aws/clients.js";
import { queryAll, scanAll } from "../../lib/aws/dynamo-pages.js";
import { resources } from "../../lib/config.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

it("collects every item across pages", async () => {
  const table = resources().instancesTable;
  for (let i = 0; i < 7; i++) {
    await dynamo().send(
      new PutCommand({
        TableName: table,
        Item: { id: `i-${i}`, project_id: "p", created_at: `2026-01-0${i + 1}` },
      }),
    );
  }
  expect((await scanAll({ TableName: table, Limit: 2 })).map((x) => x.id).sort()).toEqual([
    "i-0",
    "i-1",
    "i-2",
    "i-3",
    "i-4",
    "i-5",
    "i-6",
  ]);
  const byProject = await queryAll<{ id: string }>({
    TableName: table,
    IndexName: "by-project",
    KeyConditionExpression: "project_id = :p",
    ExpressionAttributeValues: { ":p": "p" },
    Limit: 3,
  });
  expect(byProject).toHaveLength(7);
});
