// Alternates travel with the instance's record, not through the state machine's fan-out: on
// dynalite and the SQS emulator, BuildInstances keeps them with the placement and casts ids only,
// compute's reschedule and the watchdog's resend read them back from the record, and BuildFailed
// still finds the claims the scheduler made from its answer. Hosts have 250-character names.
import { randomUUID } from "node:crypto";
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sqsClient } from "../../../lib/aws/clients.js";
import { inventoriesFor } from "../../../lib/compute/inventory.js";
import { applyReport } from "../../../lib/conductor/compute-events.js";
import { buildFailed, buildInstances } from "../../../lib/conductor/tasks.js";
import { runWatchdog } from "../../../lib/conductor/watchdog.js";
import { schedulerConfig } from "../../../lib/config.js";
import { getInstance } from "../../../lib/instances/queries.js";
import { createInstances } from "../../../lib/instances/server-writes.js";
import type { InstanceRecord } from "../../../lib/instances/types.js";
import { log } from "../../../lib/log.js";
import { type BuildRequest, parseBuildRequest } from "../../../lib/messages/build-request.js";
import type { Destination } from "../../../lib/messages/common.js";
import { computeMessage } from "../../../lib/messages/compute.js";
import type { ComputeReport } from "../../../lib/messages/reports.js";
import type { ConductorInput } from "../../../lib/messages/scheduled.js";
import { scheduledOf } from "../../../lib/messages/scheduled.js";
import { consumerAllocations } from "../../../lib/placement/allocations.js";
import { claim } from "../../../lib/placement/claims.js";
import { getHost, registerHost } from "../../../lib/placement/hosts.js";
import { heartbeat } from "../../../lib/placement/liveness.js";
import { applyEnv } from "../../../local/emulators.js";
import { createQueues } from "../../../local/tables.js";
import { useLocalAws } from "../../integration/local-aws.js";
import { record } from "../api/records.js";

useLocalAws();

let restoreEnv: (() => void) | undefined;
let buildRequestsQueueUrl = "";
beforeAll(async () => {
  ({ buildRequestsQueueUrl } = await createQueues(new SQSClient({})));
  restoreEnv = applyEnv({ NOVALESS_BUILD_REQUESTS_QUEUE_URL: buildRequestsQueueUrl });
});
afterAll(() => restoreEnv?.());

/** A valid 250-character FQDN, distinct from its first label on. */
function longName(tag: string): string {
  return [`${tag}-`.padEnd(63, "0"), "rack".padEnd(63, "0"), "row".padEnd(63, "0"), "dc".padEnd(46, "0")]
    .concat("example", "org")
    .join(".");
}

const at = (host: string, nodename = host): Destination => ({ host, nodename, availability_zone: "az1" });
const TINY = { VCPU: 1, MEMORY_MB: 512, DISK_GB: 1 };

/** A host registered with Placement; its heartbeat `ageSeconds` old. */
async function host(name: string, ageSeconds = 0, queueUrl?: string): Promise<void> {
  const heard = new Date(Date.now() - ageSeconds * 1000);
  await registerHost({
    host: name,
    availability_zone: "az1",
    inventories: inventoriesFor({ vcpus: 16, memory_mb: 65536, local_gb: 1000 }),
    hypervisor_type: "fake",
    hypervisor_version: 1000,
    host_ip: "10.0.0.1",
    supported_instances: [["x86_64", "fake", "hvm"]],
    queue_url: queueUrl ?? `http://127.0.0.1:1/000000000000/q-${name.slice(0, 12)}`,
  });
  await heartbeat(name, heard);
}

/** A new instance in BUILD, and the conductor's input for its attempt `attempt`. */
async function building(
  attempt = 1,
  over: Partial<InstanceRecord> = {},
): Promise<{ id: string; req: ConductorInput }> {
  const id = randomUUID();
  const base = record({ id, request_id: `req-${randomUUID()}`, ...over });
  await createInstances([base]);
  return {
    id,
    req: {
      version: 2,
      request_id: base.request_id,
      reservation_id: base.reservation_id,
      project_id: base.project_id,
      user_id: base.user_id,
      instance_uuids: [id],
      retry: { num_attempts: attempt, hosts: [] },
      config: { max_attempts: 3 },
    },
  };
}

/** The build requests sent for `id` (others' are left in the queue). */
async function buildRequestsFor(id: string): Promise<BuildRequest[]> {
  const found: BuildRequest[] = [];
  for (let i = 0; i < 3 && !found.length; i++) {
    const r = await sqsClient().send(
      new ReceiveMessageCommand({
        QueueUrl: buildRequestsQueueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        VisibilityTimeout: 0,
      }),
    );
    for (const m of r.Messages ?? []) {
      const parsed = parseBuildRequest(m.Body ?? "");
      if (!parsed.ok || parsed.value.instance_uuids[0] !== id) continue;
      found.push(parsed.value);
      await sqsClient().send(
        new DeleteMessageCommand({ QueueUrl: buildRequestsQueueUrl, ReceiptHandle: m.ReceiptHandle }),
      );
    }
  }
  return found;
}

describe("BuildInstances", () => {
  it("keeps the alternates with the placement; the cast names the host once and no alternate", async () => {
    const [a, b, c] = [longName("bi-a"), longName("bi-b"), longName("bi-c")];
    for (const h of [a, b, c]) await host(h);
    const { id, req } = await building();
    const scheduled = scheduledOf([
      { instance_uuid: id, selected: at(a), alternates: [at(b), at(c, "c-node")] },
    ]);

    const { casts } = await buildInstances(req, scheduled);

    expect(casts).toHaveLength(1);
    expect(casts[0]!.queue_url).toBe((await getHost(a))!.queue_url);
    expect(JSON.parse(casts[0]!.message_body)).toEqual({
      version: 3,
      kind: "build_and_run_instance",
      request_id: req.request_id,
      instance_uuid: id,
      host: a,
      attempt: 1,
      resources: TINY,
    });
    expect(computeMessage.safeParse(JSON.parse(casts[0]!.message_body)).success).toBe(true);
    const rec = (await getInstance(id))!;
    expect(rec).toMatchObject({ host: a, node: a, attempt: 1 });
    expect(rec.alternates).toEqual([at(b), at(c, "c-node")]);
  });

  it("a cast names the node only when it is not named as the host", async () => {
    const a = longName("bi-node");
    await host(a);
    const { id, req } = await building();
    const { casts } = await buildInstances(
      req,
      scheduledOf([{ instance_uuid: id, selected: at(a, "node-1"), alternates: [] }]),
    );
    expect(JSON.parse(casts[0]!.message_body)).toMatchObject({ host: a, node: "node-1" });
    expect((await getInstance(id))!.alternates).toEqual([]);
  });
});

describe("BuildFailed", () => {
  it("releases the claims of the scheduler's answer, found by their index in its host list", async () => {
    const [a, b] = [longName("bf-a"), longName("bf-b")];
    for (const h of [a, b]) await host(h);
    const one = await building();
    const two = await building();
    const req: ConductorInput = { ...one.req, instance_uuids: [one.id, two.id] };
    // The scheduler claimed both; BuildInstances recorded neither.
    expect((await claim(a, one.id, TINY, 1)).claimed).toBe(true);
    expect((await claim(b, two.id, TINY, 1)).claimed).toBe(true);
    const scheduled = scheduledOf([
      { instance_uuid: one.id, selected: at(a), alternates: [at(b)] },
      { instance_uuid: two.id, selected: at(b), alternates: [at(a)] },
    ]);

    await buildFailed({ ...req, scheduled }, { Error: "States.Runtime", Cause: "boom" });

    expect(await consumerAllocations(one.id)).toEqual([]);
    expect(await consumerAllocations(two.id)).toEqual([]);
    expect((await getInstance(one.id))!.vm_state).toBe("error");
  });
});

describe("compute's reschedule (compute-events applying a failed build)", () => {
  it("sends the build request on with the record's alternates", async () => {
    const [a, b, c] = [longName("rs-a"), longName("rs-b"), longName("rs-c")];
    for (const h of [a, b, c]) await host(h);
    const { id, req } = await building();
    await buildInstances(
      req,
      scheduledOf([{ instance_uuid: id, selected: at(a), alternates: [at(b), at(c)] }]),
    );
    const now = new Date().toISOString();
    await applyReport(
      {
        version: 1,
        kind: "build_failed",
        host: a,
        sent_at: now,
        request_id: req.request_id,
        instance_uuid: id,
        attempt: 1,
        started_at: now,
        reason: `fake driver on ${a} is set to fail every build`,
        in_flight: 0,
      },
      log,
    );

    const sent = await buildRequestsFor(id);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ retry: { num_attempts: 2, hosts: [a] }, alternates: [at(b), at(c)] });
    expect(sent[0]!.retry.last_fault).not.toContain(b);
    expect(sent[0]!.retry.last_fault).not.toContain(a);
  });
});

describe("a build that succeeds after its failure was recorded", () => {
  it("is terminated on its host (the cast names the attempt), stays failed, holds no claim there, and settles num_io_ops", async () => {
    const [a, b] = [longName("late-a"), longName("late-b")];
    const queueUrl = (
      await sqsClient().send(new CreateQueueCommand({ QueueName: `late-${randomUUID().slice(0, 8)}` }))
    ).QueueUrl!;
    await host(a, 0, queueUrl);
    await host(b);
    const { id, req } = await building();
    await buildInstances(req, scheduledOf([{ instance_uuid: id, selected: at(a), alternates: [at(b)] }]));
    const report = (kind: "build_failed" | "build_succeeded") => {
      const now = new Date().toISOString();
      const base = { version: 1, host: a, sent_at: now, request_id: req.request_id, instance_uuid: id };
      return kind === "build_failed"
        ? { ...base, kind, attempt: 1, started_at: now, reason: "the host restarted: no guest", in_flight: 0 }
        : {
            ...base,
            kind,
            attempt: 1,
            started_at: now,
            in_flight: 0,
            after_failures: false,
            settles_io_ops: true,
          };
    };
    await applyReport(report("build_failed") as ComputeReport, log);
    expect(await buildRequestsFor(id)).toHaveLength(1);
    // another claim on the host since: num_io_ops counts it
    expect((await claim(a, randomUUID(), { VCPU: 1 }, 1)).claimed).toBe(true);
    expect((await getHost(a))!.num_io_ops).toBe(1);

    // the spawn finished after all: the host's build_succeeded for the failed attempt
    await applyReport(report("build_succeeded") as ComputeReport, log);
    // it settles num_io_ops, fenced as it is: its agent owes no heartbeat for it
    expect((await getHost(a))!.num_io_ops).toBe(0);

    const casts = await sqsClient().send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    const sent = (casts.Messages ?? []).map((m) => computeMessage.parse(JSON.parse(m.Body ?? "")));
    expect(sent).toEqual([
      expect.objectContaining({ kind: "terminate_instance", instance_uuid: id, attempt: 1, host: a }),
    ]);
    const rec = (await getInstance(id))!;
    expect(rec.vm_state).not.toBe("active");
    expect((await consumerAllocations(id)).map((x) => x.host)).not.toContain(a);
  });
});

describe("the watchdog's resend", () => {
  it("offers the record's alternates that are not tried and whose host is up", async () => {
    const [a, b, c] = [longName("wd-a"), longName("wd-b"), longName("wd-c")];
    const down = schedulerConfig().service_down_time + 60;
    await host(a, down);
    await host(b);
    await host(c, down);
    const { id, req } = await building();
    await buildInstances(
      req,
      scheduledOf([{ instance_uuid: id, selected: at(a), alternates: [at(c), at(b)] }]),
    );

    const actions = await runWatchdog();

    expect(actions.find((x) => x.instance_uuid === id)).toMatchObject({ action: "fenced", host: a });
    const sent = await buildRequestsFor(id);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ retry: { num_attempts: 2, hosts: [a] }, alternates: [at(b)] });
  });

  it("with no alternate left up, asks the scheduler (no alternates in the request)", async () => {
    const [a, c] = [longName("wd2-a"), longName("wd2-c")];
    const down = schedulerConfig().service_down_time + 60;
    await host(a, down);
    await host(c, down);
    const { id, req } = await building();
    await buildInstances(req, scheduledOf([{ instance_uuid: id, selected: at(a), alternates: [at(c)] }]));

    await runWatchdog();

    const sent = await buildRequestsFor(id);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.alternates).toBeUndefined();
  });
});
