// novaless-plan's scenarios: validation with JSON paths, conversion to host states and request
// specs in Nova's vocabulary, runs in order, and the example scenarios shipped in examples/.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SCHEDULER_DEFAULTS } from "../../../lib/config.js";
import { hostStateOf } from "../../../lib/scheduler/host-state.js";
import {
  type PlannedDecision,
  prepareScenario,
  runScenario,
  type Scenario,
} from "../../../lib/scheduler/scenario.js";

const host = (name: string, extra: Record<string, unknown> = {}) => ({
  host: name,
  vcpus: 16,
  memory_mb: 65536,
  local_gb: 1000,
  ...extra,
});
const small = { name: "m1.small", vcpus: 1, memory_mb: 2048, root_gb: 20 };

function prepared(s: unknown) {
  const r = prepareScenario(s);
  if (!r.ok) throw new Error(r.errors.join("; "));
  return r.value;
}

describe("prepareScenario: validation", () => {
  it.each([
    ["no hosts", { request: { flavor: small } }, "hosts: "],
    ["no request", { hosts: [host("h1")] }, "(scenario): a scenario needs `request` or `requests`"],
    [
      "a host without vcpus",
      { hosts: [{ host: "h1", memory_mb: 1, local_gb: 1 }], request: { flavor: small } },
      "hosts.0.vcpus: ",
    ],
    [
      "a flavor with text for a number",
      { hosts: [host("h1")], requests: [{ flavor: { ...small, vcpus: "2" } }] },
      "requests.0.flavor.vcpus: ",
    ],
    [
      "an unknown group policy",
      { hosts: [host("h1")], request: { flavor: small, instance_group: { policy: "spread" } } },
      "request.instance_group.policy: ",
    ],
    [
      "an aggregate naming no host",
      { hosts: [host("h1")], aggregates: [{ name: "a", hosts: ["h9"] }], request: { flavor: small } },
      "aggregates.0.hosts: no host named h9",
    ],
    [
      "a host naming no aggregate",
      { hosts: [host("h1", { aggregates: ["nope"] })], request: { flavor: small } },
      "hosts.0.aggregates: no aggregate named nope",
    ],
    [
      "an invalid option value",
      { config: { scheduler: { max_attempts: "many" } }, hosts: [host("h1")], request: { flavor: small } },
      "config.scheduler.max_attempts: is not a number",
    ],
    [
      "an option below its minimum",
      {
        config: { filter_scheduler: { host_subset_size: 0 } },
        hosts: [host("h1")],
        request: { flavor: small },
      },
      "config.filter_scheduler.host_subset_size: is below its minimum 1",
    ],
  ])("rejects %s", (_name, scenario, error) => {
    const r = prepareScenario(scenario);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors.some((e) => e.startsWith(error))).toBe(true);
  });

  it("ignores unknown keys, and warns of options it does not read", () => {
    const p = prepared({
      comment: "anything",
      config: {
        filter_scheduler: { ram_weight_multiplier: "-1.0", pci_weight_multiplier: 2 },
        DEFAULT: { debug: true },
      },
      hosts: [host("h1", { color: "blue" })],
      request: { flavor: { ...small, flavorid: 9 }, os_hints: 1 },
    });
    expect(p.config.ram_weight_multiplier).toBe(-1);
    expect(p.warnings).toEqual([
      "config.filter_scheduler.pci_weight_multiplier: not an option this scheduler reads; ignored",
      "config.DEFAULT.debug: not an option this scheduler reads; ignored",
    ]);
  });

  it("reads options as JSON or as nova.conf text", () => {
    const p = prepared({
      config: {
        filter_scheduler: {
          enabled_filters: "ComputeFilter, JsonFilter",
          shuffle_best_same_weighed_hosts: "True",
        },
        metrics: { weight_setting: ["cpu=1.0"], required: false },
        DEFAULT: { cpu_allocation_ratio: 4 },
      },
      hosts: [host("h1")],
      request: { flavor: small },
    });
    expect(p.config.enabled_filters).toEqual(["ComputeFilter", "JsonFilter"]);
    expect(p.config.shuffle_best_same_weighed_hosts).toBe(true);
    expect(p.config.metrics_weight_setting).toEqual(["cpu=1.0"]);
    expect(p.config.metrics_required).toBe(false);
    expect(p.hosts[0]!.resources.VCPU!.capacity).toBe(64);
  });
});

describe("prepareScenario: hosts", () => {
  it("builds Placement's inventories from Nova's compute node fields and defaults", () => {
    const [h] = prepared({
      hosts: [
        host("h1", { vcpus_used: 10, memory_mb_used: 4096, local_gb_used: 100, reserved_host_disk_mb: 1500 }),
      ],
      request: { flavor: small },
    }).hosts;
    expect(h!.resources).toEqual({
      VCPU: { capacity: 256, used: 10, min_unit: 1, max_unit: 16, step_size: 1 },
      MEMORY_MB: {
        capacity: Math.floor((65536 - 512) * 1.5),
        used: 4096,
        min_unit: 1,
        max_unit: 65536,
        step_size: 1,
      },
      DISK_GB: { capacity: 998, used: 100, min_unit: 1, max_unit: 1000, step_size: 1 },
    });
    expect(h!.free_ram_mb).toBe(65536 - 512 - 4096);
    expect(h!.free_disk_mb).toBe((1000 - 2 - 100) * 1024);
    expect(h!.nodename).toBe("h1");
    expect(h!.supported_instances).toEqual([["x86_64", "qemu", "hvm"]]);
  });

  it("puts a host in its aggregates' zone, else the zone it names, else the default", () => {
    const p = prepared({
      aggregates: [
        { name: "a1", hosts: ["h1"], metadata: { availability_zone: "az1" } },
        { name: "b", availability_zone: "az9" },
      ],
      hosts: [
        host("h1", { availability_zone: "az2" }),
        host("h2", { availability_zone: "az2" }),
        host("h3"),
        host("h4", { aggregates: ["b"] }),
      ],
      request: { flavor: small },
    });
    expect(p.hosts.map((h) => h.availability_zone)).toEqual(["az1", "az2", "nova", "az9"]);
  });

  it("marks a disabled host's provider COMPUTE_STATUS_DISABLED, as nova-compute does", () => {
    const [h] = prepared({
      hosts: [host("h1", { traits: ["HW_X"], service: { disabled: true } })],
      request: { flavor: small },
    }).hosts;
    expect(h!.traits).toEqual(["HW_X", "COMPUTE_STATUS_DISABLED"]);
  });
});

describe("prepareScenario: requests", () => {
  it("splits az:host:node as the API does, and adds new instances to their group", () => {
    const p = prepared({
      hosts: [host("h1")],
      request: {
        flavor: small,
        availability_zone: "az1:h1:h1",
        num_instances: 2,
        instance_group: { policy: "anti-affinity", members: ["m1"] },
        retry: { num_attempts: 2, hosts: [["h2", "h2"], "h3"] },
      },
    });
    const [q] = p.requests;
    expect(q!.spec.availability_zone).toBe("az1");
    expect(q!.spec.force_hosts).toEqual(["h1"]);
    expect(q!.spec.force_nodes).toEqual(["h1"]);
    expect(q!.instance_uuids).toHaveLength(2);
    expect(q!.spec.instance_group!.members).toEqual(["m1", ...q!.instance_uuids]);
    expect(q!.exclude_hosts).toEqual(["h2", "h3"]);
  });
});

describe("runScenario", () => {
  const scenario = (requests: Scenario["requests"], hosts = [host("h1"), host("h2")]) => ({
    config: { filter_scheduler: { enabled_filters: ["ComputeFilter"], weight_classes: ["RAMWeigher"] } },
    hosts,
    requests,
  });

  it("runs requests in order, each consuming what it placed", () => {
    const out = runScenario(
      prepared(
        scenario([{ flavor: { ...small, memory_mb: 40000 } }, { flavor: { ...small, memory_mb: 40000 } }]),
      ),
    );
    expect(out.requests.map((r) => r.selections?.[0]?.[0]?.host)).toEqual(["h1", "h2"]);
  });

  it("an all-or-nothing request that fails consumes nothing", () => {
    const big = { ...small, memory_mb: 60000 };
    const out = runScenario(
      prepared(
        scenario([
          { flavor: big, num_instances: 3 },
          { flavor: big, num_instances: 2 },
        ]),
      ),
    );
    expect(out.requests[0]!.no_valid_host).toMatch(
      /^0\/2 hosts are available for instance 3 of 3: 2 lacked MEMORY_MB/,
    );
    expect(out.requests[1]!.selections?.map((s) => s[0]!.host)).toEqual(["h1", "h2"]);
  });

  it("weighs free RAM as Nova does (total − reserved − used, reserved once): a near-tie goes its way", () => {
    // Nova: free_ram_mb = memory_mb − memory_mb_used, where memory_mb_used counts the reserved
    // memory and the instances'. h1: 16384 − (0 + 5120) = 11264; h2: 16384 − (1024 + 4090) = 11270.
    // Counting h2's reserved memory twice would put it at 10246 and h1 first.
    const out = runScenario(
      prepared(
        scenario(
          [{ flavor: small }],
          [
            host("h1", { memory_mb: 16384, memory_mb_used: 5120, reserved_host_memory_mb: 0 }),
            host("h2", { memory_mb: 16384, memory_mb_used: 4090, reserved_host_memory_mb: 1024 }),
          ],
        ),
      ),
    );
    const d = out.requests[0]!.decisions[0] as PlannedDecision;
    expect(d.weighers[0]!.hosts.map((h) => [h.host, h.raw])).toEqual([
      ["h2", 11270],
      ["h1", 11264],
    ]);
    expect(d.chosen?.host).toBe("h2");
  });

  it("builds a host as the scheduler Lambda does: one HostState builder from the same provider", () => {
    const [fromPlan] = prepared({
      hosts: [host("h1", { memory_mb: 16384, memory_mb_used: 4090, reserved_host_memory_mb: 1024 })],
      request: { flavor: small },
    }).hosts;
    const inv = (total: number, reserved: number, allocation_ratio: number) => ({
      total,
      reserved,
      allocation_ratio,
      min_unit: 1,
      max_unit: total,
      step_size: 1,
    });
    const fromProvider = hostStateOf(
      {
        host: "h1",
        node: "h1",
        inventories: {
          VCPU: inv(16, 0, 16),
          MEMORY_MB: inv(16384, 1024, 1.5),
          DISK_GB: inv(1000, 0, 1),
        },
        usage: { VCPU: 0, MEMORY_MB: 4090, DISK_GB: 0 },
        num_instances: 0,
        num_io_ops: 0,
        traits: [],
        service: { disabled: false, disabled_reason: null, forced_down: false, up: true },
        hypervisor_type: "QEMU",
        hypervisor_version: 0,
        host_ip: "",
        supported_instances: [["x86_64", "qemu", "hvm"]],
        stats: { failed_builds: 0 },
      },
      [],
      SCHEDULER_DEFAULTS,
    );
    expect(fromPlan).toEqual(fromProvider);
    expect(fromPlan!.free_ram_mb).toBe(16384 - 1024 - 4090);
  });

  it("prints every stage with each rejected host's reason, and each weigher's values", () => {
    const out = runScenario(
      prepared(
        scenario(
          [{ flavor: small }],
          [host("h1"), host("h2", { memory_mb_used: 65000 }), host("h3", { service: { up: false } })],
        ),
      ),
    );
    const d = out.requests[0]!.decisions[0] as PlannedDecision;
    expect(d.filter_trace.map((s) => [s.stage, s.hosts_in, s.hosts_passed])).toEqual([
      ["placement", 3, 3],
      ["ComputeFilter", 3, 2],
    ]);
    expect(d.filter_trace[1]!.rejected[0]).toMatchObject({
      host: "h3",
      reason: "compute service has not been heard from in 120s",
    });
    expect(d.filtered_hosts).toEqual(["h1", "h2"]);
    expect(d.weighers[0]!.hosts.map((h) => [h.host, h.raw, h.normalized, h.multiplier])).toEqual([
      ["h1", 65024, 1, 1],
      ["h2", 24, 24 / 65024, 1],
    ]);
    expect(d.chosen).toEqual({ host: "h1", nodename: "h1" });
  });
});

describe("the example scenarios", () => {
  const run = (name: string) => {
    const r = prepareScenario(
      JSON.parse(readFileSync(new URL(`../../../examples/${name}.json`, import.meta.url), "utf8")),
    );
    if (!r.ok) throw new Error(r.errors.join("; "));
    expect(r.value.warnings).toEqual([]);
    return runScenario(r.value);
  };
  const chosen = (out: ReturnType<typeof run>) =>
    out.requests.map((r) => r.selections?.map((s) => s[0]!.host));

  it("basic: spreads by the weighers, then honours a zone", () => {
    const out = run("basic");
    expect(chosen(out)).toEqual([["host-1"], ["host-4"]]);
    expect(out.requests[0]!.selections![0]!.map((s) => s.host)).toEqual(["host-1", "host-2", "host-4"]);
    expect(out.requests[1]!.decisions[0]!.summary).toBe(
      "host-4 chosen among 1 of 4 hosts: the only host left; 3 rejected: 2 are not in availability zone az2, 1 is disabled.",
    );
  });

  it("anti-affinity: one member per host across a multi-create, then max_server_per_host 2", () => {
    expect(chosen(run("anti-affinity"))).toEqual([
      ["host-2", "host-3", "host-4"],
      ["host-1", "host-1"],
    ]);
  });

  it("no-valid-host: the operator's summary", () => {
    expect(run("no-valid-host").requests[0]!.no_valid_host).toBe(
      "0/4 hosts are available: 2 lacked MEMORY_MB (needs 16384 MB, largest free 15616 MB), 1 is not in availability zone az1, 1 is down.",
    );
  });

  it("aggregates: extra specs, tenants, per-aggregate multipliers, JsonFilter and a forced host", () => {
    const out = run("aggregates");
    expect(chosen(out)).toEqual([["host-2"], ["host-3"], ["host-4"]]);
    expect(out.requests[2]!.decisions[0]!.summary).toBe(
      "host-4 chosen among 1 of 4 hosts: the only host left; 3 rejected: 3 are not in force_hosts.",
    );
  });
});
