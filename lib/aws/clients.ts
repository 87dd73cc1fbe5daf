// Client factories. Endpoints are never set here: the SDK reads AWS_ENDPOINT_URL_DYNAMODB,
// AWS_ENDPOINT_URL_SQS and AWS_ENDPOINT_URL_SFN itself, so the same code reaches AWS, the
// embedded emulators or LocalStack.
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SFNClient } from "@aws-sdk/client-sfn";
import { SQSClient } from "@aws-sdk/client-sqs";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";

let ddb: DynamoDBDocumentClient | undefined;
let sqs: SQSClient | undefined;
let sfn: SFNClient | undefined;

export function dynamo(): DynamoDBDocumentClient {
  ddb ??= DynamoDBDocumentClient.from(new DynamoDBClient({ maxAttempts: 5 }), {
    marshallOptions: { removeUndefinedValues: true },
  });
  return ddb;
}

export function sqsClient(): SQSClient {
  sqs ??= new SQSClient({ maxAttempts: 5 });
  return sqs;
}

export function sfnClient(): SFNClient {
  sfn ??= new SFNClient({ maxAttempts: 5 });
  return sfn;
}

/** Forget cached clients (the local runtime and tests change endpoints between runs). */
export function resetClients(): void {
  ddb?.destroy();
  sqs?.destroy();
  sfn?.destroy();
  ddb = undefined;
  sqs = undefined;
  sfn = undefined;
}
