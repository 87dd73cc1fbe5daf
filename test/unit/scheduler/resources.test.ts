// What an instance asks Placement for (Nova's ResourceRequest), and Placement's resource rule.
import { describe, expect, it } from "vitest";
import { placementChecks } from "../../../lib/scheduler/placement.js";
import { describeFitFailure } from "../../../lib/scheduler/resource-fit.js";
import { resourcesFromFlavor, traitsFromRequest } from "../../../lib/scheduler/resources.js";
import type { HostState, ResourceAmounts } from "../../../lib/scheduler/types.js";
import { flavor, fleet, host, inventory } from "./fixtures.js";

/** Placement's resource check, as the scheduler runs it, for the first of these hosts. */
function resourceFit(first: HostState, requested: [string, number][], others: HostState[] = []) {
  const resources: ResourceAmounts = Object.fromEntries(requested);
  const f = fleet([first, ...others]);
  const req = {
    resources,
    required_traits: [],
    forbidden_traits: [],
    member_of: [],
    forbidden_aggregates: [],
  };
  const [check] = placementChecks(req, f);
  return check!.check(f.hosts[0]!, 0)?.fit;
}

describe("resourcesFromFlavor", () => {
  it.each([
    ["plain flavor", {}, { VCPU: 1, MEMORY_MB: 2048, DISK_GB: 20 }],
    ["ephemeral adds to disk", { ephemeral_gb: 10 }, { VCPU: 1, MEMORY_MB: 2048, DISK_GB: 30 }],
    ["swap MB rounds up to whole GB", { swap: 1025 }, { VCPU: 1, MEMORY_MB: 2048, DISK_GB: 22 }],
    ["swap of exactly 1 GB", { swap: 1024 }, { VCPU: 1, MEMORY_MB: 2048, DISK_GB: 21 }],
    ["zero disk is omitted", { root_gb: 0 }, { VCPU: 1, MEMORY_MB: 2048 }],
    [
      "resources:VCPU=0 removes VCPU",
      { extra_specs: { "resources:VCPU": "0" } },
      { MEMORY_MB: 2048, DISK_GB: 20 },
    ],
    [
      "custom class added, standard overridden",
      { extra_specs: { "resources:CUSTOM_GPU": "2", "resources:MEMORY_MB": "4096" } },
      { VCPU: 1, MEMORY_MB: 4096, DISK_GB: 20, CUSTOM_GPU: 2 },
    ],
    [
      "invalid amount is ignored",
      { extra_specs: { "resources:VCPU": "-1" } },
      { VCPU: 1, MEMORY_MB: 2048, DISK_GB: 20 },
    ],
    [
      "granular groups are not merged",
      { extra_specs: { "resources1:VCPU": "4" } },
      { VCPU: 1, MEMORY_MB: 2048, DISK_GB: 20 },
    ],
  ])("%s", (_name, overrides, expected) => {
    expect(resourcesFromFlavor(flavor(overrides))).toEqual(expected);
  });
});

describe("traitsFromRequest", () => {
  it("flavor trait:X=required|forbidden, image trait:X=required; other values ignored", () => {
    expect(
      traitsFromRequest(
        flavor({
          extra_specs: {
            "trait:B": "required",
            "trait:A": "forbidden",
            "trait:C": "preferred",
            "trait1:D": "required",
          },
        }),
        { id: "i", name: "i", properties: { "trait:E": "required", "trait:F": "forbidden" } },
      ),
    ).toEqual({ required: ["B", "E"], forbidden: ["A"] });
  });
});

describe("Placement's resource rule", () => {
  const h = (resources: HostState["resources"]) => host("h1", { resources });
  it("16 vCPU at 16.0 is 256 VCPU; 65536 MB − 512 reserved at 1.5 is 97536 MB", () => {
    expect(inventory(16, { ratio: 16 }).capacity).toBe(256);
    expect(inventory(65536, { reserved: 512, ratio: 1.5 }).capacity).toBe(97536);
  });

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
    const r = resourceFit(h(resources), Object.entries(requested));
    expect(r ? describeFitFailure(r) : null).toBe(reason);
    // The same answer where the fleet's other hosts make every bound worth reading.
    const odd = host("h2", {
      resources: { CUSTOM_X: inventory(1), VCPU: inventory(64, { step_size: 3, max_unit: 1, min_unit: 1 }) },
    });
    const mixed = resourceFit(h(resources), Object.entries(requested), [odd]);
    expect(mixed ? describeFitFailure(mixed) : null).toBe(reason);
  });

  it("reports the first failing class in request order, free never below 0", () => {
    const r = resourceFit(h({ VCPU: inventory(4, { used: 10 }), MEMORY_MB: inventory(1024) }), [
      ["VCPU", 1],
      ["MEMORY_MB", 2048],
    ]);
    expect(r).toEqual({ resource_class: "VCPU", violation: "capacity", requested: 1, free: 0 });
  });
});
