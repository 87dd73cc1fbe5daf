// Nova's flavor views, and the flavor as embedded in a server (microversion 2.47+ style).
import type { Flavor } from "../../catalog/types.js";
import type { FlavorSpec } from "../../scheduler/types.js";
import { viewFields } from "../microversion.js";
import { resourceLinks } from "./format.js";

/** What a flavor view reads besides the flavor. */
export interface FlavorViewContext {
  baseUrl: string;
  /** 2.61+: extra_specs in the view (Nova: when the extra-specs index policy allows) */
  extraSpecs: boolean;
}

const descriptionRow = { min: "2.55", fields: (f: Flavor) => ({ description: f.description }) };

/** GET /flavors: id, name, links; the description from 2.55. */
export const flavorSummaryView = viewFields<Flavor, FlavorViewContext>([
  { fields: (f, c) => ({ id: f.id, name: f.name, links: resourceLinks(c.baseUrl, "flavors", f.id) }) },
  descriptionRow,
]);

/** Nova's flavor (views/flavors.py show): 2.55 description, 2.61 extra_specs, 2.75 swap 0. */
export const flavorView = viewFields<Flavor, FlavorViewContext>([
  {
    fields: (f, c) => ({
      id: f.id,
      name: f.name,
      ram: f.memory_mb,
      disk: f.root_gb,
      // Nova shows no swap as "" until 2.75 (a quirk clients rely on)
      swap: f.swap === 0 ? "" : f.swap,
      "OS-FLV-EXT-DATA:ephemeral": f.ephemeral_gb,
      "OS-FLV-DISABLED:disabled": f.disabled,
      vcpus: f.vcpus,
      "os-flavor-access:is_public": f.is_public,
      rxtx_factor: f.rxtx_factor,
      links: resourceLinks(c.baseUrl, "flavors", f.id),
    }),
  },
  descriptionRow,
  { min: "2.61", fields: (f, c) => (c.extraSpecs ? { extra_specs: { ...f.extra_specs } } : {}) },
  { min: "2.75", fields: (f) => ({ swap: f.swap }) },
]);

/** os-flavor-access: one entry per project the flavor is shared with. */
export function flavorAccessView(f: Flavor): { flavor_access: { flavor_id: string; tenant_id: string }[] } {
  return { flavor_access: (f.projects ?? []).map((p) => ({ flavor_id: f.id, tenant_id: p })) };
}

/** The server's copy of its flavor, as Nova shows it since 2.47. */
export function embeddedFlavorView(f: FlavorSpec): unknown {
  return {
    vcpus: f.vcpus,
    ram: f.memory_mb,
    disk: f.root_gb,
    ephemeral: f.ephemeral_gb,
    swap: f.swap,
    original_name: f.name,
    extra_specs: { ...f.extra_specs },
  };
}
