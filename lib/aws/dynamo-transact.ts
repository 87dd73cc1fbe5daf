// TransactWriteItems whose conditions are the answer: true when applied, false when one of its
// conditions did not hold. A cancellation for a concurrent transaction on the same items
// (TransactionConflict) is no answer about the conditions, so it is tried again after a growing,
// jittered pause: twenty concurrent creates of one name must give one winner, not twenty losers.
// (writeHeld in dynamo-errors.ts counts a conflict as lost: its callers retry at their own level.)
import { TransactWriteCommand, type TransactWriteCommandInput } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "./clients.js";

const MAX_CONFLICT_RETRIES = 8;

export async function transactUnlessConditionFails(input: TransactWriteCommandInput): Promise<boolean> {
  for (let attempt = 0; ; attempt++) {
    try {
      await dynamo().send(new TransactWriteCommand(input));
      return true;
    } catch (e) {
      if ((e as { name?: string }).name !== "TransactionCanceledException") throw e;
      const codes = ((e as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? []).map(
        (r) => r.Code,
      );
      if (codes.includes("ConditionalCheckFailed")) return false;
      if (attempt >= MAX_CONFLICT_RETRIES) throw e;
      await new Promise((done) => setTimeout(done, Math.random() * 20 * 2 ** attempt));
    }
  }
}
