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
  check.pass = (live, n, next, out, why) => {
    let kept = 0;
    for (let j = 0; j < n; j++) {
      const i = live[j]!;
      const max = limit(i);
      if (count[i]! < max) next[kept++] = i;
      else {
        out.push(i);
        why.push(reject(count[i]!, max));
      }
    }
    return kept;
  };
  return check;
}

/** A host passes when its bit in `mask` is `passWhen` (a set of hosts by position, e.g. names asked for). */
export function maskCheck(mask: Uint8Array, passWhen: 0 | 1, rejection: Rejection): HostCheck {
  const check: HostCheck = (_host, i) => (mask[i] === passWhen ? null : rejection);
  check.pass = (live, n, next, out, why) => {
    let kept = 0;
    for (let j = 0; j < n; j++) {
      const i = live[j]!;
      if (mask[i] === passWhen) next[kept++] = i;
      else {
        out.push(i);
        why.push(rejection);
      }
    }
    return kept;
  };
  return check;
}
