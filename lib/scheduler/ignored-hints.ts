// The scheduler hints a request gives that the configured filters and weighers would ignore
// (Nova ignores them without a word): the dry run lists them as warnings.
import type { SchedulerConfig } from "../config.js";
import { enabledFilters } from "./filters/index.js";
import type { RequestSpec, ServerGroupPolicy } from "./types.js";
import { enabledWeighers } from "./weighers/index.js";

/** The filter that reads each scheduler hint Nova defines (others read none here). */
const HINT_READERS: Record<string, string> = {
  different_host: "DifferentHostFilter",
  same_host: "SameHostFilter",
  query: "JsonFilter",
  build_near_host_ip: "SimpleCIDRAffinityFilter",
  cidr: "SimpleCIDRAffinityFilter",
};

/** What enforces each server group policy: a filter, or a weigher for the soft ones. */
const POLICY_ENFORCERS: Record<
  ServerGroupPolicy,
  { name: string; option: "enabled_filters" | "weight_classes" }
> = {
  affinity: { name: "ServerGroupAffinityFilter", option: "enabled_filters" },
  "anti-affinity": { name: "ServerGroupAntiAffinityFilter", option: "enabled_filters" },
  "soft-affinity": { name: "ServerGroupSoftAffinityWeigher", option: "weight_classes" },
  "soft-anti-affinity": { name: "ServerGroupSoftAntiAffinityWeigher", option: "weight_classes" },
};

/**
 * The hints of a request that this configuration would silently ignore, each said in a sentence:
 * a hint whose filter is not enabled, a hint no filter reads, a group whose policy nothing
 * enforces. Nova ignores them without a word; a dry run should not.
 */
export function ignoredHints(spec: RequestSpec, config: SchedulerConfig): string[] {
  const filters = new Set(enabledFilters(config.enabled_filters).map((f) => f.name));
  const weighers = new Set(enabledWeighers(config.weight_classes).map((w) => w.name));
  const warnings: string[] = [];
  for (const hint of Object.keys(spec.scheduler_hints).sort()) {
    // `group` is the instance group (below); a leading underscore is Nova's own (_nova_check_type)
    if (hint === "group" || hint.startsWith("_")) continue;
    const reader = HINT_READERS[hint];
    if (!reader) warnings.push(`The scheduler hint ${hint} is ignored: no enabled filter reads it.`);
    else if (!filters.has(reader))
      warnings.push(`The scheduler hint ${hint} is ignored: ${reader} is not in enabled_filters.`);
  }
  const group = spec.instance_group;
  if (group) {
    const { name, option } = POLICY_ENFORCERS[group.policy];
    const enabled = option === "enabled_filters" ? filters : weighers;
    if (!enabled.has(name))
      warnings.push(
        `The server group's ${group.policy} policy is not enforced: ${name} is not in ${option}.`,
      );
  }
  return warnings;
}
