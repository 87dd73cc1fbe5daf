// Nova's timestamp formats and links.
import { createHash } from "node:crypto";

/** `2026-01-01T00:00:00Z`: servers' created/updated, faults, images. */
export function isoSeconds(iso: string): string;
export function isoSeconds(iso: string | null): string | null;
export function isoSeconds(iso: string | null): string | null {
  if (iso === null) return null;
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  return new Date(t).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** `2026-01-01T00:00:00.000000`: launched_at, instance actions and their events. */
export function isoMicro(iso: string): string;
export function isoMicro(iso: string | null): string | null;
export function isoMicro(iso: string | null): string | null {
  if (iso === null) return null;
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  return new Date(t).toISOString().replace(/\.(\d{3})Z$/, ".$1000");
}

export interface Link {
  rel: string;
  href: string;
  type?: string;
}

/** Nova's self and bookmark links of a resource: `/v2.1/<collection>/<id>` and `/<collection>/<id>`. */
export function resourceLinks(baseUrl: string, collection: string, id: string): Link[] {
  const enc = encodeURIComponent(id);
  return [
    { rel: "self", href: `${baseUrl}/v2.1/${collection}/${enc}` },
    { rel: "bookmark", href: `${baseUrl}/${collection}/${enc}` },
  ];
}

/** Nova's hostId: sha224(project_id + host), "" when there is no host. */
export function hostId(projectId: string, host: string | null | undefined): string {
  if (!host) return "";
  return createHash("sha224").update(`${projectId}${host}`, "utf8").digest("hex");
}
