// Interface attach and detach on the exec driver (`npm start -- --driver exec`), whose guests are
// processes sharing the host's network: no NIC to plug. Its facts say so, and the API answers
// Nova's AttachInterfaceNotSupported (400) before making a port; a host registered before it said
// so refuses the cast itself, and the port made for it is deleted. Detach is Nova's 501 for a
// driver without it.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, expect, it } from "vitest";
import { dynamo } from "../../lib/aws/clients.js";
import { resources } from "../../lib/config.js";
import { getInstance } from "../../lib/instances/queries.js";
import { PUBLIC_NETWORK_ID } from "../../lib/network/seed.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, startTestRuntime } from "./harness.js";

const instances = mkdtempSync(join(tmpdir(), "novaless-e2e-interfaces-"));
let runtime: Runtime;
let client: Client;
beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({
    hosts: 1,
    driver: "exec",
    instancesPath: instances,
    seedNetwork: true,
  }));
});
afterAll(async () => {
  await runtime?.stop();
  rmSync(instances, { recursive: true, force: true });
});

const message = (r: { body: Record<string, { message?: string }> }) => Object.values(r.body)[0]?.message;
const portsOf = async (id: string) =>
  (await client.as(ADMIN).get(`/networking/v2.0/ports?device_id=${id}`)).body.ports as { id: string }[];

it("refuses an attach with Nova's AttachInterfaceNotSupported and a detach with its 501; no port is made", async () => {
  const id = await client.createServer({
    imageRef: "sleeper",
    name: "no-nic",
    networks: [{ uuid: PUBLIC_NETWORK_ID }],
  });
  expect((await client.waitForStatus(id, ["ACTIVE", "ERROR"])).status).toBe("ACTIVE");
  const held = await portsOf(id);
  expect(held).toHaveLength(1);

  const r = await client.post(`/v2.1/servers/${id}/os-interface`, { interfaceAttachment: {} });
  expect([r.status, message(r)]).toEqual([400, `Attaching interfaces is not supported for instance ${id}.`]);
  expect(await portsOf(id)).toEqual(held);
  const d = await client.delete(`/v2.1/servers/${id}/os-interface/${held[0]!.id}`);
  expect([d.status, message(d)]).toEqual([501, "The requested functionality is not supported."]);

  // a host whose registration did not say so (an older agent): the host refuses the cast, and
  // the port made for the attach is deleted
  const host = (await getInstance(id))!.host!;
  await dynamo().send(
    new UpdateCommand({
      TableName: resources().hostsTable,
      Key: { host },
      UpdateExpression: "REMOVE hypervisor_facts.attach_interface",
    }),
  );
  const late = await client.post(`/v2.1/servers/${id}/os-interface`, { interfaceAttachment: {} });
  expect([late.status, message(late)]).toEqual([
    400,
    `Attaching interfaces is not supported for instance ${id}.`,
  ]);
  expect(await portsOf(id)).toEqual(held);
  const events = (
    await client.as(ADMIN).at("2.51").get(`/v2.1/servers/${id}/os-instance-actions`)
  ).body.instanceActions.filter((a: { action: string }) => a.action === "attach_interface");
  expect(events).toHaveLength(1);

  expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  await client.waitForStatus(id, ["GONE"]);
  expect(runtime.hosts.size).toBe(1);
});
