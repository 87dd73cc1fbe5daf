// tempest.conf and accounts.yaml for a local novaless: Keystone v3 at <base>/identity, the two
// seeded users as pre-provisioned accounts (our Identity creates no projects, so tempest's
// dynamic credentials cannot work), no Neutron, no Cinder, no Swift, no guest to log into, and
// every compute feature switched off that novaless does not implement.

/** The seeded catalog (lib/catalog/seed.ts): cirros and ubuntu, m1.tiny and m1.small. */
export const IMAGE_REF = "a1b2c3d4-0000-4000-8000-000000000001";
export const IMAGE_REF_ALT = "a1b2c3d4-0000-4000-8000-000000000002";

export interface TempestPaths {
  /** the API's base URL, http://127.0.0.1:port */
  base: string;
  workspace: string;
  accountsFile: string;
}

/** Compute features tempest can test and novaless does not have (all [compute-feature-enabled]). */
const FEATURES_OFF = [
  // no graphical or serial console proxy, no guest agent for passwords (console output is there)
  "vnc_console",
  "spice_console",
  "serial_console",
  "change_password",
  // server actions novaless does not implement (resize, cold and live migration it does: issue 19)
  "rescue",
  "stable_rescue",
  "can_migrate_between_any_hosts",
  // no Neutron, no Cinder, no metadata service or config drive
  "interface_attach",
  "attach_encrypted_volume",
  "swap_volume",
  "volume_multiattach",
  "metadata_service",
  "config_drive",
  "personality",
  // OS-DCF:diskConfig is not modelled: the fake driver has no disk to partition
  "disk_config",
  "hostname_fqdn_sanitization",
];

/**
 * Compute features novaless has (issue 19); tempest leaves resize off unless told. Live
 * migration is a block migration: hosts share no storage (Nova's "auto" picks it).
 */
const FEATURES_ON = [
  "resize",
  "cold_migration",
  "live_migration",
  "block_migration_for_live_migration",
  // pause and suspend (issue 21)
  "pause",
  "suspend",
  // createImage and createBackup, booting from the image (issue 21)
  "snapshot",
  // shelve, shelveOffload and unshelve through the conductor, then moved as any server (issue 21)
  "shelve",
  "shelve_migrate",
];

export function tempestConf(p: TempestPaths): string {
  const features = [
    ...FEATURES_ON.map((f) => `${f} = True`),
    ...FEATURES_OFF.map((f) => `${f} = False`),
  ].join("\n");
  return `[DEFAULT]
log_dir = ${p.workspace}/logs
log_file = tempest.log

[oslo_concurrency]
lock_path = ${p.workspace}/lock

[auth]
use_dynamic_credentials = False
test_accounts_file = ${p.accountsFile}
default_credentials_domain_name = Default
create_isolated_networks = False
admin_username = admin
admin_password = admin-secret
admin_project_name = admin
admin_domain_name = Default

[identity]
uri_v3 = ${p.base}/identity/v3
auth_version = v3
region = RegionOne
v3_endpoint_type = public
admin_role = admin
default_domain_id = default

[identity-feature-enabled]
api_v2 = False
api_v3 = True

[compute]
image_ref = ${IMAGE_REF}
image_ref_alt = ${IMAGE_REF_ALT}
flavor_ref = 1
flavor_ref_alt = 2
region = RegionOne
endpoint_type = publicURL
min_microversion = 2.1
max_microversion = latest
# tempest's waiters sleep build_interval seconds between polls, an integer: 1 s is most of a wait
# here, where a build or an action takes a fraction of a second. 0 polls again at once.
build_interval = 0
build_timeout = 60
fixed_network_name =
# the runtime runs 4 simulated hosts (run.ts): cold migration's multinode tests can run
min_compute_nodes = 2
compute_volume_common_az =

[compute-feature-enabled]
${features}
# tempest gates its writable server-metadata tests on this (deprecated) switch; novaless serves
# them. Its other tests (os-agents, resetNetwork) are outside the include list or excluded.
xenapi_apis = True
scheduler_enabled_filters = AvailabilityZoneFilter,ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter,ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter

[image]
region = RegionOne
endpoint_type = public
# (as [compute] build_interval: a snapshot is active within a second)
build_interval = 0

[image-feature-enabled]
api_v1 = False
api_v2 = True

[network-feature-enabled]
ipv6 = False

[service_available]
nova = True
glance = True
neutron = False
cinder = False
swift = False
horizon = False
heat = False

[validation]
run_validation = False
`;
}

/** The seeded users (lib/api/identity): admin for admin tests, demo as the primary member. */
export function accountsYaml(): string {
  return `- username: admin
  project_name: admin
  password: admin-secret
  user_domain_name: Default
  project_domain_name: Default
  types:
    - admin
- username: demo
  project_name: demo
  password: demo-secret
  user_domain_name: Default
  project_domain_name: Default
  roles:
    - member
`;
}
