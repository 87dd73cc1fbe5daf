// The fleet snapshot's encoding (lib/placement/fleet-snapshot.ts): every host's scheduler fields
// back as they went in, what a fleet repeats kept once, and a snapshot it cannot trust refused.
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import {
  decodeSnapshot,
  encodeSnapshot,
  type FleetSnapshot,
  SCHEDULER_HOST_FIELDS,
  type SchedulerHost,
  schedulerFieldsOf,
} from "../../../lib/placement/fleet-snapshot.js";
import type { HostRecord } from "../../../lib/placement/types.js";
import { inv } from "../api/fakes.js";

function host(i: number, over: Partial<HostRecord> = {}): HostRecord {
  const name = `compute-${String(i).padStart(5, "0")}`;
  return {
    host: name,
    node: name,
    availability_zone: i % 2 ? "az1" : "az2",
    aggregates: ["agg-1"],
    traits: ["HW_CPU_X86_AVX2", "COMPUTE_NET_VIF_MODEL_VIRTIO"],
    inventories: { VCPU: inv(64, 0, 16), MEMORY_MB: inv(262144, 512, 1.5), DISK_GB: inv(2000) },
    claim_limit: { VCPU: 64 },
    usage: { VCPU: i % 7, MEMORY_MB: (i % 5) * 2048, DISK_GB: (i % 3) * 20 },
    free: { VCPU: 1024 - (i % 7) },
    generation: 1 + (i % 11),
    num_instances: i % 4,
    num_io_ops: i % 2,
    hypervisor_type: "QEMU",
    hypervisor_version: 8002000,
    host_ip: `10.0.${i >> 8}.${i & 255}`,
    supported_instances: [["x86_64", "qemu", "hvm"]],
    stats: { failed_builds: i % 9 === 0 ? 1 : 0 },
    service: { disabled: false, disabled_reason: null, forced_down: false },
    queue_url: `https://sqs.eu-west-1.amazonaws.com/000000000000/novalessstack-compute-${name}`,
    hypervisor_facts: { uri: "qemu:///system" },
    started_at: "2026-12-07T08:00:00.000Z",
    changed_at: new Date(Date.parse("2026-12-07T09:00:00.000Z") + i).toISOString(),
    ...over,
  };
}

const snapshotOf = (hosts: SchedulerHost[]): FleetSnapshot => ({
  position: "2026-12-07T09:00:05.000Z",
  written_at: "2026-12-07T09:00:07.123Z",
  hosts,
});

/** What went through the encoding, as plain data. */
const roundTrip = (s: FleetSnapshot) =>
  decodeSnapshot(JSON.parse(JSON.stringify(encodeSnapshot(s))) as ReturnType<typeof encodeSnapshot>);

describe("the fleet snapshot's encoding", () => {
  it("gives back every host's scheduler fields, exactly, and its position; nothing the scheduler does not read", () => {
    const hosts = [
      ...Array.from({ length: 50 }, (_, i) => host(i)),
      // the odd ones: another node name, a disabled service down since, a custom class, no zone,
      // a stamp that is not ISO-8601 with milliseconds
      host(50, { node: "node-50.example" }),
      host(51, {
        service: {
          disabled: true,
          disabled_reason: "maintenance",
          forced_down: true,
          down_since: "2026-12-07T08:59:00.000Z",
        },
      }),
      host(52, { inventories: { VCPU: inv(8), CUSTOM_FPGA: { ...inv(4), step_size: 2, min_unit: 2 } } }),
      host(53, { availability_zone: "", traits: [], usage: {} }),
      host(54, { changed_at: "2026-12-07T09:00:00Z" }),
    ];
    const back = roundTrip(snapshotOf(hosts));
    expect(back.position).toBe("2026-12-07T09:00:05.000Z");
    expect(back.written_at).toBe("2026-12-07T09:00:07.123Z");
    expect(back.hosts).toEqual(hosts.map(schedulerFieldsOf));
    for (const h of back.hosts) expect(Object.keys(h).sort()).toEqual([...SCHEDULER_HOST_FIELDS].sort());
  });

  it("keeps what the fleet repeats once: a uniform fleet's table of values does not grow with it", () => {
    const small = encodeSnapshot(snapshotOf(Array.from({ length: 10 }, (_, i) => host(i))));
    const large = encodeSnapshot(snapshotOf(Array.from({ length: 2_000 }, (_, i) => host(i))));
    expect(large.values.length).toBe(small.values.length);
    // hosts named after their node carry no node; stamps in milliseconds are numbers
    expect(large.node.every((n) => n === null)).toBe(true);
    expect(large.changed_at.every((t) => typeof t === "number")).toBe(true);
    // decoded, the hosts that shared a value share one object again (the fleet's classes)
    const back = decodeSnapshot(large);
    expect(back.hosts[0]!.traits).toBe(back.hosts[1]!.traits);
  });

  it("is compact: 10,000 hosts gzipped take under a tenth of their items' bytes", () => {
    const hosts = Array.from({ length: 10_000 }, (_, i) => host(i));
    const gz = gzipSync(JSON.stringify(encodeSnapshot(snapshotOf(hosts))));
    const items = Buffer.byteLength(JSON.stringify(hosts));
    expect(gz.length).toBeLessThan(items / 10);
  });

  it("refuses a snapshot of another version, or whose columns disagree", () => {
    const e = encodeSnapshot(snapshotOf([host(1), host(2)]));
    expect(() => decodeSnapshot({ ...e, v: 2 as unknown as 1 })).toThrow(/version 2/);
    expect(() => decodeSnapshot({ ...e, usage: [e.usage[0]!] })).toThrow(/columns/);
    expect(() => decodeSnapshot({ ...e, shared: { ...e.shared, service: [0] } })).toThrow(/columns/);
  });
});
