// Diagnostics as pure functions: a QEMU domain's `virsh domstats` read into Nova's shape, and the
// API's two views of the same figures (2.48's standard shape, libvirt's older free-form keys), and
// the usage audit's period and timestamps as Nova computes them.
import { describe, expect, it } from "vitest";
import { diagnosticsView, legacyDiagnosticsView } from "../../../lib/api/routes/server-diagnostics.js";
import { lastCompletedAuditPeriod, parseBeforeTimestamp } from "../../../lib/api/routes/usage-audit-log.js";
import { domainDiagnostics } from "../../../lib/compute/drivers/libvirt-diagnostics.js";

/** What `virsh domstats` prints for a running QEMU domain with one disk and one NIC. */
const QEMU_DOMSTATS = `Domain: 'instance-1'
  state.state=1
  state.reason=1
  cpu.time=35103000000
  balloon.current=2097152
  balloon.maximum=2097152
  balloon.rss=412000
  vcpu.current=2
  vcpu.maximum=2
  vcpu.0.state=1
  vcpu.0.time=12000000000
  vcpu.1.state=1
  vcpu.1.time=9000000000
  net.count=1
  net.0.name=tap0
  net.0.rx.bytes=2070139
  net.0.rx.pkts=26701
  net.0.rx.errs=0
  net.0.rx.drop=2
  net.0.tx.bytes=140208
  net.0.tx.pkts=662
  net.0.tx.errs=0
  net.0.tx.drop=0
  block.count=1
  block.0.name=vda
  block.0.rd.reqs=112
  block.0.rd.bytes=262144
  block.0.wr.reqs=488
  block.0.wr.bytes=5778432
`;

const DOMIFLIST = ` Interface   Type     Source   Model    MAC
-----------------------------------------------------------
 tap0        bridge   br0      virtio   fa:16:3e:00:00:01
`;

describe("libvirt diagnostics", () => {
  it("reads domstats' groups: vCPU times, balloon in MiB, block and net figures with the NIC's MAC", async () => {
    const asked: string[] = [];
    const run = async (c: string) => {
      asked.push(c);
      if (c.startsWith("domstats")) return QEMU_DOMSTATS;
      if (c.startsWith("dominfo")) return "Max memory:     2097152 KiB\nUsed memory:    2097152 KiB";
      if (c.startsWith("domiflist")) return DOMIFLIST;
      throw new Error(`unexpected ${c}`);
    };
    const d = await domainDiagnostics(run, "instance-1", { virtType: "kvm", configDrive: true });
    expect(d).toMatchObject({
      state: "running",
      driver: "libvirt",
      hypervisor: "kvm",
      config_drive: true,
      memory_details: { maximum: 2048, used: 2048 },
      cpu_details: [
        { id: 0, time: 12000000000, utilisation: null },
        { id: 1, time: 9000000000, utilisation: null },
      ],
      disk_details: [
        {
          device: "vda",
          read_bytes: 262144,
          read_requests: 112,
          write_bytes: 5778432,
          write_requests: 488,
          errors_count: null,
        },
      ],
    });
    expect(d.nic_details).toEqual([
      expect.objectContaining({
        mac_address: "fa:16:3e:00:00:01",
        rx_octets: 2070139,
        rx_drop: 2,
        tx_packets: 662,
      }),
    ]);
    // every group came from domstats: no per-device calls
    expect(asked.some((c) => c.startsWith("vcpuinfo") || c.startsWith("domblkstat"))).toBe(false);

    const v = diagnosticsView(d, 42);
    expect(v).toMatchObject({ num_cpus: 2, num_disks: 1, num_nics: 1, uptime: 42 });
    expect((v.disk_details as object[])[0]).not.toHaveProperty("device");
    expect(legacyDiagnosticsView(d)).toMatchObject({
      cpu0_time: 12000000000,
      cpu1_time: 9000000000,
      vda_read: 262144,
      vda_read_req: 112,
      nic0_rx: 2070139,
      memory: 2097152,
    });
  });
});

describe("usage audit periods (Nova's last_completed_audit_period, month)", () => {
  const at = (s: string) => parseBeforeTimestamp(s)!;
  it("is the month that ended last before the timestamp", () => {
    const p = lastCompletedAuditPeriod(at("2026-03-15 10:00:00"));
    expect([p.begin.toISOString(), p.end.toISOString()]).toEqual([
      "2026-02-01T00:00:00.000Z",
      "2026-03-01T00:00:00.000Z",
    ]);
    const first = lastCompletedAuditPeriod(at("2026-01-01 00:00:00"));
    expect(first.begin.toISOString()).toBe("2025-11-01T00:00:00.000Z");
    expect(first.end.toISOString()).toBe("2025-12-01T00:00:00.000Z");
  });
  it("parses Nova's two formats and refuses dates that do not exist", () => {
    expect(at("2026-03-15 10:00:00.250000").toISOString()).toBe("2026-03-15T10:00:00.250Z");
    for (const bad of ["invalid_time", "2026-02-30 00:00:00", "2026-13-01 00:00:00", "2026-01-01T00:00:00"])
      expect(parseBeforeTimestamp(bad)).toBeUndefined();
  });
});
