// `--driver libvirt`: the project's guest image (build/guest.qcow2, built when missing or stale)
// in the catalog as `novaless-guest`, put there as an operator would: through the Image API, as
// the seeded admin (a Keystone password token), `POST /v2/images` then `PUT /v2/images/{id}/file`
// through the front's upload behaviour (the body to the images bucket, local/image-edge.ts). The
// libvirt driver fetches it from the bucket into a host's image cache on the first boot there.
import { createReadStream, statSync } from "node:fs";
import { Readable } from "node:stream";
import { log } from "../../lib/log.js";
import { ensureGuestImage } from "../../scripts/image/build.js";

/** A fixed id, so that docs and tests can name it; `novaless-guest` names it too. */
export const GUEST_IMAGE_ID = "a1b2c3d4-0000-4000-8000-00000000a001";
export const GUEST_IMAGE_NAME = "novaless-guest";

/** The seeded admin (local/runtime/resources.ts seeds it). */
const ADMIN = { name: "admin", password: "admin-secret", project: "admin" };

async function adminToken(api: string): Promise<string> {
  const domain = { id: "default" };
  const r = await fetch(`${api}/identity/v3/auth/tokens`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      auth: {
        identity: {
          methods: ["password"],
          password: { user: { name: ADMIN.name, domain, password: ADMIN.password } },
        },
        scope: { project: { name: ADMIN.project, domain } },
      },
    }),
  });
  const token = r.headers.get("x-subject-token");
  if (r.status !== 201 || !token)
    throw new Error(`seeding ${GUEST_IMAGE_NAME}: Keystone answered ${r.status}: ${await r.text()}`);
  return token;
}

/** Create the image and upload its data through `api` (the runtime's front), as `openstack image create --file` does. */
export async function seedGuestImage(api: string): Promise<void> {
  const { path, built } = await ensureGuestImage();
  const token = await adminToken(api);
  const glance = (
    method: string,
    route: string,
    init: { body?: string | ReadableStream; type: string; size?: number },
  ) =>
    fetch(`${api}/image/v2/images${route}`, {
      method,
      headers: {
        "x-auth-token": token,
        "content-type": init.type,
        ...(init.size !== undefined ? { "content-length": String(init.size) } : {}),
      },
      ...(init.body !== undefined ? { body: init.body, duplex: "half" } : {}),
    } as RequestInit);
  const created = await glance("POST", "", {
    type: "application/json",
    body: JSON.stringify({
      id: GUEST_IMAGE_ID,
      name: GUEST_IMAGE_NAME,
      // every project boots it, as an operator's `openstack image create --public`
      visibility: "public",
      disk_format: "qcow2",
      container_format: "bare",
      min_disk: 1,
      min_ram: 64,
      architecture: "x86_64",
    }),
  });
  if (created.status !== 201)
    throw new Error(`seeding ${GUEST_IMAGE_NAME}: POST answered ${created.status}: ${await created.text()}`);
  const size = statSync(path).size;
  const put = await glance("PUT", `/${GUEST_IMAGE_ID}/file`, {
    type: "application/octet-stream",
    body: Readable.toWeb(createReadStream(path)) as ReadableStream,
    size,
  });
  if (put.status !== 204)
    throw new Error(`seeding ${GUEST_IMAGE_NAME}: the upload answered ${put.status}: ${await put.text()}`);
  log.info("runtime.guest_image_seeded", {
    image: GUEST_IMAGE_ID,
    name: GUEST_IMAGE_NAME,
    bytes: size,
    built: built !== null,
  });
}
