// What a registering host advertises to ImagePropertiesFilter: Nova's canonical hypervisor types.
import { describe, expect, it } from "vitest";
import { supportedInstances } from "../../../lib/conductor/compute-register.js";

describe("supportedInstances", () => {
  it("canonicalizes libvirt's hypervisor name, as Nova's HVType does ('QEMU' is qemu)", () => {
    expect(supportedInstances("QEMU", { virt_type: "qemu" })).toEqual([["x86_64", "qemu", "hvm"]]);
    expect(supportedInstances("fake", undefined)).toEqual([["x86_64", "fake", "hvm"]]);
  });

  it("a kvm host runs qemu guests too, as libvirt's capabilities list both domain types", () => {
    expect(supportedInstances("QEMU", { virt_type: "kvm" })).toEqual([
      ["x86_64", "kvm", "hvm"],
      ["x86_64", "qemu", "hvm"],
    ]);
  });
});
