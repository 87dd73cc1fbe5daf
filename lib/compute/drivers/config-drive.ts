// Nova's config drive: an ISO 9660 volume labelled config-2 with openstack/latest/ (meta_data.json,
// user_data, network_data.json, vendor_data.json), made with genisoimage and Nova's arguments.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { GuestSpec } from "./driver.js";
import { hostCommand } from "./host-command.js";
import { networkData } from "./network-data.js";

/** The drive's files, path → content (pure). `vifType`: Nova's VIF type of the host's ports. */
export function configDriveFiles(
  guest: GuestSpec,
  availabilityZone?: string,
  vifType?: string,
): Record<string, string | Buffer> {
  const meta = {
    uuid: guest.instance_uuid,
    name: guest.name,
    hostname: guest.hostname,
    launch_index: 0,
    ...(availabilityZone ? { availability_zone: availabilityZone } : {}),
    project_id: guest.project_id,
    meta: guest.metadata,
    public_keys: guest.key_name && guest.key_data ? { [guest.key_name]: guest.key_data } : {},
    keys:
      guest.key_name && guest.key_data ? [{ name: guest.key_name, type: "ssh", data: guest.key_data }] : [],
  };
  const files: Record<string, string | Buffer> = {
    "openstack/latest/meta_data.json": JSON.stringify(meta),
    "openstack/latest/network_data.json": JSON.stringify(networkData(guest.ports ?? [], vifType)),
    "openstack/latest/vendor_data.json": "{}",
  };
  if (guest.user_data) files["openstack/latest/user_data"] = Buffer.from(guest.user_data, "base64");
  return files;
}

/** Writes the drive to `out` (genisoimage, as Nova's configdrive.py); `host` is named in its errors. */
export async function makeConfigDrive(
  guest: GuestSpec,
  out: string,
  vifType: string | undefined,
  host: string,
): Promise<void> {
  const staging = mkdtempSync(join(tmpdir(), "novaless-configdrive-"));
  try {
    for (const [path, content] of Object.entries(configDriveFiles(guest, undefined, vifType))) {
      mkdirSync(dirname(join(staging, path)), { recursive: true });
      writeFileSync(join(staging, path), content);
    }
    const argv = [
      "genisoimage",
      "-o",
      out,
      "-ldots",
      "-allow-lowercase",
      "-allow-multidot",
      "-l",
      "-publisher",
      "novaless",
      "-quiet",
      "-J",
      "-r",
      "-V",
      "config-2",
      staging,
    ];
    await hostCommand(argv, { host, instance: guest.instance_uuid, timeoutMs: 60_000 });
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}
