// Nova's MetricsFilter: hosts that do not report every metric named in [metrics] weight_setting
// are out, so the MetricsWeigher never meets a host without them.
import type { HostFilter } from "../types.js";
import { parseWeightSetting } from "../weighers/metrics.js";

export const MetricsFilter: HostFilter = {
  name: "MetricsFilter",
  runOncePerRequest: false,
  runOnRebuild: false,
  reads: { host: "metrics", config: ["metrics_weight_setting"] },
  prepare(_spec, ctx) {
    const names = [...new Set(parseWeightSetting(ctx.config.metrics_weight_setting).map(([name]) => name))];
    if (names.length === 0) return null;
    const summary = `do not report metrics ${names.join(", ")}`;
    return (host) => {
      for (const n of names) {
        if (!(n in host.metrics)) {
          const missing = names.filter((m) => !(m in host.metrics));
          return { summary, reason: `host does not report ${missing.join(", ")}` };
        }
      }
      return null;
    };
  },
};
