// Members never see host names, as in Nova: not in a server (its fault included), not in its
// instance actions and their events, not in any answer a member can get; admins see them. Builds
// are driven to ERROR through several failing hosts (MaxRetriesExceeded, whose "Last exception"
// is a driver error naming its host) and by NoValidHost, and one goes ACTIVE.
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let member: Client;
let admin: Client;

// host-1…3 (az1) fail every build; host-4 (az2) builds.
const FAILING = ["host-1", "host-2", "host-3"];

beforeAll(async () => {
  ({ runtime, client: member } = await startTestRuntime({
    hosts: 4,
    failHosts: FAILING,
    availabilityZones: ["az1", "az1", "az1", "az2"],
    buildMs: 20,
  }));
  admin = member.as(ADMIN);
});
afterAll(async () => runtime?.stop());

/** A host name anywhere in `text`, whole (host-1 is not in host-12). */
function hostNamesIn(text: string): string[] {
  const names = [...runtime.hosts.keys()];
  const re = new RegExp(`(?<![A-Za-z0-9_.-])(?:${names.join("|")})(?![A-Za-z0-9_-])`, "g");
  return [...new Set(text.match(re) ?? [])];
}

it("a member reads no host name anywhere; an admin reads them where Nova shows them", async () => {
  const retried = await member.createServer({ name: "retried", availability_zone: "az1" });
  const flavor = await admin.post("/v2.1/flavors", {
    flavor: { name: "m1.enormous", ram: 262144, vcpus: 4, disk: 10 },
  });
  expect(flavor.status).toBe(200);
  const tooBig = await member.createServer({ name: "too-big", flavorRef: flavor.body.flavor.id });
  const fine = await member.createServer({ name: "fine", availability_zone: "az2" });

  const r = await admin.waitForStatus(retried, ["ACTIVE", "ERROR"]);
  expect(r.status).toBe("ERROR");
  expect(r.fault.message).toMatch(
    /^Exceeded maximum number of retries\. .*Last exception: Build of instance/,
  );
  expect((await admin.waitForStatus(tooBig, ["ACTIVE", "ERROR"])).status).toBe("ERROR");
  expect((await admin.waitForStatus(fine, ["ACTIVE", "ERROR"])).status).toBe("ACTIVE");

  // Every GET a member may make about these servers and the cloud, and a few it may not.
  const paths = [
    "/v2.1/servers",
    "/v2.1/servers/detail",
    "/v2.1/os-availability-zone",
    "/v2.1/os-server-groups",
    "/v2.1/flavors/detail",
    "/v2.1/images/detail",
    "/v2.1/os-availability-zone/detail",
    "/v2.1/os-hypervisors",
    "/v2.1/os-services",
    "/v2.1/os-aggregates",
  ];
  for (const id of [retried, tooBig, fine]) {
    paths.push(
      `/v2.1/servers/${id}`,
      `/v2.1/servers/${id}/os-instance-actions`,
      `/v2.1/servers/${id}/os-scheduling`,
    );
    const actions = await member.get(`/v2.1/servers/${id}/os-instance-actions`);
    for (const a of actions.body.instanceActions as { request_id: string }[]) {
      paths.push(`/v2.1/servers/${id}/os-instance-actions/${a.request_id}`);
    }
  }
  const seenByMember: Record<string, string[]> = {};
  let bytes = 0;
  for (const path of paths) {
    const reply = await member.get(path);
    expect(reply.status, path).toBeLessThan(500);
    const text = JSON.stringify(reply.body);
    bytes += text.length;
    const found = hostNamesIn(text);
    if (found.length) seenByMember[path] = found;
  }
  expect(seenByMember).toEqual({});
  // The member did read the failure: the fault's message, and each failed event's result.
  const shown = (await member.get(`/v2.1/servers/${retried}`)).body.server;
  expect(shown.fault.message).toBe(r.fault.message);
  expect(shown.fault.details).toBeUndefined();
  expect(bytes).toBeGreaterThan(1000);

  // The admin sees the hosts: on the server, in the fault's details and in the events.
  expect(hostNamesIn(r.fault.details).sort()).toEqual(FAILING);
  const rid = (await admin.get(`/v2.1/servers/${retried}/os-instance-actions`)).body.instanceActions[0]
    .request_id;
  const events = (await admin.get(`/v2.1/servers/${retried}/os-instance-actions/${rid}`)).body.instanceAction
    .events as { event: string; host: string; result: string; details: string }[];
  const builds = events.filter((e) => e.event === "compute_build_and_run_instance");
  expect(builds.map((e) => e.host).sort()).toEqual(FAILING);
  for (const b of builds) expect(b.details).toContain(b.host);
  const active = (await admin.get(`/v2.1/servers/${fine}`)).body.server;
  expect(active["OS-EXT-SRV-ATTR:host"]).toBe("host-4");
});
