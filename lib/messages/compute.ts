import { z } from "zod";
import {
  type Destination,
  destination,
  destinationOf,
  requestSpec,
  retry,
  selection,
  uuid,
} from "./common.js";

/**
 * Conductor → compute: build this instance on your host, as attempt N. Ids, the host, the
 * attempt and the amounts claimed: what the guest is built from (flavor, image), who it belongs
 * to and where a reschedule goes next (the alternates, kept by BuildInstances with the
 * placement) are on the instance's record, which compute reads as it takes the build. Nothing
 * in it grows with the request, and the host's name is in it once: the Map state carries one
 * cast per instance, and Nova's host names run to 255 characters.
 */
export const buildAndRunInstanceV3 = z.object({
  version: z.literal(3),
  kind: z.literal("build_and_run_instance"),
  request_id: z.string().min(1),
  instance_uuid: uuid,
  host: z.string().min(1),
  /** omitted when the node is named as the host */
  node: z.string().min(1).optional(),
  /** the fencing token: the instance's attempt this build is for */
  attempt: z.number().int().min(1),
  resources: z.record(z.string(), z.number()),
});

/** v2 also carried the alternates; a record placed before v3 does not have them. */
const buildAndRunInstanceV2 = z.object({
  version: z.literal(2),
  kind: z.literal("build_and_run_instance"),
  request_id: z.string().min(1),
  instance_uuid: uuid,
  host: z.string().min(1),
  node: z.string().min(1),
  attempt: z.number().int().min(1),
  resources: z.record(z.string(), z.number()),
  alternates: z.array(destination),
});

/** v1 also carried the request spec, the owner and the retry; the record has all of it. */
const buildAndRunInstanceV1 = z.object({
  version: z.literal(1),
  kind: z.literal("build_and_run_instance"),
  request_id: z.string().min(1),
  reservation_id: z.string().min(1),
  project_id: z.string().min(1),
  user_id: z.string().min(1),
  instance_uuid: uuid,
  host: z.string().min(1),
  node: z.string().min(1),
  attempt: z.number().int().min(1),
  resources: z.record(z.string(), z.number()),
  request_spec: requestSpec,
  retry: retry,
  alternates: z.array(selection),
});

/** API → compute: tear down whatever you built for this instance. */
export const terminateInstanceV1 = z.object({
  version: z.literal(1),
  kind: z.literal("terminate_instance"),
  request_id: z.string().min(1),
  instance_uuid: uuid,
  host: z.string().min(1),
  /** the attempt whose claim the host releases once the guest is destroyed */
  attempt: z.number().int().min(0).optional(),
});

export type BuildAndRunInstance = z.infer<typeof buildAndRunInstanceV3>;
export type TerminateInstance = z.infer<typeof terminateInstanceV1>;
export type ComputeMessage = BuildAndRunInstance | TerminateInstance;

/**
 * A build cast as compute reads it: v3, or an older cast still in the host's queue with the
 * alternates it carried (its record, placed before v3, does not have them).
 */
export type ReceivedBuild = BuildAndRunInstance & { alternates?: Destination[] };
export type ReceivedComputeMessage = ReceivedBuild | TerminateInstance;

/** What the conductor and the API send to a host's queue. */
export const computeMessage = z.discriminatedUnion("kind", [buildAndRunInstanceV3, terminateInstanceV1]);

/**
 * What a compute agent accepts: the messages above, and a v1 or v2 build cast from before v3
 * and still in the host's queue, read as the v3 cast it would be now plus its alternates.
 */
export const receivedComputeMessage = z
  .discriminatedUnion("kind", [
    z.discriminatedUnion("version", [buildAndRunInstanceV3, buildAndRunInstanceV2, buildAndRunInstanceV1]),
    terminateInstanceV1,
  ])
  .transform((m): ReceivedComputeMessage => {
    if (m.kind === "terminate_instance" || m.version === 3) return m;
    return {
      version: 3,
      kind: m.kind,
      request_id: m.request_id,
      instance_uuid: m.instance_uuid,
      host: m.host,
      ...(m.node === m.host ? {} : { node: m.node }),
      attempt: m.attempt,
      resources: m.resources,
      alternates: m.alternates.map(destinationOf),
    };
  });
