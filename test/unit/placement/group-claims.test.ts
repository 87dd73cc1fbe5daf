// The server group ledger's pure rules: which claims a group's policy refuses, and how the
// ledger counts instances (not allocations).
import { describe, expect, it } from "vitest";
import { countedByAllocations, ledgerDrift } from "../../../lib/placement/audit-groups.js";
import {
  type ClaimGroup,
  claimGroupOf,
  groupRefusal,
  type LedgerMembers,
  ledgerKey,
  withAllocation,
} from "../../../lib/placement/group-claims.js";
import type { AllocationRecord } from "../../../lib/placement/types.js";

const anti = (max?: number): ClaimGroup => ({
  id: "g1",
  policy: "anti-affinity",
  ...(max !== undefined ? { max_server_per_host: max } : {}),
});
const aff: ClaimGroup = { id: "g2", policy: "affinity" };

describe("claimGroupOf", () => {
  it("keeps affinity and anti-affinity with their rule; soft policies and no group have no late check", () => {
    expect(claimGroupOf({ uuid: "g", policy: "anti-affinity", rules: { max_server_per_host: 2 } })).toEqual({
      id: "g",
      policy: "anti-affinity",
      max_server_per_host: 2,
    });
    expect(claimGroupOf({ id: "g", policy: "affinity", rules: {} })).toEqual({ id: "g", policy: "affinity" });
    expect(claimGroupOf({ uuid: "g", policy: "soft-anti-affinity", rules: {} })).toBeUndefined();
    expect(claimGroupOf({ uuid: "g", policy: "soft-affinity", rules: {} })).toBeUndefined();
    expect(claimGroupOf({ policy: "affinity", rules: {} })).toBeUndefined();
    expect(claimGroupOf(undefined)).toBeUndefined();
  });
});

describe("ledgerKey", () => {
  it("anti-affinity per (group, host), affinity per group; never under a server group's own prefix", () => {
    expect(ledgerKey(anti(), "h1")).toBe("server_group_ledger#g1#h1");
    expect(ledgerKey(aff, "h1")).toBe(ledgerKey(aff, "h2"));
    expect(ledgerKey(aff, "h1").startsWith("server_group#")).toBe(false);
  });
});

describe("withAllocation", () => {
  it("counts allocations per instance and host, and drops what reaches zero", () => {
    let m: LedgerMembers = {};
    m = withAllocation(m, "vm-1", "h1", 1);
    m = withAllocation(m, "vm-1", "h1", 1);
    m = withAllocation(m, "vm-1", "h2", 1);
    expect(m).toEqual({ "vm-1": { h1: 2, h2: 1 } });
    m = withAllocation(m, "vm-1", "h1", -1);
    m = withAllocation(m, "vm-1", "h2", -1);
    expect(m).toEqual({ "vm-1": { h1: 1 } });
    m = withAllocation(m, "vm-1", "h1", -1);
    expect(m).toEqual({});
    // a release the ledger never counted leaves it as it was
    expect(withAllocation({}, "vm-9", "h1", -1)).toEqual({});
  });

  it("does not change the ledger it was given", () => {
    const m: LedgerMembers = { "vm-1": { h1: 1 } };
    withAllocation(m, "vm-1", "h1", 1);
    expect(m).toEqual({ "vm-1": { h1: 1 } });
  });
});

describe("groupRefusal: anti-affinity", () => {
  it("refuses a host with max_server_per_host other members, naming the group, the host and the count", () => {
    const m: LedgerMembers = { "vm-1": { h1: 1 } };
    expect(groupRefusal(anti(), m, "vm-2", "h1")).toBe(
      "server group g1 policy anti-affinity: host h1 already runs 1 of its members (max_server_per_host 1)",
    );
    expect(groupRefusal(anti(2), m, "vm-2", "h1")).toBeUndefined();
    expect(groupRefusal(anti(2), { ...m, "vm-3": { h1: 1 } }, "vm-2", "h1")).toMatch(/already runs 2/);
  });

  it("counts instances, not allocations: the instance itself (a same-host resize, its migration's allocation) is not another member", () => {
    // vm-1 holds two allocations on h1: the migration's (the source) and its own (the resize)
    const m: LedgerMembers = { "vm-1": { h1: 2 } };
    expect(groupRefusal(anti(), m, "vm-1", "h1")).toBeUndefined();
    expect(groupRefusal(anti(2), { ...m, "vm-2": { h1: 1 } }, "vm-3", "h1")).toMatch(/already runs 2/);
  });
});

describe("groupRefusal: affinity", () => {
  it("anywhere while no other member runs; then only where they run", () => {
    expect(groupRefusal(aff, {}, "vm-1", "h1")).toBeUndefined();
    const m: LedgerMembers = { "vm-1": { h1: 1 } };
    expect(groupRefusal(aff, m, "vm-2", "h1")).toBeUndefined();
    expect(groupRefusal(aff, m, "vm-2", "h2")).toBe(
      "server group g2 policy affinity: its members run on h1, not on h2",
    );
  });

  it("the only member may move (Nova excludes the instance itself), and is counted on both hosts meanwhile", () => {
    const moving = withAllocation({ "vm-1": { h1: 1 } }, "vm-1", "h2", 1);
    expect(groupRefusal(aff, { "vm-1": { h1: 1 } }, "vm-1", "h2")).toBeUndefined();
    // while it is on both, another member fits neither alone
    expect(groupRefusal(aff, moving, "vm-2", "h1")).toMatch(/run on h2, not on h1/);
    expect(groupRefusal(aff, moving, "vm-2", "h3")).toMatch(/run on h1, h2, not on h3/);
  });
});

describe("the audit's ledger check (pure)", () => {
  const alloc = (consumer: string, host: string, instance = consumer): AllocationRecord => ({
    consumer,
    host,
    attempt: 0,
    resources: { VCPU: 1 },
    claimed_at: "2026-01-01T00:00:00.000Z",
    group: { id: "g1", policy: "anti-affinity", instance },
  });

  it("counts a migration consumer's allocation as its instance's", () => {
    const counted = countedByAllocations([
      alloc("vm-1", "h1"),
      alloc("mig-1", "h1", "vm-1"),
      alloc("vm-2", "h2"),
      { ...alloc("vm-3", "h1"), group: undefined },
    ]);
    expect(Object.fromEntries(counted)).toEqual({
      "server_group_ledger#g1#h1": { "vm-1": { h1: 2 } },
      "server_group_ledger#g1#h2": { "vm-2": { h2: 1 } },
    });
  });

  it("an entry with no allocation behind it is a finding, and the fix drops it; a matching ledger is none", () => {
    const pk = "server_group_ledger#g1#h1";
    const { findings, fixed } = ledgerDrift(
      { pk, members: { "vm-1": { h1: 1 }, "vm-ghost": { h1: 1 } } },
      {
        "vm-1": { h1: 1 },
      },
    );
    expect(findings).toEqual([
      {
        kind: "group_ledger_mismatch",
        host: "h1",
        consumer: "vm-ghost",
        detail: "server group g1 counts instance vm-ghost on h1 (1) with no allocation behind it",
      },
    ]);
    expect(fixed).toEqual({ "vm-1": { h1: 1 } });
    expect(ledgerDrift({ pk, members: fixed }, { "vm-1": { h1: 1 } }).findings).toEqual([]);
  });

  it("an allocation the ledger does not count is a finding too; hosts not audited are left alone", () => {
    const pk = "server_group_ledger#g2";
    const drift = ledgerDrift(
      { pk, members: { "vm-1": { h1: 1, h9: 1 } } },
      { "vm-1": { h1: 2 } },
      new Set(["h1"]),
    );
    expect(drift.findings.map((f) => f.detail)).toEqual([
      "server group g2 counts 1 allocation(s) of instance vm-1 on h1, the allocations say 2",
    ]);
    expect(drift.fixed).toEqual({ "vm-1": { h1: 2, h9: 1 } });
  });
});
