// cdk-nag (AwsSolutions) findings shared by several parts: grants on the compute hosts' queues.
// What is not fixed, and why, sits beside the resource it concerns, in each part.

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
