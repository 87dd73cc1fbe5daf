// The server group ledger's pure rules: which claims a group's policy refuses, and how the
// ledger counts instances (not allocations).
import { describe, expect, it } from "vitest";
import {
  type ClaimGroup,
  claimGroupOf,
  groupRefusal,
  type LedgerMembers,
  ledgerKey,
  withAllocation,
} from "../../../lib/placement/group-claims.js";

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
