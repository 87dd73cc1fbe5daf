// What a host answers to a question the API asked it through its queue (os-getConsoleOutput,
// diagnostics): compute-events keeps the answer in the Instances table under a key no instance
// can have (`<kind>#<uuid>#<request id>`), without the attributes the instance listings read,
// for the API, which waits for it, to read. DynamoDB's TTL removes it after an hour.
import { GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { resources } from "../config.js";

/** The questions a host answers this way. */
export type HostAnswerKind = "console" | "diagnostics";

/** How long an answer is kept for the API to read (DynamoDB TTL). */
const ANSWER_TTL_SECONDS = 3600;

function answerKey(kind: HostAnswerKind, instanceUuid: string, requestId: string): string {
  return `${kind}#${instanceUuid}#${requestId}`;
}

export async function storeHostAnswer(
  kind: HostAnswerKind,
  instanceUuid: string,
  requestId: string,
  answer: Record<string, unknown>,
): Promise<void> {
  await dynamo().send(
    new PutCommand({
      TableName: resources().instancesTable,
      Item: {
        ...answer,
        id: answerKey(kind, instanceUuid, requestId),
        expires_at: Math.floor(Date.now() / 1000) + ANSWER_TTL_SECONDS,
      },
    }),
  );
}

/** The answer without its key and expiry, or undefined while there is none. */
export async function readHostAnswer(
  kind: HostAnswerKind,
  instanceUuid: string,
  requestId: string,
): Promise<Record<string, unknown> | undefined> {
  const r = await dynamo().send(
    new GetCommand({
      TableName: resources().instancesTable,
      Key: { id: answerKey(kind, instanceUuid, requestId) },
      ConsistentRead: true,
    }),
  );
  if (!r.Item) return undefined;
  const { id: _id, expires_at: _expires, ...answer } = r.Item;
  return answer;
}
