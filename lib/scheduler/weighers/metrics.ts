// Nova's MetricsWeigher: Σ metric × ratio over [metrics] weight_setting. A host missing a metric
// fails the request when [metrics] required (MetricsFilter keeps such hosts out), else weighs
// weight_of_unavailable — unless that metric's ratio × the host's multiplier is 0.
import { weightMultiplier } from "../aggregates.js";
import { pyFloat } from "../python.js";
import type { HostState, Weigher, WeigherValue } from "../types.js";

/** Nova's ComputeHostMetricNotFound: the request fails, as in Nova. */
export class ComputeHostMetricNotFound extends Error {
  override name = "ComputeHostMetricNotFound";
  constructor(host: string, node: string, metric: string) {
    super(`Metric ${metric} not found on host ${host} node ${node}`);
  }
}

/** utils.parse_options(weight_setting, sep='=', converter=float): "name=ratio" pairs, bad ones dropped. */
export function parseWeightSetting(entries: readonly string[]): [string, number][] {
  const good: [string, number][] = [];
  for (const entry of entries) {
    const at = entry.indexOf("=");
    if (at <= 0) continue;
    const ratio = pyFloat(entry.slice(at + 1));
    if (ratio !== undefined) good.push([entry.slice(0, at), ratio]);
  }
  return good;
}

export const MetricsWeigher: Weigher = {
  name: "MetricsWeigher",
  multiplierOption: "metrics_weight_multiplier",
  prepare(_spec, ctx) {
    const setting = parseWeightSetting(ctx.config.metrics_weight_setting);
    if (setting.length === 0) return null;
    const { metrics_required: required, metrics_weight_of_unavailable: unavailable } = ctx.config;
    const configured = ctx.config.metrics_weight_multiplier;
    const names = setting.map(([name]) => name);
    const ratios = setting.map(([, ratio]) => ratio);
    const missing = (host: HostState, k: number): number | undefined => {
      if (required) throw new ComputeHostMetricNotFound(host.host, host.nodename, names[k]!);
      if (ratios[k]! * weightMultiplier(host.aggregates, "metrics_weight_multiplier", configured) !== 0) {
        return unavailable;
      }
      return undefined;
    };
    const columns = names.map((name) => ctx.fleet.metric(name));
    const value: WeigherValue = (host, i) => {
      let sum = 0.0;
      for (let k = 0; k < columns.length; k++) {
        const col = columns[k]!;
        if (col.has[i] === 1) sum += col.value[i]! * ratios[k]!;
        else {
          const v = missing(host, k);
          if (v !== undefined) return v;
        }
      }
      return sum;
    };
    const hosts = ctx.fleet;
    value.fill = (candidates, raw) => {
      for (let j = 0; j < candidates.length; j++) {
        const i = candidates[j]!;
        let sum = 0.0;
        let k = 0;
        for (; k < columns.length; k++) {
          const col = columns[k]!;
          if (col.has[i] !== 1) break;
          sum += col.value[i]! * ratios[k]!;
        }
        // A missing metric: the host by host rule, which may throw or weigh it as unavailable.
        raw[j] = k === columns.length ? sum : value(hosts.hostAt(i), i);
      }
    };
    return value;
  },
};
