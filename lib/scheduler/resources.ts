// What one instance asks Placement for, as Nova's ResourceRequest builds it from the flavor and
// the image: amounts per resource class, and required and forbidden traits.
import type { FlavorSpec, ImageSpec, ResourceAmounts } from "./types.js";

/** Flavor extra spec that overrides or adds a resource amount: `resources:VCPU=0`, `resources:CUSTOM_X=1`. */
const RESOURCE_OVERRIDE = /^resources:([A-Z0-9_]+)$/;
/** Flavor extra spec `trait:NAME=required|forbidden`, image property `trait:NAME=required`. */
const TRAIT = /^trait:([A-Za-z0-9_]+)$/;

/**
 * VCPU = vcpus, MEMORY_MB = memory_mb, DISK_GB = root_gb + ephemeral_gb + ceil(swap MB ÷ 1024);
 * then unnumbered `resources:<CLASS>` extra specs override (0 removes the class), as Nova's
 * ResourceRequest does. Zero amounts are omitted: Placement is never asked for 0 of anything.
 * Boot-from-volume (root_gb not counted) is not modelled.
 */
export function resourcesFromFlavor(flavor: FlavorSpec): ResourceAmounts {
  const amounts: ResourceAmounts = {
    VCPU: flavor.vcpus,
    MEMORY_MB: flavor.memory_mb,
    DISK_GB: flavor.root_gb + flavor.ephemeral_gb + Math.ceil(flavor.swap / 1024),
  };
  for (const [key, value] of Object.entries(flavor.extra_specs)) {
    const rc = RESOURCE_OVERRIDE.exec(key)?.[1];
    if (!rc) continue;
    // Nova logs and ignores an amount that is not a non-negative integer.
    if (!/^\d+$/.test(value.trim())) continue;
    amounts[rc] = Number(value);
  }
  return Object.fromEntries(Object.entries(amounts).filter(([, n]) => n > 0));
}

export interface RequestTraits {
  required: string[];
  forbidden: string[];
}

/**
 * Unnumbered traits: the flavor's `trait:X=required|forbidden` and the image's `trait:X=required`
 * (Nova ignores any other value, and images cannot forbid). Sorted, each named once.
 */
export function traitsFromRequest(flavor: FlavorSpec, image: ImageSpec): RequestTraits {
  const required = new Set<string>();
  const forbidden = new Set<string>();
  for (const [key, value] of Object.entries(flavor.extra_specs)) {
    const trait = TRAIT.exec(key)?.[1];
    if (!trait) continue;
    if (value === "required") required.add(trait);
    else if (value === "forbidden") forbidden.add(trait);
  }
  for (const [key, value] of Object.entries(image.properties)) {
    const trait = TRAIT.exec(key)?.[1];
    if (trait && value === "required") required.add(trait);
  }
  return { required: [...required].sort(), forbidden: [...forbidden].sort() };
}
