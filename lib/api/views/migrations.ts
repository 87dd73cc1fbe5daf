// Nova's migration views: os-migrations (MigrationsController._output) and
// /servers/{id}/migrations (server_migrations.output).
import { createHash } from "node:crypto";
import type { MigrationRecord } from "../../instances/types.js";
import { viewFields } from "../microversion.js";
import { isoMicro, resourceLinks } from "./format.js";

/** Nova's in-progress live migration statuses (migrations.py and server_migrations.py). */
export const LIVE_MIGRATION_IN_PROGRESS: readonly string[] = [
  "queued",
  "preparing",
  "running",
  "post-migrating",
];

export function isLiveMigrationInProgress(m: Pick<MigrationRecord, "migration_type" | "status">): boolean {
  return m.migration_type === "live-migration" && LIVE_MIGRATION_IN_PROGRESS.includes(m.status);
}

/**
 * Nova's old/new_instance_type_id are the flavors' integer database ids, which no API takes back
 * (clients and tempest's schema only need an integer or null). novaless keeps the flavors' ids
 * (Nova's flavorid) on the record. An all-digits id ("1", "42") prints as that integer; any other
 * (a uuid, a name: a flavor created without an id) as a stable integer derived from it, at or
 * above 2^31 so that it never meets an all-digits flavorid below that.
 */
export function instanceTypeId(flavorId: string): number {
  if (/^[0-9]+$/.test(flavorId) && Number.isSafeInteger(Number(flavorId))) return Number(flavorId);
  return 2 ** 31 + (createHash("sha256").update(flavorId).digest().readUInt32BE(0) >>> 1);
}

export interface MigrationViewContext {
  baseUrl: string;
}

/**
 * os-migrations' item: Nova's Migration fields less the internal ones; migration_type from 2.23
 * (links only for an in-progress live migration), uuid from 2.59, user_id/project_id from 2.80.
 * Timestamps as Nova's JSON prints datetimes: microseconds, no zone.
 */
export const migrationView = viewFields<MigrationRecord, MigrationViewContext>([
  {
    fields: (m) => ({
      created_at: isoMicro(m.created_at),
      dest_compute: m.dest_compute,
      dest_host: m.dest_host,
      dest_node: m.dest_node,
      id: m.id,
      instance_uuid: m.instance_uuid,
      new_instance_type_id: instanceTypeId(m.new_instance_type_id),
      old_instance_type_id: instanceTypeId(m.old_instance_type_id),
      source_compute: m.source_compute,
      source_node: m.source_node,
      status: m.status,
      updated_at: isoMicro(m.updated_at),
    }),
  },
  {
    min: "2.23",
    fields: (m, c) => ({
      migration_type: m.migration_type,
      ...(isLiveMigrationInProgress(m)
        ? { links: resourceLinks(c.baseUrl, `servers/${m.instance_uuid}/migrations`, String(m.id)) }
        : {}),
    }),
  },
  { min: "2.59", fields: (m) => ({ uuid: m.uuid }) },
  { min: "2.80", fields: (m) => ({ user_id: m.user_id, project_id: m.project_id }) },
]);

/**
 * /servers/{id}/migrations' item (2.23+): server_uuid rather than instance_uuid, and the live
 * migration's memory progress as its source's driver last reported it (null until then; disk
 * progress is never reported: hosts share no block device to copy, as Nova's for a driver that
 * reports none); uuid from 2.59, user_id/project_id from 2.80.
 */
export const serverMigrationView = viewFields<MigrationRecord, MigrationViewContext>([
  {
    fields: (m) => ({
      created_at: isoMicro(m.created_at),
      dest_compute: m.dest_compute,
      dest_host: m.dest_host,
      dest_node: m.dest_node,
      disk_processed_bytes: m.disk_processed_bytes ?? null,
      disk_remaining_bytes: m.disk_remaining_bytes ?? null,
      disk_total_bytes: m.disk_total_bytes ?? null,
      id: m.id,
      memory_processed_bytes: m.memory_processed_bytes ?? null,
      memory_remaining_bytes: m.memory_remaining_bytes ?? null,
      memory_total_bytes: m.memory_total_bytes ?? null,
      server_uuid: m.instance_uuid,
      source_compute: m.source_compute,
      source_node: m.source_node,
      status: m.status,
      updated_at: isoMicro(m.updated_at),
    }),
  },
  { min: "2.59", fields: (m) => ({ uuid: m.uuid }) },
  { min: "2.80", fields: (m) => ({ user_id: m.user_id, project_id: m.project_id }) },
]);
