import type { BuildRequest } from "../messages/build-request.js";
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

/**
 * The build request that hands this one instance to the conductor again: for a move, a rebuild
 * or an unshelve (the caller adds which, at the first attempt), or a reschedule (its `retry`).
 */
export function conductorRequest(
  rec: Pick<InstanceRecord, "id" | "reservation_id" | "project_id" | "user_id">,
  requestId: string,
  retry: BuildRequest["retry"] = { num_attempts: 1, hosts: [] },
): BuildRequest {
  return {
    version: 2,
    request_id: requestId,
    reservation_id: rec.reservation_id,
    project_id: rec.project_id,
    user_id: rec.user_id,
    instance_uuids: [rec.id],
    retry,
  };
}
