import type { RequestSpec } from "../scheduler/types.js";
import type { InstanceRecord } from "./types.js";

/**
 * The request spec kept with an instance (Nova's RequestSpec is per instance), for a request of
 * `numInstances` like it. A record written before request specs were kept gets one rebuilt from
 * its flavor, image and requested zone (its hints are lost).
 */
export function requestSpecOf(rec: InstanceRecord, numInstances = 1): RequestSpec {
  const spec = rec.request_spec ?? {
    ...(rec.requested_availability_zone ? { availability_zone: rec.requested_availability_zone } : {}),
    scheduler_hints: {},
  };
  return {
    scheduler_hints: {},
    ...spec,
    project_id: rec.project_id,
    user_id: rec.user_id,
    flavor: rec.flavor,
    image: rec.image,
    num_instances: numInstances,
  };
}
