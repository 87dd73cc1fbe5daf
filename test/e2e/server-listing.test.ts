// GET /servers/detail through the local runtime (the API function under its own role, the IAM
// gateway, DynamoDB through the real SDK): pages followed by their next links give the one-shot
// listing, deleted servers show only with changes-since, and the API reads them by Query, never
// by Scan (the meter counts the API's own requests).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { meterReading, startMeter, stopMeter } from "../../lib/aws/meter.js";
import { accessKeyIdOf } from "../../local/iam/identities.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, startTestRuntime } from "./harness.js";

interface Listed {
  id: string;
  name: string;
  status: string;
  tenant_id: string;
  "OS-EXT-SRV-ATTR:host"?: string;
}

interface Page {
  servers: Listed[];
  servers_links?: { href: string }[];
}

describe("servers listings through the runtime", () => {
  let runtime: Runtime;
  let client: Client;
  beforeAll(async () => {
    ({ runtime, client } = await startTestRuntime({ hosts: 2, buildMs: 20 }));
  }, 120_000);
  afterAll(async () => {
    await runtime?.stop();
  });

  /** Every page of `path` (which has a limit), following servers_links. */
  async function pages(c: Client, path: string): Promise<{ ids: string[]; requests: number }> {
    const ids: string[] = [];
    let next: string | undefined = path;
    let requests = 0;
    while (next) {
      const r: { status: number; body: Page } = await c.get<Page>(next);
      expect(r.status).toBe(200);
      requests++;
      ids.push(...r.body.servers.map((s: Listed) => s.id));
      const href: string | undefined = r.body.servers_links?.[0]?.href;
      next = href ? href.slice(href.indexOf("/v2.1/")) : undefined;
    }
    return { ids, requests };
  }

  it("pages with limit/marker, hides deleted servers but with changes-since, and never Scans", async () => {
    const mine = await Promise.all(
      Array.from({ length: 7 }, (_, i) => client.createServer({ name: `list-${i}` })),
    );
    const theirs = await Promise.all(
      Array.from({ length: 2 }, (_, i) => client.as(ADMIN).createServer({ name: `admin-${i}` })),
    );
    for (const id of [...mine, ...theirs]) await client.waitForStatus(id, ["ACTIVE"]);
    const before = new Date(Date.now() - 1000).toISOString();
    const gone = mine[3]!;
    expect((await client.delete(`/v2.1/servers/${gone}`)).status).toBe(204);
    await client.waitForStatus(gone, ["GONE"]);

    startMeter();
    meterReading({ reset: true });
    // a member: its own project's, newest first, the deleted one hidden
    const whole = await client.get<{ servers: Listed[] }>("/v2.1/servers/detail");
    const own = whole.body.servers.map((s) => s.id);
    expect(new Set(own)).toEqual(new Set(mine.filter((id) => id !== gone)));
    const paged = await pages(client, "/v2.1/servers/detail?limit=2");
    expect(paged.ids).toEqual(own);
    expect(paged.requests).toBe(3);
    // an admin: every project's, and by host, by status
    const all = await client.as(ADMIN).get<{ servers: Listed[] }>("/v2.1/servers/detail?all_tenants=1");
    expect(all.body.servers).toHaveLength(8);
    expect((await pages(client.as(ADMIN), "/v2.1/servers/detail?all_tenants=1&limit=3")).ids).toEqual(
      all.body.servers.map((s) => s.id),
    );
    const host = all.body.servers[0]!["OS-EXT-SRV-ATTR:host"]!;
    const onHost = await client
      .as(ADMIN)
      .get<{ servers: Listed[] }>(`/v2.1/servers/detail?all_tenants=1&host=${host}&status=ACTIVE`);
    expect(onHost.body.servers.map((s) => s.id)).toEqual(
      all.body.servers.filter((s) => s["OS-EXT-SRV-ATTR:host"] === host).map((s) => s.id),
    );
    // changes-since: the deleted one too, as DELETED
    const changed = await client.get<{ servers: Listed[] }>(
      `/v2.1/servers/detail?changes-since=${encodeURIComponent(before)}`,
    );
    expect(changed.body.servers.find((s) => s.id === gone)?.status).toBe("DELETED");
    // a marker that is no server
    const bad = await client.get("/v2.1/servers?marker=6a1f0b8e-0000-4000-8000-000000000000");
    expect(bad.status).toBe(400);

    const api = meterReading({ reset: true })[accessKeyIdOf("api")];
    stopMeter();
    expect(api?.requests["dynamodb:Query"]).toBeGreaterThan(0);
    expect(api?.requests["dynamodb:Scan"]).toBeUndefined();
  }, 180_000);
});
