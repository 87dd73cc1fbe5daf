import { describe, expect, it } from "vitest";
import type { InstanceRecord } from "../../../lib/instances/types.js";
import { moveAttempt, unshelveAttempt } from "../../../lib/messages/build-request.js";
import type { ConductorInput } from "../../../lib/messages/scheduled.js";
import { release } from "../../../lib/placement/claims.js";
import { useLocalAws } from "../../integration/local-aws.js";
import {
  building,
  claimFor,
  claims,
  moving,
  scheduled,
  scheduleMove,
  setFields,
  start,
  unshelving,
} from "./workflow-fixtures.js";

useLocalAws();

/** A workflow started on its pick: the request, the pick, the claim's attempt, and how it finishes. */
interface Started {
  rec: InstanceRecord;
  req: ConductorInput;
  pick: string;
  n: number;
  /** the record as the workflow leaves it when it succeeds: the server on the pick at `n` */
  finish: () => Promise<void>;
}

async function build(): Promise<Started> {
  const { rec, req, hosts } = await building(1);
  await claimFor(rec, hosts[0]!, 1);
  const finish = () => setFields(rec.id, { vm_state: "active", task_state: null });
  return { rec, req, pick: hosts[0]!, n: 1, finish };
}

function move(kind: "migration" | "live-migration" | "evacuation") {
  return async (): Promise<Started> => {
    const { rec, req, m, source, dests } = await moving(kind);
    await scheduleMove(rec, req, dests[0]!);
    const n = moveAttempt(req);
    const finish = async () => {
      // the move over (confirmed, completed): the server on the destination at the move's attempt
      await setFields(rec.id, { host: dests[0], node: dests[0], attempt: n, task_state: null }, [
        "migration",
      ]);
      await release(source, m.uuid);
    };
    return { rec, req, pick: dests[0]!, n, finish };
  };
}

async function unshelve(): Promise<Started> {
  const { rec, req, hosts } = await unshelving(1);
  const n = unshelveAttempt(req);
  await claimFor(rec, hosts[0]!, n);
  const finish = () => setFields(rec.id, { vm_state: "active", task_state: null }, ["unshelve", "shelve"]);
  return { rec, req, pick: hosts[0]!, n, finish };
}

describe.each([
  ["build", build],
  ["cold move", move("migration")],
  ["live migration", move("live-migration")],
  ["evacuation", move("evacuation")],
  ["unshelve", unshelve],
])("%s: BuildInstances on a pick whose instance has gone", (_name, started) => {
  it("keeps the claim the instance lives on when the step repeats after the workflow finished", async () => {
    const { rec, req, pick, n, finish } = await started();
    const s = scheduled(rec.id, [pick]);
    expect(await start(req, s)).toHaveLength(1);
    await finish();
    await start(req, s);
    expect(await claims(rec.id)).toEqual({ [pick]: n });
  });

  it("releases the claim of an instance deleted meanwhile", async () => {
    const { rec, req, pick } = await started();
    await setFields(rec.id, { deleted: true });
    expect(await start(req, scheduled(rec.id, [pick]))).toEqual([]);
    expect(await claims(rec.id)).toEqual({});
  });
});
