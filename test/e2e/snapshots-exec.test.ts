// Snapshots with real data, on the exec driver: createImage archives the server's directory (the
// guest's own files) into the images bucket (S3, served by fauxqs behind the IAM gateway); Glance
// serves the data with its checksum; a server booted from the snapshot on ANOTHER host starts in
// the snapshotted files; deleting the image deletes its data. And the bucket's IAM: a host may put
// and get images, and put, get and delete the disks moves hand over (migrations/), nothing else;
// the API may get and delete images, not put, and touches no move's disk.
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { s3Client } from "../../lib/aws/clients.js";
import { runAs } from "../../lib/aws/identity.js";
import { imageKey, MIGRATIONS_PREFIX, s3ImageStore } from "../../lib/compute/image-store.js";
import { resources } from "../../lib/config.js";
import { hostIdentityOf, identityOf } from "../../local/iam/identities.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, Client, DEMO, eventually, startTestRuntime } from "./harness.js";

const instances = mkdtempSync(join(tmpdir(), "novaless-e2e-snapshots-exec-"));
let runtime: Runtime;
let client: Client;
beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({
    hosts: 2,
    driver: "exec",
    instancesPath: instances,
    transport: "long-poll",
    heartbeatSeconds: 1,
  }));
});
afterAll(async () => {
  await runtime?.stop();
  rmSync(instances, { recursive: true, force: true });
});

const admin = () => new Client(client.url, ADMIN, "2.74");
const at245 = () => new Client(client.url, DEMO, "2.45");
const hostOf = async (id: string) =>
  (await admin().get(`/v2.1/servers/${id}`)).body.server["OS-EXT-SRV-ATTR:host"] as string;
const dirOf = (host: string, id: string) => join(instances, host, id);

describe("createImage on exec", () => {
  it("archives the guest's files; Glance serves them; a server booted from it on another host has them", async () => {
    const id = await client.createServer({ imageRef: "sleeper", name: "golden" });
    expect((await client.waitForStatus(id, ["ACTIVE", "ERROR"])).status).toBe("ACTIVE");
    const host = await hostOf(id);
    // what the guest wrote in its directory: its state, which the snapshot keeps
    writeFileSync(join(dirOf(host, id), "state.txt"), "the guest's own data\n");

    const r = await at245().post(`/v2.1/servers/${id}/action`, { createImage: { name: "golden-snap" } });
    expect(r.status).toBe(202);
    const imageId = r.body.image_id as string;
    const glance = await eventually(
      () => client.get(`/image/v2/images/${imageId}`),
      (g) => g.body.status === "active",
    );
    expect(glance.body).toMatchObject({
      disk_format: "raw",
      container_format: "compressed",
      os_hash_algo: "sha512",
      image_type: "snapshot",
      instance_uuid: id,
    });
    expect(glance.body.size).toBeGreaterThan(0);
    await eventually(
      () => admin().get(`/v2.1/servers/${id}`),
      (s) => s.body.server["OS-EXT-STS:task_state"] === null,
    );

    // Glance's download: a redirect to the bucket (a presigned URL, signed by the API's role),
    // there the archive, as its checksum says
    const redirect = await fetch(`${client.url}/image/v2/images/${imageId}/file`, {
      headers: { "x-auth-token": DEMO },
      redirect: "manual",
    });
    expect(redirect.status).toBe(302);
    const url = new URL(redirect.headers.get("location")!);
    expect(url.pathname).toBe(`/${resources().imagesBucket}/${imageKey(imageId)}`);
    expect(url.searchParams.get("X-Amz-Credential")).toEqual(expect.any(String));
    const unsigned = await fetch(`${url.origin}${url.pathname}`);
    expect(unsigned.status).not.toBe(200);
    const file = await fetch(url);
    expect(file.status).toBe(200);
    const data = Buffer.from(await file.arrayBuffer());
    expect(data.length).toBe(glance.body.size);
    expect(createHash("md5").update(data).digest("hex")).toBe(glance.body.checksum);

    // booted on the other host, which lacks the data: fetched from the bucket and unpacked
    const other = [...runtime.hosts.keys()].find((h) => h !== host)!;
    const child = await admin().post("/v2.1/servers", {
      server: {
        name: "from-golden",
        flavorRef: "1",
        imageRef: imageId,
        availability_zone: `nova:${other}`,
        ...admin().networksDefault(),
      },
    });
    expect(child.status).toBe(202);
    const childId = child.body.server.id as string;
    expect((await client.waitForStatus(childId, ["ACTIVE", "ERROR"])).status).toBe("ACTIVE");
    expect(await hostOf(childId)).toBe(other);
    expect(readFileSync(join(dirOf(other, childId), "state.txt"), "utf8")).toBe("the guest's own data\n");
    // the host's own files are its new guest's, not the snapshotted one's
    expect(readFileSync(join(dirOf(other, childId), "spec.json"), "utf8")).toContain(childId);
    expect(existsSync(join(instances, other, "_snapshots", `${imageId}.${childId}.tar`))).toBe(false);

    // the owner deletes the image: its data goes from the bucket too
    expect((await client.delete(`/v2.1/images/${imageId}`)).status).toBe(204);
    const gone = await s3Client()
      .send(new GetObjectCommand({ Bucket: resources().imagesBucket, Key: imageKey(imageId) }))
      .then(
        () => "found",
        (e: Error) => e.name,
      );
    expect(gone).toBe("NoSuchKey");
  });
});

describe("the images bucket's IAM", () => {
  const denied = (p: Promise<unknown>) =>
    p.then(
      () => "allowed",
      (e: Error) => e.name,
    );
  const bucket = () => resources().imagesBucket;

  it("a host puts and gets images/ objects, and nothing else", async () => {
    const host = [...runtime.hosts.keys()][0]!;
    const asHost = <T>(fn: () => T) => runAs(hostIdentityOf(host), fn);
    const key = imageKey("11111111-2222-3333-4444-555555555555");
    expect(
      await denied(
        asHost(() => s3Client().send(new PutObjectCommand({ Bucket: bucket(), Key: key, Body: "x" }))),
      ),
    ).toBe("allowed");
    expect(
      await denied(asHost(() => s3Client().send(new GetObjectCommand({ Bucket: bucket(), Key: key })))),
    ).toBe("allowed");
    expect(
      await denied(asHost(() => s3Client().send(new DeleteObjectCommand({ Bucket: bucket(), Key: key })))),
    ).toBe("AccessDenied");
    expect(
      await denied(
        asHost(() =>
          s3Client().send(new PutObjectCommand({ Bucket: bucket(), Key: "elsewhere", Body: "x" })),
        ),
      ),
    ).toBe("AccessDenied");
  });

  it("a host puts, gets and deletes a move's disk under migrations/; the API cannot read it", async () => {
    const host = [...runtime.hosts.keys()][0]!;
    const asHost = <T>(fn: () => T) => runAs(hostIdentityOf(host), fn);
    const key = `${MIGRATIONS_PREFIX}88888888-2222-3333-4444-555555555555`;
    expect(
      await denied(
        asHost(() => s3Client().send(new PutObjectCommand({ Bucket: bucket(), Key: key, Body: "x" }))),
      ),
    ).toBe("allowed");
    expect(
      await denied(
        runAs(identityOf("api"), () => s3Client().send(new GetObjectCommand({ Bucket: bucket(), Key: key }))),
      ),
    ).toBe("AccessDenied");
    expect(
      await denied(asHost(() => s3Client().send(new GetObjectCommand({ Bucket: bucket(), Key: key })))),
    ).toBe("allowed");
    expect(
      await denied(asHost(() => s3Client().send(new DeleteObjectCommand({ Bucket: bucket(), Key: key })))),
    ).toBe("allowed");
  });

  it("a host uploads an image past one part as a multipart upload (parts of at least S3's 5 MiB) and another reads it whole", async () => {
    const [one, two] = [...runtime.hosts.keys()] as [string, string];
    const file = join(instances, "big.img");
    const data = Buffer.alloc(12 * 2 ** 20);
    for (let i = 0; i < data.length; i += 4096) data[i] = i % 251;
    writeFileSync(file, data);
    const store = s3ImageStore(undefined, { partBytes: 5 * 2 ** 20 });
    const id = "77777777-2222-3333-4444-555555555555";
    const stored = await runAs(hostIdentityOf(one), () => store.put(id, file));
    expect(stored.size).toBe(data.length);
    expect(stored.checksum).toBe(createHash("md5").update(data).digest("hex"));
    const back = join(instances, "big.back");
    expect(await runAs(hostIdentityOf(two), () => store.fetch(id, back))).toBe(true);
    expect(readFileSync(back).equals(data)).toBe(true);
    await runAs(identityOf("api"), () => store.remove(id));
  });

  it("the API gets, puts (Glance's upload) and deletes images, and nothing outside images/; the scheduler touches none", async () => {
    const key = imageKey("66666666-2222-3333-4444-555555555555");
    const as =
      (c: "api" | "scheduler") =>
      <T>(fn: () => T) =>
        runAs(identityOf(c), fn);
    expect(
      await denied(
        as("api")(() => s3Client().send(new PutObjectCommand({ Bucket: bucket(), Key: key, Body: "x" }))),
      ),
    ).toBe("allowed");
    expect(
      await denied(
        as("api")(() =>
          s3Client().send(new PutObjectCommand({ Bucket: bucket(), Key: "elsewhere/x", Body: "x" })),
        ),
      ),
    ).toBe("AccessDenied");
    expect(
      await denied(as("api")(() => s3Client().send(new DeleteObjectCommand({ Bucket: bucket(), Key: key })))),
    ).toBe("allowed");
    expect(
      await denied(
        as("scheduler")(() => s3Client().send(new GetObjectCommand({ Bucket: bucket(), Key: key }))),
      ),
    ).toBe("AccessDenied");
  });
});
