// The whole table, assembled from the groups' files, and what is derived from it.
import { API_OPTIONS } from "./api.js";
import { AGENT_DEFAULT_ORDER, AGENT_SECTIONS, COMPUTE_OPTIONS } from "./compute.js";
import { CONDUCTOR_OPTIONS } from "./conductor.js";
import { DEPLOYMENT_OPTIONS } from "./deployment.js";
import { IDENTITY_OPTIONS } from "./identity.js";
import { OBSERVABILITY_OPTIONS } from "./observability.js";
import type { ConfigOption } from "./option.js";
import { PLACEMENT_OPTIONS } from "./placement.js";
import { NEUTRON_QUOTA_OPTIONS, QUOTA_OPTIONS } from "./quota.js";
import { RESOURCE_OPTIONS } from "./resources.js";
import { SCHEDULER_OPTIONS } from "./scheduler.js";

/** The whole table: docs/configuration.md lists it in this order. */
export const OPTIONS: readonly ConfigOption[] = [
  ...SCHEDULER_OPTIONS,
  ...COMPUTE_OPTIONS,
  ...CONDUCTOR_OPTIONS,
  ...API_OPTIONS,
  ...IDENTITY_OPTIONS,
  ...PLACEMENT_OPTIONS,
  ...OBSERVABILITY_OPTIONS,
  ...QUOTA_OPTIONS,
  ...NEUTRON_QUOTA_OPTIONS,
  ...DEPLOYMENT_OPTIONS,
  ...RESOURCE_OPTIONS,
];

const byKey = new Map(OPTIONS.map((o) => [o.key, o]));

/** The row of an option by its key; throws for a key the table does not have. */
export function option(key: string): ConfigOption {
  const o = byKey.get(key);
  if (!o) throw new Error(`no option ${key} in lib/config.ts`);
  return o;
}

/** Every option novaless-compute reads, in compute.conf's order. */
export const AGENT_OPTIONS: readonly ConfigOption[] = AGENT_SECTIONS.flatMap((section) => {
  const rows = OPTIONS.filter((o) => o.agent && o.group === section);
  if (section !== "DEFAULT") return rows;
  // in that order, and any row it does not name after them (none is left out)
  const rank = (o: ConfigOption) => {
    const i = AGENT_DEFAULT_ORDER.indexOf(o.name);
    return i < 0 ? AGENT_DEFAULT_ORDER.length : i;
  };
  return [...rows].sort((a, b) => rank(a) - rank(b));
});

/** novaless-compute's default of an option: undefined when unset, computed or required. */
export function agentDefault(o: ConfigOption): string | number | boolean | undefined {
  const v = o.agent?.default !== undefined ? o.agent.default : o.default;
  return v === null || v === undefined || Array.isArray(v) ? undefined : v;
}
