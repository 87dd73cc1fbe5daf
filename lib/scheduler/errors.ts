// Scheduler errors: configuration errors only. NoValidHost is an answer, not an error
// (lib/conductor/types.ts noValidHostAnswer): a full fleet is no failure of the function.

/** Nova's user-facing NoValidHost message; the per-filter detail is for operators only. */
export const NO_VALID_HOST_MESSAGE = "No valid host was found. There are not enough hosts available.";

/** A name in [filter_scheduler] enabled_filters that no filter answers to: a configuration error. */
export class SchedulerHostFilterNotFound extends Error {
  override name = "SchedulerHostFilterNotFound";
  readonly filters: string[];

  constructor(filters: string[]) {
    super(`Scheduler Host Filter ${filters.join(", ")} could not be found.`);
    this.filters = filters;
  }
}

/** A name in [filter_scheduler] weight_classes that no weigher answers to: a configuration error. */
export class SchedulerWeigherNotFound extends Error {
  override name = "SchedulerWeigherNotFound";
  readonly weighers: string[];

  constructor(weighers: string[]) {
    super(`Scheduler weigher ${weighers.join(", ")} could not be found.`);
    this.weighers = weighers;
  }
}
