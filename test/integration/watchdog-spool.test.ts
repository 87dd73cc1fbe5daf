// The watchdog holds no build deadline against a host whose reports may still be on their way
// (lib/placement/report-path.ts, reportsWaiting): its last heartbeat said its spool held reports.
// CI saw the outage scenario resend a build whose host was heard again but was still draining its
// spool on backoff when the fleet-wide grace ended, service_down_time after the path came back.
import { describe, expect, it } from "vitest";
import { runWatchdog } from "../../lib/conductor/watchdog.js";
import { SCHEDULER_DEFAULTS } from "../../lib/config.js";
import { getInstance } from "../../lib/instances/queries.js";
import { createInstances } from "../../lib/instances/server-writes.js";
import { heartbeat } from "../../lib/placement/liveness.js";
import { record } from "../unit/api/records.js";
import { registerTestHost, useBuildRequestsQueue } from "./hosts.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

useBuildRequestsQueue();

const uuid = (n: number) => `6a1f0b8e-5555-4000-8000-${n.toString().padStart(12, "0")}`;

/** A build spawning on `host` at attempt 1 (its deadline instance_build_timeout from now). */
async function spawningBuild(id: string, host: string): Promise<void> {
  await createInstances([
    record({ id, host, node: host, attempt: 1, spawn_attempt: 1, task_state: "spawning" }),
  ]);
}

const actionsFor = async (id: string, now: Date) =>
  (await runWatchdog(now, { ...SCHEDULER_DEFAULTS })).filter((a) => a.instance_uuid === id);

describe("a build's deadline and its host's spool", () => {
  it("is not held against a host whose last heartbeat said reports wait; it is once one says none", async () => {
    // an hour on: past the build's deadline
    const now = new Date(Date.now() + 3600_000);
    await registerTestHost("spool-a");
    await heartbeat("spool-a", now, { reports: 2, oldest_seconds: 30 });
    const id = uuid(1);
    await spawningBuild(id, "spool-a");
    expect(await actionsFor(id, now)).toEqual([]);
    expect((await getInstance(id))?.attempt).toBe(1);

    await heartbeat("spool-a", now);
    const acted = await actionsFor(id, now);
    expect(acted.map((a) => [a.action, a.host, a.attempt])).toEqual([["fenced", "spool-a", 1]]);
    expect(acted[0]!.reason).toMatch(/passed its build deadline/);
  });
});
