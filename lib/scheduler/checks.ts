// Checks that read the fleet's arrays, written once as a check and as a pass over positions
// (HostCheck.pass): the loops the scheduler runs over thousands of hosts per decision.
import type { HostCheck, Rejection } from "./types.js";

/** A host passes while its `count` (a fleet column) is below its limit; as a check and as a pass. */
export function belowLimit(
  count: Float64Array,
  limit: (i: number) => number,
  reject: (n: number, max: number) => Rejection,
): HostCheck {
  const check: HostCheck = (_host, i) => {
    const max = limit(i);
    return count[i]! < max ? null : reject(count[i]!, max);
  };
  check.pass = (live, n, next, out) => {
    let kept = 0;
    for (let j = 0; j < n; j++) {
      const i = live[j]!;
      const max = limit(i);
      if (count[i]! < max) next[kept++] = i;
      else {
        out.reject(i, reject(count[i]!, max));
      }
    }
    return kept;
  };
  return check;
}

/**
 * belowLimit where the limit is the host's aggregate class's: `byClass` (NaN where not worked out
 * yet, then `limitOf` works it out from a host of the class and it is kept there). The pass reads
 * the tables inline, no call per host.
 */
export function belowClassLimit(
  count: Float64Array,
  classOf: Int32Array,
  byClass: Float64Array,
  limitOf: (i: number) => number,
  reject: (n: number, max: number) => Rejection,
): HostCheck {
  const limit = (i: number): number => {
    const c = classOf[i]!;
    let v = byClass[c]!;
    if (Number.isNaN(v)) {
      v = limitOf(i);
      byClass[c] = v;
    }
    return v;
  };
  // belowLimit's check, host by host; its pass reads the class table inline
  const check = belowLimit(count, limit, reject);
  check.pass = (live, n, next, out) => {
    let kept = 0;
    for (let j = 0; j < n; j++) {
      const i = live[j]!;
      let max = byClass[classOf[i]!]!;
      if (Number.isNaN(max)) max = limit(i);
      if (count[i]! < max) next[kept++] = i;
      else {
        out.reject(i, reject(count[i]!, max));
      }
    }
    return kept;
  };
  return check;
}

/** A host passes when its bit in `mask` is `passWhen` (a set of hosts by position, e.g. names asked for). */
export function maskCheck(mask: Uint8Array, passWhen: 0 | 1, rejection: Rejection): HostCheck {
  const check: HostCheck = (_host, i) => (mask[i] === passWhen ? null : rejection);
  check.pass = (live, n, next, out) => {
    let kept = 0;
    for (let j = 0; j < n; j++) {
      const i = live[j]!;
      if (mask[i] === passWhen) next[kept++] = i;
      else {
        out.reject(i, rejection);
      }
    }
    return kept;
  };
  return check;
}
