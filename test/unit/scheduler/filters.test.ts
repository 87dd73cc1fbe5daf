import { describe, expect, it } from "vitest";
import { SchedulerHostFilterNotFound } from "../../../lib/scheduler/errors.js";
import { AllHostsFilter } from "../../../lib/scheduler/filters/all-hosts.js";
import {
  AvailabilityZoneFilter,
  parseAvailabilityZone,
} from "../../../lib/scheduler/filters/availability-zone.js";
import { ComputeFilter } from "../../../lib/scheduler/filters/compute.js";
import { enabledFilters } from "../../../lib/scheduler/filters/index.js";
import type { FilterContext } from "../../../lib/scheduler/types.js";
import { config, host, spec } from "./fixtures.js";

const ctx: FilterContext = { index: 0, config: config({ default_availability_zone: "nova" }) };

describe("AvailabilityZoneFilter", () => {
  it.each([
    ["no requested AZ", undefined, "az1", true],
    ["same AZ", "az1", "az1", true],
    ["other AZ", "az2", "az1", false],
    ["az:host form compares only the az", "az1:compute-7", "az1", true],
    ["az::node form compares only the az", "az2::node-3", "az1", false],
    ["az:host:node form", "az1:compute-7:node-3", "az1", true],
    ["empty az part is no constraint", ":compute-7", "az1", true],
    ["host in no AZ aggregate is in default_availability_zone", "nova", "", true],
    ["host in no AZ aggregate is not in another", "az1", "", false],
  ])("%s", (_name, requested, hostZone, passes) => {
    const r = AvailabilityZoneFilter.hostPasses(
      host("h1", { availability_zone: hostZone }),
      spec(requested === undefined ? {} : { availability_zone: requested }),
      ctx,
    );
    expect(r.pass).toBe(passes);
  });

  it("explains the rejection", () => {
    const r = AvailabilityZoneFilter.hostPasses(
      host("h1", { availability_zone: "az1" }),
      spec({ availability_zone: "az2" }),
      ctx,
    );
    expect(r).toEqual({
      pass: false,
      reason: "host is in availability zone az1, not az2",
      summary: "are not in availability zone az2",
    });
  });

  it("runs once per request", () => {
    expect(AvailabilityZoneFilter.runOncePerRequest).toBe(true);
  });
});

describe("parseAvailabilityZone", () => {
  it.each([
    ["az1", { zone: "az1" }],
    ["az1:h1", { zone: "az1", host: "h1" }],
    ["az1::n1", { zone: "az1", node: "n1" }],
    ["az1:h1:n1", { zone: "az1", host: "h1", node: "n1" }],
    [":h1", { host: "h1" }],
    ["a:b:c:d", undefined],
  ])("%s", (value, expected) => {
    expect(parseAvailabilityZone(value)).toEqual(expected);
  });
});

describe("ComputeFilter", () => {
  it.each([
    ["enabled and up", {}, null],
    [
      "disabled, with its reason",
      { disabled: true, disabled_reason: "maintenance" },
      "compute service is disabled (maintenance)",
    ],
    ["disabled, no reason", { disabled: true }, "compute service is disabled"],
    [
      "no heartbeat within service_down_time",
      { up: false },
      "compute service has not been heard from in 60s",
    ],
    [
      "forced down, even if the caller said up",
      { forced_down: true, up: true },
      "compute service is forced down",
    ],
    [
      "disabled wins over down, as Nova checks it first",
      { disabled: true, disabled_reason: "rma", up: false },
      "compute service is disabled (rma)",
    ],
  ])("%s", (_name, service, reason) => {
    const r = ComputeFilter.hostPasses(host("h1", { service }), spec(), ctx);
    if (reason === null) expect(r).toEqual({ pass: true });
    else expect(r).toMatchObject({ pass: false, reason });
  });

  it("groups down hosts together whatever the cause", () => {
    const a = ComputeFilter.hostPasses(host("a", { service: { up: false } }), spec(), ctx);
    const b = ComputeFilter.hostPasses(host("b", { service: { forced_down: true } }), spec(), ctx);
    expect(a.pass === false && a.summary).toBe("are down");
    expect(b.pass === false && b.summary).toBe("are down");
  });
});

describe("AllHostsFilter", () => {
  it("passes even a disabled, down host", () => {
    const h = host("h1", { service: { disabled: true, up: false } });
    expect(AllHostsFilter.hostPasses(h, spec(), ctx)).toEqual({ pass: true });
  });
});

describe("filter registry", () => {
  it("returns filters in configured order", () => {
    expect(enabledFilters(["ComputeFilter", "AvailabilityZoneFilter"]).map((f) => f.name)).toEqual([
      "ComputeFilter",
      "AvailabilityZoneFilter",
    ]);
  });

  it("names every unknown filter", () => {
    expect(() => enabledFilters(["ComputeFilter", "RamFilter", "NoSuchFilter"])).toThrow(
      new SchedulerHostFilterNotFound(["RamFilter", "NoSuchFilter"]),
    );
    expect(() => enabledFilters(["RamFilter"])).toThrow(
      "Scheduler Host Filter RamFilter could not be found.",
    );
  });
});
