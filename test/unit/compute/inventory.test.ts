import { afterEach, expect, it, vi } from "vitest";
import { inventoriesFor } from "../../../lib/compute/inventory.js";
import { capacity } from "../../../lib/placement/types.js";

afterEach(() => vi.unstubAllEnvs());

it("reports Nova's defaults: initial ratios 16.0 / 1.5 / 1.0 and 512 MB reserved", () => {
  const inv = inventoriesFor({ vcpus: 16, memory_mb: 65536, local_gb: 1000 });
  expect(inv.VCPU).toMatchObject({ total: 16, reserved: 0, allocation_ratio: 16, max_unit: 16 });
  expect(inv.MEMORY_MB).toMatchObject({ total: 65536, reserved: 512, allocation_ratio: 1.5 });
  expect(capacity(inv.VCPU!)).toBe(256);
  expect(capacity(inv.MEMORY_MB!)).toBe(97536);
  expect(capacity(inv.DISK_GB!)).toBe(1000);
});

it("takes [DEFAULT] cpu_allocation_ratio and reserved_host_* from the options", () => {
  vi.stubEnv("NOVALESS_CPU_ALLOCATION_RATIO", "4.0");
  vi.stubEnv("NOVALESS_RESERVED_HOST_MEMORY_MB", "2048");
  vi.stubEnv("NOVALESS_RESERVED_HOST_DISK_MB", "10240");
  const inv = inventoriesFor({ vcpus: 8, memory_mb: 16384, local_gb: 100 });
  expect(inv.VCPU?.allocation_ratio).toBe(4);
  expect(inv.MEMORY_MB?.reserved).toBe(2048);
  expect(inv.DISK_GB?.reserved).toBe(10);
  // A host's own figure wins over the option.
  expect(
    inventoriesFor({ vcpus: 8, memory_mb: 1, local_gb: 1, cpu_allocation_ratio: 2 }).VCPU?.allocation_ratio,
  ).toBe(2);
});
