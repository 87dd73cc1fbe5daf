import { z } from "zod";
import { destination, destinationOf, requestSpec, retry, selection, uuid } from "./common.js";

/**
 * Conductor → compute: build this instance on your host, as attempt N. Ids, the attempt, the
 * amounts claimed and the alternates: what the guest is built from (flavor, image) and who it
 * belongs to are on the instance's record, which compute reads as it takes the build.
 */
export const buildAndRunInstanceV2 = z.object({
  version: z.literal(2),
  kind: z.literal("build_and_run_instance"),
  request_id: z.string().min(1),
  instance_uuid: uuid,
  host: z.string().min(1),
  node: z.string().min(1),
  /** the fencing token: the instance's attempt this build is for */
  attempt: z.number().int().min(1),
  resources: z.record(z.string(), z.number()),
  /** where a reschedule goes first, in order */
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

export type BuildAndRunInstance = z.infer<typeof buildAndRunInstanceV2>;
export type TerminateInstance = z.infer<typeof terminateInstanceV1>;
export type ComputeMessage = BuildAndRunInstance | TerminateInstance;

/** What the conductor and the API send to a host's queue. */
export const computeMessage = z.discriminatedUnion("kind", [buildAndRunInstanceV2, terminateInstanceV1]);

/**
 * What a compute agent accepts: the messages above, and a v1 build cast before v2 and still in
 * the host's queue, read as the v2 cast it would be now.
 */
export const receivedComputeMessage = z
  .discriminatedUnion("kind", [
    z.discriminatedUnion("version", [buildAndRunInstanceV2, buildAndRunInstanceV1]),
    terminateInstanceV1,
  ])
  .transform((m): ComputeMessage => {
    if (m.kind === "terminate_instance" || m.version === 2) return m;
    return {
      version: 2,
      kind: m.kind,
      request_id: m.request_id,
      instance_uuid: m.instance_uuid,
      host: m.host,
      node: m.node,
      attempt: m.attempt,
      resources: m.resources,
      alternates: m.alternates.map(destinationOf),
    };
  });
