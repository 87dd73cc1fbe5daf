// A build's conductor steps (Nova's build_instances) on the in-process DynamoDB: placed on the
// scheduler's first pick, an alternate claimed after a failure, rolled back to ERROR with nothing
// claimed, and each step harmless when the state machine runs it twice.
import { createRequire } from "node:module";
import { GetCommand } from "@aws-sdk/lib-dynamodb";
import { marshall } from "@aws-sdk/util-dynamodb";
import { describe, expect, it } from "vitest";
import { dynamo } from "../../../lib/aws/clients.js";
import { meterReading, startMeter, stopMeter } from "../../../lib/aws/meter.js";
import { resources } from "../../../lib/config.js";
import { portIdFor } from "../../../lib/instances/networking.js";
import { getInstance } from "../../../lib/instances/queries.js";
import { conductorRequest } from "../../../lib/instances/request-spec.js";
import { type Scheduled, scheduledOf } from "../../../lib/messages/scheduled.js";
import { PUBLIC_NETWORK_ID, seedPublicNetwork } from "../../../lib/network/seed.js";
import { createPort } from "../../../lib/network/store/ports.js";
import { getPort } from "../../../lib/network/store/table.js";
import { release } from "../../../lib/placement/claims.js";
import { NO_VALID_HOST_MESSAGE } from "../../../lib/scheduler/errors.js";
import { useLocalAws } from "../../integration/local-aws.js";
import {
  at,
  building,
  claimFor,
  claims,
  fill,
  input,
  instance,
  retried,
  scheduled,
  setFields,
  start,
  step,
} from "./workflow-fixtures.js";

useLocalAws();

describe("build: placement", () => {
  it("starts on selections[0]: the host and attempt recorded, build_and_run_instance cast to its queue", async () => {
    const { rec, req, hosts } = await building();
    await claimFor(rec, hosts[0]!, 1);
    const casts = await start(req, scheduled(rec.id, hosts));
    expect(casts).toHaveLength(1);
    expect(casts[0]!.queue_url).toContain(`q-${hosts[0]}`);
    expect(casts[0]!.msg).toMatchObject({ kind: "build_and_run_instance", host: hosts[0], attempt: 1 });
    const now = (await getInstance(rec.id))!;
    expect(now).toMatchObject({ host: hosts[0], attempt: 1, vm_state: "building" });
    expect(now.alternates?.map((a) => a.host)).toEqual(hosts.slice(1));
    expect(await claims(rec.id)).toEqual({ [hosts[0]!]: 1 });
  });

  it("places every instance of a multi-create, each on its own pick", async () => {
    const { hosts } = await building(2);
    const a = await instance();
    const b = await instance({ request_id: a.request_id, reservation_id: a.reservation_id });
    await claimFor(a, hosts[0]!, 1);
    await claimFor(b, hosts[1]!, 1);
    const req = input({ ...conductorRequest(a, a.request_id), instance_uuids: [a.id, b.id] });
    const s = scheduledOf([
      { instance_uuid: a.id, selected: at(hosts[0]!), alternates: [] },
      { instance_uuid: b.id, selected: at(hosts[1]!), alternates: [] },
    ]);
    const casts = await start(req, s);
    expect(casts.map((c) => [c.msg.instance_uuid, c.msg.host])).toEqual([
      [a.id, hosts[0]],
      [b.id, hosts[1]],
    ]);
  });

  it("a repeated BuildInstances casts again and claims nothing more, after the build too (the host dedups)", async () => {
    const { rec, req, hosts } = await building();
    await claimFor(rec, hosts[0]!, 1);
    const s = scheduled(rec.id, hosts);
    const first = await start(req, s);
    expect(await start(req, s)).toEqual(first);
    // the host built it: a step repeated now finds it ACTIVE on that claim, and keeps it
    await setFields(rec.id, { vm_state: "active", task_state: null });
    expect(await start(req, s)).toEqual(first);
    expect(await claims(rec.id)).toEqual({ [hosts[0]!]: 1 });
  });

  it("an instance deleted before it was placed gets its claim back", async () => {
    const { rec, req, hosts } = await building();
    await claimFor(rec, hosts[0]!, 1);
    await setFields(rec.id, { deleted: true });
    expect(await start(req, scheduled(rec.id, hosts))).toEqual([]);
    expect(await claims(rec.id)).toEqual({});
  });
});

describe("build: placement with a port", () => {
  /** A build of one instance on the seeded network, claimed on the first of its hosts. */
  async function withPort() {
    await seedPublicNetwork();
    const b = await building();
    await setFields(b.rec.id, { requested_networks: [{ network_id: PUBLIC_NETWORK_ID }] });
    await claimFor(b.rec, b.hosts[0]!, 1);
    return b;
  }

  /** What one write of the item as it is now costs (dynalite's item size, as DynamoDB counts it). */
  const { itemSize } = createRequire(import.meta.url)("dynalite/db/index.js") as {
    itemSize: (item: Record<string, unknown>) => number;
  };
  const oneWrite = (item: object) =>
    Math.ceil(
      itemSize(marshall(item, { removeUndefinedValues: true, convertClassInstanceToMap: true })) / 1024,
    );

  /** Write units spent on the Instances table (its items, not its indexes), summed over callers. */
  function instanceWrites(): number {
    let n = 0;
    for (const u of Object.values(meterReading()))
      for (const [table, t] of Object.entries(u.tables)) if (table.includes("instances")) n += t.write;
    return n;
  }

  it("binds the port to the host, then places the instance and records its network info in one write", async () => {
    const { rec, req, hosts } = await withPort();
    startMeter();
    let casts: Awaited<ReturnType<typeof start>>;
    try {
      casts = await start(req, scheduled(rec.id, hosts));
    } finally {
      stopMeter();
    }
    expect(casts.map((c) => c.msg.host)).toEqual([hosts[0]]);
    const now = (await getInstance(rec.id))!;
    const port = (await getPort(portIdFor(rec.id, 0)))!;
    expect(now).toMatchObject({ host: hosts[0], attempt: 1 });
    expect(now.network_info?.map((v) => v.port_id)).toEqual([port.id]);
    expect(port).toMatchObject({ device_id: rec.id, "binding:host_id": hosts[0], binding_attempt: 1 });
    // one write: the placement with its network info (the item's size in KB), not a second after it
    const raw = (
      await dynamo().send(new GetCommand({ TableName: resources().instancesTable, Key: { id: rec.id } }))
    ).Item!;
    expect(instanceWrites()).toBe(oneWrite(raw));
    // a repeated step casts the same and keeps the same port
    expect(await start(req, scheduled(rec.id, hosts))).toEqual(casts);
    expect((await getInstance(rec.id))!.network_info).toEqual(now.network_info);
  });

  it("a port a later attempt holds: nothing placed, nothing freed (the ports are that attempt's)", async () => {
    const { rec, req, hosts } = await withPort();
    await createPort({
      id: portIdFor(rec.id, 0),
      network_id: PUBLIC_NETWORK_ID,
      project_id: rec.project_id,
      device_id: rec.id,
      device_owner: "compute:az1",
      "binding:host_id": hosts[1]!,
      binding_attempt: 2,
    });
    await setFields(rec.id, { attempt: 2, host: hosts[1]! });
    expect(await start(req, scheduled(rec.id, hosts))).toEqual([]);
    expect(await getPort(portIdFor(rec.id, 0))).toMatchObject({
      "binding:host_id": hosts[1],
      binding_attempt: 2,
    });
    expect((await getInstance(rec.id))!).toMatchObject({ vm_state: "building", attempt: 2, host: hosts[1] });
    expect(await claims(rec.id)).toEqual({});
  });

  it("a port in use by another server aborts the build: ERROR with Nova's reason, its claim released", async () => {
    const { rec, req, hosts } = await withPort();
    const other = "00000000-0000-4000-8000-000000000099";
    await createPort({
      id: "user-port-" + rec.id.slice(0, 8),
      network_id: PUBLIC_NETWORK_ID,
      project_id: rec.project_id,
      device_id: other,
      device_owner: "compute:az1",
    });
    await setFields(rec.id, {
      requested_networks: [{ network_id: PUBLIC_NETWORK_ID, port_id: "user-port-" + rec.id.slice(0, 8) }],
    });
    expect(await start(req, scheduled(rec.id, hosts))).toEqual([]);
    const now = (await getInstance(rec.id))!;
    expect(now.vm_state).toBe("error");
    expect(now.fault?.message).toBe(
      `Build of instance ${rec.id} aborted: Port user-port-${rec.id.slice(0, 8)} is still in use.`,
    );
    expect(await claims(rec.id)).toEqual({});
    expect(await getPort("user-port-" + rec.id.slice(0, 8))).toMatchObject({ device_id: other });
  });
});

describe("build: alternates", () => {
  it("claims the first alternate with room, skipping the hosts tried, and the same one on a re-run", async () => {
    const { rec, req, hosts } = await building(4);
    await claimFor(rec, hosts[0]!, 1);
    await start(req, scheduled(rec.id, hosts));
    // the host failed the build (its claim went with the failure report)
    await release(hosts[0]!, rec.id, 1);
    await fill(hosts[1]!);
    const req2 = retried(req, 2, [hosts[0]!], hosts.slice(1));
    const picked = (await step("claim_alternate", req2)) as Scheduled;
    expect(picked.hosts[picked.selections[0]!.host]!.host).toBe(hosts[2]);
    expect(picked.selections[0]!.alternates.map((i) => picked.hosts[i]!.host)).toEqual([hosts[3]]);
    expect(await step("claim_alternate", req2)).toEqual(picked);
    expect(await claims(rec.id)).toEqual({ [hosts[2]!]: 2 });
    const casts = await start(req2, picked);
    expect(casts[0]!.msg).toMatchObject({ host: hosts[2], attempt: 2 });
    // once placed, a re-run finds the alternate recorded
    expect(await step("claim_alternate", req2)).toEqual(picked);
  });

  it("answers AlternatesExhausted when none has room, claiming nothing", async () => {
    const { rec, req, hosts } = await building(2);
    await fill(hosts[1]!);
    const answer = (await step("claim_alternate", retried(req, 2, [hosts[0]!], [hosts[1]!]))) as {
      exhausted?: { message: string };
    };
    expect(answer.exhausted?.message).toContain(rec.id);
    expect(await claims(rec.id)).toEqual({});
  });
});

describe("build: rollback", () => {
  it("an error in the workflow: ERROR with the error's name, every claim of the attempt released, twice", async () => {
    const { rec, req, hosts } = await building();
    await claimFor(rec, hosts[0]!, 1);
    const s = scheduled(rec.id, hosts);
    await start(req, s);
    const error = { Error: "States.TaskFailed", Cause: JSON.stringify({ errorMessage: "boom" }) };
    for (let i = 0; i < 2; i++) {
      await step("build_failed", { ...req, scheduled: s }, { error });
      const now = (await getInstance(rec.id))!;
      expect(now.vm_state).toBe("error");
      expect(now.fault?.message).toBe(`Build of instance ${rec.id} aborted: States.TaskFailed`);
      expect(await claims(rec.id)).toEqual({});
    }
  });

  it("finds the claims of a scheduler whose answer was lost", async () => {
    const { rec, req, hosts } = await building();
    await claimFor(rec, hosts[1]!, 1);
    await step("build_failed", req, { error: { Error: "States.Timeout" } });
    expect(await claims(rec.id)).toEqual({});
  });

  it("NoValidHost and MaxRetriesExceeded: ERROR with Nova's text", async () => {
    const { rec, req } = await building();
    await step("no_valid_host", req, { no_valid_host: { details: "0/3 hosts are available" } });
    expect((await getInstance(rec.id))!.fault).toMatchObject({
      message: NO_VALID_HOST_MESSAGE,
      details: "0/3 hosts are available",
    });
    const other = await building();
    // its third attempt failed on its host
    await setFields(other.rec.id, { attempt: 3 });
    await step("max_retries_exceeded", retried(other.req, 4, other.hosts));
    expect((await getInstance(other.rec.id))!.fault?.message).toContain("Exceeded maximum number of retries");
  });
});

describe("dispatch", () => {
  it("refuses an action it does not know, by name", async () => {
    const { req } = await building(1);
    await expect(step("resize_confirm" as "build_failed", req)).rejects.toThrow(
      "unknown conductor action resize_confirm",
    );
  });
});
