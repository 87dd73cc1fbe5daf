// Nova's AggregateMultiTenancyIsolation: a host in an aggregate with `filter_tenant_id` metadata
// (comma-separated project ids) takes only those projects' instances.

import { aggregateMetadataByHost } from "../aggregates.js";
import type { HostFilter } from "../types.js";

export const AggregateMultiTenancyIsolation: HostFilter = {
  name: "AggregateMultiTenancyIsolation",
  // Aggregate data and the project do not change within a request.
  runOncePerRequest: true,
  runOnRebuild: false,
  reads: { host: "aggregates", spec: ["project_id"] },
  prepare(spec) {
    const project = spec.project_id;
    const summary = `are reserved for other projects than ${project}`;
    return (host) => {
      const tenants = aggregateMetadataByHost(host.aggregates).get("filter_tenant_id");
      if (!tenants || tenants.size === 0 || tenants.has(project)) return null;
      return { summary, reason: `the host's aggregates are for projects ${[...tenants].join(", ")}` };
    };
  },
};
