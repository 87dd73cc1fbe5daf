// Nova's AggregateInstanceExtraSpecsFilter: flavor extra specs scoped
// `aggregate_instance_extra_specs:`, and unscoped ones (Nova's backward compatibility), must match
// the metadata of one of the host's aggregates (values split on commas; extra_specs_ops operators).

import { aggregateMetadataByHost } from "../aggregates.js";
import { extraSpecMatcher } from "../extra-specs-ops.js";
import type { HostFilter, Rejection } from "../types.js";

const SCOPE = "aggregate_instance_extra_specs";

export const AggregateInstanceExtraSpecsFilter: HostFilter = {
  name: "AggregateInstanceExtraSpecsFilter",
  // Aggregate data and the flavor do not change within a request.
  runOncePerRequest: true,
  runOnRebuild: false,
  reads: { host: "aggregates", spec: ["flavor.extra_specs"] },
  prepare(spec) {
    const wanted: { key: string; req: string; matches: (v: string) => boolean; rejection: Rejection }[] = [];
    for (const [specKey, req] of Object.entries(spec.flavor.extra_specs)) {
      const colon = specKey.indexOf(":");
      if (colon >= 0 && specKey.slice(0, colon) !== SCOPE) continue;
      const key = colon >= 0 ? specKey.slice(colon + 1) : specKey;
      wanted.push({
        key,
        req,
        matches: extraSpecMatcher(req),
        rejection: { summary: `are in no aggregate matching ${specKey}=${req}` },
      });
    }
    if (wanted.length === 0) return null;
    return (host) => {
      const metadata = aggregateMetadataByHost(host.aggregates);
      for (const { key, req, matches, rejection } of wanted) {
        const values = metadata.get(key);
        if (!values || values.size === 0)
          return { ...rejection, reason: `no aggregate of the host has ${key}` };
        if (![...values].some(matches)) {
          return {
            ...rejection,
            reason: `the host's aggregates have ${key}=${[...values].join(",")}, not ${req}`,
          };
        }
      }
      return null;
    };
  },
};
