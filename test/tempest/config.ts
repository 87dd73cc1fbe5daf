// tempest.conf for a local novaless: Keystone v3 at <base>/identity with tempest's dynamic
// credentials (a project and users of its own per test class, made by the seeded admin through
// Keystone's admin API), the Networking front as Neutron with security groups and port security
// and without routers or floating IPs, no Cinder, no Swift, no guest to log into, and every
// compute feature switched off that novaless does not implement.

import { extensionsDocument } from "../../lib/api/network/views.js";

/** The seeded catalog (lib/catalog/seed.ts): cirros and ubuntu, m1.tiny and m1.small. */
export const IMAGE_REF = "a1b2c3d4-0000-4000-8000-000000000001";
export const IMAGE_REF_ALT = "a1b2c3d4-0000-4000-8000-000000000002";

export interface TempestPaths {
  /** the API's base URL, http://127.0.0.1:port */
  base: string;
  workspace: string;
}

/** GET /networking/v2.0/extensions' aliases (lib/api/network/views.ts). */
const NETWORK_EXTENSIONS = extensionsDocument().extensions.map((e) => e.alias);

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
  // no Cinder, no metadata service or config drive
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
  // os-interface attach and detach (issue 40); test_attach_interfaces' classes skip all the same
  // while [validation] run_validation is off (they SSH into the guest first)
  "interface_attach",
];

/*
 * SOFT DELETE: tempest 33 has no switch for it. Its tests of restore and forceDelete (a 409 for a
 * server that is not SOFT_DELETED, 404s for unknown servers) run against the runtime's default
 * [DEFAULT] reclaim_instance_interval of 0, as DevStack's Nova runs: tempest's waiters wait for a
 * deleted server's 404 (wait_for_server_termination), which a SOFT_DELETED one would not give
 * before its reclaim.
 */

/*
 * IDENTITY: what tempest 33's dynamic credentials ask of Keystone (tempest/lib/common/
 * dynamic_creds.py, cred_client.py; tempest/common/credentials_factory.py; the identity v3
 * clients under tempest/lib/services/identity/v3), and so what our /identity must answer.
 *
 * Once per test class (each class has its own provider; stestr's group_regex keeps a class in
 * one worker), before its tests:
 *   POST /v3/auth/tokens  [auth] admin_* by name: user admin, domain {name: Default}, project
 *        admin, domain {name: Default} (get_configured_admin_credentials(fill_in=True)); again
 *        for the identity clients' own auth provider (project scope: [auth] admin_system unset,
 *        [identity] admin_domain_scope False).
 *   GET  /v3/domains?name=Default → 200 {"domains": [{"id": "default", "name": "Default", …}]}
 *        (V3CredsClient takes [0]: an empty list is an IndexError, not a skip).
 * Per credential type the class lists ('primary', 'alt', 'admin'; created on first use):
 *   POST /v3/projects {"project": {"name": "tempest-<Class>-<n>", "description": "…-desc",
 *        "domain_id": "default"}} → 201 {"project": {"id", "name", …}}
 *   POST /v3/users {"user": {"name": "<project name>-project[-admin]", "password": <random>,
 *        "domain_id": "default"}} → 201 {"user": {"id", "name", …}}
 *   GET  /v3/roles → 200 {"roles": [...]} (looked up by name, case-insensitively; once more per
 *        assignment). For primary and alt with no roles, 'member' is checked first and
 *        POST /v3/roles {"role": {"name": "member"}} sent only if it is missing (409 tolerated).
 *   PUT  /v3/projects/{project}/users/{user}/roles/{role id} → 204: 'member' for primary and
 *        alt; for admin, [identity] admin_role ('admin') twice (as identity_admin_role, then as
 *        admin_role): the second PUT must be 204 again (Keystone's is idempotent; 409 tolerated).
 *   POST /v3/auth/tokens by id: {"password": {"user": {"id", "password", "domain": {"id":
 *        "default"}}}, "scope": {"project": {"id", "domain": {"id": "default"}}}} (set_auth()
 *        at once; names go unused once ids are known).
 * After the class: DELETE /v3/users/{id} → 204, then DELETE /v3/projects/{id} → 204, per
 * credential (404 tolerated). The project may still own deleted servers' records by then.
 * The admin so made is admin on its own new project only: Keystone's default policies (admin
 * on any project, role:admin) and Nova's (role:admin) must take it as the cloud's admin.
 *
 * In the tests themselves (the compute suite): admin.test_quotas creates a project
 * (POST /v3/projects as that tempest admin, domain_id from GET /v3/domains?name=Default) and a
 * user with "project_id" and "email" attributes Keystone keeps as extras (POST /v3/users), then
 * deletes them; Nova then answers for a project and user only Keystone knows.
 *
 * Credential types in tempest.api.compute: 'primary' everywhere (base.BaseV2ComputeTest);
 * 'admin' in every admin class (BaseV2ComputeAdminTest, test_keypairs_v210,
 * test_device_tagging); 'alt' in admin.test_flavors_access_negative and
 * servers.test_servers_negative.ServersNegativeTestMultiTenantJSON; force_tenant_isolation
 * (dynamic credentials whatever the configuration) in admin.test_quotas,
 * admin.test_quotas_negative and admin.test_auto_allocate_network. No compute class asks for
 * 'project_reader', 'project_member', 'system_admin' or any other list-style ([scope_role, …])
 * credentials, and none reads [enforce_scope] nova: it stays False (Nova's legacy admin, a
 * project-scoped role:admin; no system-scope tokens are requested anywhere).
 *
 * Options that matter: [auth] use_dynamic_credentials, create_isolated_networks (a network,
 * subnet and router would otherwise be made per project: there are no routers), admin_username/password/
 * project_name/domain_name, default_credentials_domain_name (the domain looked up above),
 * tempest_roles (extra roles for every user: none), admin_system (unset: project-scoped
 * admin); [identity] admin_role, admin_domain_scope (False), uri_v3, v3_endpoint_type and
 * region (the identity clients take the token catalog's identity endpoint, <base>/identity,
 * with /v3 appended). [identity-feature-enabled] gates only the identity API tests, not run.
 */
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
# tempest makes a project and its users per test class (see IDENTITY above), so classes running
# side by side never share a project, its quotas or its servers
use_dynamic_credentials = True
# tempest would make a network, subnet and router per project: there are no routers. Servers
# boot on the seeded shared network ([compute] fixed_network_name).
create_isolated_networks = False
default_credentials_domain_name = Default
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
# the shared flat network the runtime seeds (run.ts: seedNetwork): tempest looks it up by name as
# each class's primary user and boots every server with networks=[{uuid}] on it
fixed_network_name = public
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
# (as [compute] build_interval: a snapshot is active within a second or two)
build_interval = 0
# as [compute]: a wait that misses its state (build_interval 0 polls all along) is over in a
# minute, not tempest's default 300 s, whose logged polls outgrew stestr's packet limit
build_timeout = 60

[image-feature-enabled]
api_v1 = False
api_v2 = True

[network]
region = RegionOne
endpoint_type = public
# no external network: tests that would allocate floating IPs from it skip
public_network_id =
# tempest.api.network's subnets are carved from this (tempest's default, spelt out)
project_network_cidr = 10.100.0.0/16
project_network_mask_bits = 28

[network-feature-enabled]
# subnets of either version (no ipv6_ra_mode/ipv6_address_mode: ipv6_subnet_attributes stays off)
ipv6 = True
# what GET /networking/v2.0/extensions lists (lib/api/network/views.ts: security-group and
# port-security among them): tempest's requires_ext skips the tests of the others (trunk,
# router, ...)
api_extensions = ${NETWORK_EXTENSIONS.join(",")}
floating_ips = False
port_security = True

[service_available]
nova = True
glance = True
neutron = True
cinder = False
swift = False
horizon = False
heat = False

[validation]
run_validation = False
`;
}
