// os-simple-tenant-usage's arithmetic, as Nova's _hours_for and summaries.
import { describe, expect, it } from "vitest";
import { parseUsageTime } from "../../../lib/api/routes/usage.js";
import { activeIn, hoursFor, novaTime, tenantUsages } from "../../../lib/api/views/usage.js";
import { record } from "../api/records.js";

const start = new Date("2026-03-01T00:00:00Z");
const stop = new Date("2026-03-02T00:00:00Z");
const now = new Date("2026-03-03T00:00:00Z");

describe("usage", () => {
  it("charges the hours run inside the period only", () => {
    const before = record({ launched_at: "2026-02-28T00:00:00Z" });
    expect(hoursFor(before, start, stop)).toBe(24);
    const deleted = record({
      launched_at: "2026-03-01T06:00:00Z",
      deleted: true,
      deleted_at: "2026-03-01T18:00:00Z",
    });
    expect(hoursFor(deleted, start, stop)).toBe(12);
    // SOFT_DELETED: not ended (Nova's terminated_at is unset), charged up to the period's end
    const soft = record({
      launched_at: "2026-03-01T06:00:00Z",
      vm_state: "soft-delete",
      deleted_at: "2026-03-01T18:00:00Z",
    });
    expect(hoursFor(soft, start, stop)).toBe(18);
    expect(hoursFor(record({ launched_at: null }), start, stop)).toBe(0);
    expect(hoursFor(record({ launched_at: "2026-03-02T01:00:00Z" }), start, stop)).toBe(0);
  });

  it("lists only instances that ran in the period: never launched (BUILD, an ERROR at build) is not, as Nova's launched_at < end", () => {
    expect(activeIn(record({ launched_at: null }), start, stop)).toBe(false);
    expect(activeIn(record({ launched_at: "2026-03-01T06:00:00Z" }), start, stop)).toBe(true);
    expect(activeIn(record({ launched_at: "2026-03-03T00:00:00Z" }), start, stop)).toBe(false);
    expect(
      activeIn(
        record({ launched_at: "2026-02-01T00:00:00Z", deleted: true, deleted_at: "2026-02-02T00:00:00Z" }),
        start,
        stop,
      ),
    ).toBe(false);
  });

  it("sums per project: hours times vcpus, memory and local disk; detailed lists the servers", () => {
    const a = record({ id: "a", project_id: "p", launched_at: "2026-03-01T12:00:00Z", vm_state: "active" });
    const b = record({
      id: "b",
      project_id: "p",
      launched_at: "2026-03-01T00:00:00Z",
      deleted: true,
      deleted_at: "2026-03-01T06:00:00Z",
    });
    const [s] = tenantUsages([a, b], { start, stop, now, detailed: true });
    expect(s).toMatchObject({
      tenant_id: "p",
      total_hours: 18,
      total_vcpus_usage: 18,
      total_memory_mb_usage: 18 * 512,
      total_local_gb_usage: 18,
      start: "2026-03-01T00:00:00.000000",
      stop: "2026-03-02T00:00:00.000000",
    });
    expect(s!.server_usages!.map((u) => [u.instance_id, u.state, u.ended_at])).toEqual([
      ["a", "active", null],
      ["b", "terminated", "2026-03-01T06:00:00.000000"],
    ]);
    expect(s!.server_usages![1]!.uptime).toBe(6 * 3600);
    expect(tenantUsages([a], { start, stop, now, detailed: false })[0]!.server_usages).toBeUndefined();
  });

  it("Nova's datetime forms; anything else is 400", () => {
    expect(novaTime(parseUsageTime("2026-03-01T10:00:00", now))).toBe("2026-03-01T10:00:00.000000");
    expect(parseUsageTime("2026-03-01 10:00:00.5", now).toISOString()).toBe("2026-03-01T10:00:00.500Z");
    expect(() => parseUsageTime("yesterday", now)).toThrow("Datetime is in invalid format");
  });
});
