// Quota sets, quota class sets and /limits as Nova renders them at each microversion.
import type { Limits, QuotaResource } from "../../quotas/quotas.js";
import { type ApiVersion, OMIT, viewFields } from "../microversion.js";

/** `{id?, <resource>: limit...}` over the resources of this version, in Nova's order. */
export function quotaSetView(
  resources: QuotaResource[],
  limits: Limits,
  id?: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = id === undefined ? {} : { id };
  for (const r of resources) out[r] = limits[r];
  return out;
}

/** `/detail`: each resource's `{in_use, limit, reserved}` (nothing is ever held in reserve). */
export function quotaSetDetailView(
  resources: QuotaResource[],
  limits: Limits,
  inUse: Partial<Record<QuotaResource, number>>,
  id: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = { id };
  for (const r of resources) out[r] = { in_use: inUse[r] ?? 0, limit: limits[r], reserved: 0 };
  return out;
}

export interface LimitsInput {
  limits: Limits;
  inUse: { instances: number; cores: number; ram: number; server_groups: number };
}

/** /limits' absolute values (nova/api/openstack/compute/views/limits.py, limits.py's filters). */
export const absoluteLimits = viewFields<LimitsInput, undefined>([
  {
    fields: ({ limits, inUse }) => ({
      maxServerMeta: limits.metadata_items,
      maxPersonality: limits.injected_files,
      maxPersonalitySize: limits.injected_file_content_bytes,
      maxImageMeta: limits.metadata_items,
      maxTotalKeypairs: limits.key_pairs,
      maxSecurityGroups: limits.security_groups,
      maxSecurityGroupRules: limits.security_group_rules,
      maxTotalFloatingIps: limits.floating_ips,
      maxTotalInstances: limits.instances,
      maxTotalCores: limits.cores,
      maxTotalRAMSize: limits.ram,
      maxServerGroups: limits.server_groups,
      maxServerGroupMembers: limits.server_group_members,
      totalInstancesUsed: inUse.instances,
      totalCoresUsed: inUse.cores,
      totalRAMUsed: inUse.ram,
      totalServerGroupsUsed: inUse.server_groups,
      totalFloatingIpsUsed: 0,
      totalSecurityGroupsUsed: 0,
    }),
  },
  {
    min: "2.36",
    fields: () => ({
      maxSecurityGroups: OMIT,
      maxSecurityGroupRules: OMIT,
      maxTotalFloatingIps: OMIT,
      totalFloatingIpsUsed: OMIT,
      totalSecurityGroupsUsed: OMIT,
    }),
  },
  { min: "2.39", fields: () => ({ maxImageMeta: OMIT }) },
  { min: "2.57", fields: () => ({ maxPersonality: OMIT, maxPersonalitySize: OMIT }) },
]);

export function limitsView(input: LimitsInput, v: ApiVersion): Record<string, unknown> {
  return { limits: { rate: [], absolute: absoluteLimits(input, undefined, v) } };
}
