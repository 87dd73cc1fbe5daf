// The build request (v2, ids only; v1 still in a queue at upgrade) and the build cast (v3, ids
// only; v2 and v1 still in a host's queue at upgrade).
import { describe, expect, it } from "vitest";
import { parseBuildRequest, parseJsonMessage } from "../../../lib/messages/build-request.js";
import { computeMessage, receivedComputeMessage } from "../../../lib/messages/compute.js";

const ID = "6f1c2d3e-0000-4000-8000-000000000001";
const SPEC = {
  project_id: "p",
  user_id: "u",
  flavor: {
    id: "1",
    name: "m1.tiny",
    vcpus: 1,
    memory_mb: 512,
    root_gb: 1,
    ephemeral_gb: 0,
    swap: 0,
    extra_specs: {},
  },
  image: { id: "cirros", name: "cirros", properties: {} },
  scheduler_hints: { different_host: [ID] },
  num_instances: 1,
};
const V2 = {
  version: 2,
  request_id: "req-1",
  reservation_id: "r-1",
  project_id: "p",
  user_id: "u",
  instance_uuids: [ID],
  retry: { num_attempts: 2, hosts: ["h1"], last_fault: "Build of instance … was re-scheduled: boom" },
  alternates: [{ host: "h2", nodename: "h2", availability_zone: "az1" }],
};

describe("build request", () => {
  it("v2 is ids and small facts", () => {
    expect(parseBuildRequest(JSON.stringify(V2))).toEqual({ ok: true, value: V2 });
  });

  it("v1, with its request spec and the amounts on each alternate, is read as v2", () => {
    const v1 = {
      ...V2,
      version: 1,
      request_spec: SPEC,
      alternates: [{ host: "h2", nodename: "h2", availability_zone: "az1", resources: { VCPU: 1 } }],
    };
    expect(parseBuildRequest(JSON.stringify(v1))).toEqual({ ok: true, value: V2 });
  });

  it("says what is wrong, for the version it claims", () => {
    const v1 = parseBuildRequest(JSON.stringify({ version: 1, instance_uuids: ["x"] }));
    expect(v1.ok || v1.reason).toMatch(/request_id.*instance_uuids\.0: must be a UUID/);
    const v3 = parseBuildRequest(JSON.stringify({ ...V2, version: 3 }));
    expect(v3.ok || v3.reason).toMatch(/^version: /);
  });
});

describe("build cast", () => {
  const cast = {
    version: 3,
    kind: "build_and_run_instance",
    request_id: "req-1",
    instance_uuid: ID,
    host: "h1",
    attempt: 1,
    resources: { VCPU: 1, MEMORY_MB: 512, DISK_GB: 1 },
  };

  it("v3 carries no request spec, owner, retry or alternates; a sender cannot add them", () => {
    expect(
      computeMessage.parse({ ...cast, request_spec: SPEC, retry: V2.retry, alternates: V2.alternates }),
    ).toEqual(cast);
  });

  it("v3 names a node only when it is not named as the host", () => {
    expect(computeMessage.parse({ ...cast, node: "h1-node" })).toEqual({ ...cast, node: "h1-node" });
    expect(parseJsonMessage(receivedComputeMessage, JSON.stringify({ ...cast, node: "" })).ok).toBe(false);
  });

  it("a v2 cast still in a host's queue is read as v3, with the alternates it carried", () => {
    const v2 = { ...cast, version: 2, node: "h1", alternates: V2.alternates };
    expect(parseJsonMessage(receivedComputeMessage, JSON.stringify(v2))).toEqual({
      ok: true,
      value: { ...cast, alternates: V2.alternates },
    });
    const { alternates: _none, ...withoutAlternates } = v2;
    expect(parseJsonMessage(receivedComputeMessage, JSON.stringify(withoutAlternates)).ok).toBe(false);
  });

  it("a v1 cast still in a host's queue is read as v3, with its alternates", () => {
    const v1 = {
      ...cast,
      version: 1,
      node: "h1-node",
      reservation_id: "r-1",
      project_id: "p",
      user_id: "u",
      request_spec: SPEC,
      retry: { num_attempts: 1, hosts: [] },
      alternates: [{ ...V2.alternates[0], resources: { VCPU: 1 } }],
    };
    expect(parseJsonMessage(receivedComputeMessage, JSON.stringify(v1))).toEqual({
      ok: true,
      value: { ...cast, node: "h1-node", alternates: V2.alternates },
    });
  });
});
