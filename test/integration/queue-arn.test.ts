// A dead-letter queue's ARN is formed from its URL rather than asked for (one request less per
// host at registration): it must be exactly what SQS itself answers.
import { SQSClient } from "@aws-sdk/client-sqs";
import { describe, expect, it } from "vitest";
import { arnFromUrl, ensureQueueWithDlq, queueArn } from "../../lib/aws/queues.js";
import { COMPUTE_QUEUE } from "../../lib/resources.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

describe("a queue's ARN from its URL", () => {
  it("is what SQS answers for the queue and its dead-letter queue", async () => {
    const client = new SQSClient({});
    const region = await client.config.region();
    const q = await ensureQueueWithDlq(`arn-check-${Date.now()}`, COMPUTE_QUEUE, client);
    for (const url of [q.queueUrl, q.dlqUrl])
      expect(arnFromUrl(url, region)).toBe(await queueArn(client, url));
    expect(q.dlqArn).toBe(await queueArn(client, q.dlqUrl));
  });

  it("follows AWS's and LocalStack's URL shapes and the region's partition; other shapes are asked", () => {
    expect(arnFromUrl("https://sqs.eu-west-1.amazonaws.com/123456789012/q-dlq", "eu-west-1")).toBe(
      "arn:aws:sqs:eu-west-1:123456789012:q-dlq",
    );
    expect(
      arnFromUrl("http://sqs.us-east-1.localhost.localstack.cloud:4566/000000000000/q.fifo", "us-east-1"),
    ).toBe("arn:aws:sqs:us-east-1:000000000000:q.fifo");
    expect(arnFromUrl("https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q", "cn-north-1")).toBe(
      "arn:aws-cn:sqs:cn-north-1:123456789012:q",
    );
    expect(arnFromUrl("http://127.0.0.1:4566/queue/q", "us-east-1")).toBeUndefined();
  });
});
