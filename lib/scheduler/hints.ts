// Nova's RequestSpec.get_scheduler_hint: hints are stored as lists of strings, and a one-element
// list reads as its element.
import type { RequestSpec } from "./types.js";

export function schedulerHint(spec: RequestSpec, name: string): unknown {
  const value = spec.scheduler_hints[name];
  return Array.isArray(value) && value.length === 1 ? value[0] : value;
}

/** A hint that names instances (same_host, different_host): always a list of strings. */
export function hintList(spec: RequestSpec, name: string): string[] {
  const value = schedulerHint(spec, name);
  if (value === undefined || value === null || value === "") return [];
  return (Array.isArray(value) ? value : [value]).map(String);
}
