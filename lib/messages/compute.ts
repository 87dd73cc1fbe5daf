import { z } from "zod";
import { requestSpec, retry, selection, uuid } from "./common.js";

/** Conductor → compute: build this instance on your host, as attempt N. */
export const buildAndRunInstanceV1 = z.object({
  version: z.literal(1),
  kind: z.literal("build_and_run_instance"),
  request_id: z.string().min(1),
  reservation_id: z.string().min(1),
  project_id: z.string().min(1),
  user_id: z.string().min(1),
  instance_uuid: uuid,
  host: z.string().min(1),
  node: z.string().min(1),
  /** the fencing token: the instance's attempt this build is for */
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

export const computeMessage = z.discriminatedUnion("kind", [buildAndRunInstanceV1, terminateInstanceV1]);

export type BuildAndRunInstance = z.infer<typeof buildAndRunInstanceV1>;
export type TerminateInstance = z.infer<typeof terminateInstanceV1>;
export type ComputeMessage = z.infer<typeof computeMessage>;
