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
        { visibility: "secret" },
        `${SCHEMA}: "secret" is not one of ["community","public","private","shared"]`,
      ],
      [{ protected: true }, "Protected images are not supported here."],
      [{ os_hidden: true }, "Hidden images are not supported here."],
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

  it("refuses what a body may not name: read-only (403, some before its schema), reserved (403), a long property name (400)", async () => {
    const cases: [object, number, string][] = [
      [{ self: "x", name: 5 }, 403, "Attribute 'self' is read-only."],
      [{ name: 5, status: "active" }, 400, `${SCHEMA}: name must be a string of at most 255 characters`],
      [{ os_glance_x: "1" }, 403, "Attribute 'os_glance_x' is reserved."],
      [{ deleted: "1" }, 403, "Attribute 'deleted' is reserved."],
      [{ ["k".repeat(256)]: "v" }, 400, "Custom property should not be greater than 255 characters."],
    ];
    for (const [body, status, message] of cases) {
      const r = await call("POST", "/image/v2/images", JSON.stringify(body), "demo-token");
      expect([r.status, r.body]).toEqual([
        status,
        glance(status === 403 ? "403 Forbidden" : "400 Bad Request", message),
      ]);
    }
  });

  it("reads the body before the policy (Glance's deserializer comes first); a member may not create for another project, nor publicize", async () => {
    expect((await call("POST", "/image/v2/images", "{bad", "demo-token")).status).toBe(400);
    const cases: [object, string][] = [
      [{ owner: "admin" }, "You are not permitted to create images owned by 'admin'"],
      [{ visibility: "public" }, "You are not authorized to complete publicize_image action."],
      [{ status: "active" }, "Attribute 'status' is read-only."],
    ];
    for (const [body, message] of cases) {
      const r = await call("POST", "/image/v2/images", JSON.stringify(body), "demo-token");
      expect([r.status, r.body]).toEqual([403, glance("403 Forbidden", message)]);
    }
    const many = Object.fromEntries(Array.from({ length: 129 }, (_, i) => [`p${i}`, "v"]));
    const r = await call("POST", "/image/v2/images", JSON.stringify(many), "demo-token");
    expect([r.status, r.body]).toEqual([
      413,
      glance(
        "413 Request Entity Too Large",
        "The limit has been exceeded on the number of allowed image properties. Attempted: 129, Maximum: 128",
      ),
    ]);
  });

  it("checks a PATCH's media type and operations as Glance's deserializer, before the image is looked up", async () => {
    const none = "/image/v2/images/00000000-0000-4000-8000-000000000000";
    const patch = async (body: unknown, type = "application/openstack-images-v2.1-json-patch") => {
      const r = await handleHttp(
        {
          method: "PATCH",
          path: none,
          headers: { "x-auth-token": "demo-token", "content-type": type },
          body: JSON.stringify(body),
        },
        w.deps,
      );
      return [r.status, r.body.split("\n")[2], r.headers["accept-patch"]];
    };
    const types =
      "application/openstack-images-v2.0-json-patch, application/openstack-images-v2.1-json-patch";
    expect(await patch([], "application/json")).toEqual([
      415,
      `Image PATCH expects Content-Type one of: ${types}`,
      types,
    ]);
    const cases: [unknown, number, string][] = [
      [{}, 400, "Request body must be a JSON array of operation objects."],
      [[5], 400, "Operations must be JSON objects."],
      [
        [{ path: "/a" }],
        400,
        "Unable to find `op` in JSON Schema change. It must be one of the following: add, remove, replace.",
      ],
      [
        [{ op: "move", path: "/a" }],
        400,
        "Invalid operation: `move`. It must be one of the following: add, remove, replace.",
      ],
      [[{ op: "add", path: "a", value: "1" }], 400, 'Pointer `a` does not start with "/".'],
      [[{ op: "add", path: "/a/b", value: "1" }], 400, "Invalid JSON pointer for this resource: '/a/b'"],
      [[{ op: "add", path: "/a" }], 400, 'Operation "add" requires a member named "value".'],
      [[{ op: "replace", path: "/status", value: "active" }], 403, "Attribute 'status' is read-only."],
      [[{ op: "add", path: "/os_glance_x", value: "1" }], 403, "Attribute 'os_glance_x' is reserved."],
      [[{ op: "add", path: "/a", value: 5 }], 400, `${SCHEMA}: 5 is not of type 'string'`],
      [
        [{ op: "replace", path: "/min_ram", value: "x" }],
        400,
        `${SCHEMA}: "x" is not valid under any of the given schemas`,
      ],
      // all well-formed: the image is looked up, and there is none
      [
        [{ op: "add", path: "/a~1b", value: "1" }],
        404,
        "No image found with ID 00000000-0000-4000-8000-000000000000",
      ],
    ];
    for (const [body, status, message] of cases)
      expect((await patch(body)).slice(0, 2)).toEqual([status, message]);
    // draft 4: the op is the member's name
    expect(
      (
        await patch(
          [{ add: "/a", replace: "/b", value: "1" }],
          "application/openstack-images-v2.0-json-patch",
        )
      ).slice(0, 2),
    ).toEqual([400, 'Operation objects must contain only one member named "add", "remove", or "replace".']);
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
