// Nova's libvirt live migration, for LibvirtDriver: the destination gets the instance's
// directory and disks of the same sizes (the copy fills them: --copy-storage-all, Nova's block
// migration, as novaless hosts share no storage), then `virsh migrate --live --persistent
// --undefinesource` to qemu+tcp://<destination>/system (Nova's default live_migration_uri), with
// its job's progress from `virsh domjobinfo`; abort is `virsh domjobabort`, force_complete pauses
// the domain so the copy converges (Nova's default without post-copy), and the destination resumes it.
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import {
  LiveMigrationAborted,
  type LiveMigrationDriver,
  type LiveMigrationJob,
  POWER_STATE,
  type PowerState,
} from "./driver.js";
import { sparse } from "./guest-files.js";
import { domainName } from "./libvirt-xml.js";

const run = promisify(execFile);

/** What a live migration uses of its LibvirtDriver: its connection, its domains, its guests. */
export interface LiveDomains {
  /** the driver's connection URI (`virsh migrate` runs on its own connection to it) */
  uri: string;
  /** a virsh command over the driver's own connection */
  virsh(command: string): Promise<string>;
  /** the instance's directory */
  dir(id: string): string;
  domstate(id: string): Promise<PowerState>;
  /** throws GuestNotFound for a guest the driver does not have */
  known(id: string): void;
  /** the driver acting on a guest (its state changes meanwhile are no events) */
  act<T>(id: string, work: () => Promise<T>): Promise<T>;
  /** the driver's guests and their power states */
  guests: Map<string, PowerState>;
}

export function liveMigrationOps(d: LiveDomains): LiveMigrationDriver {
  return {
    preLiveMigration: async (guest) => {
      const dir = d.dir(guest.instance_uuid);
      mkdirSync(dir, { recursive: true });
      if (!existsSync(join(dir, "disk"))) sparse(join(dir, "disk"), guest.flavor.root_gb * 2 ** 30);
      if (guest.flavor.ephemeral_gb > 0 && !existsSync(join(dir, "disk.eph0")))
        sparse(join(dir, "disk.eph0"), guest.flavor.ephemeral_gb * 2 ** 30);
      if (guest.flavor.swap > 0 && !existsSync(join(dir, "disk.swap")))
        sparse(join(dir, "disk.swap"), guest.flavor.swap * 2 ** 20);
      writeFileSync(join(dir, "spec.json"), JSON.stringify(guest));
    },
    liveMigrate: (id, dest, job) => liveMigrate(d, id, dest.ip, job),
    postLiveMigrationAtDestination: async (guest, opts) => {
      const id = guest.instance_uuid;
      const name = domainName(id);
      if (!opts?.paused && (await d.domstate(id)) === POWER_STATE.PAUSED) await d.virsh(`resume ${name}`);
      d.guests.set(id, await d.domstate(id));
    },
  };
}

/** The source's side: the copy, its progress, its controls; the guest leaves this host once done. */
async function liveMigrate(d: LiveDomains, id: string, destIp: string, job: LiveMigrationJob): Promise<void> {
  d.known(id);
  const name = domainName(id);
  const onAbort = () => void d.virsh(`domjobabort ${name}`).catch(() => undefined);
  const onForce = () => void d.virsh(`suspend ${name}`).catch(() => undefined);
  job.abort.addEventListener("abort", onAbort);
  job.forceComplete.addEventListener("abort", onForce);
  const progress = setInterval(() => {
    d.virsh(`domjobinfo ${name}`)
      .then((out) => {
        const p = jobProgress(out);
        if (p) job.onProgress(p);
      })
      .catch(() => undefined);
  }, 1000);
  try {
    await d.act(id, () =>
      run("virsh", [
        "-c",
        d.uri,
        "migrate",
        "--live",
        "--persistent",
        "--undefinesource",
        "--copy-storage-all",
        name,
        `qemu+tcp://${destIp}/system`,
      ]),
    );
  } catch (e) {
    if (job.abort.aborted) throw new LiveMigrationAborted(`live migration of ${id} aborted`);
    throw e;
  } finally {
    clearInterval(progress);
    job.abort.removeEventListener("abort", onAbort);
    job.forceComplete.removeEventListener("abort", onForce);
  }
  rmSync(d.dir(id), { recursive: true, force: true });
  d.guests.delete(id);
}

const UNITS: Record<string, number> = { B: 1, KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30, TiB: 2 ** 40 };

/** `virsh domjobinfo`'s memory lines ("Memory processed:  1.234 GiB") as bytes. */
export function jobProgress(out: string) {
  const read = (label: string) => {
    const m = new RegExp(`^${label}:\\s+([0-9.]+)\\s*(B|KiB|MiB|GiB|TiB)?`, "m").exec(out);
    return m ? Math.round(Number(m[1]) * (UNITS[m[2] ?? "B"] ?? 1)) : undefined;
  };
  const total = read("Memory total");
  const processed = read("Memory processed");
  const remaining = read("Memory remaining");
  if (total === undefined || processed === undefined || remaining === undefined) return undefined;
  return { memory_total_bytes: total, memory_processed_bytes: processed, memory_remaining_bytes: remaining };
}
