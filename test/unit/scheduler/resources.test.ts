import { describe, expect, it } from "vitest";
import { resourcesFromFlavor } from "../../../lib/scheduler/resources.js";
import { flavor } from "./fixtures.js";

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
