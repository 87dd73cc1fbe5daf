// The scheduler Lambda's host states: Placement's records joined with the catalog's aggregates
// and the instances building (lib/conductor/host-states.ts).
import { describe, expect, it } from "vitest";
import type { Aggregate } from "../../../lib/catalog/types.js";
import { buildFleet } from "../../../lib/conductor/host-states.js";
import type { InstanceRecord } from "../../../lib/instances/types.js";
import type { HostRecord } from "../../../lib/placement/types.js";
import { config } from "./fixtures.js";

const NOW = Date.parse("2026-01-01T00:00:00Z");

function record(host: string, extra: Partial<HostRecord> = {}): HostRecord {
  const inv = (total: number, reserved: number, ratio: number) => ({
    total,
    reserved,
    allocation_ratio: ratio,
    min_unit: 1,
    max_unit: total,
    step_size: 1,
  });
  return {
    host,
    node: host,
    availability_zone: "",
    aggregates: [],
    traits: ["HW_CPU_X86_AVX2"],
    inventories: { VCPU: inv(16, 0, 16), MEMORY_MB: inv(65536, 512, 1.5), DISK_GB: inv(1000, 0, 1) },
    usage: { VCPU: 4, MEMORY_MB: 8192, DISK_GB: 40 },
    free: {},
    allocations: {
      "i-1": { resources: { VCPU: 2 }, attempt: 1, claimed_at: "" },
      "i-2": { resources: { VCPU: 2 }, attempt: 1, claimed_at: "" },
    },
    generation: 3,
    hypervisor_type: "fake",
    hypervisor_version: 1000,
    host_ip: "10.0.0.1",
    supported_instances: [["x86_64", "fake", "hvm"]],
    stats: { failed_builds: 2 },
    service: {
      disabled: false,
      disabled_reason: null,
      forced_down: false,
      last_heartbeat: new Date(NOW - 10_000).toISOString(),
    },
    queue_url: "",
    ...extra,
  } as HostRecord;
}

const aggregate = (
  id: string,
  hosts: string[],
  metadata: Record<string, string>,
  availability_zone: string | null = null,
) => ({ id, name: id, availability_zone, hosts, metadata, created_at: "", updated_at: "" }) as Aggregate;

const building = (id: string, host: string | null) =>
  ({ id, host, deleted: false, vm_state: "building" }) as InstanceRecord;

describe("buildFleet", () => {
  it("maps a host record to Nova's HostState", () => {
    const fleet = buildFleet({ hosts: [record("h1")], aggregates: [], building: [] }, config(), NOW);
    const h = fleet.hosts[0]!;
    expect(h).toMatchObject({
      host: "h1",
      nodename: "h1",
      availability_zone: "nova",
      free_ram_mb: 65536 - 512 - 8192,
      free_disk_mb: (1000 - 40) * 1024,
      total_usable_ram_mb: 65536,
      disk_mb_used: 40 * 1024,
      vcpus_total: 16,
      vcpus_used: 4,
      cpu_allocation_ratio: 16,
      ram_allocation_ratio: 1.5,
      instances: ["i-1", "i-2"],
      num_instances: 2,
      failed_builds: 2,
      traits: ["HW_CPU_X86_AVX2"],
      stats: { num_instances: "2", io_workload: "0", failed_builds: "2" },
      service: { disabled: false, forced_down: false, up: true },
    });
    expect(h.resources.MEMORY_MB).toEqual({
      capacity: 97536,
      used: 8192,
      min_unit: 1,
      max_unit: 65536,
      step_size: 1,
    });
  });

  it("joins aggregates from Aggregate.hosts; an AZ aggregate's zone wins over the registered one", () => {
    const fleet = buildFleet(
      {
        hosts: [
          record("h1", { availability_zone: "az-reg" }),
          record("h2", { availability_zone: "az-reg" }),
          record("h3"),
        ],
        aggregates: [
          aggregate("agg-az1", ["h1"], { availability_zone: "az1" }),
          aggregate("agg-ssd", ["h1", "h2"], { ssd: "true" }),
          aggregate("agg-az9", ["h3"], {}, "az9"),
        ],
        building: [],
      },
      config(),
      NOW,
    );
    expect(fleet.hosts.map((h) => [h.host, h.availability_zone, h.aggregates.map((a) => a.id)])).toEqual([
      ["h1", "az1", ["agg-az1", "agg-ssd"]],
      ["h2", "az-reg", ["agg-ssd", "zone:az-reg"]],
      ["h3", "az9", ["agg-az9"]],
    ]);
    expect(fleet.aggregates.map((a) => a.id)).toEqual(["agg-az1", "agg-ssd", "agg-az9", "zone:az-reg"]);
  });

  it("counts a host's building instances as its I/O operations, not those being scheduled now", () => {
    const fleet = buildFleet(
      {
        hosts: [record("h1"), record("h2")],
        aggregates: [],
        building: [building("b1", "h1"), building("b2", "h1"), building("b3", null), building("now", "h2")],
        scheduling: ["now"],
      },
      config(),
      NOW,
    );
    expect(fleet.hosts.map((h) => h.num_io_ops)).toEqual([2, 0]);
  });

  it("a disabled service's host carries COMPUTE_STATUS_DISABLED; a silent one is down", () => {
    const fleet = buildFleet(
      {
        hosts: [
          record("h1", {
            service: {
              disabled: true,
              disabled_reason: "x",
              forced_down: false,
              last_heartbeat: new Date(NOW).toISOString(),
            },
          }),
          record("h2", {
            service: {
              disabled: false,
              disabled_reason: null,
              forced_down: false,
              last_heartbeat: new Date(NOW - 120_000).toISOString(),
              down_since: new Date(NOW - 30_000).toISOString(),
            },
          }),
        ],
        aggregates: [],
        building: [],
      },
      config(),
      NOW,
    );
    expect(fleet.hosts[0]!.traits).toContain("COMPUTE_STATUS_DISABLED");
    expect(fleet.hosts[1]!.service.up).toBe(false);
  });
});
