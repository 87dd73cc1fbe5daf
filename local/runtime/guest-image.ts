// `--driver libvirt`: the project's guest image (build/guest.qcow2, built when missing or stale)
// in the catalog as `novaless-guest`, its data in the images bucket, where the libvirt driver
// fetches it into a host's image cache on the first boot there. Seeded, as DevStack seeds CirrOS:
// Glance's own upload (PUT /v2/images/{id}/file) is not offered, because on AWS a request to a
// Lambda function carries at most 6 MB and the image is 16 MB (docs/compute-host.md).
import { createImage, updateImage } from "../../lib/catalog/image-create.js";
import { getImage } from "../../lib/catalog/repo.js";
import { s3ImageStore } from "../../lib/compute/image-store.js";
import { log } from "../../lib/log.js";
import { ensureGuestImage } from "../../scripts/image/build.js";

/** A fixed id, so that docs and tests can name it; `novaless-guest` names it too. */
export const GUEST_IMAGE_ID = "a1b2c3d4-0000-4000-8000-00000000a001";
export const GUEST_IMAGE_NAME = "novaless-guest";

export async function seedGuestImage(now = new Date()): Promise<void> {
  const { path, built } = await ensureGuestImage();
  if (!(await getImage(GUEST_IMAGE_ID))) {
    await createImage({
      id: GUEST_IMAGE_ID,
      name: GUEST_IMAGE_NAME,
      status: "queued",
      min_disk: 1,
      min_ram: 64,
      properties: { architecture: "x86_64", disk_format: "qcow2", container_format: "bare" },
      created_at: now.toISOString(),
    });
  }
  // its data again on every start: a rebuilt image replaces the stored one (each start's hosts
  // are new, their image caches empty)
  const stored = await s3ImageStore().put(GUEST_IMAGE_ID, path);
  await updateImage(GUEST_IMAGE_ID, ["queued", "saving", "active"], {
    status: "active",
    size: stored.size,
    checksum: stored.checksum,
    os_hash_algo: "sha512",
    os_hash_value: stored.os_hash_value,
    updated_at: now.toISOString(),
  });
  log.info("runtime.guest_image_seeded", {
    image: GUEST_IMAGE_ID,
    name: GUEST_IMAGE_NAME,
    bytes: stored.size,
    built: built !== null,
  });
}
