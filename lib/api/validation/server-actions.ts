// Nova's request schemas of the power actions (nova/api/openstack/compute/schemas/servers.py
// reboot, console_output.py get_console_output).
import { z } from "zod";
import type { RebootType } from "../../instances/power.js";
import { badRequest } from "../errors.js";
import { validate } from "./common.js";

/** reboot: {"type": "SOFT" | "HARD"}, case-insensitive as Nova's pattern. */
const rebootSchema = z.strictObject({
  type: z.string().regex(/^(SOFT|HARD|soft|hard|Soft|Hard)$/, { message: "must be SOFT or HARD" }),
});

export function parseRebootBody(raw: unknown): RebootType {
  return validate(rebootSchema, raw).type.toUpperCase() as RebootType;
}

/** os-getConsoleOutput: {"length": int ≥ -1 | numeric string | null}; -1 and null mean all. */
const consoleSchema = z.union([
  z.null(),
  z.strictObject({
    length: z.union([z.number().int().min(-1), z.string().regex(/^-?[0-9]+$/), z.null()]).optional(),
  }),
]);

export function parseConsoleOutputBody(raw: unknown): number | undefined {
  const body = validate(consoleSchema, raw);
  const length = body?.length;
  if (length === undefined || length === null) return undefined;
  const n = Number(length);
  if (n < -1)
    throw badRequest(
      `Invalid input for field/attribute length. Value: ${length}. ${n} is less than the minimum of -1`,
    );
  return n === -1 ? undefined : n;
}

/** resize: {"flavorRef": string | int, "OS-DCF:diskConfig"?: "AUTO" | "MANUAL"} (Nova's schemas/servers.py resize). */
const resizeSchema = z.strictObject({
  flavorRef: z.union([z.string().min(1).max(255), z.number().int().min(0)]),
  "OS-DCF:diskConfig": z.enum(["AUTO", "MANUAL"]).optional(),
});

export function parseResizeBody(raw: unknown): { flavorRef: string } {
  return { flavorRef: String(validate(resizeSchema, raw).flavorRef) };
}

/**
 * migrate: from 2.56, null or {"host": string | null} (Nova's schemas/migrate_server.py). Before
 * 2.56 Nova has no schema for it and ignores the body (tempest sends {"migrate": {}}).
 */
const migrateSchema = z.union([
  z.null(),
  z.strictObject({ host: z.union([z.string().min(1).max(255), z.null()]).optional() }),
]);

export function parseMigrateBody(raw: unknown, hostAllowed: boolean): { host: string | null } {
  if (!hostAllowed) return { host: null };
  return { host: validate(migrateSchema, raw)?.host ?? null };
}

/**
 * evacuate (Nova's schemas/evacuate.py): {host?, onSharedStorage (required), adminPass?} at 2.1;
 * onSharedStorage gone from 2.14; force (boolean) from 2.29 to 2.67.
 */
export function parseEvacuateBody(
  raw: unknown,
  version: { atLeast(v: string): boolean },
): { host: string | null; adminPass: string | null; force: boolean } {
  const host = z.string().min(1).max(255).optional();
  const adminPass = z.string().optional();
  const schema = !version.atLeast("2.14")
    ? z.strictObject({
        host,
        adminPass,
        onSharedStorage: z.union([z.boolean(), z.enum(["True", "False", "true", "false"])]),
      })
    : version.atLeast("2.29") && !version.atLeast("2.68")
      ? z.strictObject({ host, adminPass, force: z.boolean().optional() })
      : z.strictObject({ host, adminPass });
  const body = validate(schema, raw) as { host?: string; adminPass?: string; force?: boolean };
  return { host: body.host ?? null, adminPass: body.adminPass ?? null, force: body.force ?? false };
}
