// Nova's AggregateTypeAffinityFilter: a host whose aggregates set `instance_type` (flavor names,
// comma-separated) takes only those flavors.

import { aggregateValuesFromKey } from "../aggregates.js";
import type { HostFilter } from "../types.js";

export const AggregateTypeAffinityFilter: HostFilter = {
  name: "AggregateTypeAffinityFilter",
  // Aggregate data does not change within a request.
  runOncePerRequest: true,
  runOnRebuild: false,
  reads: { host: "aggregates", spec: ["flavor.name"] },
  prepare(spec) {
    const flavor = spec.flavor.name;
    const summary = `are reserved for other flavors than ${flavor}`;
    return (host) => {
      const values = aggregateValuesFromKey(host.aggregates, "instance_type");
      if (values.length === 0) return null;
      if (values.some((v) => v.split(",").some((name) => name.trim() === flavor))) return null;
      return { summary, reason: `the host's aggregates take flavors ${values.join(", ")}` };
    };
  },
};
