// Nova's request filters (nova/scheduler/request_filter.py): a plain list of pure functions that
// turn the request into Placement's query — aggregates a host must (member_of) or must not be in,
// traits it must or must not have — before any host is looked at. In Nova's order.
import type { SchedulerConfig } from "../config.js";
import { requestedZone } from "../messages/availability-zone.js";
import { resourcesFromFlavor, traitsFromRequest } from "./resources.js";
import type { HostAggregate, RequestSpec, ResourceAmounts } from "./types.js";

/** Placement's GET /allocation_candidates, as the prefilters leave it. */
export interface PlacementRequest {
  resources: ResourceAmounts;
  required_traits: string[];
  forbidden_traits: string[];
  /** each entry: the host must be in one of these aggregates (member_of=in:…); entries all apply */
  member_of: { aggregates: string[]; summary: string }[];
  /** hosts in any of these aggregates are out */
  forbidden_aggregates: { aggregates: string[]; summary: string }[];
  /** a prefilter refused the whole request (Nova's RequestFilterFailed) */
  failure?: string;
}

type Prefilter = (
  spec: RequestSpec,
  aggregates: readonly HostAggregate[],
  config: SchedulerConfig,
  req: PlacementRequest,
) => void;

/** Nova marks disabled compute nodes with this trait and forbids it on every request. */
export const COMPUTE_STATUS_DISABLED = "COMPUTE_STATUS_DISABLED";

const TENANT_METADATA_KEY = "filter_tenant_id";

/** require_tenant_aggregate: a project named in an aggregate's filter_tenant_id* keys gets only those. */
const requireTenantAggregate: Prefilter = (spec, aggregates, config, req) => {
  if (!config.limit_tenants_to_placement_aggregate) return;
  const mine = aggregates.filter((a) =>
    Object.entries(a.metadata).some(([k, v]) => k.startsWith(TENANT_METADATA_KEY) && v === spec.project_id),
  );
  if (mine.length > 0) {
    req.member_of.push({
      aggregates: mine.map((a) => a.id),
      summary: `are not in an aggregate of project ${spec.project_id}`,
    });
  } else if (config.placement_aggregate_required_for_tenants) {
    req.failure = "No hosts available for tenant";
  }
};

/**
 * map_az_to_placement_aggregate: a requested AZ restricts placement to the aggregates carrying it.
 * As in Nova, a zone no aggregate carries (the default zone, typically) restricts nothing here.
 * With none requested, the zones of the server's networks (their availability_zone_hints) do the
 * same; hints naming only zones no host is in leave nothing (the API checked a requested zone).
 */
const mapAzToPlacementAggregate: Prefilter = (spec, aggregates, config, req) => {
  if (!config.query_placement_for_availability_zone) return;
  const zone = requestedZone(spec.availability_zone);
  const wanted = zone ? [zone] : (spec.network_availability_zones ?? []);
  if (wanted.length === 0) return;
  const summary = zone
    ? `are not in availability zone ${zone}`
    : `are not in an availability zone of the server's networks (${wanted.join(", ")})`;
  const inZone = aggregates.filter((a) => wanted.includes(a.metadata.availability_zone ?? ""));
  if (inZone.length > 0) {
    req.member_of.push({ aggregates: inZone.map((a) => a.id), summary });
  } else if (!zone && !wanted.includes(config.default_availability_zone)) {
    req.failure = `No host is in an availability zone of the server's networks (${wanted.join(", ")})`;
  }
};

/** require_image_type_support: COMPUTE_IMAGE_TYPE_<disk_format> (the image's disk_format property). */
const requireImageTypeSupport: Prefilter = (spec, _aggregates, config, req) => {
  if (!config.query_placement_for_image_type_support) return;
  const format = spec.image.properties.disk_format;
  if (format) addTrait(req.required_traits, `COMPUTE_IMAGE_TYPE_${format.toUpperCase()}`);
};

/** compute_status_filter: mandatory; disabled computes carry COMPUTE_STATUS_DISABLED. */
const computeStatusFilter: Prefilter = (_spec, _aggregates, _config, req) => {
  addTrait(req.forbidden_traits, COMPUTE_STATUS_DISABLED);
};

/** isolate_aggregates: aggregates requiring a trait (metadata trait:X=required) the request lacks are out. */
const isolateAggregates: Prefilter = (_spec, aggregates, config, req) => {
  if (!config.enable_isolated_aggregate_filtering) return;
  const wanted = new Set(req.required_traits.map((t) => `trait:${t}`));
  const isolated = aggregates.filter((a) =>
    Object.entries(a.metadata).some(([k, v]) => k.startsWith("trait:") && v === "required" && !wanted.has(k)),
  );
  if (isolated.length > 0) {
    req.forbidden_aggregates.push({
      aggregates: isolated.map((a) => a.id),
      summary: "are in an aggregate requiring traits the request lacks",
    });
  }
};

const IMAGE_TRAIT_PREFIXES: Readonly<Record<string, string>> = {
  hw_cdrom_bus: "COMPUTE_STORAGE_BUS",
  hw_disk_bus: "COMPUTE_STORAGE_BUS",
  hw_video_model: "COMPUTE_GRAPHICS_MODEL",
  hw_vif_model: "COMPUTE_NET_VIF_MODEL",
  hw_architecture: "HW_ARCH",
  hw_emulation_architecture: "COMPUTE_ARCH",
};

/** transform_image_metadata: hw_* bus, model and architecture properties become required traits. */
const transformImageMetadata: Prefilter = (spec, _aggregates, config, req) => {
  if (!config.image_metadata_prefilter) return;
  for (const [key, prefix] of Object.entries(IMAGE_TRAIT_PREFIXES)) {
    const value = spec.image.properties[key];
    if (value) addTrait(req.required_traits, `${prefix}_${value.replaceAll("-", "_").toUpperCase()}`);
  }
};

const PREFILTERS: readonly Prefilter[] = [
  requireTenantAggregate,
  mapAzToPlacementAggregate,
  requireImageTypeSupport,
  computeStatusFilter,
  isolateAggregates,
  transformImageMetadata,
];

/** The Placement query for one instance of `spec`, every prefilter applied. */
export function placementRequest(
  spec: RequestSpec,
  aggregates: readonly HostAggregate[],
  config: SchedulerConfig,
): PlacementRequest {
  const traits = traitsFromRequest(spec.flavor, spec.image);
  const req: PlacementRequest = {
    resources: resourcesFromFlavor(spec.flavor),
    required_traits: traits.required,
    forbidden_traits: traits.forbidden,
    member_of: [],
    forbidden_aggregates: [],
  };
  for (const prefilter of PREFILTERS) prefilter(spec, aggregates, config, req);
  return req;
}

function addTrait(list: string[], trait: string): void {
  if (!list.includes(trait)) list.push(trait);
}
