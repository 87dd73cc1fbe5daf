export interface Cast {
  queue_url: string;
  message_body: string;
}

/** A Step Functions error as Catch's ResultPath records it. */
export interface StatesError {
  Error: string;
  Cause?: string;
}

/** Nova's user-facing NoValidHost text. */
export { NO_VALID_HOST_MESSAGE } from "../scheduler/errors.js";

/** Thrown by ClaimAlternate when no alternate could be claimed; the state machine then reschedules. */
export class AlternatesExhausted extends Error {
  override name = "AlternatesExhausted";
}
