// Every filter, table-driven, with Nova's edge cases, decided as the scheduler does: the host in a
// fleet (with others when a case needs them), the instances it runs given by the request's locator.
import { describe, expect, it } from "vitest";
import type { SchedulerConfig } from "../../../lib/config.js";
import { parseAvailabilityZone } from "../../../lib/messages/availability-zone.js";
import { SchedulerHostFilterNotFound } from "../../../lib/scheduler/errors.js";
import { parseVersionPredicate, versionToString } from "../../../lib/scheduler/filters/image-properties.js";
import { enabledFilters, FILTERS } from "../../../lib/scheduler/filters/index.js";
import type { HostState, RequestSpec } from "../../../lib/scheduler/types.js";
import { aggregate, config, flavor, fleet, host, spec } from "./fixtures.js";

/** Whether `name` lets `h` through for `s`; `running`: the instances on `h`. */
function passes(
  name: string,
  h: HostState,
  s: RequestSpec = spec(),
  cfg: Partial<SchedulerConfig> = {},
  others: HostState[] = [],
  running: readonly string[] = [],
) {
  return rejection(name, h, s, cfg, others, running) === null;
}

function rejection(
  name: string,
  h: HostState,
  s: RequestSpec = spec(),
  cfg: Partial<SchedulerConfig> = {},
  others: HostState[] = [],
  running: readonly string[] = [],
) {
  const f = fleet([structuredClone(h), ...others.map((o) => structuredClone(o))]);
  const instances = new Map(running.map((u) => [u, h.host]));
  const check = FILTERS.get(name)!.prepare(s, { index: 0, config: config(cfg), fleet: f, instances });
  return check?.(f.hosts[0]!, 0) ?? null;
}

const zoneAgg = (zone: string) => aggregate(`agg-${zone}`, { availability_zone: zone });

describe("enabledFilters", () => {
  it("knows all of Nova's filters this scheduler implements", () => {
    expect([...FILTERS.keys()].sort()).toEqual([
      "AggregateImagePropertiesIsolation",
      "AggregateInstanceExtraSpecsFilter",
      "AggregateIoOpsFilter",
      "AggregateMultiTenancyIsolation",
      "AggregateNumInstancesFilter",
      "AggregateTypeAffinityFilter",
      "AllHostsFilter",
      "AvailabilityZoneFilter",
      "ComputeCapabilitiesFilter",
      "ComputeFilter",
      "DifferentHostFilter",
      "ImagePropertiesFilter",
      "IoOpsFilter",
      "IsolatedHostsFilter",
      "JsonFilter",
      "MetricsFilter",
      "NumInstancesFilter",
      "SameHostFilter",
      "ServerGroupAffinityFilter",
      "ServerGroupAntiAffinityFilter",
      "SimpleCIDRAffinityFilter",
    ]);
  });

  it("reports every unknown name at once", () => {
    expect(() => enabledFilters(["ComputeFilter", "RamFilter", "CoreFilter"])).toThrow(
      SchedulerHostFilterNotFound,
    );
    expect(() => enabledFilters(["RamFilter", "CoreFilter"])).toThrow("RamFilter, CoreFilter");
  });

  it.each([
    ["AllHostsFilter", true],
    ["AvailabilityZoneFilter", true],
    ["ComputeFilter", true],
    ["ComputeCapabilitiesFilter", true],
    ["ImagePropertiesFilter", true],
    ["SameHostFilter", true],
    ["DifferentHostFilter", true],
    ["SimpleCIDRAffinityFilter", true],
    ["AggregateInstanceExtraSpecsFilter", true],
    ["AggregateImagePropertiesIsolation", true],
    ["AggregateMultiTenancyIsolation", true],
    ["AggregateTypeAffinityFilter", true],
    ["IsolatedHostsFilter", true],
    ["ServerGroupAffinityFilter", false],
    ["ServerGroupAntiAffinityFilter", false],
    ["NumInstancesFilter", false],
    ["AggregateNumInstancesFilter", false],
    ["IoOpsFilter", false],
    ["AggregateIoOpsFilter", false],
    ["JsonFilter", false],
    ["MetricsFilter", false],
  ])("%s runs once per request: %s (Nova's run_filter_once_per_request)", (name, once) => {
    expect(FILTERS.get(name)!.runOncePerRequest).toBe(once);
  });
});

describe("AllHostsFilter", () => {
  it("passes everything, even a disabled host", () => {
    expect(passes("AllHostsFilter", host("h", { service: { disabled: true } }))).toBe(true);
  });
});

describe("AvailabilityZoneFilter", () => {
  it.each([
    ["no zone requested", undefined, [zoneAgg("az1")], {}, true],
    ["host in the zone's aggregate", "az1", [zoneAgg("az1")], {}, true],
    ["host in another zone", "az2", [zoneAgg("az1")], {}, false],
    ["host in no zone aggregate, default zone requested", "nova", [], {}, true],
    ["host in no zone aggregate, other zone requested", "az1", [], {}, false],
    [
      "default_availability_zone is configurable",
      "zone-x",
      [],
      { default_availability_zone: "zone-x" },
      true,
    ],
    ["an aggregate without a zone does not count", "nova", [aggregate("ssd", { ssd: "true" })], {}, true],
    ["only the az part of az:host is compared", "az1:host-9", [zoneAgg("az1")], {}, true],
    ["empty az of ::node constrains nothing", "::node-1", [zoneAgg("az1")], {}, true],
  ])("%s", (_name, zone, aggregates, cfg, expected) => {
    const s = spec(zone === undefined ? {} : { availability_zone: zone });
    expect(passes("AvailabilityZoneFilter", host("h", { aggregates }), s, cfg)).toBe(expected);
  });

  it("says where the host is", () => {
    expect(
      rejection(
        "AvailabilityZoneFilter",
        host("h", { aggregates: [zoneAgg("az1")] }),
        spec({ availability_zone: "az2" }),
      ),
    ).toEqual({
      summary: "are not in availability zone az2",
      reason: "host is in availability zone az1, not az2",
    });
  });

  it("without a requested zone, the zones of the server's networks (availability_zone_hints)", () => {
    const nets = spec({ network_availability_zones: ["az2", "az3"] });
    expect(passes("AvailabilityZoneFilter", host("h", { aggregates: [zoneAgg("az3")] }), nets)).toBe(true);
    expect(passes("AvailabilityZoneFilter", host("h", { aggregates: [] }), nets, {})).toBe(false);
    expect(rejection("AvailabilityZoneFilter", host("h", { aggregates: [zoneAgg("az1")] }), nets)).toEqual({
      summary: "are not in an availability zone of the server's networks (az2, az3)",
      reason: "host is in availability zone az1, not az2, az3",
    });
    // a requested zone wins (the API refused one outside the networks')
    const both = spec({ availability_zone: "az3", network_availability_zones: ["az2", "az3"] });
    expect(passes("AvailabilityZoneFilter", host("h", { aggregates: [zoneAgg("az2")] }), both)).toBe(false);
  });

  it.each([
    ["az", { zone: "az", host: null, node: null }],
    ["az:host", { zone: "az", host: "host", node: null }],
    ["az::node", { zone: "az", host: null, node: "node" }],
    ["az:host:node", { zone: "az", host: "host", node: "node" }],
    [":host", { zone: null, host: "host", node: null }],
    ["a:b:c:d", undefined],
  ])("parses %s", (value, parsed) => {
    expect(parseAvailabilityZone(value)).toEqual(parsed);
  });
});

describe("ComputeFilter", () => {
  it.each([
    ["enabled and up", {}, true, null],
    [
      "disabled, with its reason",
      { disabled: true, disabled_reason: "maintenance" },
      false,
      "compute service is disabled (maintenance)",
    ],
    ["disabled wins over down", { disabled: true, up: false }, false, "compute service is disabled"],
    ["forced down even if heard from", { forced_down: true }, false, "compute service is forced down"],
    [
      "not heard from in service_down_time",
      { up: false },
      false,
      "compute service has not been heard from in 120s",
    ],
  ])("%s", (_name, service, expected, reason) => {
    const h = host("h", { service });
    expect(passes("ComputeFilter", h)).toBe(expected);
    expect(rejection("ComputeFilter", h)?.reason ?? null).toBe(reason);
  });
});

describe("ComputeCapabilitiesFilter", () => {
  const caps = (extra_specs: Record<string, string>) => spec({ flavor: flavor({ extra_specs }) });
  it.each([
    ["no extra specs", {}, {}, true],
    [
      "capabilities: scope, string equality",
      { "capabilities:hypervisor_type": "s== QEMU" },
      { hypervisor_type: "QEMU" },
      true,
    ],
    [
      "capabilities: scope, mismatch",
      { "capabilities:hypervisor_type": "s== QEMU" },
      { hypervisor_type: "KVM" },
      false,
    ],
    ["= is a number ≥", { "capabilities:vcpus_total": "= 16" }, { vcpus_total: 32 }, true],
    ["= fails below", { "capabilities:vcpus_total": "= 64" }, { vcpus_total: 32 }, false],
    ["<in> substring", { "capabilities:host": "<in> comp" }, { host: "compute-1" }, true],
    [
      "<or> one of",
      { "capabilities:hypervisor_type": "<or> KVM <or> QEMU" },
      { hypervisor_type: "QEMU" },
      true,
    ],
    [
      "no operator: exact text",
      { "capabilities:hypervisor_type": "QEMU" },
      { hypervisor_type: "QEMU" },
      true,
    ],
    [
      "from the stats dict",
      { "capabilities:cpu_model": "s== skylake" },
      { stats: { cpu_model: "skylake" } },
      true,
    ],
    [
      "into JSON in stats",
      { "capabilities:cpu_info:arch": "s== x86_64" },
      { stats: { cpu_info: '{"arch": "x86_64"}' } },
      true,
    ],
    ["a missing capability fails", { "capabilities:gpu_model": "s== a100" }, {}, false],
    ["unscoped key the host has: checked", { num_instances: "<= 5" }, { num_instances: 9 }, false],
    ["unscoped key the host has not: ignored", { ssd: "true" }, {}, true],
    ["unscoped key in stats: checked", { ssd: "true" }, { stats: { ssd: "false" } }, false],
    [
      "other scopes are not this filter's",
      { "hw:cpu_policy": "dedicated", "aggregate_instance_extra_specs:x": "1" },
      {},
      true,
    ],
    [
      "Python's str(16.0) for a float attribute",
      { "capabilities:cpu_allocation_ratio": "s== 16.0" },
      { cpu_allocation_ratio: 16 },
      true,
    ],
  ])("%s", (_name, extra, overrides, expected) => {
    expect(passes("ComputeCapabilitiesFilter", host("compute-1", overrides), caps(extra))).toBe(expected);
  });
});

describe("ImagePropertiesFilter", () => {
  const image = (properties: Record<string, string>) => spec({ image: { id: "i", name: "i", properties } });
  const kvm = host("h", { supported_instances: [["x86_64", "qemu", "hvm"]], hypervisor_version: 6002000 });
  it.each([
    ["no relevant properties", {}, kvm, {}, true],
    ["architecture matches", { hw_architecture: "x86_64" }, kvm, {}, true],
    ["legacy name, alias canonicalized (amd64)", { architecture: "AMD64" }, kvm, {}, true],
    ["architecture differs", { hw_architecture: "aarch64" }, kvm, {}, false],
    ["hypervisor type and vm mode", { img_hv_type: "QEMU", hw_vm_mode: "hv" }, kvm, {}, true],
    [
      "host advertises nothing",
      { hw_architecture: "x86_64" },
      host("h", { supported_instances: [] }),
      {},
      false,
    ],
    [
      "version requirement met",
      { hw_architecture: "x86_64", img_hv_requested_version: ">=6.2" },
      kvm,
      {},
      true,
    ],
    [
      "version requirement not met",
      { hw_architecture: "x86_64", img_hv_requested_version: ">=7.0, <8" },
      kvm,
      {},
      false,
    ],
    ["version alone is not checked (Nova)", { img_hv_requested_version: ">=9.0" }, kvm, {}, true],
    [
      "no hypervisor version: not checked",
      { hw_architecture: "x86_64", img_hv_requested_version: ">=9.0" },
      host("h", { supported_instances: [["x86_64", "qemu", "hvm"]], hypervisor_version: 0 }),
      {},
      true,
    ],
    [
      "image_properties_default_architecture applies",
      {},
      kvm,
      { image_properties_default_architecture: "aarch64" },
      false,
    ],
  ])("%s", (_name, props, h, cfg, expected) => {
    expect(passes("ImagePropertiesFilter", h, image(props), cfg)).toBe(expected);
  });

  it.each([
    [6002000, "6.2.0"],
    [1, "1"],
    [2003001, "2.3.1"],
  ])("hypervisor version %i reads %s", (v, text) => expect(versionToString(v)).toBe(text));

  it.each([
    [">=6.2", "6.2.0", true],
    [">6.2", "6.2.0", false],
    ["==6.2", "6.2", true],
    ["!=6.2, <7", "6.3", true],
    ["bogus", "6.2", false],
  ])("predicate %s on %s: %s", (pred, version, ok) => expect(parseVersionPredicate(pred)(version)).toBe(ok));
});

describe("ServerGroupAffinityFilter / ServerGroupAntiAffinityFilter", () => {
  const group = (policy: "affinity" | "anti-affinity", hosts: string[], members: string[], max?: number) =>
    spec({
      instance_group: { policy, rules: max ? { max_server_per_host: max } : {}, members, hosts },
      instance_uuid: "new",
    });

  it.each([
    ["no group", spec(), host("h1"), true],
    ["affinity, group not placed yet: anywhere", group("affinity", [], ["m1"]), host("h1"), true],
    ["affinity: on a group host", group("affinity", ["h1"], ["m1"]), host("h1"), true],
    ["affinity: elsewhere", group("affinity", ["h2"], ["m1"]), host("h1"), false],
    ["another policy is not this filter's", group("anti-affinity", ["h2"], ["m1"]), host("h1"), true],
  ])("affinity: %s", (_name, s, h, expected) => {
    expect(passes("ServerGroupAffinityFilter", h, s)).toBe(expected);
  });

  it.each([
    ["no member on the host", group("anti-affinity", [], ["m1"]), ["x"], true],
    ["a member on the host", group("anti-affinity", ["h1"], ["m1"]), ["m1"], false],
    [
      "max_server_per_host 2, one member there",
      group("anti-affinity", ["h1"], ["m1", "m2"], 2),
      ["m1"],
      true,
    ],
    [
      "max_server_per_host 2, two there",
      group("anti-affinity", ["h1"], ["m1", "m2"], 2),
      ["m1", "m2"],
      false,
    ],
    [
      "the instance itself is on the host (a move)",
      group("anti-affinity", ["h1"], ["m1", "new"]),
      ["m1", "new"],
      true,
    ],
    ["another policy is not this filter's", group("affinity", ["h1"], ["m1"]), ["m1"], true],
  ])("anti-affinity: %s (instances on h1: %j)", (_name, s, running, expected) => {
    expect(passes("ServerGroupAntiAffinityFilter", host("h1"), s, {}, [], running)).toBe(expected);
  });
});

describe("SameHostFilter / DifferentHostFilter", () => {
  const h = host("h1");
  const running = ["a", "b"];
  it.each([
    ["no hint", {}, true, true],
    ["one uuid as a string", { same_host: "a" }, true, true],
    ["one uuid in a list", { different_host: ["a"] }, true, false],
    ["none of them here", { same_host: ["x", "y"], different_host: ["x", "y"] }, false, true],
    ["one of several here", { same_host: ["x", "b"], different_host: ["x", "b"] }, true, false],
  ])("%s", (_name, hints, same, different) => {
    const s = spec({ scheduler_hints: hints });
    expect(passes("SameHostFilter", h, s, {}, [], running)).toBe(same);
    expect(passes("DifferentHostFilter", h, s, {}, [], running)).toBe(different);
  });
});

describe("SimpleCIDRAffinityFilter", () => {
  it.each([
    ["no hint", {}, "10.0.0.5", true],
    ["same /24 by default", { build_near_host_ip: "10.0.0.1" }, "10.0.0.200", true],
    ["outside the /24", { build_near_host_ip: "10.0.0.1" }, "10.0.1.2", false],
    ["a wider cidr", { build_near_host_ip: "10.0.0.1", cidr: "/16" }, "10.0.9.9", true],
    [
      "cidr without a slash is Nova's concatenation: 10.0.0.116",
      { build_near_host_ip: "10.0.0.1", cidr: "16" },
      "10.0.0.5",
      false,
    ],
    ["IPv6", { build_near_host_ip: "fd00::1", cidr: "/64" }, "fd00::abcd", true],
    ["IPv6 outside", { build_near_host_ip: "fd00::1", cidr: "/64" }, "fd01::1", false],
    ["host without an address", { build_near_host_ip: "10.0.0.1" }, "", false],
  ])("%s", (_name, hints, ip, expected) => {
    expect(
      passes("SimpleCIDRAffinityFilter", host("h", { host_ip: ip }), spec({ scheduler_hints: hints })),
    ).toBe(expected);
  });
});

describe("NumInstancesFilter / AggregateNumInstancesFilter", () => {
  const limits = (v: string) => aggregate("limits", { max_instances_per_host: v });
  it.each([
    ["under max_instances_per_host", 49, [], {}, true, true],
    ["at it", 50, [], {}, false, false],
    ["configured lower", 5, [], { max_instances_per_host: 5 }, false, false],
    ["aggregate limit", 20, [limits("20")], {}, true, false],
    ["aggregate limit below", 19, [limits("20")], {}, true, true],
    [
      "smallest of several aggregates",
      10,
      [limits("20"), aggregate("b", { max_instances_per_host: "10" })],
      {},
      true,
      false,
    ],
    ["unparsable aggregate value falls back to the option", 30, [limits("many")], {}, true, true],
    ["an integer is needed (int('5.0') fails)", 30, [limits("5.0")], {}, true, true],
  ])("%s", (_name, n, aggregates, cfg, plain, aggregated) => {
    const h = host("h", { num_instances: n, aggregates });
    expect(passes("NumInstancesFilter", host("h", { num_instances: n }), spec(), cfg)).toBe(plain);
    expect(passes("AggregateNumInstancesFilter", h, spec(), cfg)).toBe(aggregated);
  });
});

describe("IoOpsFilter / AggregateIoOpsFilter", () => {
  it.each([
    ["under max_io_ops_per_host", 7, [], true, true],
    ["at it", 8, [], false, false],
    ["aggregate limit", 3, [aggregate("a", { max_io_ops_per_host: "3" })], true, false],
  ])("%s", (_name, ops, aggregates, plain, aggregated) => {
    expect(passes("IoOpsFilter", host("h", { num_io_ops: ops }))).toBe(plain);
    expect(passes("AggregateIoOpsFilter", host("h", { num_io_ops: ops, aggregates }))).toBe(aggregated);
  });
});

describe("AggregateInstanceExtraSpecsFilter", () => {
  const s = (extra_specs: Record<string, string>) => spec({ flavor: flavor({ extra_specs }) });
  const ssd = aggregate("ssd", { ssd: "true", tier: "gold, silver" });
  it.each([
    ["no extra specs", {}, [], true],
    ["scoped key matches", { "aggregate_instance_extra_specs:ssd": "true" }, [ssd], true],
    ["scoped key differs", { "aggregate_instance_extra_specs:ssd": "false" }, [ssd], false],
    ["key absent from the aggregates", { "aggregate_instance_extra_specs:gpu": "true" }, [ssd], false],
    ["host in no aggregate", { "aggregate_instance_extra_specs:ssd": "true" }, [], false],
    ["unscoped key is matched too (Nova's compatibility)", { ssd: "true" }, [ssd], true],
    ["unscoped key absent: the host is out", { gpu: "true" }, [ssd], false],
    ["comma-separated metadata values", { "aggregate_instance_extra_specs:tier": "silver" }, [ssd], true],
    ["operators apply", { "aggregate_instance_extra_specs:tier": "<or> bronze <or> gold" }, [ssd], true],
    ["other scopes are ignored", { "capabilities:x": "1", "trait:HW_X": "required" }, [], true],
  ])("%s", (_name, extra, aggregates, expected) => {
    expect(passes("AggregateInstanceExtraSpecsFilter", host("h", { aggregates }), s(extra))).toBe(expected);
  });
});

describe("AggregateImagePropertiesIsolation", () => {
  const img = (properties: Record<string, string>) => spec({ image: { id: "i", name: "i", properties } });
  const win = aggregate("win", { os_distro: "windows" });
  it.each([
    ["host in no aggregate", { os_distro: "ubuntu" }, [], {}, true],
    ["image property matches", { os_distro: "windows" }, [win], {}, true],
    ["image property differs", { os_distro: "ubuntu" }, [win], {}, false],
    ["image without that property", {}, [win], {}, true],
    [
      "non-standard metadata keys are not image properties",
      { owner: "x" },
      [aggregate("o", { owner: "y" })],
      {},
      true,
    ],
    [
      "namespace: other keys ignored",
      { os_distro: "ubuntu" },
      [win],
      { aggregate_image_properties_isolation_namespace: "isolate" },
      true,
    ],
  ])("%s", (_name, props, aggregates, cfg, expected) => {
    expect(passes("AggregateImagePropertiesIsolation", host("h", { aggregates }), img(props), cfg)).toBe(
      expected,
    );
  });
});

describe("AggregateMultiTenancyIsolation", () => {
  const iso = aggregate("iso", { filter_tenant_id: "p1, p2" });
  it.each([
    ["host in no tenant aggregate", "p9", [], true],
    ["project listed", "p2", [iso], true],
    ["project not listed", "p9", [iso], false],
  ])("%s", (_name, project, aggregates, expected) => {
    expect(
      passes("AggregateMultiTenancyIsolation", host("h", { aggregates }), spec({ project_id: project })),
    ).toBe(expected);
  });
});

describe("AggregateTypeAffinityFilter", () => {
  const large = aggregate("large", { instance_type: "m1.large, m1.xlarge" });
  it.each([
    ["no instance_type metadata", "m1.small", [], true],
    ["flavor listed", "m1.xlarge", [large], true],
    ["flavor not listed", "m1.small", [large], false],
  ])("%s", (_name, name, aggregates, expected) => {
    expect(
      passes("AggregateTypeAffinityFilter", host("h", { aggregates }), spec({ flavor: flavor({ name }) })),
    ).toBe(expected);
  });
});

describe("IsolatedHostsFilter", () => {
  const s = (id: string) => spec({ image: { id, name: id, properties: {} } });
  const cfg = { isolated_hosts: ["iso"], isolated_images: ["img-iso"] };
  it.each([
    ["isolated image on isolated host", "img-iso", "iso", cfg, true],
    ["isolated image elsewhere", "img-iso", "other", cfg, false],
    ["other image on isolated host (restricted)", "img", "iso", cfg, false],
    [
      "other image on isolated host (unrestricted)",
      "img",
      "iso",
      { ...cfg, restrict_isolated_hosts_to_isolated_images: false },
      true,
    ],
    ["other image elsewhere", "img", "other", cfg, true],
    ["no isolated images: isolated hosts closed", "img", "iso", { isolated_hosts: ["iso"] }, false],
    ["nothing configured", "img", "iso", {}, true],
  ])("%s", (_name, image, name, c, expected) => {
    expect(passes("IsolatedHostsFilter", host(name), s(image), c)).toBe(expected);
  });
});

describe("JsonFilter", () => {
  const q = (query: unknown) => spec({ scheduler_hints: { query } });
  const h = host("compute-1", { free_ram_mb: 4096, vcpus_total: 16, stats: { rack: "r1" } });
  it.each([
    ["no query", undefined, true],
    ["empty query", "[]", true],
    ["comparison", '[">=", "$free_ram_mb", 1024]', true],
    ["comparison fails", '[">=", "$free_ram_mb", 8192]', false],
    ["and/or/not", '["and", [">", "$vcpus_total", 8], ["not", ["=", "$host", "x"]]]', true],
    ["in", '["in", "$host", "compute-1", "compute-2"]', true],
    ["dict attribute", '["=", "$stats.rack", "r1"]', true],
    ["missing attribute is dropped: too few arguments", '["=", "$nope", 1]', false],
    ["not at the top gives a list: any true passes", '["not", ["=", 1, 2], ["=", 1, 1]]', true],
    ["a list result is truthy inside and (Nova's quirk)", '["and", ["not", ["=", 1, 1]]]', true],
    ["an already-parsed query", [">=", "$free_ram_mb", 1024], true],
    ["invalid JSON", "[>=", false],
    ["unknown operator", '["like", "$host", "c"]', false],
    ["string against number: Python's TypeError", '["<", "$host", 5]', false],
  ])("%s", (_name, query, expected) => {
    expect(passes("JsonFilter", h, query === undefined ? spec() : q(query))).toBe(expected);
  });
});

describe("MetricsFilter", () => {
  it.each([
    ["no weight_setting", [], {}, true],
    ["every metric reported", ["cpu.percent=1.0"], { "cpu.percent": 10 }, true],
    ["one missing", ["cpu.percent=1.0", "mem=2"], { "cpu.percent": 10 }, false],
    ["bad entries ignored", ["nonsense", "=1", "x=abc"], {}, true],
  ])("%s", (_name, setting, metrics, expected) => {
    expect(passes("MetricsFilter", host("h", { metrics }), spec(), { metrics_weight_setting: setting })).toBe(
      expected,
    );
  });
});
