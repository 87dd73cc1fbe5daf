// [filter_scheduler] enabled_filters names → filters. One file per filter; add new ones here.
import { SchedulerHostFilterNotFound } from "../errors.js";
import type { FilterContext, HostFilter, HostState, RequestSpec } from "../types.js";
import { AggregateImagePropertiesIsolation } from "./aggregate-image-properties-isolation.js";
import { AggregateInstanceExtraSpecsFilter } from "./aggregate-instance-extra-specs.js";
import { AggregateIoOpsFilter } from "./aggregate-io-ops.js";
import { AggregateMultiTenancyIsolation } from "./aggregate-multitenancy-isolation.js";
import { AggregateNumInstancesFilter } from "./aggregate-num-instances.js";
import { AggregateTypeAffinityFilter } from "./aggregate-type-affinity.js";
import { AllHostsFilter } from "./all-hosts.js";
import { AvailabilityZoneFilter } from "./availability-zone.js";
import { ComputeFilter } from "./compute.js";
import { ComputeCapabilitiesFilter } from "./compute-capabilities.js";
import { DifferentHostFilter } from "./different-host.js";
import { ImagePropertiesFilter } from "./image-properties.js";
import { IoOpsFilter } from "./io-ops.js";
import { IsolatedHostsFilter } from "./isolated-hosts.js";
import { JsonFilter } from "./json.js";
import { MetricsFilter } from "./metrics.js";
import { NumInstancesFilter } from "./num-instances.js";
import { SameHostFilter } from "./same-host.js";
import { ServerGroupAffinityFilter } from "./server-group-affinity.js";
import { ServerGroupAntiAffinityFilter } from "./server-group-anti-affinity.js";
import { SimpleCIDRAffinityFilter } from "./simple-cidr-affinity.js";

export const FILTERS: ReadonlyMap<string, HostFilter> = new Map(
  [
    AggregateImagePropertiesIsolation,
    AggregateInstanceExtraSpecsFilter,
    AggregateIoOpsFilter,
    AggregateMultiTenancyIsolation,
    AggregateNumInstancesFilter,
    AggregateTypeAffinityFilter,
    AllHostsFilter,
    AvailabilityZoneFilter,
    ComputeCapabilitiesFilter,
    ComputeFilter,
    DifferentHostFilter,
    ImagePropertiesFilter,
    IoOpsFilter,
    IsolatedHostsFilter,
    JsonFilter,
    MetricsFilter,
    NumInstancesFilter,
    SameHostFilter,
    ServerGroupAffinityFilter,
    ServerGroupAntiAffinityFilter,
    SimpleCIDRAffinityFilter,
  ].map((f) => [f.name, f]),
);

const resolved = new WeakMap<readonly string[], HostFilter[]>();

/** The enabled filters, in configured order; every unknown name is reported at once, as Nova does. */
export function enabledFilters(names: readonly string[]): HostFilter[] {
  let filters = resolved.get(names);
  if (!filters) {
    const unknown = names.filter((n) => !FILTERS.has(n));
    if (unknown.length > 0) throw new SchedulerHostFilterNotFound(unknown);
    filters = names.map((n) => FILTERS.get(n)!);
    resolved.set(names, filters);
  }
  return filters;
}

/** Nova's host_passes(host_state, spec_obj) for one host: null when it passes. */
export function hostPasses(filter: HostFilter, host: HostState, spec: RequestSpec, ctx: FilterContext) {
  return filter.prepare(spec, ctx)?.(host, 0) ?? null;
}
