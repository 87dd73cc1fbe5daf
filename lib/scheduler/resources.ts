// What one instance asks Placement for, as Nova's resources_from_flavor computes it.
import type { FlavorSpec, ResourceAmounts } from "./types.js";

/** Flavor extra spec that overrides or adds a resource amount: `resources:VCPU=0`, `resources:CUSTOM_X=1`. */
const RESOURCE_OVERRIDE = /^resources:([A-Z0-9_]+)$/;

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
