// SQS's partial batch response for a Lambda event source: the records of a batch are handled at
// once, and only the ones that failed are redelivered.

/** Handle every record; the message ids of those whose handling threw (each one reported). */
export async function failedMessageIds<R extends { messageId: string }>(
  records: readonly R[],
  handle: (r: R) => Promise<void>,
  report: (r: R, error: unknown) => void,
): Promise<string[]> {
  const failed: string[] = [];
  await Promise.all(
    records.map(async (r) => {
      try {
        await handle(r);
      } catch (e) {
        report(r, e);
        failed.push(r.messageId);
      }
    }),
  );
  return failed;
}
