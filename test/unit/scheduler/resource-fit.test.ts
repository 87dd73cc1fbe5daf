import { describe, expect, it } from "vitest";
import { resourceFit } from "../../../lib/scheduler/resource-fit.js";
import type { HostState } from "../../../lib/scheduler/types.js";
import { host, inventory } from "./fixtures.js";

describe("inventory capacity with ratios and reserved", () => {
  it("16 vCPU at 16.0 is 256 VCPU; 65536 MB − 512 reserved at 1.5 is 97536 MB", () => {
    expect(inventory(16, { ratio: 16 }).capacity).toBe(256);
    expect(inventory(65536, { reserved: 512, ratio: 1.5 }).capacity).toBe(97536);
  });
});

describe("resourceFit", () => {
  const h = (resources: HostState["resources"]) => host("h1", { resources });

  it.each([
    [
      "overcommitted VCPU fits up to the ratio",
      { VCPU: inventory(16, { ratio: 16, used: 250 }) },
      { VCPU: 6 },
      null,
    ],
    [
      "one VCPU past the ratio",
      { VCPU: inventory(16, { ratio: 16, used: 251 }) },
      { VCPU: 6 },
      "insufficient VCPU: needs 6, free 5",
    ],
    [
      "reserved memory is not usable",
      { MEMORY_MB: inventory(65536, { reserved: 512, ratio: 1.5, used: 93440 }) },
      { MEMORY_MB: 8192 },
      "insufficient MEMORY_MB: needs 8192, free 4096",
    ],
    [
      "exactly the free memory fits",
      { MEMORY_MB: inventory(65536, { reserved: 512, ratio: 1.5, used: 89344 }) },
      { MEMORY_MB: 8192 },
      null,
    ],
    ["missing class", { VCPU: inventory(4) }, { VCPU: 1, CUSTOM_GPU: 1 }, "no CUSTOM_GPU inventory"],
    [
      "over max_unit even with free capacity",
      { VCPU: inventory(64, { max_unit: 8 }) },
      { VCPU: 16 },
      "VCPU request 16 exceeds max_unit 8",
    ],
    [
      "under min_unit",
      { MEMORY_MB: inventory(8192, { min_unit: 512 }) },
      { MEMORY_MB: 256 },
      "MEMORY_MB request 256 is below min_unit 512",
    ],
    [
      "not a multiple of step_size",
      { DISK_GB: inventory(1000, { step_size: 10 }) },
      { DISK_GB: 25 },
      "DISK_GB request 25 is not a multiple of step_size 10",
    ],
    ["multiple of step_size fits", { DISK_GB: inventory(1000, { step_size: 10 }) }, { DISK_GB: 30 }, null],
  ])("%s", (_name, resources, requested, reason) => {
    const r = resourceFit(h(resources), requested);
    if (reason === null) expect(r).toEqual({ fit: true });
    else expect(r).toMatchObject({ fit: false, reason });
  });

  it("keeps the failure as data for summaries", () => {
    const r = resourceFit(h({ MEMORY_MB: inventory(8192, { used: 4096 }) }), { MEMORY_MB: 8192 });
    expect(r).toEqual({
      fit: false,
      reason: "insufficient MEMORY_MB: needs 8192, free 4096",
      failure: { resource_class: "MEMORY_MB", violation: "capacity", requested: 8192, free: 4096 },
    });
  });

  it("reports the first failing class in request order", () => {
    const r = resourceFit(h({ VCPU: inventory(1, { used: 1 }), MEMORY_MB: inventory(1024) }), {
      VCPU: 1,
      MEMORY_MB: 2048,
    });
    expect(r.fit === false && r.failure.resource_class).toBe("VCPU");
  });

  it("free never goes below 0 on an over-used host (ratio lowered after placement)", () => {
    const r = resourceFit(h({ VCPU: inventory(4, { used: 10 }) }), { VCPU: 1 });
    expect(r.fit === false && r.failure.free).toBe(0);
  });
});
