// [filter_scheduler] weight_classes names → weighers. One file per weigher; add new ones here.
import { SchedulerWeigherNotFound } from "../errors.js";
import type { Weigher } from "../types.js";
import { BuildFailureWeigher } from "./build-failure.js";
import { CPUWeigher } from "./cpu.js";
import { DiskWeigher } from "./disk.js";
import { IoOpsWeigher } from "./io-ops.js";
import { MetricsWeigher } from "./metrics.js";
import { NumInstancesWeigher } from "./num-instances.js";
import { RAMWeigher } from "./ram.js";
import { ServerGroupSoftAffinityWeigher } from "./server-group-soft-affinity.js";
import { ServerGroupSoftAntiAffinityWeigher } from "./server-group-soft-anti-affinity.js";

/** In Nova's module order (nova/scheduler/weights/*.py), the order all_weighers gives them in. */
export const WEIGHERS: ReadonlyMap<string, Weigher> = new Map(
  [
    ServerGroupSoftAffinityWeigher,
    ServerGroupSoftAntiAffinityWeigher,
    BuildFailureWeigher,
    CPUWeigher,
    DiskWeigher,
    IoOpsWeigher,
    MetricsWeigher,
    NumInstancesWeigher,
    RAMWeigher,
  ].map((w) => [w.name, w]),
);

/** Nova's default weight_classes value: every available weigher. */
const ALL_WEIGHERS = "all_weighers";

/**
 * Accepts the class name ("RAMWeigher") or Nova's dotted path
 * ("nova.scheduler.weights.ram.RAMWeigher", "nova.scheduler.weights.all_weighers").
 */
export function enabledWeighers(names: readonly string[]): Weigher[] {
  let weighers = resolved.get(names);
  if (!weighers) {
    weighers = resolve(names);
    resolved.set(names, weighers);
  }
  return weighers;
}

const resolved = new WeakMap<readonly string[], Weigher[]>();

function resolve(names: readonly string[]): Weigher[] {
  const out: Weigher[] = [];
  const unknown: string[] = [];
  for (const name of names) {
    const short = name.slice(name.lastIndexOf(".") + 1);
    if (short === ALL_WEIGHERS) out.push(...WEIGHERS.values());
    else if (WEIGHERS.has(short)) out.push(WEIGHERS.get(short)!);
    else unknown.push(name);
  }
  if (unknown.length > 0) throw new SchedulerWeigherNotFound(unknown);
  // A weigher named twice (or also via all_weighers) would count twice: keep the first.
  return [...new Set(out)];
}
