// PUT /os-services/{id} (microversion 2.53 shape).
import { z } from "zod";
import { badRequest } from "../errors.js";
import { validate } from "./common.js";

const serviceUpdate = z.strictObject({
  status: z.enum(["enabled", "disabled"]).optional(),
  disabled_reason: z.string().min(1).max(255).optional(),
  forced_down: z.boolean().optional(),
});

export interface ServiceChange {
  disabled?: boolean;
  disabled_reason?: string | null;
  forced_down?: boolean;
}

export function parseServiceUpdate(body: unknown): ServiceChange {
  const b = validate(serviceUpdate, body);
  if (b.status === undefined && b.forced_down === undefined) {
    throw badRequest("At least one of status or forced_down must be specified.");
  }
  // Nova: a reason only makes sense when disabling.
  if (b.disabled_reason !== undefined && b.status !== "disabled") {
    throw badRequest("Specifying 'disabled_reason' with status 'enabled' is invalid.");
  }
  const out: ServiceChange = {};
  if (b.status !== undefined) {
    out.disabled = b.status === "disabled";
    out.disabled_reason = b.disabled_reason ?? null;
  }
  if (b.forced_down !== undefined) out.forced_down = b.forced_down;
  return out;
}
