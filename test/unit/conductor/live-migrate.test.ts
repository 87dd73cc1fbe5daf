// The pure parts of a live migration: Nova's LiveMigrationTask checks, the refusal's fault as the
// conductor records it, os-migrateLive's schema per microversion, and libvirt's job progress.
import { describe, expect, it } from "vitest";
import { parseLiveMigrateBody } from "../../../lib/api/validation/live-migrate.js";
import { jobProgress } from "../../../lib/compute/drivers/libvirt.js";
import {
  hypervisorMismatch,
  LiveMigrationRefused,
  liveMigrationPrecheck,
  liveRefusalFault,
} from "../../../lib/conductor/live-migrate.js";
import type { HostRecord } from "../../../lib/placement/types.js";
import { record } from "../api/records.js";

const ID = "6f1c2d3e-0000-4000-8000-000000000001";

function host(name: string, over: Partial<HostRecord> = {}): HostRecord {
  return {
    host: name,
    hypervisor_type: "fake",
    hypervisor_version: 1000,
    hypervisor_facts: { live_migration: true },
    free: { MEMORY_MB: 4096 },
    service: { forced_down: false, deleted_at: null },
    ...over,
  } as unknown as HostRecord;
}

const server = record({ id: ID, vm_state: "active", power_state: 1, host: "host-1" });
const move = { source_host: "host-1", requested_host: null, force: false };

describe("liveMigrationPrecheck (Nova's LiveMigrationTask checks)", () => {
  it("passes a running guest on an up host whose driver can move it", () => {
    expect(liveMigrationPrecheck(server, move, host("host-1"), undefined)).toBeUndefined();
    // paused counts as running (Nova's check); shut down is InstanceInvalidState, a 409
    expect(
      liveMigrationPrecheck({ ...server, power_state: 3 }, move, host("host-1"), undefined),
    ).toBeUndefined();
    expect(liveMigrationPrecheck({ ...server, power_state: 4 }, move, host("host-1"), undefined)).toEqual({
      code: 409,
      message: `Cannot 'os-migrateLive' instance ${ID} while it is in power_state shutdown`,
    });
  });

  it("refuses a source that is down, or whose driver cannot (exec)", () => {
    const down = host("host-1", { service: { forced_down: true } } as Partial<HostRecord>);
    expect(liveMigrationPrecheck(server, move, down, undefined)?.message).toBe(
      "Compute service of host-1 is unavailable at this time.",
    );
    const exec = host("host-1", {
      hypervisor_facts: { live_migration: false, live_migration_unsupported: "a process cannot move live" },
    });
    expect(liveMigrationPrecheck(server, move, exec, undefined)).toEqual({
      code: 400,
      message: "Migration pre-check error: host host-1 cannot live-migrate: a process cannot move live",
    });
  });

  it("checks a forced host as Nova does without the scheduler", () => {
    const forced = (dest: HostRecord | undefined, to = "host-2") =>
      liveMigrationPrecheck(server, { ...move, requested_host: to, force: true }, host("host-1"), dest);
    expect(forced(host("host-2"))).toBeUndefined();
    expect(forced(host("host-1"), "host-1")?.message).toBe(
      `Unable to migrate instance (${ID}) to current host (host-1).`,
    );
    expect(forced(undefined)?.message).toBe("Compute host host-2 could not be found.");
    expect(forced(host("host-2", { free: { MEMORY_MB: 256 } }))?.message).toBe(
      `Migration pre-check error: Unable to migrate ${ID} to host-2: Lack of memory(host:256 <= instance:${server.flavor.memory_mb})`,
    );
    expect(forced(host("host-2", { hypervisor_type: "QEMU" }))?.message).toBe(
      "The supplied hypervisor type of is invalid.",
    );
    expect(forced(host("host-2", { hypervisor_version: 999 }))?.message).toBe(
      "The instance requires a newer hypervisor version than has been provided.",
    );
    // a requested host that is not forced goes to the scheduler (only "not itself" is checked here)
    expect(
      liveMigrationPrecheck(server, { ...move, requested_host: "host-2" }, host("host-1"), undefined),
    ).toBeUndefined();
  });

  it("hypervisorMismatch compares types case-insensitively and versions upward only", () => {
    expect(
      hypervisorMismatch(host("a", { hypervisor_type: "QEMU" }), host("b", { hypervisor_type: "qemu" })),
    ).toBe(undefined);
    expect(hypervisorMismatch(host("a"), host("b", { hypervisor_version: 2000 }))).toBeUndefined();
  });
});

describe("a refusal through the state machine", () => {
  it("carries the API's status in its name, and becomes the move's fault", () => {
    const e = new LiveMigrationRefused({ code: 409, message: "no" });
    expect(e.name).toBe("LiveMigrationConflict");
    expect(liveRefusalFault(e.name, e.message)).toMatchObject({ code: 409, message: "no", details: "no" });
    expect(liveRefusalFault("LiveMigrationRefused", "x")?.code).toBe(400);
    expect(liveRefusalFault("States.TaskFailed", "x")).toBeUndefined();
  });

  it("is select_destinations' answer, not a function error: nothing scheduled, the name and the text", () => {
    expect(new LiveMigrationRefused({ code: 409, message: "no" }).answer()).toEqual({
      hosts: [],
      selections: [],
      refused: { error: "LiveMigrationConflict", message: "no" },
    });
    expect(new LiveMigrationRefused({ code: 400, message: "x" }).answer().refused.error).toBe(
      "LiveMigrationRefused",
    );
  });
});

describe("os-migrateLive's schema (Nova's schemas/migrate_server.py)", () => {
  const at = (v: string) => ({ atLeast: (w: string) => Number(w.split(".")[1]) <= Number(v.split(".")[1]) });
  const status = (f: () => unknown) => {
    try {
      f();
      return 200;
    } catch (e) {
      return (e as { status?: number }).status ?? 500;
    }
  };

  it("needs block_migration, disk_over_commit and host before 2.25", () => {
    expect(
      parseLiveMigrateBody({ block_migration: "true", disk_over_commit: false, host: null }, at("2.1")),
    ).toEqual({ host: null, blockMigration: true, force: false });
    expect(status(() => parseLiveMigrateBody({ block_migration: false, host: null }, at("2.1")))).toBe(400);
    expect(
      status(() =>
        parseLiveMigrateBody({ block_migration: "auto", disk_over_commit: false, host: null }, at("2.24")),
      ),
    ).toBe(400);
  });

  it("takes auto from 2.25, force from 2.30 to 2.67", () => {
    // before 2.30 a host is forced (Nova's force None); from 2.30 the scheduler checks it
    expect(parseLiveMigrateBody({ block_migration: "auto", host: "h" }, at("2.25"))).toEqual({
      host: "h",
      blockMigration: null,
      force: true,
    });
    expect(parseLiveMigrateBody({ block_migration: "auto", host: "h" }, at("2.30")).force).toBe(false);
    expect(parseLiveMigrateBody({ block_migration: "auto", host: "h" }, at("2.68")).force).toBe(false);
    expect(parseLiveMigrateBody({ block_migration: "auto", host: null }, at("2.25")).force).toBe(false);
    expect(
      status(() => parseLiveMigrateBody({ block_migration: "auto", host: "h", force: true }, at("2.29"))),
    ).toBe(400);
    expect(parseLiveMigrateBody({ block_migration: "auto", host: "h", force: true }, at("2.30")).force).toBe(
      true,
    );
    expect(
      status(() => parseLiveMigrateBody({ block_migration: "auto", host: null, force: true }, at("2.30"))),
    ).toBe(400);
    expect(
      status(() => parseLiveMigrateBody({ block_migration: "auto", host: "h", force: true }, at("2.68"))),
    ).toBe(400);
    expect(
      status(() =>
        parseLiveMigrateBody({ block_migration: "auto", host: "h", disk_over_commit: true }, at("2.25")),
      ),
    ).toBe(400);
  });
});

describe("libvirt's job progress", () => {
  it("reads virsh domjobinfo's memory lines as bytes", () => {
    const out = [
      "Job type:         Unbounded",
      "Memory processed: 256.000 MiB",
      "Memory remaining: 768.000 MiB",
      "Memory total:     1.000 GiB",
    ].join("\n");
    expect(jobProgress(out)).toEqual({
      memory_total_bytes: 2 ** 30,
      memory_processed_bytes: 256 * 2 ** 20,
      memory_remaining_bytes: 768 * 2 ** 20,
    });
    expect(jobProgress("Job type: None")).toBeUndefined();
    // a block migration's disk copy, before its memory: zeros, as Nova reads it
    expect(jobProgress("Job type:         Unbounded\nOperation:        Outgoing migration")).toEqual({
      memory_total_bytes: 0,
      memory_processed_bytes: 0,
      memory_remaining_bytes: 0,
    });
  });
});
