// Nova's os-aggregates views (2.41+: with uuid). Here the id is a uuid, so `id` and `uuid` agree.
import type { Aggregate } from "../../catalog/types.js";
import { isoMicro } from "./format.js";

export function aggregateView(a: Aggregate): Record<string, unknown> {
  return {
    availability_zone: a.availability_zone,
    created_at: isoMicro(a.created_at),
    deleted: false,
    deleted_at: null,
    hosts: [...a.hosts],
    id: a.id,
    metadata: { ...a.metadata },
    name: a.name,
    updated_at: isoMicro(a.updated_at),
    uuid: a.id,
  };
}

/** Nova's create answer leaves out hosts and metadata ("to maintain the same API result"). */
export function aggregateCreatedView(a: Aggregate): Record<string, unknown> {
  const { hosts: _hosts, metadata: _metadata, ...rest } = aggregateView(a);
  return rest;
}
