// Nova's flavor views, and the flavor as embedded in a server (microversion 2.47+ style).
import type { Flavor } from "../../catalog/types.js";
import type { FlavorSpec } from "../../scheduler/types.js";
import { resourceLinks } from "./format.js";

export function flavorSummaryView(f: Flavor, baseUrl: string): unknown {
  return {
    id: f.id,
    name: f.name,
    links: resourceLinks(baseUrl, "flavors", f.id),
    description: f.description,
  };
}

export function flavorView(f: Flavor, baseUrl: string): Record<string, unknown> {
  return {
    id: f.id,
    name: f.name,
    ram: f.memory_mb,
    vcpus: f.vcpus,
    disk: f.root_gb,
    "OS-FLV-EXT-DATA:ephemeral": f.ephemeral_gb,
    // Nova shows no swap as "" (a quirk clients rely on)
    swap: f.swap === 0 ? "" : f.swap,
    rxtx_factor: f.rxtx_factor,
    "os-flavor-access:is_public": f.is_public,
    "OS-FLV-DISABLED:disabled": f.disabled,
    description: f.description,
    extra_specs: { ...f.extra_specs },
    links: resourceLinks(baseUrl, "flavors", f.id),
  };
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
