// The build-requests and compute-events queues with their DLQs, and the names of the compute
// hosts' own queues, which the compute-events function creates at run time.
import { ArnFormat, CfnOutput, Duration, type Stack, Token } from "aws-cdk-lib";
import * as sqs from "aws-cdk-lib/aws-sqs";
import {
  BUILD_REQUESTS_QUEUE,
  COMPUTE_EVENTS_QUEUE,
  DLQ_RETENTION_SECONDS,
  DLQ_SUFFIX,
} from "../../lib/resources.js";

/** SQS queue names: letters, digits, `-` and `_`, at most 80 characters (the DLQ suffix included). */
const QUEUE_NAME_PREFIX = /^[A-Za-z0-9_-]{1,60}$/;

export interface QueuesProps {
  /** Prefix of every compute host's queue. Default `${stackName}-compute-`, lowercased. */
  computeQueuePrefix?: string;
}

export class Queues {
  readonly buildRequests: sqs.Queue;
  readonly buildRequestsDlq: sqs.Queue;
  /** What every compute host reports; the only queue a host may send to. */
  readonly computeEvents: sqs.Queue;
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

    this.buildRequestsDlq = new sqs.Queue(stack, "BuildRequestsDlq", {
      retentionPeriod: Duration.seconds(DLQ_RETENTION_SECONDS),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    this.buildRequests = new sqs.Queue(stack, "BuildRequests", {
      visibilityTimeout: Duration.seconds(BUILD_REQUESTS_QUEUE.visibilityTimeout),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: {
        queue: this.buildRequestsDlq,
        maxReceiveCount: BUILD_REQUESTS_QUEUE.maxReceiveCount,
      },
    });

    // Registration, heartbeats, builds, power states: the compute-events function applies them.
    this.computeEventsDlq = new sqs.Queue(stack, "ComputeEventsDlq", {
      retentionPeriod: Duration.seconds(DLQ_RETENTION_SECONDS),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    this.computeEvents = new sqs.Queue(stack, "ComputeEventsQueue", {
      visibilityTimeout: Duration.seconds(COMPUTE_EVENTS_QUEUE.visibilityTimeout),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: {
        queue: this.computeEventsDlq,
        maxReceiveCount: COMPUTE_EVENTS_QUEUE.maxReceiveCount,
      },
    });

    new CfnOutput(stack, "BuildRequestsQueueUrl", { value: this.buildRequests.queueUrl });
    new CfnOutput(stack, "BuildRequestsDlqUrl", { value: this.buildRequestsDlq.queueUrl });
    new CfnOutput(stack, "ComputeQueuePrefix", { value: this.computeQueuePrefix });
    new CfnOutput(stack, "ComputeEventsQueueUrl", { value: this.computeEvents.queueUrl });
    new CfnOutput(stack, "ComputeEventsDlqUrl", { value: this.computeEventsDlq.queueUrl });
  }
}
