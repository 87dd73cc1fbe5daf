// Nova's BuildFailureWeigher (nova/scheduler/weights/compute.py): recent failed builds on the
// host, weighed with the multiplier negated, so a failing host sinks without leaving rotation.
import type { Weigher } from "../types.js";
import { columnWeigher } from "./columns.js";

export const BuildFailureWeigher: Weigher = columnWeigher({
  name: "BuildFailureWeigher",
  multiplierOption: "build_failure_weight_multiplier",
  negated: true,
  column: "failed_builds",
});
