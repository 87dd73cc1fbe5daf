// Glance's front (lib/api/image) through the whole API with in-memory I/O: its plain-text errors,
// and the texts its zod checks keep for a create's body and the list's query (what Glance's
// jsonschema and its list parameters answer).
import { describe, expect, it } from "vitest";
import { handleHttp } from "../../../lib/api/router.js";
import { fakeWorld } from "./fakes.js";

const w = fakeWorld();

async function call(method: string, path: string, body?: string, token = "admin-token") {
  const r = await handleHttp({ method, path, headers: { "x-auth-token": token }, body }, w.deps);
  return { status: r.status, type: r.headers["content-type"], body: r.body };
}

/** Glance's webob error page. */
const glance = (status: string, message: string) => `${status}\n\n${message}\n\n   `;
const SCHEMA = "Provided object does not match schema 'image'";
const UUID_PATTERN =
  "^([0-9a-fA-F]){8}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-([0-9a-fA-F]){12}$";
const DISK = '["ami","ari","aki","vhd","vhdx","vmdk","raw","qcow2","vdi","iso","ploop"]';

describe("Glance's front", () => {
  it("refuses what is not a JSON object as malformed, in Glance's plain text", async () => {
    for (const body of ["{bad", "", "[]", "null", "5"]) {
      const r = await call("POST", "/image/v2/images", body);
      expect(r.status).toBe(400);
      expect(r.type).toMatch(/^text\/plain/);
      expect(r.body).toBe(glance("400 Bad Request", "Malformed JSON in request body."));
    }
  });

  it("checks a create's attributes in Glance's order, with its texts", async () => {
    const cases: [object, string][] = [
      [{ id: "abc" }, `${SCHEMA}: "abc" does not match '${UUID_PATTERN}'`],
      [{ id: 5, name: 5 }, `${SCHEMA}: 5 does not match '${UUID_PATTERN}'`],
      [{ name: "x".repeat(256) }, `${SCHEMA}: name must be a string of at most 255 characters`],
      [
        { visibility: "private" },
        "Only public images are served here: the catalog's images are every project's.",
      ],
      [{ protected: true }, "Protected images are not supported here."],
      [{ tags: ["a"] }, "Image tags are not supported here."],
      [{ disk_format: "foo" }, `${SCHEMA}: "foo" is not one of ${DISK}`],
      [
        { foo: 5, min_disk: -1 },
        `${SCHEMA}: 5 is not of type 'string'\n\nFailed validating 'type' in schema['additionalProperties']`,
      ],
      [
        { min_disk: null, min_ram: 1.5 },
        `${SCHEMA}: 1.5 is not valid under any of the given schemas\n\nFailed validating 'type' in schema['properties']['min_ram']`,
      ],
    ];
    for (const [body, message] of cases) {
      const r = await call("POST", "/image/v2/images", JSON.stringify(body));
      expect([r.status, r.body]).toEqual([400, glance("400 Bad Request", message)]);
    }
  });

  it("a member may not create: Glance's 403 before the body is read", async () => {
    const r = await call("POST", "/image/v2/images", "{bad", "demo-token");
    expect([r.status, r.body]).toEqual([
      403,
      glance("403 Forbidden", "You are not authorized to complete add_image action."),
    ]);
  });

  it("checks the list's limit and sort", async () => {
    const cases: [string, string][] = [
      ["limit=-1", "limit param must be positive"],
      ["limit=abc&sort_key=bogus", "limit param must be positive"],
      ["sort_key=bogus", "Invalid sort key: bogus."],
      ["sort_key=name&sort_dir=up", "Invalid sort direction: up"],
      ["sort=name:sideways", "Invalid sort direction: sideways"],
    ];
    for (const [q, message] of cases) {
      const r = await call("GET", `/image/v2/images?${q}`);
      expect([r.status, r.body]).toEqual([400, glance("400 Bad Request", message)]);
    }
    const page = await call("GET", "/image/v2/images?limit=1&sort=name:asc");
    expect(page.status).toBe(200);
    const json = JSON.parse(page.body);
    expect(json.images).toHaveLength(1);
    expect(json.next).toBe(`/v2/images?sort=name%3Aasc&marker=${json.images[0].id}&limit=1`);
  });

  it("answers a path it does not serve with Glance's 404", async () => {
    const r = await call("GET", "/image/v2/nothing");
    expect([r.status, r.body]).toEqual([404, glance("404 Not Found", "The resource could not be found.")]);
  });
});
