// Nova's os-migrateLive request schemas (schemas/migrate_server.py) per microversion, and
// server_migrations' force_complete body.
import { z } from "zod";
import { badRequest } from "../errors.js";
import { novaBoolean, validate } from "./common.js";

const host = z.union([z.string().min(1).max(255), z.null()]);

export interface LiveMigrateBody {
  host: string | null;
  /** null: "auto" (2.25), the driver decides */
  blockMigration: boolean | null;
  /** 2.30 to 2.67: the host without the scheduler's filters */
  force: boolean;
}

/**
 * Before 2.25 block_migration and disk_over_commit (booleans) and host are all required; from
 * 2.25 disk_over_commit is gone and block_migration may be "auto"; force (boolean) from 2.30 to
 * 2.67. A host is forced before 2.30 (Nova's force None), checked by the scheduler from 2.30
 * unless forced.
 */
export function parseLiveMigrateBody(
  raw: unknown,
  version: { atLeast(v: string): boolean },
): LiveMigrateBody {
  if (!version.atLeast("2.25")) {
    const body = validate(
      z.strictObject({ block_migration: novaBoolean, disk_over_commit: novaBoolean, host }),
      raw,
    );
    // before 2.30 a host is Nova's forced destination (force None: the conductor skips the scheduler)
    return { host: body.host, blockMigration: body.block_migration, force: body.host !== null };
  }
  const blockMigration = z.union([z.literal("auto"), novaBoolean]);
  if (version.atLeast("2.30") && !version.atLeast("2.68")) {
    const body = validate(
      z.strictObject({ block_migration: blockMigration, host, force: novaBoolean.optional() }),
      raw,
    );
    const force = body.force ?? false;
    if (force && !body.host) throw badRequest("Can't force to a non-provided destination");
    return { host: body.host, blockMigration: auto(body.block_migration), force };
  }
  const body = validate(z.strictObject({ block_migration: blockMigration, host }), raw);
  // 2.25 to 2.29 as before 2.25; from 2.68 (no force) the scheduler checks the host
  return {
    host: body.host,
    blockMigration: auto(body.block_migration),
    force: !version.atLeast("2.68") && body.host !== null,
  };
}

const auto = (v: boolean | "auto"): boolean | null => (v === "auto" ? null : v);

/** POST /servers/{id}/migrations/{mid}/action: {"force_complete": null}, the only action. */
export function parseMigrationAction(raw: unknown): "force_complete" {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw) || Object.keys(raw).length !== 1)
    throw badRequest("Malformed request body");
  const [name, arg] = Object.entries(raw)[0]!;
  if (name !== "force_complete") throw badRequest(`There is no such action: ${name}`);
  validate(z.null(), arg);
  return name;
}
