// [filter_scheduler] enabled_filters names → filters. One file per filter; add new ones here.
import { SchedulerHostFilterNotFound } from "../errors.js";
import type { HostFilter } from "../types.js";
import { AllHostsFilter } from "./all-hosts.js";
import { AvailabilityZoneFilter } from "./availability-zone.js";
import { ComputeFilter } from "./compute.js";

export const FILTERS: ReadonlyMap<string, HostFilter> = new Map(
  [AllHostsFilter, AvailabilityZoneFilter, ComputeFilter].map((f) => [f.name, f]),
);

/** The enabled filters, in configured order; every unknown name is reported at once, as Nova does. */
export function enabledFilters(names: readonly string[]): HostFilter[] {
  const unknown = names.filter((n) => !FILTERS.has(n));
  if (unknown.length > 0) throw new SchedulerHostFilterNotFound(unknown);
  return names.map((n) => FILTERS.get(n)!);
}
