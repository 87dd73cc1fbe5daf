import { z } from "zod";
import {
  describeZodError,
  destination,
  destinationOf,
  requestSpec,
  retry,
  selection,
  uuid,
} from "./common.js";

/**
 * The most instances one build request (and so one conductor execution) carries. A create of
 * more is sent as several requests of at most this many, each scheduled and built on its own: the
 * conductor's state, its casts and its retries' time (test/unit/conductor/retry-budget) stay
 * those of this many instances, whatever max_count is (Nova bounds it only by quota).
 */
export const MAX_INSTANCES_PER_REQUEST = 100;

const ids = {
  /** the create action's request id (req-…), shared by every attempt */
  request_id: z.string().min(1),
  reservation_id: z.string().min(1),
  project_id: z.string().min(1),
  user_id: z.string().min(1),
  instance_uuids: z.array(uuid).min(1).max(MAX_INSTANCES_PER_REQUEST),
  retry: retry,
};

/**
 * The message on `build-requests`: sent by the API for a new create and, unchanged in shape, by
 * compute (or the watchdog) when a build failed and must be rescheduled. Ids and small facts
 * only: the request spec is on each instance's record, where the scheduler reads it, so neither
 * this message nor the conductor's state grows with the request's hints (Step Functions' state
 * is limited to 256 KiB).
 */
export const buildRequestV2 = z.object({
  version: z.literal(2),
  ...ids,
  /** remaining unclaimed alternates, in order; only on a reschedule of one instance */
  alternates: z.array(destination).optional(),
  /**
   * A resize or cold migration of the one instance instead of a build (Nova's MigrationTask):
   * the instance's record carries the move (its MoveContext, with the new flavor). Attempt n of
   * the move claims and casts with the token base_attempt + n.
   */
  move: z
    .object({
      migration_uuid: uuid,
      /** the instance's attempt when the move was accepted */
      base_attempt: z.number().int().min(0),
    })
    .optional(),
  /**
   * A rebuild of the one instance on its own host instead of a build (Nova's conductor
   * rebuild_instance without evacuate): the instance's record carries the rebuild (its
   * RebuildContext, with the image it had). No claim is made: the instance keeps its allocation.
   */
  rebuild: z.object({ rebuild_uuid: uuid }).optional(),
  /**
   * An unshelve of the one SHELVED_OFFLOADED instance instead of a build (Nova's conductor
   * unshelve_instance): the instance's record carries it (its UnshelveContext). Attempt n claims
   * and casts with the token base_attempt + n, as a move does.
   */
  unshelve: z
    .object({
      unshelve_uuid: uuid,
      /** the instance's attempt when the unshelve was accepted */
      base_attempt: z.number().int().min(0),
    })
    .optional(),
});

/** v1 carried the whole request spec, and alternates with their amounts. */
export const buildRequestV1 = z
  .object({
    version: z.literal(1),
    ...ids,
    request_spec: requestSpec,
    alternates: z.array(selection).optional(),
  })
  .refine((m) => m.request_spec.num_instances === m.instance_uuids.length, {
    message: "request_spec.num_instances must equal the number of instance_uuids",
    path: ["request_spec", "num_instances"],
  });

export type BuildRequest = z.infer<typeof buildRequestV2>;
export type MoveRequest = BuildRequest & { move: NonNullable<BuildRequest["move"]> };
export type RebuildRequest = BuildRequest & { rebuild: NonNullable<BuildRequest["rebuild"]> };
export type UnshelveRequest = BuildRequest & { unshelve: NonNullable<BuildRequest["unshelve"]> };

/** The token of a move's attempt: above every attempt the instance had before it. */
export function moveAttempt(req: MoveRequest): number {
  return req.move.base_attempt + req.retry.num_attempts;
}

/** The token of an unshelve's attempt: above every attempt the instance had before it. */
export function unshelveAttempt(req: UnshelveRequest): number {
  return req.unshelve.base_attempt + req.retry.num_attempts;
}

export function isUnshelve(req: BuildRequest): req is UnshelveRequest {
  return req.unshelve !== undefined;
}

export function isMove(req: BuildRequest): req is MoveRequest {
  return req.move !== undefined;
}

export function isRebuild(req: BuildRequest): req is RebuildRequest {
  return req.rebuild !== undefined;
}

/**
 * What the intake accepts: v2, and a v1 message still queued (or redriven from the dead-letter
 * queue) from before v2. The records v1 was sent for hold the same request spec (the API has
 * always written it with them), so a v1 message is read as the v2 message it would be now.
 */
export const buildRequest = z
  .discriminatedUnion("version", [buildRequestV2, buildRequestV1])
  .transform((m): BuildRequest => (m.version === 2 ? m : fromV1(m)));

function fromV1(m: z.infer<typeof buildRequestV1>): BuildRequest {
  const { request_spec: _spec, alternates, ...rest } = m;
  return {
    ...rest,
    version: 2,
    ...(alternates ? { alternates: alternates.map(destinationOf) } : {}),
  };
}

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
  return parseJsonMessage(buildRequest, body);
}
