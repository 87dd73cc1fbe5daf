// Nova's _sync_instance_power_state as a table (nova/compute/manager.py): what the control plane
// does for each vm_state and the power state a host reports.
import { describe, expect, it } from "vitest";
import { actionOfTask, syncOutcome } from "../../../lib/instances/power.js";

const NOSTATE = 0;
const RUNNING = 1;
const PAUSED = 3;
const SHUTDOWN = 4;
const CRASHED = 6;
const SUSPENDED = 7;

describe("syncOutcome", () => {
  it("active: a guest off is stopped; suspended unexpectedly, stopped and powered off; paused unexpectedly, ignored", () => {
    expect(syncOutcome("active", RUNNING)).toBe("none");
    expect(syncOutcome("active", SHUTDOWN)).toBe("stop");
    expect(syncOutcome("active", CRASHED)).toBe("stop");
    // a guest the host lost: stopped here (start recreates it), where Nova ignores it
    expect(syncOutcome("active", NOSTATE)).toBe("stop");
    expect(syncOutcome("active", SUSPENDED)).toBe("stop-guest");
    expect(syncOutcome("active", PAUSED)).toBe("none");
  });

  it("paused: a guest shut down by itself is stopped (force_stop); anything else is left", () => {
    expect(syncOutcome("paused", SHUTDOWN)).toBe("stop");
    expect(syncOutcome("paused", CRASHED)).toBe("stop");
    expect(syncOutcome("paused", PAUSED)).toBe("none");
    expect(syncOutcome("paused", RUNNING)).toBe("none");
  });

  it("suspended: Nova passes, whatever the guest says", () => {
    for (const p of [NOSTATE, RUNNING, PAUSED, SHUTDOWN, CRASHED, SUSPENDED])
      expect(syncOutcome("suspended", p)).toBe("none");
  });

  it("stopped: a guest that is not off (running, paused or suspended) is powered off", () => {
    expect(syncOutcome("stopped", RUNNING)).toBe("stop-guest");
    expect(syncOutcome("stopped", PAUSED)).toBe("stop-guest");
    expect(syncOutcome("stopped", SUSPENDED)).toBe("stop-guest");
    expect(syncOutcome("stopped", SHUTDOWN)).toBe("none");
    expect(syncOutcome("stopped", NOSTATE)).toBe("none");
  });
});

describe("actionOfTask", () => {
  it("names the power action a task state belongs to, for a host that lost it", () => {
    expect(actionOfTask("pausing")).toBe("pause");
    expect(actionOfTask("unpausing")).toBe("unpause");
    expect(actionOfTask("suspending")).toBe("suspend");
    expect(actionOfTask("resuming")).toBe("resume");
    expect(actionOfTask("powering-off")).toBe("stop");
    expect(actionOfTask("powering-on")).toBe("start");
    expect(actionOfTask("reboot_started_hard")).toBe("reboot");
  });
});
