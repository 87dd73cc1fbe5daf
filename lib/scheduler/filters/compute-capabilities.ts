// Nova's ComputeCapabilitiesFilter: flavor extra specs scoped `capabilities:` (a path into the
// host: an attribute, its stats, then nested keys) must match the host, with extra_specs_ops'
// operators. An unscoped key is checked only when the host has such an attribute or stat;
// keys in any other scope are not this filter's.
import { extraSpecMatcher } from "../extra-specs-ops.js";
import { hasHostAttribute, hostAttributeOf, hostCapabilityOf, isFloatAttribute } from "../host-view.js";
import { pyStr } from "../python.js";
import type { FleetIndex, HostFilter, HostState, Rejection } from "../types.js";

interface Requirement {
  key: string;
  scope: string[];
  req: string;
  matches: (value: string) => boolean;
  /** the value is str() of a float attribute */
  float: boolean;
  /** unscoped: only checked where the host has the attribute or stat */
  unscoped: boolean;
  rejection: Rejection;
  /** the verdict by capability value: few values, thousands of hosts */
  verdicts: Map<string, Rejection | null>;
  /** the same by the value itself when it is not a dict (no str() per host) */
  byValue: Map<unknown, Rejection | null>;
  /** the host's capability at `scope` (the host at position `i`) */
  capability: (host: HostState, i: number) => unknown;
  /** the rejection of a host without the capability */
  absent: Rejection;
}

export const ComputeCapabilitiesFilter: HostFilter = {
  name: "ComputeCapabilitiesFilter",
  // Instance type and host capabilities do not change within a request.
  runOncePerRequest: true,
  runOnRebuild: false,
  prepare(spec, ctx) {
    const requirements: Requirement[] = [];
    for (const [key, req] of Object.entries(spec.flavor.extra_specs)) {
      const scope = key.split(":");
      const unscoped = scope.length === 1;
      if (!unscoped && scope.shift() !== "capabilities") continue;
      requirements.push({
        key,
        scope,
        req,
        matches: extraSpecMatcher(req),
        float: scope.length === 1 && isFloatAttribute(scope[0]!),
        unscoped,
        rejection: { summary: `do not match extra spec ${key}=${req}` },
        verdicts: new Map(),
        byValue: new Map(),
        capability: capabilityOf(scope, ctx.fleet),
        absent: {
          summary: `do not match extra spec ${key}=${req}`,
          reason: `host has no capability ${scope.join(":")}`,
        },
      });
    }
    if (requirements.length === 0) return null;
    return (host, i) => {
      for (const r of requirements) {
        if (r.unscoped && !hasHostAttribute(r.key) && !(r.key in host.stats)) continue;
        const cap = r.capability(host, i);
        if (cap === undefined) return r.absent;
        // A number or text has one str(): its verdict is kept by the value itself.
        const plain = cap === null || typeof cap !== "object";
        let verdict = plain ? r.byValue.get(cap) : undefined;
        if (verdict === undefined) {
          const value = pyStr(cap, r.float);
          verdict = r.verdicts.get(value);
          if (verdict === undefined) {
            verdict = r.matches(value)
              ? null
              : { ...r.rejection, reason: `capability ${r.scope.join(":")} is ${value}, not ${r.req}` };
            r.verdicts.set(value, verdict);
          }
          if (plain) r.byValue.set(cap, verdict);
        }
        if (verdict) return verdict;
      }
      return null;
    };
  },
};

/**
 * hostCapabilityOf(scope); a number attribute (`capabilities:vcpus_total`) from the fleet's
 * column, always equal to the host state's (and never None, so its stats are not asked); a
 * hypervisor attribute (`capabilities:hypervisor_type`) once per class of hosts sharing the
 * hypervisor facet, where it is not None (else the host's stats are asked, as host by host).
 */
function capabilityOf(scope: readonly string[], fleet: FleetIndex): Requirement["capability"] {
  const column = scope.length === 1 ? fleet.numberColumn(scope[0]!) : undefined;
  if (column) return (_host, i) => column[i];
  const capability = hostCapabilityOf(scope);
  if (scope.length !== 1 || !HYPERVISOR_FACET.has(scope[0]!)) return (host) => capability(host);
  const attribute = hostAttributeOf(scope[0]!);
  const classOf = fleet.classOf.hypervisor;
  const byClass = new Array<unknown>(fleet.classCount.hypervisor);
  return (host, i) => {
    const c = classOf[i]!;
    let cap = byClass[c];
    if (cap === undefined) {
      // None: the host's stats are asked, and they are not the class's.
      cap = attribute(host);
      if (cap === undefined) return capability(host);
      byClass[c] = cap;
    }
    return cap;
  };
}

/** The attributes the fleet's hypervisor facet is made of: one value per class. */
const HYPERVISOR_FACET: ReadonlySet<string> = new Set([
  "supported_instances",
  "hypervisor_type",
  "hypervisor_version",
]);
