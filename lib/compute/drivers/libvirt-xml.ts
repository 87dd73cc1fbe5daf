// A guest's libvirt domain, as Nova's LibvirtConfigGuest writes it: name, uuid, memory and
// vCPUs from the flavor, Nova's metadata, SMBIOS with the instance's uuid, the root disk (and the
// ephemeral and swap disks the flavor asks for), ACPI and the APIC (Nova's x86 features: ACPI is
// how a clean shutdown reaches the guest), the config drive as a read-only cdrom, one
// <interface> per port (vif.ts binds them to bridges), and a serial console logged to console.log,
// appended to across the guest's QEMU processes (a hard reboot, a resume), as virtlogd keeps it.
// Pure: paths in, XML out.
import type { GuestSpec } from "./driver.js";
import { tapName } from "./network-data.js";
import type { BoundPort } from "./vif.js";

export interface DomainPaths {
  /** the instance's directory: disk, disk.eph0, disk.swap, disk.config, console.log */
  dir: string;
  /** the root disk's format (qcow2 overlay, or raw when copied) */
  rootFormat: "qcow2" | "raw";
}

/** Nova names domains instance-%08x of an integer id; there is none here, so the uuid. */
export function domainName(instanceUuid: string): string {
  return `instance-${instanceUuid}`;
}

function escapeXml(s: string): string {
  return s.replace(
    /[<>&'"]/g,
    (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", "'": "&apos;", '"': "&quot;" })[c]!,
  );
}

function disk(file: string, dev: string, format: string): string {
  return (
    `    <disk type='file' device='disk'>\n      <driver name='qemu' type='${format}' cache='none'/>\n` +
    `      <source file='${escapeXml(file)}'/>\n      <target dev='${dev}' bus='virtio'/>\n    </disk>`
  );
}

/**
 * A port's <interface>, as Nova's LibvirtConfigGuestInterface writes an Open vSwitch port: a tap
 * named after the port on the bridge of its physical network, its VLAN tagged by libvirt; on a
 * Linux bridge, the same tap without a virtualport (bindPorts refuses a vlan port there). The
 * domain's, and the device an interface attach or detach hands `virsh attach-device`.
 */
export function interfaceXml({ port, bridge, kind }: BoundPort): string {
  const x = escapeXml;
  const vlan =
    port.network_type === "vlan" && port.segmentation_id !== null
      ? `      <vlan>\n        <tag id='${port.segmentation_id}'/>\n      </vlan>\n`
      : "";
  return (
    `    <interface type='bridge'>\n      <mac address='${x(port.mac_address)}'/>\n` +
    `      <source bridge='${x(bridge)}'/>\n${vlan}` +
    // interfaceid: the OVS port's external_ids:iface-id, by which Neutron's agents know a port
    (kind === "openvswitch"
      ? `      <virtualport type='openvswitch'>\n        <parameters interfaceid='${x(port.port_id)}'/>\n      </virtualport>\n`
      : "") +
    `      <target dev='${x(tapName(port.port_id))}'/>\n      <model type='virtio'/>\n` +
    `      <mtu size='${port.mtu}'/>\n    </interface>`
  );
}

/** The MAC addresses of a domain XML's <interface>s (as `virsh dumpxml` prints it), lower case. */
export function interfaceMacs(xml: string): Set<string> {
  const out = new Set<string>();
  for (const m of xml.matchAll(/<interface\b[\s\S]*?<\/interface>/g)) {
    const mac = /<mac address=['"]([0-9a-fA-F:]+)['"]/.exec(m[0])?.[1];
    if (mac) out.add(mac.toLowerCase());
  }
  return out;
}

/** `ports`: the guest's ports with their bridges on this host (vif.ts bindPorts), in order. */
export function domainXml(
  guest: GuestSpec,
  paths: DomainPaths,
  virtType: string,
  ports: readonly BoundPort[] = [],
): string {
  const f = guest.flavor;
  const x = escapeXml;
  const dir = paths.dir.replace(/\/$/, "");
  const disks = [disk(`${dir}/disk`, "vda", paths.rootFormat)];
  if (f.ephemeral_gb > 0) disks.push(disk(`${dir}/disk.eph0`, "vdb", "raw"));
  if (f.swap > 0) disks.push(disk(`${dir}/disk.swap`, f.ephemeral_gb > 0 ? "vdc" : "vdb", "raw"));
  // Nova's config drive on an i440fx machine (libvirt's default): a cdrom on the IDE bus, which any
  // guest kernel reads (a SATA one needs AHCI's driver)
  if (guest.config_drive) {
    disks.push(
      `    <disk type='file' device='cdrom'>\n      <driver name='qemu' type='raw' cache='none'/>\n` +
        `      <source file='${x(`${dir}/disk.config`)}'/>\n      <target dev='hdd' bus='ide'/>\n      <readonly/>\n    </disk>`,
    );
  }
  return `<domain type='${x(virtType)}'>
  <name>${domainName(guest.instance_uuid)}</name>
  <uuid>${x(guest.instance_uuid)}</uuid>
  <metadata>
    <nova:instance xmlns:nova='http://openstack.org/xmlns/libvirt/nova/1.1'>
      <nova:package version='novaless'/>
      <nova:name>${x(guest.name)}</nova:name>
      <nova:flavor name='${x(f.name)}'>
        <nova:memory>${f.memory_mb}</nova:memory>
        <nova:disk>${f.root_gb}</nova:disk>
        <nova:swap>${f.swap}</nova:swap>
        <nova:ephemeral>${f.ephemeral_gb}</nova:ephemeral>
        <nova:vcpus>${f.vcpus}</nova:vcpus>
      </nova:flavor>
      <nova:owner>
        <nova:user uuid='${x(guest.user_id)}'/>
        <nova:project uuid='${x(guest.project_id)}'/>
      </nova:owner>
      <nova:root type='image' uuid='${x(guest.image.id)}'/>
    </nova:instance>
  </metadata>
  <memory unit='KiB'>${f.memory_mb * 1024}</memory>
  <vcpu>${f.vcpus}</vcpu>
  <sysinfo type='smbios'>
    <system>
      <entry name='manufacturer'>OpenStack Foundation</entry>
      <entry name='product'>OpenStack Nova</entry>
      <entry name='serial'>${x(guest.instance_uuid)}</entry>
      <entry name='uuid'>${x(guest.instance_uuid)}</entry>
      <entry name='family'>Virtual Machine</entry>
    </system>
  </sysinfo>
  <os>
    <type arch='x86_64'>hvm</type>
    <boot dev='hd'/>
    <smbios mode='sysinfo'/>
  </os>
  <features>
    <acpi/>
    <apic/>
  </features>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>restart</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
${[...disks, ...ports.map(interfaceXml)].join("\n")}
    <serial type='pty'>
      <log file='${x(`${dir}/console.log`)}' append='on'/>
      <target port='0'/>
    </serial>
    <console type='pty'>
      <target type='serial' port='0'/>
    </console>
  </devices>
</domain>
`;
}
