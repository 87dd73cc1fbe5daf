import type { Scheduled } from "../messages/scheduled.js";

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

// Capacity outcomes are answers, not function errors: Lambda counts a thrown error as a failed
// invocation (the functions' Errors alarms fire at 1), and a full fleet or a lost race for an
// alternate is no fault of the function. Each answer is a Scheduled with nothing in it, so
// whatever reads $.scheduled as one (BuildFailed releasing claims) finds nothing claimed; the
// state machine's Choice states route on the field that names the outcome.

/** select_destinations' answer when no host fits (Nova's NoValidHost). */
export interface NoValidHostAnswer extends Scheduled {
  /** the operator summary (summarizeNoValidHost); never shown to a non-admin user */
  no_valid_host: { details: string };
}

/** ClaimAlternate's answer when no alternate could be claimed: the state machine reschedules. */
export interface AlternatesExhaustedAnswer extends Scheduled {
  exhausted: { message: string };
}

/**
 * select_destinations' answer when a live migration's checks refuse it (Nova's
 * MigrationPreCheckError and the like, a forced host without room): `error` names the API's status
 * (lib/conductor/live-migrate.ts liveRefusalFault), `message` is Nova's text.
 */
export interface MoveRefusedAnswer extends Scheduled {
  refused: { error: "LiveMigrationRefused" | "LiveMigrationConflict"; message: string };
}

export function noValidHostAnswer(details: string): NoValidHostAnswer {
  return { hosts: [], selections: [], no_valid_host: { details } };
}

export function alternatesExhausted(message: string): AlternatesExhaustedAnswer {
  return { hosts: [], selections: [], exhausted: { message } };
}
