// Nova's DifferentHostFilter: scheduler hint different_host (instance uuids): hosts running any of
// them are out.
import type { HostFilter } from "../types.js";
import { byHintedInstances } from "./same-host.js";

export const DifferentHostFilter: HostFilter = {
  name: "DifferentHostFilter",
  // The hosts the instances are running on do not change within a request.
  runOncePerRequest: true,
  runOnRebuild: false,
  prepare: byHintedInstances("different_host", false, { summary: "run a different_host instance" }),
};
