// os-services updates, checked without I/O: the 2.53+ body of PUT /os-services/{id}, and the
// older action forms (PUT /os-services/enable|disable|disable-log-reason|force-down with the host
// and binary in the body; force-down from 2.11).
import { z } from "zod";
import { badRequest, notFound } from "../errors.js";
import { type ApiVersion, forVersion, type Ranged } from "../microversion.js";
import { novaBoolean, validate } from "./common.js";

const reason = z.string().min(1).max(255);

const serviceUpdate = z.strictObject({
  status: z.enum(["enabled", "disabled"]).optional(),
  disabled_reason: reason.optional(),
  forced_down: novaBoolean.optional(),
});

export interface ServiceChange {
  disabled?: boolean;
  disabled_reason?: string | null;
  forced_down?: boolean;
}

export function parseServiceUpdate(body: unknown): ServiceChange {
  const b = validate(serviceUpdate, body);
  if (b.status === undefined && b.forced_down === undefined) {
    throw badRequest("No updates were requested. Fields 'status' or 'forced_down' should be specified.");
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

// parameter_types.fqdn: a hostname of letters, digits, '-', '_' and '.'
const host = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[a-zA-Z0-9-._]*$/);
const binary = z.string().min(1).max(255);

const legacySchemas: Ranged<{ value: z.ZodType }>[] = [
  { max: "2.10", value: z.strictObject({ host, binary, disabled_reason: reason.optional() }) },
  {
    min: "2.11",
    value: z.strictObject({
      host,
      binary,
      disabled_reason: reason.optional(),
      forced_down: novaBoolean.optional(),
    }),
  },
];

/** The pre-2.53 actions, each with the microversions it exists at. */
const ACTIONS: Record<string, { min?: string }> = {
  enable: {},
  disable: {},
  "disable-log-reason": {},
  "force-down": { min: "2.11" },
};

export interface LegacyServiceUpdate {
  host: string;
  binary: string;
  change: ServiceChange;
}

/** PUT /os-services/{action} before 2.53: which service (host, binary) and what changes. */
export function parseLegacyServiceUpdate(action: string, raw: unknown, v: ApiVersion): LegacyServiceUpdate {
  const known = ACTIONS[action];
  if (!known || !v.matches(known.min)) throw notFound("Unknown action");
  const b = validate(forVersion(legacySchemas, v), raw) as {
    host: string;
    binary: string;
    disabled_reason?: string;
    forced_down?: boolean;
  };
  let change: ServiceChange;
  switch (action) {
    case "enable":
      change = { disabled: false, disabled_reason: null };
      break;
    case "disable":
      change = { disabled: true, disabled_reason: null };
      break;
    case "disable-log-reason":
      if (b.disabled_reason === undefined) throw badRequest("Missing disabled reason field");
      change = { disabled: true, disabled_reason: b.disabled_reason };
      break;
    default:
      if (b.forced_down === undefined) throw badRequest("Missing forced_down field");
      change = { forced_down: b.forced_down };
  }
  return { host: b.host, binary: b.binary, change };
}
