// [filter_scheduler] weight_classes names → weighers. One file per weigher; add new ones here.
import { SchedulerWeigherNotFound } from "../errors.js";
import type { Weigher } from "../types.js";
import { RAMWeigher } from "./ram.js";

export const WEIGHERS: ReadonlyMap<string, Weigher> = new Map([RAMWeigher].map((w) => [w.name, w]));

/** Nova's default weight_classes value: every available weigher. */
const ALL_WEIGHERS = "all_weighers";

/**
 * Accepts the class name ("RAMWeigher") or Nova's dotted path
 * ("nova.scheduler.weights.ram.RAMWeigher", "nova.scheduler.weights.all_weighers").
 */
export function enabledWeighers(names: readonly string[]): Weigher[] {
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
