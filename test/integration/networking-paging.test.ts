// The Networking front's lists paged as Neutron's (api/api_common.py): sorted by id, `limit` and
// `marker` (the last id seen), `page_reverse`, the `<collection>_links` to the next and previous
// pages, a marker the caller cannot see a 404, over the real store on the local emulators.

import { QueryCommand } from "@aws-sdk/lib-dynamodb";
import { beforeAll, describe, expect, it } from "vitest";
import { defaultDeps } from "../../lib/api/deps.js";
import { handleHttp } from "../../lib/api/router.js";
import { dynamo } from "../../lib/aws/clients.js";
import { networkingTable } from "../../lib/network/store/table.js";
import { NETWORKING_BY_KIND_INDEX } from "../../lib/resources.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

const BASE = "https://cloud.example.org";
const deps = { ...defaultDeps, now: () => new Date("2026-03-01T12:00:00.123Z") };
const ADMIN = "admin-token";
const DEMO = "demo-token";

// biome-ignore lint/suspicious/noExplicitAny: Neutron's bodies; the assertions check their shape
type Json = any;

async function call(method: string, path: string, token: string, body?: unknown) {
  const r = await handleHttp(
    {
      method,
      path: path.startsWith(BASE) ? path.slice(BASE.length) : `/networking${path}`,
      headers: { "content-type": "application/json", "x-auth-token": token },
      body: body === undefined ? undefined : JSON.stringify(body),
      baseUrl: BASE,
    },
    deps,
  );
  return { status: r.status, json: r.body ? (JSON.parse(r.body) as Json) : undefined };
}

const NAME = "paged";
const list = `${BASE}/networking/v2.0/networks`;
let ids: string[];

beforeAll(async () => {
  const made = await call("POST", "/v2.0/networks", DEMO, {
    networks: Array.from({ length: 5 }, () => ({ name: NAME })),
  });
  expect(made.status).toBe(201);
  ids = made.json.networks
    .map((n: Json) => n.id as string)
    .sort((a: string, b: string) => a.localeCompare(b));
});

describe("Networking lists, paged as Neutron's", () => {
  it("a page of `limit` in id order, its links to the next page (from its last id) and the previous", async () => {
    const r = await call("GET", `/v2.0/networks?name=${NAME}&limit=2`, DEMO);
    expect(r.status).toBe(200);
    expect(r.json.networks.map((n: Json) => n.id)).toEqual(ids.slice(0, 2));
    expect(r.json.networks_links).toEqual([
      { rel: "next", href: `${list}?name=${NAME}&limit=2&marker=${ids[1]}` },
      { rel: "previous", href: `${list}?name=${NAME}&limit=2&marker=${ids[0]}&page_reverse=True` },
    ]);
  });

  it("following the next links reads every item once, and the last (short) page has no next", async () => {
    const seen: string[] = [];
    let next: string | undefined = `${list}?name=${NAME}&limit=2`;
    let pages = 0;
    let lastLinks: Json[] = [];
    while (next) {
      const r = await call("GET", next, DEMO);
      expect(r.status).toBe(200);
      seen.push(...r.json.networks.map((n: Json) => n.id));
      lastLinks = r.json.networks_links;
      next = lastLinks.find((l) => l.rel === "next")?.href;
      pages++;
    }
    expect(pages).toBe(3);
    expect(seen).toEqual(ids);
    expect(lastLinks.map((l) => l.rel)).toEqual(["previous"]);
  });

  it("the marker is the last id seen: the page after it, filters applied", async () => {
    const r = await call("GET", `/v2.0/networks?name=${NAME}&limit=2&marker=${ids[2]}`, DEMO);
    expect(r.json.networks.map((n: Json) => n.id)).toEqual(ids.slice(3, 5));
    expect(r.json.networks_links[0]).toEqual({
      rel: "next",
      href: `${list}?name=${NAME}&limit=2&marker=${ids[4]}`,
    });
  });

  it("page_reverse: the page before the marker, still in id order", async () => {
    const r = await call(
      "GET",
      `/v2.0/networks?name=${NAME}&limit=2&marker=${ids[4]}&page_reverse=True`,
      DEMO,
    );
    expect(r.json.networks.map((n: Json) => n.id)).toEqual(ids.slice(2, 4));
    // back to the start: a short reverse page has no previous
    const first = await call(
      "GET",
      `/v2.0/networks?name=${NAME}&limit=2&marker=${ids[1]}&page_reverse=True`,
      DEMO,
    );
    expect(first.json.networks.map((n: Json) => n.id)).toEqual(ids.slice(0, 1));
    expect(first.json.networks_links.map((l: Json) => l.rel)).toEqual(["next"]);
  });

  it("without a limit (or 0) no paging and no links; a marker alone is ignored, as Neutron's", async () => {
    for (const q of ["", "&limit=0", `&marker=${ids[2]}`]) {
      const r = await call("GET", `/v2.0/networks?name=${NAME}${q}`, DEMO);
      expect(r.json.networks.map((n: Json) => n.id)).toEqual(ids);
      expect(r.json.networks_links).toBeUndefined();
    }
  });

  it("a marker the caller cannot see is the resource's 404", async () => {
    const unknown = "00000000-0000-4000-8000-000000000000";
    const r = await call("GET", `/v2.0/networks?limit=2&marker=${unknown}`, DEMO);
    expect(r.status).toBe(404);
    expect(r.json).toEqual({
      NeutronError: {
        type: "NetworkNotFound",
        message: `Network ${unknown} could not be found.`,
        detail: "",
      },
    });
    // the admin's own unshared network, seen by the admin only
    const admins = await call("POST", "/v2.0/networks", ADMIN, { network: { name: "admins" } });
    const hidden = admins.json.network.id;
    expect((await call("GET", `/v2.0/networks?limit=1&marker=${hidden}`, DEMO)).status).toBe(404);
    expect((await call("GET", `/v2.0/networks?limit=1&marker=${hidden}`, ADMIN)).status).toBe(200);
    for (const kind of ["subnets", "ports"]) {
      const missing = await call("GET", `/v2.0/${kind}?limit=1&marker=${unknown}`, DEMO);
      expect(missing.status).toBe(404);
      expect(missing.json.NeutronError.type).toBe(`${kind === "ports" ? "Port" : "Subnet"}NotFound`);
    }
  });

  it("a limit that is no integer of 0 or more is neutron-lib's BadRequest", async () => {
    for (const limit of ["abc", "-1", "1.5"]) {
      const r = await call("GET", `/v2.0/networks?limit=${limit}`, DEMO);
      expect(r.status).toBe(400);
      expect(r.json).toEqual({
        NeutronError: {
          type: "BadRequest",
          message: `Bad limit request: Limit must be an integer 0 or greater and not '${limit}'.`,
          detail: "",
        },
      });
    }
  });

  it("subnets and ports page the same way, with subnets_links and ports_links", async () => {
    const network = ids[0];
    for (const cidr of ["10.20.1.0/24", "10.20.2.0/24", "10.20.3.0/24"])
      expect(
        (await call("POST", "/v2.0/subnets", DEMO, { subnet: { network_id: network, cidr, ip_version: 4 } }))
          .status,
      ).toBe(201);
    for (let i = 0; i < 3; i++)
      expect((await call("POST", "/v2.0/ports", DEMO, { port: { network_id: network } })).status).toBe(201);
    for (const kind of ["subnets", "ports"]) {
      const all = (await call("GET", `/v2.0/${kind}?network_id=${network}`, DEMO)).json[kind].map(
        (x: Json) => x.id,
      );
      expect(all).toHaveLength(3);
      const r = await call("GET", `/v2.0/${kind}?network_id=${network}&limit=2&fields=id`, DEMO);
      expect(r.json[kind]).toEqual(all.slice(0, 2).map((id: string) => ({ id })));
      expect(r.json[`${kind}_links`][0]).toEqual({
        rel: "next",
        href: `${BASE}/networking/v2.0/${kind}?network_id=${network}&limit=2&fields=id&marker=${all[1]}`,
      });
    }
  });

  it("every port is listed, by id, from its network's entries: a port has no by-kind entry", async () => {
    const made: string[] = [];
    for (const network of [ids[1], ids[2]])
      for (let i = 0; i < 2; i++)
        made.push((await call("POST", "/v2.0/ports", DEMO, { port: { network_id: network } })).json.port.id);
    const listed = (await call("GET", "/v2.0/ports?fields=id", DEMO)).json.ports.map((p: Json) => p.id);
    expect(listed).toEqual([...listed].sort());
    expect(listed).toEqual(expect.arrayContaining(made));
    const seen: string[] = [];
    for (let page = "/v2.0/ports?fields=id&limit=3"; ; ) {
      const r = await call("GET", page, DEMO);
      seen.push(...r.json.ports.map((p: Json) => p.id));
      const next = r.json.ports_links?.find((l: Json) => l.rel === "next");
      if (!next) break;
      page = next.href;
    }
    expect(seen).toEqual(listed);
    const byKind = await dynamo().send(
      new QueryCommand({
        TableName: networkingTable(),
        IndexName: NETWORKING_BY_KIND_INDEX,
        KeyConditionExpression: "#k = :k",
        ExpressionAttributeNames: { "#k": "kind" },
        ExpressionAttributeValues: { ":k": "port" },
      }),
    );
    expect(byKind.Items).toEqual([]);
  });
});
