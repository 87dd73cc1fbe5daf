// A delete that lands while a move's conductor is at work: the step that hands the source's claim
// to the migration checks the server is still there after its write, since the delete released
// only what it found. Found by the soak: a migration's claim left on the source of a resize
// deleted in that window, while its host had yet to destroy the guest.
import { afterAll, afterEach, beforeAll, expect, it, vi } from "vitest";
import { getInstance } from "../../lib/instances/queries.js";
import * as claims from "../../lib/placement/claims.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, leakedClaims, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({ hosts: 2 }));
});
afterAll(async () => runtime?.stop());
afterEach(() => vi.restoreAllMocks());

it("a resize whose server is deleted just before the source's claim becomes the migration's leaks no claim", async () => {
  const id = await client.createServer({ flavorRef: "1" });
  expect((await client.waitForStatus(id, ["ACTIVE"])).status).toBe("ACTIVE");
  const source = (await getInstance(id))!.host!;
  // The delete lands between the scheduler's read and its write, its host still up but not yet
  // destroying the guest (its agent stopped: the terminate waits in its queue).
  const real = claims.moveAllocation;
  const fired = { deleted: 0 };
  vi.spyOn(claims, "moveAllocation").mockImplementation(async (host, from, to, opts, now) => {
    if (!fired.deleted && from === id) {
      await runtime.killHost(source);
      fired.deleted = (await client.delete(`/v2.1/servers/${id}`)).status;
    }
    return real(host, from, to, opts, now);
  });
  expect((await client.post(`/v2.1/servers/${id}/action`, { resize: { flavorRef: "2" } })).status).toBe(202);
  const gone = await eventually(
    () => client.as(ADMIN).get(`/v2.1/servers/${id}`),
    (r) => r.status === 404,
  );
  expect(gone.status).toBe(404);
  expect(fired.deleted).toBe(204);
  await runtime.restartHost(source);
  // the host destroys the guest and gives back what is left of its claim: nothing stays held
  expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
  await eventually(
    async () => runtime.agents.flatMap((a) => a.guests()),
    (g) => !g.includes(id),
  );
  for (const a of runtime.agents) expect(a.guests()).not.toContain(id);
});
