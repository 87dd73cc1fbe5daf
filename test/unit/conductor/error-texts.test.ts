// The conductor's ERROR transitions on dynalite: what the owner reads names no host; the
// admin's details and events do.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { buildFailed, maxRetriesExceeded } from "../../../lib/conductor/tasks.js";
import { getInstance } from "../../../lib/instances/queries.js";
import { createInstances } from "../../../lib/instances/server-writes.js";
import type { ConductorInput } from "../../../lib/messages/scheduled.js";
import { useLocalAws } from "../../integration/local-aws.js";
import { record } from "../api/records.js";

useLocalAws();

async function building(attempt: number, host: string | null): Promise<{ id: string; req: ConductorInput }> {
  const id = randomUUID();
  const request_id = `req-${randomUUID()}`;
  const base = record({ id, request_id });
  await createInstances([{ ...base, attempt, host, node: host, retry_hosts: host ? [host] : [] }]);
  const req: ConductorInput = {
    version: 2,
    request_id,
    reservation_id: base.reservation_id,
    project_id: base.project_id,
    user_id: base.user_id,
    instance_uuids: [id],
    retry: { num_attempts: attempt, hosts: host ? [host] : [] },
    config: { max_attempts: 3 },
  };
  return { id, req };
}

describe("texts an owner reads", () => {
  it("BuildFailed: the AWS error's name for the owner, its cause (naming hosts, queues) for admins", async () => {
    const { id, req } = await building(1, "compute-9.example.org");
    const cause = JSON.stringify({
      errorMessage: "AccessDenied on queue compute-9-example-org-1a2b of host compute-9.example.org",
    });
    await buildFailed(req, { Error: "States.Timeout", Cause: cause });
    const rec = (await getInstance(id))!;
    expect(rec.vm_state).toBe("error");
    expect(rec.fault?.message).toBe(`Build of instance ${id} aborted: States.Timeout`);
    expect(rec.fault?.details).toContain("host compute-9.example.org");
    const ev = Object.values(rec.actions[req.request_id]!.events)[0]!;
    expect(ev.details).toContain("compute-9.example.org");
  });

  it("MaxRetriesExceeded: Nova's text without the hosts, which the details list", async () => {
    const { id, req } = await building(3, "host-3");
    await maxRetriesExceeded({
      ...req,
      retry: {
        num_attempts: 4,
        hosts: ["host-1", "host-2", "host-3"],
        last_fault: `Build of instance ${id} was re-scheduled: disk full on host-3`,
      },
    });
    const rec = (await getInstance(id))!;
    expect(rec.fault?.message).toBe(
      `Exceeded maximum number of retries. Exceeded max scheduling attempts 3 for instance ${id}. ` +
        `Last exception: Build of instance ${id} was re-scheduled: disk full on the host`,
    );
    expect(rec.fault?.details).toMatch(/^hosts tried: host-1, host-2, host-3; /);
  });
});
