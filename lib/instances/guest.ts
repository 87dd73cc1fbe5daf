// What a host builds or starts a guest from. Hosts read no database, so the instance's record
// (and its key pair's public key, which Nova also passes to the driver) travels with the cast.
import { getKeypair } from "../catalog/keypairs.js";
import type { GuestSpec } from "../compute/drivers/driver.js";
import { guestPortsOf } from "./guest-ports.js";
import type { InstanceRecord } from "./types.js";

/** The guest of `r`, with `key_data` when its key pair still exists (Nova keeps the key's text on the instance). */
export async function guestSpecFor(r: InstanceRecord): Promise<GuestSpec> {
  const key = r.key_name ? await getKeypair(r.user_id, r.key_name) : undefined;
  const ports = await guestPortsOf(r);
  return {
    instance_uuid: r.id,
    name: r.name,
    hostname: r.hostname ?? r.name,
    project_id: r.project_id,
    user_id: r.user_id,
    flavor: r.flavor,
    image: r.image,
    metadata: r.metadata,
    key_name: r.key_name ?? null,
    key_data: key?.public_key ?? null,
    user_data: r.user_data ?? null,
    config_drive: r.config_drive ?? false,
    ...(ports.length ? { ports } : {}),
  };
}
