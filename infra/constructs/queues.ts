// The build-requests queue and its DLQ, compute-events' dead-letter queue (hosts post their reports
// to its function URL), and the names of the compute hosts' own queues, which the compute-events
// function creates at run time.
import { ArnFormat, CfnOutput, Duration, type Stack, Token } from "aws-cdk-lib";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { NagSuppressions } from "cdk-nag";
import { BUILD_REQUESTS_QUEUE, DLQ_RETENTION_SECONDS, DLQ_SUFFIX } from "../../lib/resources.js";

/** SQS queue names: letters, digits, `-` and `_`, at most 80 characters (the DLQ suffix included). */
const QUEUE_NAME_PREFIX = /^[A-Za-z0-9_-]{1,60}$/;

export interface QueuesProps {
  /** Prefix of every compute host's queue. Default `${stackName}-compute-`, lowercased. */
  computeQueuePrefix?: string;
}

export class Queues {
  readonly buildRequests: sqs.Queue;
  readonly buildRequestsDlq: sqs.Queue;
  /** The hosts' reports compute-events could not apply, with its reason. */
  readonly computeEventsDlq: sqs.Queue;
  /** `${prefix}<host>` and `${prefix}<host>-dlq` */
  readonly computeQueuePrefix: string;
  /** Every host queue and its DLQ match this one pattern. */
  readonly computeQueuesArn: string;
  /** The hosts' DLQs only. */
  readonly computeDlqsArn: string;

  constructor(stack: Stack, props: QueuesProps) {
    this.computeQueuePrefix = props.computeQueuePrefix ?? `${stack.stackName}-compute-`.toLowerCase();
    if (!Token.isUnresolved(this.computeQueuePrefix) && !QUEUE_NAME_PREFIX.test(this.computeQueuePrefix)) {
      throw new Error(
        `computeQueuePrefix "${this.computeQueuePrefix}" must be 1-60 letters, digits, "-" or "_" (an SQS queue name prefix)`,
      );
    }
    const hostQueues = (suffix: string) =>
      stack.formatArn({
        service: "sqs",
        resource: `${this.computeQueuePrefix}*${suffix}`,
        arnFormat: ArnFormat.NO_RESOURCE_NAME,
      });
    this.computeQueuesArn = hostQueues("");
    this.computeDlqsArn = hostQueues(DLQ_SUFFIX);

    [this.buildRequests, this.buildRequestsDlq] = queueWithDlq(stack, "BuildRequests", BUILD_REQUESTS_QUEUE);
    this.computeEventsDlq = deadLetterQueue(stack, "ComputeEventsDlq");
    NagSuppressions.addResourceSuppressions(this.computeEventsDlq, [
      {
        id: "AwsSolutions-SQS3",
        reason:
          "A dead-letter queue itself: compute-events sends it the reports it cannot apply, with the reason. No queue redrives to it since the reports come through a function URL.",
      },
    ]);

    new CfnOutput(stack, "BuildRequestsQueueUrl", { value: this.buildRequests.queueUrl });
    new CfnOutput(stack, "BuildRequestsDlqUrl", { value: this.buildRequestsDlq.queueUrl });
    new CfnOutput(stack, "ComputeQueuePrefix", { value: this.computeQueuePrefix });
    new CfnOutput(stack, "ComputeEventsDlqUrl", { value: this.computeEventsDlq.queueUrl });
  }
}

const ENCRYPTED_TLS_ONLY = { encryption: sqs.QueueEncryption.SQS_MANAGED, enforceSSL: true } as const;

/** An encrypted, TLS-only dead-letter queue: a dead letter waits 14 days for an operator. */
function deadLetterQueue(stack: Stack, id: string): sqs.Queue {
  return new sqs.Queue(stack, id, {
    retentionPeriod: Duration.seconds(DLQ_RETENTION_SECONDS),
    ...ENCRYPTED_TLS_ONLY,
  });
}

/** An encrypted, TLS-only queue and its DLQ (created first, so the logical IDs keep their order). */
function queueWithDlq(
  stack: Stack,
  id: string,
  spec: { visibilityTimeout: number; maxReceiveCount: number },
): [queue: sqs.Queue, dlq: sqs.Queue] {
  const dlq = deadLetterQueue(stack, `${id}Dlq`);
  const queue = new sqs.Queue(stack, id, {
    visibilityTimeout: Duration.seconds(spec.visibilityTimeout),
    ...ENCRYPTED_TLS_ONLY,
    deadLetterQueue: { queue: dlq, maxReceiveCount: spec.maxReceiveCount },
  });
  return [queue, dlq];
}
