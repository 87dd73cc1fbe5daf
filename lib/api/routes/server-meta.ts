// /servers/{id}/metadata and /servers/{id}/tags (2.26): Nova's server_metadata.py and
// server_tags.py. A change is a read-modify-write of the whole map or list, written only if the
// record is still as read (updated_at), retried a few times against concurrent writers.
import type { ServerFields } from "../../instances/server-writes.js";
import type { InstanceRecord } from "../../instances/types.js";
import { ApiError, conflict, notFound } from "../errors.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { parseJsonBody } from "../validation/common.js";
import {
  checkMetadataLimit,
  checkTag,
  MAX_TAGS,
  parseMetadataBody,
  parseMetaItem,
  parseTagsBody,
} from "../validation/servers.js";
import { checkInstance, type NovaAction } from "./instance-checks.js";
import { findServer } from "./servers.js";

const ATTEMPTS = 5;

/**
 * Apply `change` to the server as read, write it if nobody wrote meanwhile; else read again.
 * `change` may throw (a 4xx) after seeing the current record.
 */
async function modify(
  call: RouteCall,
  change: (rec: InstanceRecord) => ServerFields,
): Promise<InstanceRecord> {
  const { ctx, deps, params } = call;
  const id = params.id!;
  ctx.logFields.instance_uuid = id;
  for (let i = 0; i < ATTEMPTS; i++) {
    const rec = await findServer(deps, id, ctx.auth);
    const fields = change(rec);
    const updated = await deps.updateServer(id, { fields, ifUpdatedAt: rec.updated_at, now: deps.now() });
    if (updated) return updated;
  }
  // Nova answers a lost race on an instance's state with 409
  throw conflict(`Instance ${id} is being changed by other requests. Please try again.`);
}

/** The server's project's metadata_items quota (-1: unlimited), as Nova checks it. */
async function metadataLimit(call: RouteCall): Promise<number> {
  const rec = await findServer(call.deps, call.params.id!, call.ctx.auth);
  return (await call.deps.quotas.getProjectLimits(rec.project_id)).metadata_items;
}

/** The compute API method whose guard (instance-checks.ts) each metadata change runs. */
const METADATA_GUARD = {
  "update metadata": "update_instance_metadata",
  "delete metadata": "delete_instance_metadata",
} as const satisfies Record<string, NovaAction>;

/** The guard needs the caller (the lock): the change functions close over it. */
function metadataChange(
  call: RouteCall,
  action: keyof typeof METADATA_GUARD,
  next: (rec: InstanceRecord) => Record<string, string>,
  /** the metadata_items quota; -1 unlimited */
  maxItems: number,
) {
  return (rec: InstanceRecord): ServerFields => {
    checkInstance(rec, call.ctx.auth, METADATA_GUARD[action], action);
    const metadata = next(rec);
    if (maxItems >= 0) checkMetadataLimit(metadata, maxItems);
    return { metadata };
  };
}

async function listMetadata({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  const rec = await findServer(deps, params.id!, ctx.auth);
  return { status: 200, body: { metadata: { ...rec.metadata } } };
}

/** PUT replaces the whole map; POST merges into it. Both answer the body's metadata (Nova). */
async function setMetadata(call: RouteCall, replace: boolean): Promise<ApiResult> {
  const metadata = parseMetadataBody(parseJsonBody(call.body));
  const max = await metadataLimit(call);
  const updated = await modify(
    call,
    metadataChange(
      call,
      "update metadata",
      (rec) => (replace ? { ...metadata } : { ...rec.metadata, ...metadata }),
      max,
    ),
  );
  return { status: 200, body: { metadata: replace ? updated.metadata : metadata } };
}

const metaNotFound = () => notFound("Metadata item was not found");

async function showMetaItem({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  const rec = await findServer(deps, params.id!, ctx.auth);
  const key = params.key!;
  if (!Object.hasOwn(rec.metadata, key)) throw metaNotFound();
  return { status: 200, body: { meta: { [key]: rec.metadata[key] } } };
}

async function setMetaItem(call: RouteCall): Promise<ApiResult> {
  const key = call.params.key!;
  const value = parseMetaItem(parseJsonBody(call.body), key);
  const max = await metadataLimit(call);
  await modify(
    call,
    metadataChange(call, "update metadata", (rec) => ({ ...rec.metadata, [key]: value }), max),
  );
  return { status: 200, body: { meta: { [key]: value } } };
}

/** Removing a key never goes over the quota: no limit (-1) for it. */
async function deleteMetaItem(call: RouteCall): Promise<ApiResult> {
  const key = call.params.key!;
  await modify(
    call,
    metadataChange(
      call,
      "delete metadata",
      (rec) => {
        if (!Object.hasOwn(rec.metadata, key)) throw metaNotFound();
        const { [key]: _, ...rest } = rec.metadata;
        return rest;
      },
      -1,
    ),
  );
  return { status: 204 };
}

async function listTags({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  const rec = await findServer(deps, params.id!, ctx.auth);
  return { status: 200, body: { tags: [...(rec.tags ?? [])] } };
}

async function replaceTags(call: RouteCall): Promise<ApiResult> {
  const tags = parseTagsBody(parseJsonBody(call.body));
  const updated = await modify(call, (rec) => {
    checkInstance(rec, call.ctx.auth, "server_tags", "update tags");
    return { tags };
  });
  return { status: 200, body: { tags: updated.tags ?? [] } };
}

async function deleteTags(call: RouteCall): Promise<ApiResult> {
  await modify(call, (rec) => {
    checkInstance(rec, call.ctx.auth, "server_tags", "delete tags");
    return { tags: [] };
  });
  return { status: 204 };
}

const tagNotFound = (id: string, tag: string) => notFound(`Instance ${id} has no tag '${tag}'`);

async function showTag({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  const rec = await findServer(deps, params.id!, ctx.auth);
  if (!(rec.tags ?? []).includes(params.tag!)) throw tagNotFound(rec.id, params.tag!);
  return { status: 204 };
}

/** 201 with a Location when added, 204 when it was there already (Nova). */
async function addTag(call: RouteCall): Promise<ApiResult> {
  const tag = checkTag(call.params.tag!);
  let added = false;
  await modify(call, (rec) => {
    checkInstance(rec, call.ctx.auth, "server_tags", "update tag");
    const tags = rec.tags ?? [];
    added = !tags.includes(tag);
    if (!added) return {};
    if (tags.length >= MAX_TAGS) {
      throw new ApiError("badRequest", `The number of tags exceeded the per-server limit ${MAX_TAGS}`);
    }
    return { tags: [...tags, tag] };
  });
  if (!added) return { status: 204 };
  const id = call.params.id!;
  return {
    status: 201,
    headers: {
      location: `${call.ctx.baseUrl}/v2.1/servers/${id}/tags/${encodeURIComponent(tag)}`,
    },
  };
}

async function deleteTag(call: RouteCall): Promise<ApiResult> {
  const tag = call.params.tag!;
  await modify(call, (rec) => {
    checkInstance(rec, call.ctx.auth, "server_tags", "delete tag");
    const tags = rec.tags ?? [];
    if (!tags.includes(tag)) throw tagNotFound(rec.id, tag);
    return { tags: tags.filter((t) => t !== tag) };
  });
  return { status: 204 };
}

export const serverMetaRoutes: Route[] = [
  { method: "GET", pattern: "/servers/:id/metadata", handler: listMetadata },
  { method: "PUT", pattern: "/servers/:id/metadata", handler: (c) => setMetadata(c, true) },
  { method: "POST", pattern: "/servers/:id/metadata", handler: (c) => setMetadata(c, false) },
  { method: "GET", pattern: "/servers/:id/metadata/:key", handler: showMetaItem },
  { method: "PUT", pattern: "/servers/:id/metadata/:key", handler: setMetaItem },
  { method: "DELETE", pattern: "/servers/:id/metadata/:key", handler: deleteMetaItem },
  { method: "GET", pattern: "/servers/:id/tags", handler: listTags, min: "2.26" },
  { method: "PUT", pattern: "/servers/:id/tags", handler: replaceTags, min: "2.26" },
  { method: "DELETE", pattern: "/servers/:id/tags", handler: deleteTags, min: "2.26" },
  { method: "GET", pattern: "/servers/:id/tags/:tag", handler: showTag, min: "2.26" },
  { method: "PUT", pattern: "/servers/:id/tags/:tag", handler: addTag, min: "2.26" },
  { method: "DELETE", pattern: "/servers/:id/tags/:tag", handler: deleteTag, min: "2.26" },
];
