import { z } from "zod";
import { describeZodError, requestSpec, retry, selection, uuid } from "./common.js";

/**
 * The message on `build-requests`: sent by the API for a new create and, unchanged in shape, by
 * compute (or the watchdog) when a build failed and must be rescheduled.
 */
export const buildRequestV1 = z
  .object({
    version: z.literal(1),
    /** the create action's request id (req-…), shared by every attempt */
    request_id: z.string().min(1),
    reservation_id: z.string().min(1),
    project_id: z.string().min(1),
    user_id: z.string().min(1),
    instance_uuids: z.array(uuid).min(1),
    request_spec: requestSpec,
    retry: retry,
    /** remaining unclaimed alternates, in order; only on a reschedule of one instance */
    alternates: z.array(selection).optional(),
  })
  .refine((m) => m.request_spec.num_instances === m.instance_uuids.length, {
    message: "request_spec.num_instances must equal the number of instance_uuids",
    path: ["request_spec", "num_instances"],
  });

export type BuildRequest = z.infer<typeof buildRequestV1>;

export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

export function parseJsonMessage<T>(schema: z.ZodType<T>, body: string): Parsed<T> {
  let raw: unknown;
  try {
    raw = JSON.parse(body);
  } catch (e) {
    return { ok: false, reason: `body is not JSON: ${(e as Error).message}` };
  }
  const r = schema.safeParse(raw);
  return r.success ? { ok: true, value: r.data } : { ok: false, reason: describeZodError(r.error) };
}

export function parseBuildRequest(body: string): Parsed<BuildRequest> {
  return parseJsonMessage(buildRequestV1, body);
}
