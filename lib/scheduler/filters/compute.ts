// Nova's ComputeFilter: only enabled compute services that are up.
import type { HostFilter, Rejection } from "../types.js";

const FORCED_DOWN: Rejection = { summary: "are down", reason: "compute service is forced down" };

export const ComputeFilter: HostFilter = {
  name: "ComputeFilter",
  // Host state does not change within a request.
  runOncePerRequest: true,
  runOnRebuild: false,
  reads: { host: "service", config: ["service_down_time"] },
  prepare(_spec, ctx) {
    const notHeard: Rejection = {
      summary: "are down",
      reason: `compute service has not been heard from in ${ctx.config.service_down_time}s`,
    };
    return ({ service }) => {
      // Nova checks disabled first, so a disabled host that is also down reports "disabled".
      if (service.disabled) {
        const why = service.disabled_reason ? ` (${service.disabled_reason})` : "";
        return { summary: "are disabled", reason: `compute service is disabled${why}` };
      }
      // forced_down wins over any heartbeat, as in Nova's servicegroup API.
      if (service.forced_down) return FORCED_DOWN;
      if (!service.up) return notHeard;
      return null;
    };
  },
};
