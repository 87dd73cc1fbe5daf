// One decision: Nova's order of stages (previous instance, requested/ignored/forced hosts,
// Placement with its prefilters, enabled filters), the skips (forced hosts, once per request),
// and the trace each stage leaves.
import { describe, expect, it } from "vitest";
import type { SchedulerConfig } from "../../../lib/config.js";
import { SchedulerHostFilterNotFound } from "../../../lib/scheduler/errors.js";
import { filterAndWeigh, type PipelineContext } from "../../../lib/scheduler/pipeline.js";
import type { HostState, RequestSpec } from "../../../lib/scheduler/types.js";
import { aggregate, config, flavor, fleet, host, inventory, spec } from "./fixtures.js";

function decide(
  hosts: HostState[],
  s: RequestSpec,
  cfg: Partial<SchedulerConfig> = {},
  ctx: Partial<PipelineContext> = {},
) {
  const f = fleet(hosts);
  const d = filterAndWeigh(f, s, { index: 0, config: config(cfg), ...ctx });
  const detailed = d.detailed();
  return {
    candidates: detailed.order.map((o) => o.host),
    stages: detailed.stages.map((st) => [
      st.stage,
      st.hosts_in,
      st.hosts_passed,
      ...(st.skipped ? [st.skipped] : []),
    ]),
    rejected: Object.fromEntries(
      detailed.stages.flatMap((st) => st.rejected.map((r) => [r.host, `${st.stage}: ${r.reason}`])),
    ),
    decision: d,
  };
}

const zone = (z: string) => aggregate(`agg-${z}`, { availability_zone: z });

describe("stages", () => {
  const fleetOf = () => [
    host("h1", { free_ram_mb: 8000 }),
    host("h2", { free_ram_mb: 16000, aggregates: [zone("az2")] }),
    // nova-compute marks a disabled service's provider COMPUTE_STATUS_DISABLED
    host("h3", {
      service: { disabled: true, disabled_reason: "maintenance" },
      traits: ["COMPUTE_STATUS_DISABLED"],
    }),
    host("h4", { resources: { ...host("x").resources, MEMORY_MB: inventory(8192, { used: 4096 }) } }),
  ];

  it("Placement first, then the enabled filters in their order", () => {
    const r = decide(fleetOf(), spec({ flavor: flavor({ memory_mb: 8192 }) }), {
      enabled_filters: ["AvailabilityZoneFilter", "ComputeFilter"],
    });
    expect(r.stages).toEqual([
      ["placement", 4, 2],
      ["AvailabilityZoneFilter", 2, 2],
      ["ComputeFilter", 2, 2],
    ]);
    expect(r.rejected).toEqual({
      h3: "placement: host is disabled",
      h4: "placement: insufficient MEMORY_MB: needs 8192, free 4096",
    });
    expect(r.candidates).toEqual(["h2", "h1"]);
  });

  it("a disabled host is Placement's (COMPUTE_STATUS_DISABLED) before it is ComputeFilter's", () => {
    expect(decide(fleetOf(), spec(), { enabled_filters: ["ComputeFilter"] }).rejected.h3).toBe(
      "placement: host is disabled",
    );
    const untraited = [host("h3", { service: { disabled: true, disabled_reason: "maintenance" } })];
    expect(decide(untraited, spec(), { enabled_filters: ["ComputeFilter"] }).rejected.h3).toBe(
      "ComputeFilter: compute service is disabled (maintenance)",
    );
  });

  it("stops once no host is left, as Nova's filter handler does", () => {
    const r = decide([host("h1")], spec({ flavor: flavor({ vcpus: 999 }) }), {
      enabled_filters: ["ComputeFilter"],
    });
    expect(r.stages).toEqual([["placement", 1, 0]]);
  });

  it("an unknown filter fails even with no hosts", () => {
    expect(() => decide([], spec(), { enabled_filters: ["RetryFilter"] })).toThrow(
      SchedulerHostFilterNotFound,
    );
  });
});

describe("requested, ignored and forced hosts", () => {
  const hosts = () => [host("h1"), host("h2"), host("H3"), host("h4", { nodename: "node-4" })];
  const cfg = { enabled_filters: ["ComputeFilter", "AvailabilityZoneFilter"] };

  it("requested_destination narrows to that host (and node)", () => {
    expect(decide(hosts(), spec({ requested_destination: { host: "h2" } }), cfg).candidates).toEqual(["h2"]);
  });

  it("ignore_hosts, case-insensitively", () => {
    expect(decide(hosts(), spec({ ignore_hosts: ["h3", "H1"] }), cfg).candidates).toEqual(["h2", "h4"]);
  });

  it("forced hosts skip every filter (but not Placement)", () => {
    const down = [host("h1", { service: { up: false } }), host("h2")];
    const r = decide(down, spec({ force_hosts: ["H1"], availability_zone: "elsewhere" }), cfg);
    expect(r.candidates).toEqual(["h1"]);
    expect(r.stages).toEqual([
      ["force_hosts", 2, 1],
      ["placement", 1, 1],
      ["ComputeFilter", 1, 1, "forced host"],
      ["AvailabilityZoneFilter", 1, 1, "forced host"],
    ]);
  });

  it("a forced node too; Placement still refuses a host that cannot fit", () => {
    const r = decide(hosts(), spec({ force_nodes: ["node-4"], flavor: flavor({ vcpus: 999 }) }), cfg);
    expect(r.stages).toEqual([
      ["force_nodes", 4, 1],
      ["placement", 1, 0],
    ]);
  });

  it("a move Nova checks (_nova_check_type) runs the filters on forced hosts", () => {
    const down = [host("h1", { service: { up: false } })];
    const r = decide(
      down,
      spec({ force_hosts: ["h1"], scheduler_hints: { _nova_check_type: "evacuate" } }),
      cfg,
    );
    expect(r.candidates).toEqual([]);
    expect(r.rejected.h1).toBe("ComputeFilter: compute service has not been heard from in 120s");
  });

  it("hosts this request already tried are out", () => {
    expect(decide(hosts(), spec(), cfg, { excludeHosts: new Set(["h1"]) }).rejected.h1).toBe(
      "exclude_hosts: host was already tried for this request",
    );
  });
});

describe("run_filter_once_per_request", () => {
  it("the 2nd instance starts from the hosts that passed for the 1st and skips once-per-request filters", () => {
    const hosts = [host("h1"), host("h2", { aggregates: [zone("az2")] }), host("h3")];
    const f = fleet(hosts);
    const cfg = config({ enabled_filters: ["AvailabilityZoneFilter", "NumInstancesFilter"] });
    const s = spec({ availability_zone: "nova" });
    const first = filterAndWeigh(f, s, { index: 0, config: cfg });
    const second = filterAndWeigh(f, s, { index: 1, config: cfg, previous: first });
    expect(
      second.detailed().stages.map((st) => [st.stage, st.hosts_in, st.hosts_passed, st.skipped]),
    ).toEqual([
      ["previous_instance", 3, 2, undefined],
      ["placement", 2, 2, undefined],
      ["AvailabilityZoneFilter", 2, 2, "run_filter_once_per_request"],
      ["NumInstancesFilter", 2, 2, undefined],
    ]);
    // h2 keeps the reason it was left out for the 1st instance
    expect(second.detailed().stages[0]!.rejected.map((r) => [r.host, r.summary])).toEqual([
      ["h2", "are not in availability zone nova"],
    ]);
  });
});

describe("Placement: traits, custom resources, prefilters", () => {
  const cfg = { enabled_filters: [] };

  it("required and forbidden traits from the flavor, required ones from the image", () => {
    const hosts = [
      host("avx", { traits: ["HW_CPU_X86_AVX2"] }),
      host("sgx", { traits: ["HW_CPU_X86_AVX2", "CUSTOM_SGX"] }),
      host("none"),
    ];
    const s = spec({
      flavor: flavor({
        extra_specs: {
          "trait:HW_CPU_X86_AVX2": "required",
          "trait:CUSTOM_SGX": "forbidden",
          "trait:X": "maybe",
        },
      }),
    });
    const r = decide(hosts, s, cfg);
    expect(r.candidates).toEqual(["avx"]);
    expect(r.rejected).toEqual({
      sgx: "placement: host has forbidden trait CUSTOM_SGX",
      none: "placement: host lacks trait HW_CPU_X86_AVX2",
    });
    const img = spec({ image: { id: "i", name: "i", properties: { "trait:CUSTOM_SGX": "required" } } });
    expect(decide(hosts, img, cfg).candidates).toEqual(["sgx"]);
  });

  it("custom resource classes from resources:CUSTOM_X", () => {
    const gpu = host("gpu", { resources: { ...host("x").resources, CUSTOM_GPU: inventory(2, { used: 1 }) } });
    const s = spec({ flavor: flavor({ extra_specs: { "resources:CUSTOM_GPU": "1" } }) });
    const r = decide([gpu, host("plain")], s, cfg);
    expect(r.candidates).toEqual(["gpu"]);
    expect(r.rejected.plain).toBe("placement: no CUSTOM_GPU inventory");
  });

  it("a requested zone is a member_of of its aggregates (query_placement_for_availability_zone)", () => {
    const hosts = [
      host("a1", { aggregates: [zone("az1")] }),
      host("a2", { aggregates: [zone("az2")] }),
      host("n"),
    ];
    expect(decide(hosts, spec({ availability_zone: "az1" }), cfg).rejected).toEqual({
      a2: "placement: host is not in availability zone az1",
      n: "placement: host is not in availability zone az1",
    });
    // Nova's gap: a zone no aggregate carries (the default one) restricts nothing in Placement.
    expect(decide(hosts, spec({ availability_zone: "nova" }), cfg).candidates).toEqual(["a1", "a2", "n"]);
    expect(
      decide(hosts, spec({ availability_zone: "az1" }), {
        ...cfg,
        query_placement_for_availability_zone: false,
      }).candidates,
    ).toEqual(["a1", "a2", "n"]);
  });

  it("tenant aggregates (limit_tenants_to_placement_aggregate)", () => {
    const mine = aggregate("mine", { filter_tenant_id: "p1" });
    const hosts = [host("t", { aggregates: [mine] }), host("other")];
    const on = { ...cfg, limit_tenants_to_placement_aggregate: true };
    expect(decide(hosts, spec({ project_id: "p1" }), on).candidates).toEqual(["t"]);
    expect(decide(hosts, spec({ project_id: "p2" }), on).candidates).toEqual(["other", "t"]);
    const required = { ...on, placement_aggregate_required_for_tenants: true };
    expect(decide(hosts, spec({ project_id: "p2" }), required).rejected.t).toBe(
      "placement: host is refused by a request filter: No hosts available for tenant",
    );
  });

  it("isolated aggregates (enable_isolated_aggregate_filtering)", () => {
    const sgx = aggregate("sgx", { "trait:CUSTOM_SGX": "required" });
    const hosts = [host("s", { aggregates: [sgx], traits: ["CUSTOM_SGX"] }), host("p")];
    const on = { ...cfg, enable_isolated_aggregate_filtering: true };
    expect(decide(hosts, spec(), on).candidates).toEqual(["p"]);
    const wants = spec({ flavor: flavor({ extra_specs: { "trait:CUSTOM_SGX": "required" } }) });
    expect(decide(hosts, wants, on).candidates).toEqual(["s"]);
  });

  it("image metadata as traits (image_metadata_prefilter)", () => {
    const hosts = [host("v", { traits: ["COMPUTE_NET_VIF_MODEL_VIRTIO"] }), host("e")];
    const s = spec({ image: { id: "i", name: "i", properties: { hw_vif_model: "virtio" } } });
    expect(decide(hosts, s, { ...cfg, image_metadata_prefilter: true }).candidates).toEqual(["v"]);
    expect(decide(hosts, s, cfg).candidates).toEqual(["e", "v"]);
  });
});

describe("the explanation's compact form", () => {
  it("counts every rejection, groups them by reason with a capped sample, keeps the top hosts only", () => {
    const hosts = Array.from({ length: 50 }, (_, i) =>
      host(`h${String(i).padStart(2, "0")}`, {
        aggregates: [zone(i < 30 ? "az1" : "az2")],
        free_ram_mb: 1000 + i,
        service: { up: i % 7 !== 0 },
      }),
    );
    const d = decide(hosts, spec({ availability_zone: "az2" }), {
      enabled_filters: ["ComputeFilter"],
    }).decision;
    const c = d.compact({ chosen: { host: "h49", nodename: "h49" } });
    expect(c.stages).toEqual([
      {
        stage: "placement",
        hosts_in: 50,
        hosts_passed: 20,
        rejected: [
          {
            summary: "are not in availability zone az2",
            count: 30,
            sample: ["h00", "h01", "h02", "h03", "h04"],
          },
        ],
      },
      {
        stage: "ComputeFilter",
        hosts_in: 20,
        hosts_passed: 17,
        rejected: [{ summary: "are down", count: 3, sample: ["h35", "h42", "h49"] }],
      },
    ]);
    expect(c.candidates).toBe(17);
    expect(c.order.map((o) => o.host)).toEqual(["h48", "h47", "h46", "h45", "h44"]);
    expect(c.weighers.every((w) => w.hosts.length === 5)).toBe(true);
    expect(c.chosen).toBeUndefined();
  });
});
