// The pure rules of the deferred delete (reclaim_instance_interval): which delete is deferred, who
// counts in the quota (Nova's count leaves SOFT_DELETED servers out; a restore counts from its
// accept), when a reclaim is due (Nova's _deleted_old_enough), what the views call terminated,
// and the listing's `soft_deleted` as Nova's admins pass it.
import { describe, expect, it } from "vitest";
import type { AuthContext } from "../../../lib/api/auth.js";
import { parseServerListQuery } from "../../../lib/api/validation/server-list.js";
import { serverStatus, vmStatesShowing } from "../../../lib/api/views/servers.js";
import { countsInQuota } from "../../../lib/instances/quota-release.js";
import { defersDelete, reclaimDue, terminatedAt } from "../../../lib/instances/soft-delete.js";
import type { InstanceRecord } from "../../../lib/instances/types.js";
import { record } from "../api/records.js";

const launched = (over: Partial<InstanceRecord> = {}) =>
  record({
    vm_state: "active",
    task_state: null,
    host: "cmp-1",
    launched_at: "2026-03-01T12:00:05.000Z",
    ...over,
  });

describe("which delete is deferred", () => {
  it("a launched server on a host, with no task and no move: active, stopped, paused, suspended, error, shelved, and a SOFT_DELETED one again", () => {
    for (const vm of ["active", "stopped", "paused", "suspended", "error", "shelved", "soft-delete"] as const)
      expect(defersDelete(launched({ vm_state: vm })), vm).toBe(true);
  });

  it("not a server never launched, nor one SHELVED_OFFLOADED or on no host (Nova's local delete)", () => {
    expect(defersDelete(launched({ vm_state: "building", task_state: "spawning", launched_at: null }))).toBe(
      false,
    );
    expect(defersDelete(launched({ vm_state: "error", launched_at: null }))).toBe(false);
    expect(defersDelete(launched({ vm_state: "shelved_offloaded", host: null }))).toBe(false);
    expect(defersDelete(launched({ host: null }))).toBe(false);
  });

  it("not a server in a task or a move (deleted at once through the one delete path), nor one in VERIFY_RESIZE", () => {
    expect(defersDelete(launched({ task_state: "powering-off" }))).toBe(false);
    expect(defersDelete(launched({ vm_state: "soft-delete", task_state: "restoring" }))).toBe(false);
    expect(defersDelete(launched({ vm_state: "resized" }))).toBe(false);
    expect(defersDelete(launched({ migration: { uuid: "m" } as InstanceRecord["migration"] }))).toBe(false);
  });
});

describe("who counts in the quota", () => {
  it("every live server but a SOFT_DELETED one; one being restored counts (its usage taken at the accept)", () => {
    expect(countsInQuota(launched())).toBe(true);
    expect(countsInQuota(launched({ task_state: "soft-deleting" }))).toBe(true);
    expect(countsInQuota(launched({ vm_state: "soft-delete" }))).toBe(false);
    expect(countsInQuota(launched({ vm_state: "soft-delete", task_state: "soft-deleting" }))).toBe(false);
    expect(countsInQuota(launched({ vm_state: "soft-delete", task_state: "restoring" }))).toBe(true);
    expect(countsInQuota(launched({ vm_state: "deleted", deleted: true }))).toBe(false);
  });
});

describe("the reclaim", () => {
  const at = "2026-03-01T13:00:00.000Z";
  const soft = launched({ vm_state: "soft-delete", deleted_at: at });
  it("is due once deleted_at + the interval has passed, not before", () => {
    expect(reclaimDue(soft, 60, new Date("2026-03-01T13:00:59.999Z"))).toBe(false);
    expect(reclaimDue(soft, 60, new Date("2026-03-01T13:01:00.000Z"))).toBe(true);
  });

  it("waits for a task to end, and takes only SOFT_DELETED live servers (Nova: no deleted_at is old enough)", () => {
    const later = new Date("2026-03-02T00:00:00.000Z");
    expect(reclaimDue({ ...soft, task_state: "restoring" }, 60, later)).toBe(false);
    expect(reclaimDue({ ...soft, vm_state: "active" }, 60, later)).toBe(false);
    expect(reclaimDue({ ...soft, deleted: true }, 60, later)).toBe(false);
    expect(reclaimDue({ ...soft, deleted_at: null }, 60, later)).toBe(true);
  });
});

describe("the views", () => {
  it("SOFT_DELETED is the status of vm_state soft-delete, and the status filter's partition", () => {
    expect(serverStatus({ vm_state: "soft-delete", task_state: null })).toBe("SOFT_DELETED");
    expect(serverStatus({ vm_state: "soft-delete", task_state: "restoring" })).toBe("SOFT_DELETED");
    // Nova's _STATE_MAP: a server being soft-deleted shows its vm_state's status until it is done
    expect(serverStatus({ vm_state: "active", task_state: "soft-deleting" })).toBe("ACTIVE");
    expect(vmStatesShowing("SOFT_DELETED")).toEqual(["soft-delete"]);
  });

  it("a SOFT_DELETED server is not terminated (Nova's terminated_at), a deleted one is", () => {
    expect(terminatedAt(launched({ vm_state: "soft-delete", deleted_at: "2026-03-01T13:00:00Z" }))).toBe(
      null,
    );
    expect(
      terminatedAt(launched({ vm_state: "deleted", deleted: true, deleted_at: "2026-03-01T13:00:00Z" })),
    ).toBe("2026-03-01T13:00:00Z");
  });
});

describe("the listing's soft_deleted", () => {
  const admin: AuthContext = { user_id: "admin", project_id: "admin", roles: ["admin"], isAdmin: true };
  const member: AuthContext = { user_id: "demo", project_id: "demo", roles: ["member"], isAdmin: false };
  it("admins only, and any value but an empty one is true (Nova hands the string to its database filter)", () => {
    expect(parseServerListQuery({ soft_deleted: ["true"] }, admin, true).softDeleted).toBe(true);
    expect(parseServerListQuery({ soft_deleted: ["false"] }, admin, true).softDeleted).toBe(true);
    expect(parseServerListQuery({ soft_deleted: [""] }, admin, true).softDeleted).toBe(false);
    expect(parseServerListQuery({}, admin, true).softDeleted).toBeUndefined();
    expect(parseServerListQuery({ soft_deleted: ["true"] }, member, true).softDeleted).toBeUndefined();
  });
});
