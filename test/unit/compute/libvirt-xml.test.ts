// The domain XML and config drive contents, pure: values escaped, optional disks only when the
// flavor asks, Nova's metadata and SMBIOS.
import { describe, expect, it } from "vitest";
import { configDriveFiles } from "../../../lib/compute/drivers/config-drive.js";
import type { GuestSpec } from "../../../lib/compute/drivers/driver.js";
import { domainName, domainXml } from "../../../lib/compute/drivers/libvirt-xml.js";

const g: GuestSpec = {
  instance_uuid: "0b3c2c8e-3d5f-4a8e-9f4e-2a7a1b9c0d11",
  name: `web <"prod"> & co`,
  hostname: "web",
  project_id: "proj",
  user_id: "user",
  flavor: {
    id: "1",
    name: "m1.tiny",
    vcpus: 1,
    memory_mb: 512,
    root_gb: 1,
    ephemeral_gb: 0,
    swap: 0,
    extra_specs: {},
  },
  image: { id: "img-1", name: "cirros", properties: {} },
  metadata: { a: "b" },
  key_name: "k",
  key_data: "ssh-ed25519 AAAA",
  user_data: Buffer.from("hello").toString("base64"),
  config_drive: false,
};

describe("domainXml", () => {
  it("writes the flavor, Nova's metadata and SMBIOS, escaping every value", () => {
    const xml = domainXml(g, { dir: "/var/lib/novaless/instances/x/", rootFormat: "qcow2" }, "kvm");
    expect(xml).toContain("<domain type='kvm'>");
    expect(xml).toContain(`<name>${domainName(g.instance_uuid)}</name>`);
    expect(xml).toContain("<memory unit='KiB'>524288</memory>");
    expect(xml).toContain("<vcpu>1</vcpu>");
    expect(xml).toContain("<nova:name>web &lt;&quot;prod&quot;&gt; &amp; co</nova:name>");
    expect(xml).toContain(`<entry name='serial'>${g.instance_uuid}</entry>`);
    expect(xml).toContain("<source file='/var/lib/novaless/instances/x/disk'/>");
    expect(xml).toContain("type='qcow2'");
    expect(xml).not.toContain("disk.eph0");
    expect(xml).not.toContain("disk.swap");
    expect(xml).not.toContain("disk.config");
    expect(xml).toContain("<log file='/var/lib/novaless/instances/x/console.log' append='on'/>");
  });

  it("adds ephemeral, swap and the config drive when asked", () => {
    const xml = domainXml(
      { ...g, config_drive: true, flavor: { ...g.flavor, ephemeral_gb: 2, swap: 256 } },
      { dir: "/d", rootFormat: "raw" },
      "qemu",
    );
    expect(xml).toMatch(/disk\.eph0'\/>\s*<target dev='vdb'/);
    expect(xml).toMatch(/disk\.swap'\/>\s*<target dev='vdc'/);
    expect(xml).toMatch(/device='cdrom'[\s\S]*disk\.config[\s\S]*<readonly\/>/);
  });
});

describe("configDriveFiles", () => {
  it("holds Nova's meta_data.json, user_data decoded, network and vendor data", () => {
    const files = configDriveFiles(g, "az1");
    const meta = JSON.parse(String(files["openstack/latest/meta_data.json"]));
    expect(meta).toMatchObject({
      uuid: g.instance_uuid,
      name: g.name,
      hostname: "web",
      availability_zone: "az1",
      project_id: "proj",
      meta: { a: "b" },
      public_keys: { k: "ssh-ed25519 AAAA" },
    });
    expect(String(files["openstack/latest/user_data"])).toBe("hello");
    expect(JSON.parse(String(files["openstack/latest/network_data.json"]))).toEqual({
      links: [],
      networks: [],
      services: [],
    });
    expect(configDriveFiles({ ...g, user_data: null })["openstack/latest/user_data"]).toBeUndefined();
  });
});
