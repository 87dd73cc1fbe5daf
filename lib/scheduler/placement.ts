// Placement's allocation candidates, decided in memory host by host: the prefilters' aggregates,
// then required and forbidden traits, then the resources (capacity, min_unit, max_unit,
// step_size). The claim (a conditional write) remains the authority; this only narrows.

import type { Fleet } from "./fleet.js";
import type { StageCheck } from "./pipeline.js";
import { COMPUTE_STATUS_DISABLED, type PlacementRequest } from "./prefilters.js";
import { exceeds, failure, fitSummary, freeUnits, inventoryFit } from "./resource-fit.js";
import type { HostCheck, HostState, Rejection, ResourceFitFailure } from "./types.js";

/**
 * Placement's checks for `req`, in order; the aggregate one reads only aggregates, resources are
 * read from the fleet's columns.
 */
export function placementChecks(req: PlacementRequest, fleet: Fleet): StageCheck[] {
  if (req.failure) {
    const refused: Rejection = { summary: `are refused by a request filter: ${req.failure}` };
    return [{ check: () => refused }];
  }
  const checks: StageCheck[] = [];
  const memberOf = req.member_of.map((m) => ({
    ids: new Set(m.aggregates),
    rejection: { summary: m.summary },
  }));
  const forbidden = req.forbidden_aggregates.map((m) => ({
    ids: new Set(m.aggregates),
    rejection: { summary: m.summary },
  }));
  if (memberOf.length > 0 || forbidden.length > 0) {
    checks.push({
      reads: "aggregates",
      inputs: [req.member_of, req.forbidden_aggregates],
      check: (host) => {
        for (const m of memberOf) if (!inAny(host, m.ids)) return m.rejection;
        for (const m of forbidden) if (inAny(host, m.ids)) return m.rejection;
        return null;
      },
    });
  }
  const required = req.required_traits;
  const unwanted = req.forbidden_traits;
  if (required.length > 0 || unwanted.length > 0) {
    const lacking = required.map((t) => ({ summary: `lack trait ${t}` }));
    const having = unwanted.map((t) => ({
      summary: t === COMPUTE_STATUS_DISABLED ? "are disabled" : `have forbidden trait ${t}`,
    }));
    checks.push({
      reads: "traits",
      inputs: [required, unwanted],
      check: (host) => {
        for (let k = 0; k < required.length; k++) if (!host.traits.includes(required[k]!)) return lacking[k]!;
        for (let k = 0; k < unwanted.length; k++) if (host.traits.includes(unwanted[k]!)) return having[k]!;
        return null;
      },
    });
  }
  const check = resourceCheck(req, fleet);
  checks.push({ check, pass: resourcePass(req, fleet, check) });
  return checks;
}

/**
 * Placement's resource rule (inventoryFit) over the fleet's resource columns, no lookups by name;
 * the unit bounds are only read where some host's could refuse the amount. The rejection's
 * summary is made once per class and violation.
 */
function resourceCheck(req: PlacementRequest, fleet: Fleet): HostCheck {
  const classes = Object.keys(req.resources);
  const amounts = classes.map((rc) => req.resources[rc]!);
  const columns = classes.map((rc) => fleet.resourceColumn(rc));
  const summaries = summaryCache();
  const reject = (fit: ResourceFitFailure): Rejection => ({ summary: summaries(fit), fit });
  // Whether a class needs its per-host presence or unit bounds read at all.
  const sparse = columns.map((col) => !col?.everywhere);
  const bounded = columns.map(
    (col, k) => !col || col.anyStep || amounts[k]! < col.highestMin || amounts[k]! > col.lowestMax,
  );
  // Hosts short of a class mostly share their shortfall: one rejection per amount left.
  const short = classes.map(() => new Map<number, Rejection>());
  const lacking = (k: number, capacity: number, used: number): Rejection => {
    const free = freeUnits(capacity, used);
    let r = short[k]!.get(free);
    if (!r) {
      r = reject(failure(classes[k]!, "capacity", amounts[k]!, capacity, used));
      short[k]!.set(free, r);
    }
    return r;
  };
  return (_host, i) => {
    for (let k = 0; k < classes.length; k++) {
      const col = columns[k];
      const amount = amounts[k]!;
      if (sparse[k] && (col === undefined || col.has[i] === 0)) {
        return reject({ resource_class: classes[k]!, violation: "missing", requested: amount, free: 0 });
      }
      const capacity = col!.capacity[i]!;
      const used = col!.used[i]!;
      if (bounded[k]) {
        const c = col!;
        const f = inventoryFit(
          classes[k]!,
          amount,
          capacity,
          used,
          c.min_unit[i]!,
          c.max_unit[i]!,
          c.step_size[i]!,
        );
        if (f) return f.violation === "capacity" ? lacking(k, capacity, used) : reject(f);
      } else if (exceeds(used, amount, capacity)) return lacking(k, capacity, used);
    }
    return null;
  };
}

/**
 * The resource check as one pass over positions: the common case (every host has the classes,
 * no unit bound can refuse the amounts) is a loop over the used and capacity columns; anything
 * else falls back to the host-by-host check.
 */
function resourcePass(req: PlacementRequest, fleet: Fleet, check: HostCheck): StageCheck["pass"] {
  const classes = Object.keys(req.resources);
  const amounts = classes.map((rc) => req.resources[rc]!);
  const columns = classes.map((rc) => fleet.resourceColumn(rc));
  const simple = columns.every(
    (col, k) =>
      col?.everywhere && !col.anyStep && amounts[k]! >= col.highestMin && amounts[k]! <= col.lowestMax,
  );
  if (!simple || classes.length === 0) return undefined;
  const used = columns.map((col) => col!.used);
  const capacity = columns.map((col) => col!.capacity);
  const hosts = fleet.hosts;
  // A flavor asks for up to three classes (VCPU, MEMORY_MB, DISK_GB): each read from locals, not
  // through arrays of columns, in the loop every host of a request without a zone goes through.
  // Fewer classes repeat the first (the same test again, same answer).
  if (classes.length <= 3) {
    const [u0, u1 = u0!, u2 = u0!] = used as [Float64Array, ...Float64Array[]];
    const [c0, c1 = c0!, c2 = c0!] = capacity as [Float64Array, ...Float64Array[]];
    const [a0, a1 = a0!, a2 = a0!] = amounts as [number, ...number[]];
    return (live, count, next, out) => {
      let kept = 0;
      for (let j = 0; j < count; j++) {
        const i = live[j]!;
        if (exceeds(u0[i]!, a0, c0[i]!) || exceeds(u1[i]!, a1, c1[i]!) || exceeds(u2[i]!, a2, c2[i]!)) {
          out.reject(i, check(hosts[i]!, i)!);
        } else next[kept++] = i;
      }
      return kept;
    };
  }
  return (live, count, next, out) => {
    let kept = 0;
    for (let j = 0; j < count; j++) {
      const i = live[j]!;
      let fits = true;
      for (let k = 0; k < amounts.length; k++) {
        if (exceeds(used[k]![i]!, amounts[k]!, capacity[k]![i]!)) {
          fits = false;
          break;
        }
      }
      if (fits) next[kept++] = i;
      else {
        out.reject(i, check(hosts[i]!, i)!);
      }
    }
    return kept;
  };
}

function summaryCache(): (fit: ResourceFitFailure) => string {
  const known = new Map<string, Map<string, string>>();
  return (fit) => {
    let byViolation = known.get(fit.resource_class);
    if (!byViolation) {
      byViolation = new Map();
      known.set(fit.resource_class, byViolation);
    }
    let summary = byViolation.get(fit.violation);
    if (summary === undefined) {
      summary = fitSummary(fit);
      byViolation.set(fit.violation, summary);
    }
    return summary;
  };
}

function inAny(host: HostState, ids: ReadonlySet<string>): boolean {
  for (const a of host.aggregates) if (ids.has(a.id)) return true;
  return false;
}
