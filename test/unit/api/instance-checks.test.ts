// The API's instance guards (Nova's check_instance_lock / check_instance_state): the table's
// states as Nova's decorators declare them, the order the checks run in, and Nova's 409 texts.
import { describe, expect, it } from "vitest";
import type { AuthContext } from "../../../lib/api/auth.js";
import { ApiError } from "../../../lib/api/errors.js";
import {
  checkHosted,
  checkInstance,
  INSTANCE_CHECKS,
  instanceNotReady,
  invalidState,
  type NovaAction,
} from "../../../lib/api/routes/instance-checks.js";
import type { InstanceRecord, TaskState, VmState } from "../../../lib/instances/types.js";
import { record } from "./records.js";

const ID = "6a1f0b8e-1111-4000-8000-000000000001";
const owner: AuthContext = { user_id: "demo", project_id: "demo", roles: ["member"], isAdmin: false };
const admin: AuthContext = { user_id: "admin", project_id: "admin", roles: ["admin"], isAdmin: true };

const VM_STATES: VmState[] = [
  "building",
  "active",
  "stopped",
  "resized",
  "error",
  "deleted",
  "paused",
  "suspended",
  "shelved",
  "shelved_offloaded",
  "soft-delete",
];

const server = (over: Partial<InstanceRecord>): InstanceRecord =>
  record({ id: ID, vm_state: "active", task_state: null, host: "cmp-1", ...over });

/** The 409 `f` throws, or undefined when it passes. */
function refusal(f: () => void): { status: number; message: string } | undefined {
  try {
    f();
    return undefined;
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    return { status: e.status, message: e.message };
  }
}

const allowedVmStates = (action: NovaAction, auth = owner) =>
  VM_STATES.filter((vm) => !refusal(() => checkInstance(server({ vm_state: vm }), auth, action, action)));

describe("the check table: Nova's check_instance_state vm_states (nova/compute/api.py)", () => {
  it.each<[NovaAction, VmState[]]>([
    ["stop", ["active", "error"]],
    ["start", ["stopped"]],
    ["soft_reboot", ["active"]],
    ["hard_reboot", ["active", "stopped", "error", "paused", "suspended"]],
    ["pause", ["active"]],
    ["unpause", ["paused"]],
    ["suspend", ["active"]],
    ["resume", ["suspended"]],
    ["resize", ["active", "stopped"]],
    ["confirm_resize", ["resized"]],
    ["revert_resize", ["resized"]],
    ["evacuate", ["active", "stopped", "error"]],
    ["live_migrate", ["active", "paused"]],
    ["rebuild", ["active", "stopped", "error"]],
    ["snapshot", ["active", "stopped", "paused", "suspended"]],
    ["backup", ["active", "stopped", "paused", "suspended"]],
    ["shelve", ["active", "stopped", "paused", "suspended"]],
    ["shelve_offload", ["shelved"]],
    ["unshelve", ["shelved", "shelved_offloaded"]],
    ["trigger_crash_dump", ["active", "resized", "error", "paused"]],
    ["attach_interface", ["active", "paused", "stopped"]],
    ["detach_interface", ["active", "paused", "stopped"]],
    ["update_instance_metadata", ["active"]],
    ["delete_instance_metadata", ["active"]],
    ["server_tags", ["active", "error"]],
    ["update", VM_STATES],
    ["delete", VM_STATES],
    // deferred_delete.py: restore only a SOFT_DELETED server; force_delete any
    ["restore", ["soft-delete"]],
    ["force_delete", VM_STATES],
  ])("%s allows %j", (action, expected) => {
    expect(allowedVmStates(action)).toEqual(VM_STATES.filter((vm) => expected.includes(vm)));
  });

  it("every action of the table is pinned above or below", () => {
    const pinned = new Set([
      "stop",
      "start",
      "soft_reboot",
      "hard_reboot",
      "pause",
      "unpause",
      "suspend",
      "resume",
      "resize",
      "confirm_resize",
      "revert_resize",
      "evacuate",
      "live_migrate",
      "live_migrate_force_complete",
      "live_migrate_abort",
      "rebuild",
      "snapshot",
      "backup",
      "shelve",
      "shelve_offload",
      "unshelve",
      "trigger_crash_dump",
      "attach_interface",
      "detach_interface",
      "update_instance_metadata",
      "delete_instance_metadata",
      "server_tags",
      "update",
      "delete",
      "restore",
      "force_delete",
    ]);
    expect(new Set(Object.keys(INSTANCE_CHECKS))).toEqual(pinned);
  });
});

describe("task states", () => {
  it("an idle-only action names the task under way, None when there is none", () => {
    expect(
      refusal(() => checkInstance(server({ task_state: "rebooting" }), owner, "pause", "pause")),
    ).toEqual({
      status: 409,
      message: `Cannot 'pause' instance ${ID} while it is in task_state rebooting`,
    });
    expect(
      refusal(() => checkInstance(server({}), admin, "live_migrate_force_complete", "force_complete")),
    ).toEqual({
      status: 409,
      message: `Cannot 'force_complete' instance ${ID} while it is in task_state None`,
    });
  });

  it("a hard reboot takes over Nova's ALLOW_REBOOT tasks; a soft one waits", () => {
    for (const task of [
      "rebooting",
      "reboot_started",
      "rebooting_hard",
      "pausing",
      "resuming",
    ] as TaskState[]) {
      expect(refusal(() => checkInstance(server({ task_state: task }), owner, "hard_reboot", "reboot"))).toBe(
        undefined,
      );
      expect(
        refusal(() => checkInstance(server({ task_state: task }), owner, "soft_reboot", "reboot")),
      ).toEqual({
        status: 409,
        message: `Cannot 'reboot' instance ${ID} while it is in task_state ${task}`,
      });
    }
    expect(
      refusal(() => checkInstance(server({ task_state: "powering-off" }), owner, "hard_reboot", "reboot")),
    ).toBeDefined();
  });

  it("abort looks at the task only; metadata and tags at the vm_state only", () => {
    expect(
      refusal(() =>
        checkInstance(
          server({ vm_state: "paused", task_state: "migrating" }),
          admin,
          "live_migrate_abort",
          "x",
        ),
      ),
    ).toBe(undefined);
    expect(
      refusal(() =>
        checkInstance(
          server({ vm_state: "paused", task_state: "migrating" }),
          admin,
          "live_migrate_force_complete",
          "y",
        ),
      )?.message,
    ).toBe(`Cannot 'y' instance ${ID} while it is in vm_state paused`);
    for (const action of ["update_instance_metadata", "server_tags"] as const) {
      expect(refusal(() => checkInstance(server({ task_state: "pausing" }), owner, action, "x"))).toBe(
        undefined,
      );
    }
  });
});

describe("the order of Nova's decorators: lock, vm_state, task_state", () => {
  const locked = server({ vm_state: "shelved", task_state: "pausing", locked_by: "owner" });

  it("the lock first, for all but an admin", () => {
    expect(refusal(() => checkInstance(locked, owner, "stop", "os-stop"))).toEqual({
      status: 409,
      message: `Instance ${ID} is locked`,
    });
    expect(refusal(() => checkInstance(locked, admin, "stop", "os-stop"))?.message).toBe(
      `Cannot 'os-stop' instance ${ID} while it is in vm_state shelved`,
    );
  });

  it("no lock check where Nova has none (snapshot, backup, evacuate, tags)", () => {
    for (const action of ["snapshot", "backup", "evacuate", "server_tags"] as const) {
      expect(refusal(() => checkInstance(server({ locked_by: "admin" }), owner, action, action))).toBe(
        undefined,
      );
    }
  });

  it("the vm_state before the task_state; the 409 names the route's action", () => {
    expect(
      refusal(() => checkInstance({ ...locked, locked_by: null }, owner, "resize", "migrate"))?.message,
    ).toBe(`Cannot 'migrate' instance ${ID} while it is in vm_state shelved`);
  });
});

describe("Nova's texts", () => {
  it("InstanceNotReady, bare and with what it waited for", () => {
    expect(instanceNotReady(ID).message).toBe(`Instance ${ID} is not ready`);
    expect(instanceNotReady(ID, "its host did not answer").message).toBe(
      `Instance ${ID} is not ready: its host did not answer`,
    );
    expect(refusal(() => checkHosted(server({ host: null })))).toEqual({
      status: 409,
      message: `Instance ${ID} is not ready`,
    });
    expect(refusal(() => checkHosted(server({})))).toBe(undefined);
  });

  it("InstanceInvalidState for a power state", () => {
    expect(invalidState(ID, "get_diagnostics", "power state", "SHUTDOWN").message).toBe(
      `Cannot 'get_diagnostics' instance ${ID} while it is in power state SHUTDOWN`,
    );
  });
});
