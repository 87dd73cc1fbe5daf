/** DynamoDB's "your condition was false": a normal outcome (conflict, duplicate, fenced), not a fault. */
export function isConditionalCheckFailed(e: unknown): boolean {
  return (e as { name?: string })?.name === "ConditionalCheckFailedException";
}
