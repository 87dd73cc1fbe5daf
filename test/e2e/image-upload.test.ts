// Glance's upload (PUT /v2/images/{id}/file) on the whole runtime: through the front's upload
// behaviour (what the stack's CloudFront distribution does: the body straight to the images
// bucket, lib/api/image/edge.ts) and, for what the edge asks, the API itself. queued → saving →
// active with what was stored; Glance's 400, 401, 403, 409 and 415; a failed upload queued again
// with nothing kept; a server built from the uploaded image.
import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { s3ImageStore } from "../../lib/compute/image-store.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, DEMO, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;
beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({ hosts: 1, buildMs: 20 }));
});
afterAll(async () => runtime?.stop());

async function glance(
  method: string,
  path: string,
  opts: { token?: string; body?: Uint8Array | string; headers?: Record<string, string> } = {},
) {
  const res = await fetch(`${runtime.url}/image${path}`, {
    method,
    redirect: "manual",
    headers: {
      ...(opts.token === "" ? {} : { "x-auth-token": opts.token ?? ADMIN }),
      "content-type": typeof opts.body === "string" ? "application/json" : "application/octet-stream",
      ...opts.headers,
    },
    ...(opts.body !== undefined ? { body: opts.body } : {}),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) };
}

async function created(fields: Record<string, string> = { disk_format: "raw", container_format: "bare" }) {
  const r = await glance("POST", "/v2/images", { body: JSON.stringify({ name: "up", ...fields }) });
  expect(r.status).toBe(201);
  return r.json() as { id: string; status: string; owner: string };
}
const status = async (id: string) => (await glance("GET", `/v2/images/${id}`)).json();

/** a qcow2 header (version 3, `virtual` bytes) and `size` bytes in all */
function qcow2(size: number, virtual: bigint): Buffer {
  const b = randomBytes(size);
  b.fill(0, 0, 104);
  b.write("QFI\xfb", 0, "latin1");
  b.writeUInt32BE(3, 4);
  b.writeBigUInt64BE(virtual, 24);
  return b;
}

describe("an upload through the edge", () => {
  it("stores 11 MiB (past API Gateway's 10 MB) in the images bucket: active, with its size, checksums and virtual size", async () => {
    // public: every project boots it (an admin's image is shared otherwise, Glance's default)
    const image = await created({ disk_format: "qcow2", container_format: "bare", visibility: "public" });
    expect([image.status, image.owner]).toEqual(["queued", "admin"]);
    const data = qcow2(11 * 2 ** 20, 2n ** 30n);
    const put = await glance("PUT", `/v2/images/${image.id}/file`, { body: data });
    expect([put.status, put.text]).toEqual([204, ""]);
    expect(await status(image.id)).toMatchObject({
      status: "active",
      size: data.length,
      virtual_size: 2 ** 30,
      checksum: createHash("md5").update(data).digest("hex"),
      os_hash_algo: "sha512",
      os_hash_value: createHash("sha512").update(data).digest("hex"),
    });
    const stored = await s3ImageStore().open(image.id);
    const chunks: Buffer[] = [];
    for await (const c of stored!.body) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).equals(data)).toBe(true);
    // a server boots from it
    const server = await client.createServer({ name: "from-upload", imageRef: image.id });
    await client.waitForStatus(server, ["ACTIVE"]);
    // its data once: a second upload is Glance's 409, the data unchanged
    const again = await glance("PUT", `/v2/images/${image.id}/file`, { body: Buffer.from("x") });
    expect([again.status, again.text.split("\n")[2]]).toEqual([
      409,
      "Image status transition from active to saving is not allowed",
    ]);
    expect((await status(image.id)).size).toBe(data.length);
  });

  it("refuses data that is not its disk_format (400) and an unsafe qcow2, and the image is queued again with no data kept", async () => {
    const image = await created({ disk_format: "vmdk", container_format: "bare" });
    const put = await glance("PUT", `/v2/images/${image.id}/file`, { body: qcow2(4096, 2n ** 20n) });
    expect([put.status, put.text.split("\n")[2]]).toEqual([
      400,
      "Image data does not match disk_format vmdk: it is qcow2",
    ]);
    expect((await status(image.id)).status).toBe("queued");
    expect(await s3ImageStore().open(image.id)).toBeUndefined();
    const backed = await created({ disk_format: "qcow2", container_format: "bare" });
    const unsafe = qcow2(4096, 2n ** 20n);
    unsafe.writeBigUInt64BE(512n, 8);
    const refused = await glance("PUT", `/v2/images/${backed.id}/file`, { body: unsafe });
    expect([refused.status, refused.text.split("\n")[2]]).toEqual([
      400,
      "Image data is unsafe: qcow2 it names a backing file",
    ]);
    // queued again, it takes good data
    const good = await glance("PUT", `/v2/images/${backed.id}/file`, { body: qcow2(4096, 2n ** 20n) });
    expect(good.status).toBe(204);
  });

  it("answers Glance's refusals before anything is stored: 401 without a token, 403 for another project's image it sees (404 for one it does not), 404 for no image, 400 without formats, 415 for another content type", async () => {
    const image = await created({ disk_format: "raw", container_format: "bare", visibility: "public" });
    const path = `/v2/images/${image.id}/file`;
    const body = Buffer.from("data");
    expect((await glance("PUT", path, { token: "", body })).status).toBe(401);
    const other = await glance("PUT", path, { token: DEMO, body });
    expect([other.status, other.text.split("\n")[2]]).toEqual([
      403,
      "You are not authorized to complete upload_image action.",
    ]);
    const hidden = await created();
    expect((await glance("PUT", `/v2/images/${hidden.id}/file`, { token: DEMO, body })).status).toBe(404);
    expect(
      (await glance("PUT", "/v2/images/00000000-0000-4000-8000-000000000000/file", { body })).status,
    ).toBe(404);
    const bare = await created({});
    const unformatted = await glance("PUT", `/v2/images/${bare.id}/file`, { body });
    expect([unformatted.status, unformatted.text.split("\n")[2]]).toEqual([
      400,
      "Properties disk_format, container_format must be set prior to saving data.",
    ]);
    const typed = await glance("PUT", path, { body, headers: { "content-type": "text/plain" } });
    expect(typed.status).toBe(415);
    expect((await status(image.id)).status).toBe("queued");
  });
});

describe("a member's own image", () => {
  it("is made private and uploaded by a member (Glance's default policy), boots its project's server, and a flavor below its min_ram is Nova's 400", async () => {
    const made = await glance("POST", "/v2/images", {
      token: DEMO,
      body: JSON.stringify({
        name: "members",
        disk_format: "raw",
        container_format: "bare",
        visibility: "private",
        min_ram: 64,
      }),
    });
    expect(made.status).toBe(201);
    const image = made.json() as { id: string; owner: string; visibility: string };
    expect([image.owner, image.visibility]).toEqual(["demo", "private"]);
    const data = Buffer.alloc(1024, "*");
    const put = await glance("PUT", `/v2/images/${image.id}/file`, { token: DEMO, body: data });
    expect(put.status).toBe(204);
    expect((await glance("GET", `/v2/images/${image.id}`, { token: DEMO })).json()).toMatchObject({
      status: "active",
      size: 1024,
    });
    const demo = client.as(DEMO);
    const server = await demo.createServer({ name: "from-members", imageRef: image.id });
    await client.waitForStatus(server, ["ACTIVE"]);
    // m1.tiny has 512 MB: an image asking more (tempest's test_boot_with_low_ram)
    const patched = await glance("PATCH", `/v2/images/${image.id}`, {
      token: DEMO,
      body: JSON.stringify([{ op: "replace", path: "/min_ram", value: 513 }]),
      headers: { "content-type": "application/openstack-images-v2.1-json-patch" },
    });
    expect(patched.json().min_ram).toBe(513);
    const low = await demo.post("/v2.1/servers", {
      server: { name: "low-ram", flavorRef: "1", imageRef: image.id },
    });
    expect([low.status, low.body]).toEqual([
      400,
      { badRequest: { code: 400, message: "Flavor's memory is too small for requested image." } },
    ]);
    expect((await glance("DELETE", `/v2/images/${image.id}`, { token: DEMO })).status).toBe(204);
    expect(await s3ImageStore().open(image.id)).toBeUndefined();
  });
});

describe("the steps the edge asks of the API", () => {
  it("begin answers a presigned PUT and moves the image to saving (a second begin is 409); complete is idempotent; abort queues it again", async () => {
    const image = await created();
    const path = `/v2/images/${image.id}/file`;
    const begin = await glance("PUT", path, { headers: { "x-novaless-upload": "begin" } });
    expect(begin.status).toBe(307);
    const location = begin.headers.get("location")!;
    expect(location).toMatch(new RegExp(`/images/${image.id}\\?.*X-Amz-Signature=`));
    expect((await status(image.id)).status).toBe("saving");
    const twice = await glance("PUT", path, { headers: { "x-novaless-upload": "begin" } });
    expect([twice.status, twice.text.split("\n")[2]]).toEqual([
      409,
      "Image status transition from saving to saving is not allowed",
    ]);
    // the URL writes without other credentials
    const data = Buffer.from("raw bytes");
    expect((await fetch(location, { method: "PUT", body: data })).status).toBe(200);
    const complete = await glance("PUT", path, { headers: { "x-novaless-upload": "complete" } });
    expect(complete.status).toBe(204);
    expect(await status(image.id)).toMatchObject({ status: "active", size: data.length });
    expect((await glance("PUT", path, { headers: { "x-novaless-upload": "complete" } })).status).toBe(204);

    const other = await created();
    const p2 = `/v2/images/${other.id}/file`;
    expect((await glance("PUT", p2, { headers: { "x-novaless-upload": "begin" } })).status).toBe(307);
    expect((await glance("PUT", p2, { headers: { "x-novaless-upload": "abort" } })).status).toBe(204);
    expect((await status(other.id)).status).toBe("queued");
  });
});
