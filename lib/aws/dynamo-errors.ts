/** DynamoDB's "your condition was false": a normal outcome (conflict, duplicate, fenced), not a fault. */
export function isConditionalCheckFailed(e: unknown): boolean {
  return (e as { name?: string })?.name === "ConditionalCheckFailedException";
}

/**
 * A conditional write's output, or undefined when its condition did not hold (lost to a
 * concurrent writer, or fenced). `settled` runs either way: a cache of what the write may have
 * changed is reset whether it won or lost.
 */
export async function unlessConditionFails<T>(
  write: Promise<T>,
  settled?: () => void,
): Promise<T | undefined> {
  try {
    return await write;
  } catch (e) {
    if (isConditionalCheckFailed(e)) return undefined;
    throw e;
  } finally {
    settled?.();
  }
}

/** A conditional write: true when it was applied, false when its condition did not hold. */
export async function conditionHeld(write: Promise<unknown>, settled?: () => void): Promise<boolean> {
  return (
    (await unlessConditionFails(
      write.then(() => true),
      settled,
    )) ?? false
  );
}

/**
 * A transaction cancelled by a condition of one of its actions, or by a concurrent transaction
 * on the same items (TransactionConflict): the same normal outcome as a lost conditional write.
 */
export function isTransactionLost(e: unknown): boolean {
  if ((e as { name?: string })?.name !== "TransactionCanceledException") return false;
  const codes = ((e as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? []).map(
    (r) => r.Code,
  );
  return (
    codes.length === 0 || codes.some((c) => c === "ConditionalCheckFailed" || c === "TransactionConflict")
  );
}

/** A conditional write or transaction: true when applied, false when a condition or a conflict refused it. */
export async function writeHeld(write: Promise<unknown>, settled?: () => void): Promise<boolean> {
  try {
    await write;
    return true;
  } catch (e) {
    if (isConditionalCheckFailed(e) || isTransactionLost(e)) return false;
    throw e;
  } finally {
    settled?.();
  }
}
