"""openstacksdk against novaless: one operation per run, its result as JSON on stdout.

usage: sdk_probe.py CLOUD COMPUTE_API_VERSION OPERATION [ARGS...]
Run by test/clients/harness.ts with /usr/bin/python3 (Debian's python3-openstacksdk) and
OS_CLIENT_CONFIG_FILE naming the clouds.yaml it wrote. Errors go to stderr with exit status 1.
"""
import json
import sys

import openstack


def plain(resource):
    """A resource as JSON-able data, without the SDK's client-side location block."""
    data = resource.to_dict(computed=False)
    data.pop("location", None)
    return data


def flavors(conn):
    return [plain(f) for f in conn.compute.flavors(details=True)]


def images(conn):
    return [plain(i) for i in conn.image.images()]


def server_cycle(conn, name, flavor, image):
    """create (waiting for ACTIVE), show, list, metadata, delete (waiting until gone)."""
    attrs = {"name": name, "flavor_id": flavor, "image_id": image}
    if _at_least(conn, "2.37"):
        # From 2.37 Nova requires `networks`; "auto" picks the seeded network `public`
        attrs["networks"] = "auto"
    server = conn.compute.create_server(**attrs)
    server = conn.compute.wait_for_server(server, status="ACTIVE", interval=1, wait=120)
    shown = plain(conn.compute.get_server(server.id))
    listed = [s.id for s in conn.compute.servers()]
    conn.compute.set_server_metadata(server, purpose="sdk")
    metadata = dict(conn.compute.get_server_metadata(server).metadata)
    conn.compute.delete_server(server)
    conn.compute.wait_for_delete(server, interval=1, wait=120)
    return {"shown": shown, "listed": listed, "metadata": metadata}


def create_server_wait(conn, name, flavor, image):
    """The cloud layer's everyday call: create_server(wait=True) fails a server without an IP."""
    server = conn.create_server(name, image=image, flavor=flavor, wait=True, timeout=120)
    result = {
        "status": server.status,
        "addresses": server.addresses,
        "private_v4": server.private_v4,
        "interface_ip": server.interface_ip,
        "ports": [plain(p)["fixed_ips"] for p in conn.network.ports(device_id=server.id)],
    }
    conn.delete_server(server.id, wait=True, timeout=120)
    return result


def soft_delete(conn, name, flavor, image):
    """With reclaim_instance_interval set: delete leaves SOFT_DELETED, delete_server(force=True) is
    Nova's forceDelete (waiting until gone)."""
    server = conn.compute.create_server(name=name, flavor_id=flavor, image_id=image)
    server = conn.compute.wait_for_server(server, status="ACTIVE", interval=1, wait=120)
    conn.compute.delete_server(server)
    soft = conn.compute.wait_for_server(server, status="SOFT_DELETED", interval=1, wait=120)
    listed = [s.id for s in conn.compute.servers()]
    conn.compute.delete_server(server, force=True)
    conn.compute.wait_for_delete(server, interval=1, wait=120)
    return {"soft": plain(soft), "listed": listed}


def auto_ip_paths(conn, name, flavor, image):
    """What the cloud layer's auto_ip and server-facts paths (Ansible's openstack.cloud) read
    about a server: its ports by device_id, the external networks, routers (for an external
    gateway when no network is external), floating IPs, the server's external address."""
    from openstack.cloud import meta

    server = conn.create_server(name, image=image, flavor=flavor, wait=True, timeout=120)
    try:
        result = {
            "routers": [plain(r) for r in conn.list_routers()],
            "routers_filtered": [plain(r) for r in conn.network.routers(name="r", is_admin_state_up=True)],
            "external_ipv4": [n.name for n in conn.get_external_ipv4_networks()],
            "floating_networks": [n.name for n in conn.get_external_ipv4_floating_networks()],
            "needs_floating_ip": conn._needs_floating_ip(server, None),
            "ports": [p.id for p in conn.search_ports(filters={"device_id": server.id})],
            "floating_ips": [plain(f) for f in conn.list_floating_ips()],
            "external_address": meta.get_server_external_ipv4(conn, server),
        }
        try:
            conn._get_floating_network_id()
            result["floating_network"] = "found"
        except openstack.exceptions.SDKException as e:
            result["floating_network"] = f"{type(e).__name__}: {e}"
        try:
            conn.network.get_router("00000000-0000-4000-8000-000000000000")
        except openstack.exceptions.NotFoundException as e:
            result["router_show"] = str(e)
        return result
    finally:
        conn.delete_server(server.id, wait=True, timeout=120)


def _at_least(conn, version):
    """Whether the microversion this run asked for is `version` or later."""
    if VERSION == "latest":
        return True
    wanted = tuple(int(p) for p in version.split("."))
    return tuple(int(p) for p in VERSION.split(".")) >= wanted


def keypairs(conn, name):
    created = conn.compute.create_keypair(name=name)
    listed = [k.name for k in conn.compute.keypairs()]
    shown = plain(conn.compute.get_keypair(name))
    conn.compute.delete_keypair(name)
    return {"created": {"name": created.name, "has_private_key": bool(created.private_key)},
            "listed": listed, "shown": shown}


def limits(conn):
    return plain(conn.compute.get_limits())


def quotas(conn, project):
    return plain(conn.compute.get_quota_set(conn.identity.find_project(project, ignore_missing=False)))


def server_groups(conn, name):
    created = conn.compute.create_server_group(name=name, policies=["anti-affinity"]) \
        if not _at_least(conn, "2.64") else \
        conn.compute.create_server_group(name=name, policy="anti-affinity")
    listed = [g.id for g in conn.compute.server_groups()]
    shown = plain(conn.compute.get_server_group(created.id))
    conn.compute.delete_server_group(created)
    return {"listed": listed, "shown": shown}


def hypervisors(conn):
    return [plain(h) for h in conn.compute.hypervisors(details=True)]


def services(conn):
    return [plain(s) for s in conn.compute.services()]


def availability_zones(conn):
    return [plain(z) for z in conn.compute.availability_zones(details=False)]


def aggregates(conn, name):
    created = conn.compute.create_aggregate(name=name, availability_zone=None)
    listed = [a.name for a in conn.compute.aggregates()]
    conn.compute.delete_aggregate(created)
    return {"listed": listed}


OPERATIONS = {
    "flavors": flavors,
    "images": images,
    "server-cycle": server_cycle,
    "keypairs": keypairs,
    "limits": limits,
    "quotas": quotas,
    "server-groups": server_groups,
    "hypervisors": hypervisors,
    "services": services,
    "availability-zones": availability_zones,
    "aggregates": aggregates,
    "create-server-wait": create_server_wait,
    "soft-delete": soft_delete,
    "auto-ip-paths": auto_ip_paths,
}


VERSION = "2.1"


def main():
    global VERSION
    cloud, VERSION, operation, *args = sys.argv[1:]
    if VERSION == "latest":
        # The SDK's own mode: no default microversion, each resource negotiates the highest one
        # both it and the server support (a configured "latest" is refused by the SDK).
        conn = openstack.connect(cloud=cloud)
    else:
        conn = openstack.connect(cloud=cloud, compute_api_version=VERSION)
    try:
        result = OPERATIONS[operation](conn, *args)
    except openstack.exceptions.SDKException as e:
        sys.stderr.write(f"{operation}: {type(e).__name__}: {e}\n")
        sys.exit(1)
    json.dump(result, sys.stdout, default=str)


if __name__ == "__main__":
    main()
