// openstacksdk (Debian python3-openstacksdk 0.101, the library Ansible's openstack.cloud and
// many tools are built on) against the whole local runtime: test/clients/sdk_probe.py runs one
// operation per process with the clouds.yaml the harness wrote. "latest" is the SDK's own mode:
// no configured microversion, each resource negotiating the highest both sides support.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type Cloud, type Json, missing, startCloud, unique, VERSIONS } from "./harness.js";
import { atLeast, below } from "./versions.js";

// Python start-up is most of each command: several at once on two cores take their time.
vi.setConfig({ testTimeout: 300_000 });

describe.skipIf(missing("openstacksdk"))("openstacksdk against novaless", () => {
  let cloud: Cloud;
  beforeAll(async () => {
    cloud = await startCloud();
  });
  afterAll(async () => {
    await cloud?.stop();
  });

  it("images through the Image v2 endpoint of the catalog", async () => {
    const images: Json[] = await cloud.sdk("images", [], { cloud: "demo" });
    expect(images.map((i) => i.name)).toEqual(expect.arrayContaining(["cirros", "ubuntu"]));
    expect(images.find((i) => i.name === "cirros")).toMatchObject({
      id: "a1b2c3d4-0000-4000-8000-000000000001",
      status: "active",
    });
  });

  // versions and tests run concurrently (each call a Python process; each test its own resources)
  describe.concurrent.each(VERSIONS)("at compute microversion %s", (version) => {
    const as = (cloudName: "admin" | "demo" = "admin") => ({ cloud: cloudName, version });

    it("flavors", async () => {
      const flavors: Json[] = await cloud.sdk("flavors", [], as("demo"));
      expect(flavors.find((f) => f.name === "m1.tiny")).toMatchObject({
        id: "1",
        ram: 512,
        vcpus: 1,
        disk: 1,
      });
    });

    it("a server's whole life: create and wait ACTIVE, show, list, metadata, delete and wait", async () => {
      const name = unique("sdk-vm");
      const r = await cloud.sdk(
        "server-cycle",
        [name, "1", "a1b2c3d4-0000-4000-8000-000000000001"],
        as("demo"),
      );
      expect(r.shown).toMatchObject({ name, status: "ACTIVE" });
      expect(r.listed).toContain(r.shown.id);
      expect(r.metadata).toEqual({ purpose: "sdk" });
    });

    // The cloud layer always sends networks "auto" when given none (_compute.py), which Nova
    // refuses below 2.37: a cloud pinned to 2.1 cannot use this call against any Nova.
    it.skipIf(version === "2.1")(
      "create_server(wait=True): the server comes up with an address on public",
      async () => {
        const r = await cloud.sdk("create-server-wait", [unique("sdk-ip"), "m1.tiny", "cirros"], as("demo"));
        expect(r.status).toBe("ACTIVE");
        expect(r.private_v4).toMatch(/^10\.20\./);
        expect(r.addresses.public).toEqual([expect.objectContaining({ addr: r.private_v4, version: 4 })]);
        expect(r.ports).toEqual([[expect.objectContaining({ ip_address: r.private_v4 })]]);
      },
    );

    // what the cloud layer's auto_ip path and Ansible's server facts read: no routers (an empty
    // list, not a 404), no external network, so no floating IP is needed or found
    it.skipIf(version !== "latest")(
      "the auto_ip paths: routers an empty list, ports by device_id, no external network or floating IP",
      async () => {
        const r = await cloud.sdk("auto-ip-paths", [unique("sdk-auto"), "m1.tiny", "cirros"], as("demo"));
        expect(r.routers).toEqual([]);
        expect(r.routers_filtered).toEqual([]);
        expect(r.external_ipv4).toEqual([]);
        expect(r.floating_networks).toEqual([]);
        // routers were listed (a 404 would have raised its own error): none has a gateway
        expect(r.floating_network).toBe("ResourceNotFound: unable to find an external network");
        expect(r.needs_floating_ip).toBe(false);
        expect(r.ports).toHaveLength(1);
        expect(r.floating_ips).toEqual([]);
        // the network named `public` is the SDK's external address of last resort
        expect(r.external_address).toMatch(/^10\.20\./);
        expect(r.router_show).toMatch(/Router 00000000-0000-4000-8000-000000000000 could not be found/);
      },
    );

    it("keypairs: create (generated), list, show, delete", async () => {
      const name = unique("sdk-key");
      const r = await cloud.sdk("keypairs", [name], as("demo"));
      expect(r.created).toEqual({ name, has_private_key: true });
      expect(r.listed).toContain(name);
      expect(r.shown.fingerprint).toMatch(/^([0-9a-f]{2}:){15}[0-9a-f]{2}$/);
    });

    it("limits and the project's quota set", async () => {
      const limits = await cloud.sdk("limits", [], as("demo"));
      expect(limits.absolute).toMatchObject({ instances: 10, total_cores: 20, total_ram: 51200 });
      if (version !== "latest" && atLeast(version, "2.75")) {
        // SDK 0.101's get_quota_set always sends ?usage=False, and from 2.75 Nova refuses query
        // parameters it does not know: it fails against Nova as well. ("latest" is 2.56 for it.)
        await expect(cloud.sdk("quotas", ["demo"], as())).rejects.toThrow(/400.*usage/);
      } else {
        const quotas = await cloud.sdk("quotas", ["demo"], as());
        expect(quotas).toMatchObject({ instances: 10, cores: 20, ram: 51200 });
      }
    });

    it("server groups: create, list, show, delete", async () => {
      const r = await cloud.sdk("server-groups", [unique("sdk-group")], as("demo"));
      expect(r.listed).toContain(r.shown.id);
      // 2.64 turned `policies: [..]` into `policy`; "latest" is 2.64 for the SDK's server group
      if (below(version, "2.64")) expect(r.shown.policies).toEqual(["anti-affinity"]);
      else expect(r.shown.policy).toBe("anti-affinity");
    });

    it("hypervisors, services, availability zones and aggregates as admin", async () => {
      const hypervisors: Json[] = await cloud.sdk("hypervisors", [], as());
      expect(hypervisors.map((h) => h.name).sort()).toEqual(["host-1", "host-2", "host-3", "host-4"]);
      if (below(version, "2.88")) expect(hypervisors[0].vcpus).toEqual(expect.any(Number));

      const services: Json[] = await cloud.sdk("services", [], as());
      expect(
        services
          .filter((s) => s.binary === "nova-compute")
          .map((s) => s.host)
          .sort(),
      ).toEqual(["host-1", "host-2", "host-3", "host-4"]);

      const zones: Json[] = await cloud.sdk("availability-zones", [], as("demo"));
      expect(zones.map((z) => z.name)).toEqual(expect.arrayContaining(["az1", "az2"]));

      const name = unique("sdk-agg");
      const aggregates = await cloud.sdk("aggregates", [name], as());
      expect(aggregates.listed).toContain(name);
    });
  });
});
