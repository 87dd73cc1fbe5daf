// Nova's AllHostsFilter: a no-op, for deployments that want no filtering at all.
import type { HostFilter } from "../types.js";

export const AllHostsFilter: HostFilter = {
  name: "AllHostsFilter",
  // The list of hosts does not change within a request.
  runOncePerRequest: true,
  runOnRebuild: false,
  prepare: () => null,
};
