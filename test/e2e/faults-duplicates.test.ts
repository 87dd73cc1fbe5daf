// At-least-once everywhere: the same build request twice, every host message twice, the same
// conductor execution twice → one claim, one build, one instance.

import { StartExecutionCommand } from "@aws-sdk/client-sfn";
import { GetQueueAttributesCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sfnClient, sqsClient } from "../../lib/aws/clients.js";
import { computeMessageBody } from "../../lib/aws/send.js";
import type { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { getInstance } from "../../lib/instances/queries.js";
import type { BuildRequest } from "../../lib/messages/build-request.js";
import { getHost } from "../../lib/placement/hosts.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, claimHosts, eventually, leakedClaims, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;

beforeAll(async () => {
  // Every cast to a host queue is delivered twice.
  ({ runtime, client } = await startTestRuntime({
    hosts: 3,
    buildMs: 200,
    faults: { random: () => 0, duplicateHostMessageRate: 1 },
  }));
});
afterAll(async () => runtime?.stop());

/** The build request the API sent for an instance, rebuilt from its record. */
async function requestFor(id: string): Promise<BuildRequest> {
  const rec = (await getInstance(id))!;
  return {
    version: 2,
    request_id: rec.request_id,
    reservation_id: rec.reservation_id,
    project_id: rec.project_id,
    user_id: rec.user_id,
    instance_uuids: [id],
    retry: { num_attempts: 1, hosts: [] },
  };
}

async function pendingOn(queueUrl: string): Promise<number> {
  const r = await sqsClient().send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    }),
  );
  return (
    Number(r.Attributes?.ApproximateNumberOfMessages ?? 0) +
    Number(r.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
  );
}

function spawnsOf(id: string): number {
  return [...runtime.hosts.values()].reduce((n, h) => n + ((h.driver as FakeDriver).spawns.get(id) ?? 0), 0);
}

async function claimsOf(id: string): Promise<string[]> {
  return claimHosts(id);
}

async function expectBuiltOnce(id: string): Promise<void> {
  const s = await client.as(ADMIN).waitForStatus(id, ["ACTIVE", "ERROR"]);
  expect(s.status).toBe("ACTIVE");
  // Let the duplicates arrive and be handled before counting.
  await new Promise((r) => setTimeout(r, 1500));
  expect(spawnsOf(id)).toBe(1);
  expect(await claimsOf(id)).toEqual([s["OS-EXT-SRV-ATTR:host"]]);
  const events = (await client.as(ADMIN).get(`/v2.1/servers/${id}/os-instance-actions`)).body.instanceActions;
  expect(events).toHaveLength(1);
}

it("every host message delivered twice: built once", async () => {
  const id = await client.createServer({ name: "dup-cast" });
  await expectBuiltOnce(id);
});

it("the same build request delivered twice: built once", async () => {
  const id = await client.createServer({ name: "dup-request" });
  const body = JSON.stringify(await requestFor(id));
  await sqsClient().send(
    new SendMessageCommand({ QueueUrl: process.env.NOVALESS_BUILD_REQUESTS_QUEUE_URL!, MessageBody: body }),
  );
  await expectBuiltOnce(id);
});

it("the same conductor execution started twice at once: built once", async () => {
  const id = await client.createServer({ name: "dup-execution" });
  const input = JSON.stringify({ ...(await requestFor(id)), config: { max_attempts: 3 } });
  await Promise.all(
    [1, 2].map(() =>
      sfnClient().send(
        new StartExecutionCommand({ stateMachineArn: process.env.NOVALESS_CONDUCTOR_ARN!, input }),
      ),
    ),
  );
  await expectBuiltOnce(id);
});

it("a host message delivered again after the build went ACTIVE: the guest and its claim stay", async () => {
  const id = await client.createServer({ name: "dup-late" });
  await expectBuiltOnce(id);
  const rec = (await getInstance(id))!;
  const host = rec.host!;
  const queueUrl = (await getHost(host))!.queue_url;
  const late = computeMessageBody({
    version: 3,
    kind: "build_and_run_instance",
    request_id: rec.request_id,
    instance_uuid: id,
    host,
    attempt: rec.attempt,
    resources: { VCPU: 1, MEMORY_MB: 512, DISK_GB: 1 },
  });
  await sqsClient().send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: late }));
  // Handled once the host's queue is empty again.
  await eventually(
    async () => (await pendingOn(queueUrl)) === 0,
    (empty) => empty,
  );
  await new Promise((r) => setTimeout(r, 500));
  expect(runtime.hosts.get(host)!.driver.has(id)).toBe(true);
  expect(await claimsOf(id)).toEqual([host]);
  expect((await client.as(ADMIN).get(`/v2.1/servers/${id}`)).body.server.status).toBe("ACTIVE");
});

it("nothing leaks once they are deleted", async () => {
  const all = await client.as(ADMIN).get("/v2.1/servers?all_tenants=1");
  for (const s of all.body.servers) await client.as(ADMIN).delete(`/v2.1/servers/${s.id}`);
  expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
});
