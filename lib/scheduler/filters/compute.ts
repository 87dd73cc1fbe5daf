// Nova's ComputeFilter: only enabled compute services that are up.
import type { HostFilter } from "../types.js";

export const ComputeFilter: HostFilter = {
  name: "ComputeFilter",
  // Host state does not change within a request.
  runOncePerRequest: true,
  hostPasses(host, _spec, ctx) {
    const { service } = host;
    // Nova checks disabled first, so a disabled host that is also down reports "disabled".
    if (service.disabled) {
      const why = service.disabled_reason ? ` (${service.disabled_reason})` : "";
      return { pass: false, reason: `compute service is disabled${why}`, summary: "are disabled" };
    }
    // `up` is the caller's heartbeat check; forced_down wins over any heartbeat, as in Nova's
    // servicegroup API, so it is honoured here even if the caller forgot it.
    if (service.forced_down) {
      return { pass: false, reason: "compute service is forced down", summary: "are down" };
    }
    if (!service.up) {
      return {
        pass: false,
        reason: `compute service has not been heard from in ${ctx.config.service_down_time}s`,
        summary: "are down",
      };
    }
    return { pass: true };
  },
};
