// The scheduler's faster ways to the same answers: checks over many positions reading the fleet's
// columns (SimpleCIDRAffinityFilter's addresses, JsonFilter's number comparisons) decide as the
// check host by host, and a decision asked for the compact explanation only explains exactly as
// one that kept every weigher value.
import { describe, expect, it } from "vitest";
import { FILTERS } from "../../../lib/scheduler/filters/index.js";
import { ipv4Number, parseIp } from "../../../lib/scheduler/ip.js";
import { runSchedule, schedule } from "../../../lib/scheduler/select.js";
import type { HostCheck, Rejection, RequestSpec } from "../../../lib/scheduler/types.js";
import { config, fleet, host, spec } from "./fixtures.js";
import { busyConfig, REALISTIC_MIX, Rng, seeded, syntheticFleet, syntheticRequest } from "./synthetic.js";

const exact = (v: unknown) => JSON.stringify(v, (_k, x) => (Object.is(x, -0) ? "-0" : x));

/** The check's pass over every position against the check host by host: verdicts and reasons. */
function passAgreesWithCheck(check: HostCheck, f: ReturnType<typeof fleet>): number {
  expect(check.pass).toBeDefined();
  const n = f.size;
  const live = Int32Array.from({ length: n }, (_, i) => i);
  const next = new Int32Array(n);
  const rejected: [number, Rejection][] = [];
  const kept = check.pass!(live, n, next, { reject: (i, why) => rejected.push([i, why]) });
  const byCheck = f.hosts.map((h, i) => check(h, i));
  expect([...next.subarray(0, kept)]).toEqual(byCheck.flatMap((r, i) => (r === null ? [i] : [])));
  const view = (r: Rejection) => ({ summary: r.summary, reason: r.reason });
  expect(rejected.map(([i, r]) => [i, view(r)])).toEqual(
    byCheck.flatMap((r, i) => (r === null ? [] : [[i, view(r)]])),
  );
  return kept;
}

describe("ipv4Number", () => {
  it.each([
    "10.0.0.1",
    "0.0.0.0",
    "255.255.255.255",
    "256.0.0.1",
    "010.001.0.1",
    "1000.0.0.1",
    "10.0.0",
    "10.0.0.1.",
    "10..0.1",
    "10.0.0.1 ",
    "",
    "fd00::1",
    "::ffff:10.0.0.1",
    "host-1",
  ])("%s as parseIp reads it", (text) => {
    const bytes = parseIp(text);
    const expected =
      bytes?.length === 4 ? ((bytes[0]! * 256 + bytes[1]!) * 256 + bytes[2]!) * 256 + bytes[3]! : Number.NaN;
    expect(ipv4Number(text)).toBe(expected);
  });
});

describe("SimpleCIDRAffinityFilter's pass over the fleet's addresses", () => {
  const ips = [
    "10.0.0.1",
    "10.0.0.200",
    "10.0.1.2",
    "10.1.0.1",
    "010.0.0.7",
    "11.0.0.1",
    "0.0.0.0",
    "255.255.255.255",
    "fd00::abcd",
    "::ffff:10.0.0.1",
    "",
    "not-an-address",
  ];
  const f = fleet(ips.map((ip, k) => host(`h${k}`, { host_ip: ip })));
  const ctx = { index: 0, config: config(), fleet: f, instances: new Map<string, string>() };
  it.each([
    ["10.0.0.1", "/24", 3],
    ["10.0.0.1", "/16", 4],
    ["10.0.0.1", "/8", 5],
    ["10.0.0.1", "/32", 1],
    ["10.0.0.0", "/30", 1],
    ["10.0.0.1", "/0", 8],
    ["255.255.255.255", "/31", 1],
  ])("near %s%s", (near, cidr, passing) => {
    const s: RequestSpec = spec({ scheduler_hints: { build_near_host_ip: near, cidr } });
    const check = FILTERS.get("SimpleCIDRAffinityFilter")!.prepare(s, ctx)!;
    expect(passAgreesWithCheck(check, f)).toBe(passing);
  });
});

describe("JsonFilter's number comparisons on the fleet's columns", () => {
  const values = [0, 1024, 4096, 4096.5, -512, 16384];
  const f = fleet(values.map((v, k) => host(`h${k}`, { free_ram_mb: v })));
  const ctx = { index: 0, config: config(), fleet: f, instances: new Map<string, string>() };
  const verdicts = (query: string) => {
    const check = FILTERS.get("JsonFilter")!.prepare(spec({ scheduler_hints: { query } }), ctx)!;
    return f.hosts.map((h, i) => check(h, i) === null);
  };
  it.each([
    ["=", [4096], (v: number) => v === 4096],
    ["=", [4096, 4096], (v: number) => v === 4096],
    ["<", [4096], (v: number) => v < 4096],
    [">", [0, 1024], (v: number) => v > 1024],
    ["<=", [4096.5], (v: number) => v <= 4096.5],
    [">=", [1024, -1], (v: number) => v >= 1024],
    ["in", [0, 16384, 7], (v: number) => v === 0 || v === 16384],
  ])("%s %j", (op, numbers, expected) => {
    const query = JSON.stringify([op, "$free_ram_mb", ...numbers]);
    expect(verdicts(query)).toEqual(values.map(expected));
    // The same inside a compound query (where the comparison's value is an argument).
    expect(verdicts(JSON.stringify(["and", [op, "$free_ram_mb", ...numbers], true]))).toEqual(
      values.map(expected),
    );
  });

  it("a value Python cannot order makes the query invalid for that host, as before", () => {
    const g = fleet([host("a", { free_ram_mb: Number.NaN }), host("b", { free_ram_mb: 10 })]);
    const c = { ...ctx, fleet: g };
    const check = FILTERS.get("JsonFilter")!.prepare(
      spec({ scheduler_hints: { query: '[">=", "$free_ram_mb", 1]' } }),
      c,
    )!;
    expect(check(g.hosts[0]!, 0)?.reason).toMatch(/^the query is invalid for this host: cannot order/);
    expect(check(g.hosts[1]!, 1)).toBeNull();
  });
});

describe("a decision for the compact explanation only", () => {
  it("explains exactly as one keeping every weigher value, and decides alike", () => {
    const synthetic = syntheticFleet(300, 11);
    const rng = new Rng(seeded(5));
    const requests = Array.from({ length: 60 }, () => syntheticRequest(rng, synthetic, REALISTIC_MIX));
    const run = (explanation: "compact" | "detailed") => {
      const f = fleet(structuredClone(synthetic.hosts), synthetic.aggregates);
      const random = seeded(3);
      return requests.map((req) => {
        const result = runSchedule(
          schedule({
            fleet: f,
            spec: structuredClone(req.spec),
            instanceUuids: req.uuids,
            config: busyConfig(),
            random,
            excludeHosts: req.exclude,
            explanation,
          }),
        );
        return exact({
          placed: result.placements.map((p) => [p.instance_uuid, p.selected.host]),
          alternates: result.ok ? result.alternates : [],
          compact: [
            ...result.placements.map((p) => p.decision.compact({ chosen: p.selected })),
            ...(result.ok ? [] : [result.decision.compact()]),
          ],
        });
      });
    };
    expect(run("compact")).toEqual(run("detailed"));
  });

  it("keeps every value when the hosts change during the claims (a lost claim's host learnt)", () => {
    const run = (explanation: "compact" | "detailed") => {
      const f = fleet(Array.from({ length: 40 }, (_, k) => host(`h${k}`, { free_ram_mb: 1000 + k * 100 })));
      let lost = 0;
      const result = runSchedule(
        schedule({ fleet: f, spec: spec(), instanceUuids: ["i1"], config: config(), explanation }),
        (c) => {
          // The best seven refuse, and each refusal brings the host's newer state into the fleet.
          if (lost >= 7) return { claimed: true };
          lost++;
          f.update([{ ...structuredClone(c.host), free_ram_mb: 50 }]);
          return { claimed: false, reason: `${c.host.host} is full` };
        },
      );
      expect(result.ok).toBe(true);
      const p = result.placements[0]!;
      return exact(p.decision.compact({ chosen: p.selected }));
    };
    const compact = run("compact");
    expect(JSON.parse(compact).chosen.rank).toBe(7);
    expect(compact).toEqual(run("detailed"));
  });

  it("says so when asked for values it did not keep after the hosts changed", () => {
    const f = fleet(Array.from({ length: 20 }, (_, k) => host(`h${k}`, { free_ram_mb: 1000 + k * 100 })));
    const result = runSchedule(
      schedule({ fleet: f, spec: spec(), instanceUuids: ["i1"], config: config(), explanation: "compact" }),
    );
    expect(result.ok).toBe(true);
    const decision = result.placements[0]!.decision;
    // The best five and the chosen were kept before the chosen host was consumed.
    expect(decision.compact({ chosen: result.placements[0]!.selected }).order).toHaveLength(5);
    expect(() => decision.detailed()).toThrow(/were not kept and the hosts have changed since/);
  });
});

describe("ComputeCapabilitiesFilter on the fleet's classes and columns", () => {
  const hosts = [
    host("qemu-1", { hypervisor_type: "QEMU", vcpus_total: 32 }),
    host("qemu-2", { hypervisor_type: "QEMU", vcpus_total: 8 }),
    host("kvm-1", { hypervisor_type: "KVM", vcpus_total: 64 }),
    // No hypervisor_type: Nova's _get_capabilities reads the stats then, host by host.
    host("none-1", { hypervisor_type: null as unknown as string, stats: { hypervisor_type: "QEMU" } }),
    host("none-2", { hypervisor_type: null as unknown as string, stats: { hypervisor_type: "KVM" } }),
    host("none-3", { hypervisor_type: null as unknown as string }),
  ];
  const f = fleet(hosts);
  const ctx = { index: 0, config: config(), fleet: f, instances: new Map<string, string>() };
  const verdicts = (extra_specs: Record<string, string>) => {
    const s = spec();
    s.flavor = { ...s.flavor, extra_specs };
    const check = FILTERS.get("ComputeCapabilitiesFilter")!.prepare(s, ctx)!;
    return f.hosts.map((h, i) => check(h, i)?.reason ?? null);
  };
  it("a hypervisor attribute: per class where the host has it, its stats where it has none", () => {
    expect(verdicts({ "capabilities:hypervisor_type": "s== QEMU" })).toEqual([
      null,
      null,
      "capability hypervisor_type is KVM, not s== QEMU",
      null,
      "capability hypervisor_type is KVM, not s== QEMU",
      "host has no capability hypervisor_type",
    ]);
  });
  it("a number attribute from its column", () => {
    expect(verdicts({ "capabilities:vcpus_total": ">= 32" }).map((r) => r === null)).toEqual([
      true,
      false,
      true,
      false,
      false,
      false,
    ]);
  });
});
