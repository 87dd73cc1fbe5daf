// Nova's [quota] options (nova/conf/quota.py), and Neutron's [quotas] for what the Networking
// front counts (neutron/conf/quota.py).
import type { ConfigOption } from "./option.js";

/** Nova's [quota] defaults (nova/conf/quota.py); lib/quotas/quotas.ts reasons about them. */
export const NOVA_QUOTA_DEFAULTS = {
  instances: 10,
  cores: 20,
  ram: 51200,
  floating_ips: 10,
  fixed_ips: -1,
  metadata_items: 128,
  injected_files: 5,
  injected_file_content_bytes: 10240,
  injected_file_path_bytes: 255,
  key_pairs: 100,
  security_groups: 10,
  security_group_rules: 20,
  server_groups: 10,
  server_group_members: 10,
} as const;

/** The server groups' settings from before quota sets, still honoured. */
const QUOTA_ALIASES: Partial<Record<keyof typeof NOVA_QUOTA_DEFAULTS, string>> = {
  server_groups: "NOVALESS_MAX_SERVER_GROUPS",
  server_group_members: "NOVALESS_MAX_SERVER_GROUP_MEMBERS",
};

export const QUOTA_OPTIONS: readonly ConfigOption[] = Object.entries(NOVA_QUOTA_DEFAULTS).map(
  ([resource, value]) => {
    const alias = QUOTA_ALIASES[resource as keyof typeof NOVA_QUOTA_DEFAULTS];
    return {
      key: `quota_${resource}`,
      group: "quota",
      name: resource,
      nova: true,
      env: `NOVALESS_QUOTA_${resource.toUpperCase()}`,
      ...(alias ? { aliases: [alias] } : {}),
      kind: "int" as const,
      default: value,
      min: -1,
      lenient: true,
      help: `Default limit of ${resource.replaceAll("_", " ")} per project (-1: unlimited), under the default quota class; an invalid value is ignored.`,
      topic: "quota" as const,
    };
  },
);

/**
 * Neutron's [quotas] quota_security_group and quota_security_group_rule (neutron/conf/quota.py:
 * 10 and 100): the security groups and rules a project may have, the default group and its rules
 * counted (lib/network/store/security-groups.ts). Neutron's other quotas are not enforced here.
 */
export const NEUTRON_QUOTA_OPTIONS: readonly ConfigOption[] = [
  ["security_group", 10, "security groups"],
  ["security_group_rule", 100, "security group rules"],
].map(([resource, value, what]) => ({
  key: `neutron_quota_${resource}`,
  group: "quotas",
  name: `quota_${resource}`,
  nova: true,
  env: `NOVALESS_NEUTRON_QUOTA_${String(resource).toUpperCase()}`,
  kind: "int" as const,
  default: value as number,
  min: -1,
  lenient: true,
  help: `Number of ${what} allowed per project in the Networking front (Neutron's option; -1: unlimited); an invalid value is ignored.`,
  topic: "quota" as const,
}));
