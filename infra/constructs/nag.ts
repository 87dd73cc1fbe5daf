// cdk-nag (AwsSolutions) findings shared by several parts: grants on the compute hosts' queues
// and on the images bucket's objects. What is not fixed, and why, sits beside the resource it
// concerns, in each part.
import { type CfnElement, Stack } from "aws-cdk-lib";
import type { IBucket } from "aws-cdk-lib/aws-s3";
import { IMAGES_PREFIX } from "../../lib/compute/image-store.js";

export const COMPUTE_QUEUES_REASON =
  "One SQS queue (and DLQ) per compute host, created at run time when the host registers: only the stack's compute queue prefix can name them";

/**
 * The `appliesTo` of a grant on `${prefix}*${suffix}`. Partition, region and account are tokens or
 * literals depending on the stack's env; the prefix is letters, digits, "-" and "_" only (checked
 * in Queues), nothing a regex would read.
 */
export function computeQueuesFinding(prefix: string, suffix = ""): { regex: string } {
  const part = "(<AWS::[A-Za-z]+>|[^:<>]+)";
  return { regex: `/^Resource::arn:${part}:sqs:${part}:${part}:${prefix}\\*${suffix}$/` };
}

export const IMAGES_REASON =
  "An image's object is named by the image's id, made when the API records the image: the grant is to the images bucket's images/ prefix only";

/** The `appliesTo` of a grant on the images bucket's objects under `prefix` (images/). */
export function imagesFinding(bucket: IBucket, prefix = IMAGES_PREFIX): string {
  const logical = Stack.of(bucket).getLogicalId(bucket.node.defaultChild as CfnElement);
  return `Resource::<${logical}.Arn>/${prefix}*`;
}
