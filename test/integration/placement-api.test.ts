// The placement admin API (inventories on os-hypervisors, os-placement-audit) and the
// novaless-audit command, through the router and the real repositories, on dynalite.

import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { PutCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeNumber } from "../../lib/api/host-ids.js";
import { handleHttp } from "../../lib/api/router.js";
import { dynamo, resetClients } from "../../lib/aws/clients.js";
import { resources } from "../../lib/config.js";
import { listAllocations } from "../../lib/placement/allocations.js";
import { INVENTORY_DEFAULTS } from "../../lib/placement/capacity.js";
import { claim } from "../../lib/placement/claims.js";
import { getHost, registerHost } from "../../lib/placement/hosts.js";
import { applyEnv, type Emulators, startEmulators } from "../../local/emulators.js";
import { createTables, localTables } from "../../local/tables.js";

const ADMIN = "admin-token";
const DEMO = "demo-token";

let emulators: Emulators;
let restore: () => void;
let env: Record<string, string>;

beforeAll(async () => {
  emulators = await startEmulators();
  const tables = localTables();
  env = { ...emulators.env, ...Object.fromEntries(tables.map((t) => [t.env, t.localName])) };
  restore = applyEnv(env);
  resetClients();
  await createTables(new DynamoDBClient({}), tables);
  for (const name of ["api-1", "api-2"]) {
    await registerHost({
      host: name,
      availability_zone: "nova",
      inventories: {
        VCPU: { total: 8, ...INVENTORY_DEFAULTS, allocation_ratio: 16 },
        MEMORY_MB: { total: 16384, ...INVENTORY_DEFAULTS, reserved: 512, allocation_ratio: 1.5 },
      },
      hypervisor_type: "fake",
      hypervisor_version: 1000,
      host_ip: "10.0.0.1",
      supported_instances: [],
      queue_url: "http://unused",
    });
  }
});
afterAll(async () => {
  resetClients();
  restore?.();
  await emulators?.stop();
});

async function call(method: string, path: string, token = ADMIN, body?: unknown) {
  const res = await handleHttp({
    method,
    path,
    headers: { host: "api.test", "x-auth-token": token },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: res.body ? JSON.parse(res.body) : undefined };
}

describe("os-hypervisors with Placement's inventories", () => {
  it("shows Nova's fields, and Placement's inventories, usages and allocations on /placement", async () => {
    await dynamo().send(
      new PutCommand({
        TableName: resources().instancesTable,
        Item: { id: "vm-shown", deleted: false, vm_state: "active", host: "api-1", attempt: 1 },
      }),
    );
    await claim("api-1", "vm-shown", { VCPU: 2, MEMORY_MB: 2048 }, 1, new Date("2026-01-01T00:00:00Z"));
    const nova = await call("GET", "/v2.1/os-hypervisors/api-1");
    expect(nova.status).toBe(200);
    expect(nova.json.hypervisor).toMatchObject({
      id: nodeNumber("api-1"),
      vcpus: 8,
      vcpus_used: 2,
      memory_mb: 16384,
      running_vms: 1,
    });
    // Nova's view only: Placement's is a path of its own
    expect(nova.json.hypervisor.inventories).toBeUndefined();
    const r = await call("GET", "/v2.1/os-hypervisors/api-1/placement");
    expect(r.status).toBe(200);
    expect(r.json.hypervisor).toMatchObject({
      id: "api-1",
      resource_provider_generation: 2,
      inventories: {
        MEMORY_MB: {
          total: 16384,
          reserved: 512,
          min_unit: 1,
          max_unit: 2147483647,
          step_size: 1,
          allocation_ratio: 1.5,
          capacity: 23808,
        },
        VCPU: { total: 8, allocation_ratio: 16, capacity: 128 },
      },
      usages: { MEMORY_MB: 2048, VCPU: 2 },
      allocations: {
        "vm-shown": {
          resources: { VCPU: 2, MEMORY_MB: 2048 },
          attempt: 1,
          claimed_at: "2026-01-01T00:00:00.000Z",
        },
      },
    });
    const list = await call("GET", "/v2.1/os-hypervisors/api-1/inventories");
    expect(list.json).toMatchObject({ resource_provider_generation: 2, inventories: { VCPU: { total: 8 } } });
  });

  it("PUT an inventory: applies at the current generation, 409 on a stale one or when usage would not fit", async () => {
    const g = (await getHost("api-1"))!.generation;
    const ok = await call("PUT", "/v2.1/os-hypervisors/api-1/inventories/VCPU", ADMIN, {
      resource_provider_generation: g,
      total: 8,
      reserved: 1,
      allocation_ratio: 4,
    });
    expect(ok.status).toBe(200);
    expect(ok.json).toEqual({
      total: 8,
      reserved: 1,
      min_unit: 1,
      max_unit: 2147483647,
      step_size: 1,
      allocation_ratio: 4,
      resource_provider_generation: g + 1,
    });
    expect((await getHost("api-1"))!.free.VCPU).toBe(28 - 2);

    const stale = await call("PUT", "/v2.1/os-hypervisors/api-1/inventories/VCPU", ADMIN, {
      resource_provider_generation: g,
      total: 8,
    });
    expect(stale).toEqual({
      status: 409,
      json: { conflictingRequest: { code: 409, message: "resource provider generation conflict" } },
    });

    const tooSmall = await call("PUT", "/v2.1/os-hypervisors/api-1/inventories/MEMORY_MB", ADMIN, {
      resource_provider_generation: g + 1,
      total: 2048,
      reserved: 512,
    });
    expect(tooSmall.status).toBe(409);
    expect(tooSmall.json.conflictingRequest.message).toBe(
      "Inventory for 'MEMORY_MB' on resource provider 'api-1' in use: MEMORY_MB usage 2048 exceeds the new capacity 1536.",
    );
  });

  it("adds and removes a custom class; removing one in use is a 409; bad input is a 400", async () => {
    let g = (await getHost("api-2"))!.generation;
    const add = await call("PUT", "/v2.1/os-hypervisors/api-2/inventories/CUSTOM_GPU", ADMIN, {
      resource_provider_generation: g,
      total: 2,
    });
    expect(add.status).toBe(200);
    g = add.json.resource_provider_generation;
    expect((await claim("api-2", "vm-gpu", { CUSTOM_GPU: 1 }, 1)).claimed).toBe(true);
    const inUse = await call("DELETE", "/v2.1/os-hypervisors/api-2/inventories/CUSTOM_GPU");
    expect(inUse.status).toBe(409);
    expect(inUse.json.conflictingRequest.message).toMatch(
      /^Inventory for 'CUSTOM_GPU' on resource provider 'api-2' in use/,
    );
    expect((await call("DELETE", "/v2.1/os-hypervisors/api-2/inventories/CUSTOM_NPU")).status).toBe(404);

    const unknown = await call("PUT", "/v2.1/os-hypervisors/api-2/inventories/GPU", ADMIN, {
      resource_provider_generation: g,
      total: 1,
    });
    expect(unknown.status).toBe(400);
    expect(unknown.json.badRequest.message).toMatch(/No such resource class GPU/);
    const reserved = await call("PUT", "/v2.1/os-hypervisors/api-2/inventories/VCPU", ADMIN, {
      resource_provider_generation: g + 1,
      total: 4,
      reserved: 5,
    });
    expect(reserved.status).toBe(400);
    expect(reserved.json.badRequest.message).toMatch(/The reserved value is greater than total/);
    const extra = await call("PUT", "/v2.1/os-hypervisors/api-2/inventories/VCPU", ADMIN, {
      resource_provider_generation: g + 1,
      total: 4,
      colour: "blue",
    });
    expect(extra.status).toBe(400);
    expect(
      (
        await call("PUT", "/v2.1/os-hypervisors/nope/inventories/VCPU", ADMIN, {
          resource_provider_generation: 1,
          total: 1,
        })
      ).status,
    ).toBe(404);
  });

  it("is admin only", async () => {
    const put = await call("PUT", "/v2.1/os-hypervisors/api-1/inventories/VCPU", DEMO, {
      resource_provider_generation: 1,
      total: 8,
    });
    expect(put).toEqual({
      status: 403,
      json: {
        forbidden: {
          code: 403,
          message: "Policy doesn't allow placement:resource_providers:inventories:update to be performed.",
        },
      },
    });
    expect((await call("GET", "/v2.1/os-hypervisors/api-1/inventories", DEMO)).status).toBe(403);
    expect((await call("DELETE", "/v2.1/os-hypervisors/api-1/inventories/VCPU", DEMO)).status).toBe(403);
    expect((await call("GET", "/v2.1/os-placement-audit", DEMO)).status).toBe(403);
    expect((await call("POST", "/v2.1/os-placement-audit", DEMO)).status).toBe(403);
  });
});

describe("placement audit", () => {
  it("GET reports, POST repairs, over HTTP", async () => {
    await claim("api-2", "vm-ghost", { VCPU: 1 }, 1, new Date(0));
    const report = await call("GET", "/v2.1/os-placement-audit?host=api-2&grace_seconds=60");
    expect(report.status).toBe(200);
    expect(report.json.placement_audit).toMatchObject({
      hosts_checked: 1,
      grace_seconds: 60,
      repair: false,
      pending: [],
    });
    const kinds = report.json.placement_audit.findings.map(
      (f: { kind: string; consumer: string }) => `${f.kind} ${f.consumer}`,
    );
    expect(kinds.sort()).toEqual(["consumer_missing vm-ghost", "consumer_missing vm-gpu"]);
    expect((await call("GET", "/v2.1/os-placement-audit?grace_seconds=soon")).status).toBe(400);

    const repaired = await call("POST", "/v2.1/os-placement-audit?host=api-2");
    expect(repaired.json.placement_audit.findings.every((f: { repaired?: string }) => f.repaired)).toBe(true);
    expect(await listAllocations({ host: "api-2" })).toEqual([]);
    expect((await getHost("api-2"))!.num_instances).toBe(0);
  });

  it("novaless-audit: reports with exit code 3, repairs with 4 printing each change, then finds nothing (0)", async () => {
    await claim("api-2", "vm-cli", { VCPU: 3 }, 1, new Date(0));
    const run = async (...args: string[]) => {
      try {
        const r = await promisify(execFile)(
          process.execPath,
          ["--import", "tsx", "bin/novaless-audit.ts", "--host", "api-2", ...args],
          {
            env: { ...process.env, ...env },
          },
        );
        return { code: 0, out: r.stdout };
      } catch (e) {
        const x = e as { code: number; stdout: string; stderr: string };
        return { code: x.code, out: x.stdout + x.stderr };
      }
    };
    const found = await run();
    expect(found.code, found.out).toBe(3);
    expect(found.out).toMatch(/leak\s+api-2 {2}consumer vm-cli: instance vm-cli does not exist/);
    const fixed = await run("--repair");
    expect(fixed.code, fixed.out).toBe(4);
    expect(fixed.out).toMatch(/consumer vm-cli: instance vm-cli does not exist {2}→ released VCPU=3/);
    const clean = await run("--repair");
    expect(clean.code, clean.out).toBe(0);
    expect(clean.out).toMatch(/no leaks or mismatches found/);
    expect((await run("--grace-seconds", "x")).code).toBe(127);
  });
});
