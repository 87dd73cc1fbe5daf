// Nova's libvirt live migration, for LibvirtDriver: the destination gets the instance's
// directory, the image in its own cache and the root disk as a qcow2 overlay on it, the other disks
// of the same sizes, the config drive made again and the ports' filters put in place (Nova's
// pre_live_migration), then `virsh
// migrate --live --p2p --persistent --undefinesource --copy-storage-inc` to
// qemu+tcp://<destination>/system (Nova's default live_migration_uri and its peer-to-peer flag: the
// source's daemon, not this client, reaches the destination's). The disks are copied as Nova's
// block migration copies them (VIR_MIGRATE_NON_SHARED_INC), since novaless hosts share no storage:
// incrementally, the root disk's top layer only, the destination's overlay standing on the same
// image in its own cache; a read-only config drive is not copied. Its job's progress comes from
// `virsh domjobinfo`; abort is `virsh domjobabort`, force_complete pauses the domain so the copy
// converges (Nova's default without post-copy), and the destination resumes it. A copy that has not
// completed in Nova's live_migration_completion_timeout (800 s per GiB of memory and disk) is
// aborted, as Nova's default timeout action. The guest gone, the source removes its filters.
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type GuestSpec,
  LiveMigrationAborted,
  type LiveMigrationDriver,
  type LiveMigrationJob,
  POWER_STATE,
  type PowerState,
} from "./driver.js";
import { sparse } from "./guest-files.js";
import { hostCommand, qcow2Overlay } from "./host-command.js";
import { domainName } from "./libvirt-xml.js";

/** Nova's live_migration_completion_timeout, per GiB of memory and disk to copy. */
const COMPLETION_SECONDS_PER_GIB = 800;

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
  /** this host's name, for errors */
  host: string;
  /** the guest's image in this host's cache (fetched when it is a server's image): its path */
  fetchImage(image: GuestSpec["image"]): Promise<string>;
  /** writes the guest's config drive */
  configDrive(guest: GuestSpec, out: string): Promise<void>;
  /** the spec a guest was defined from, if known here */
  specOf(id: string): GuestSpec | undefined;
  /** the guest's ports' filters enforced on this host (libvirt-filters.ts) */
  applyFilters(guest: GuestSpec): Promise<void>;
  /** the guest's ports' filters gone from this host, by its spec (never throws) */
  removeFilters(id: string): Promise<void>;
}

export function liveMigrationOps(d: LiveDomains): LiveMigrationDriver {
  return {
    preLiveMigration: async (guest) => {
      const id = guest.instance_uuid;
      const dir = d.dir(id);
      mkdirSync(dir, { recursive: true });
      if (!existsSync(join(dir, "disk"))) {
        const base = await d.fetchImage(guest.image);
        const format = guest.image.properties.disk_format === "qcow2" ? "qcow2" : "raw";
        await qcow2Overlay(base, format, join(dir, "disk"), guest.flavor.root_gb, {
          host: d.host,
          instance: id,
        });
      }
      if (guest.flavor.ephemeral_gb > 0 && !existsSync(join(dir, "disk.eph0")))
        sparse(join(dir, "disk.eph0"), guest.flavor.ephemeral_gb * 2 ** 30);
      if (guest.flavor.swap > 0 && !existsSync(join(dir, "disk.swap")))
        sparse(join(dir, "disk.swap"), guest.flavor.swap * 2 ** 20);
      if (guest.config_drive && !existsSync(join(dir, "disk.config")))
        await d.configDrive(guest, join(dir, "disk.config"));
      writeFileSync(join(dir, "spec.json"), JSON.stringify(guest));
      // in place before the guest's taps are made here, as Neutron's agent wires a port at binding
      await d.applyFilters(guest);
    },
    liveMigrate: (id, dest, job) => liveMigrate(d, id, dest.ip, job),
    postLiveMigrationAtDestination: async (guest, opts) => {
      const id = guest.instance_uuid;
      const name = domainName(id);
      if (!opts?.paused && (await d.domstate(id)) === POWER_STATE.PAUSED) await d.virsh(`resume ${name}`);
      d.guests.set(id, await d.domstate(id));
      // the port's filters as they are now: a refresh during the copy went to the source
      writeFileSync(join(d.dir(id), "spec.json"), JSON.stringify(guest));
      await d.applyFilters(guest);
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
  const flavor = d.specOf(id)?.flavor;
  const gib = flavor
    ? Math.max(1, Math.ceil(flavor.memory_mb / 1024 + flavor.root_gb + flavor.ephemeral_gb))
    : 1;
  const completion = setTimeout(
    () => {
      timedOut = true;
      onAbort();
    },
    gib * COMPLETION_SECONDS_PER_GIB * 1000,
  );
  let timedOut = false;
  completion.unref();
  const progress = setInterval(() => {
    d.virsh(`domjobinfo ${name}`)
      .then((out) => {
        const p = jobProgress(out);
        if (p) job.onProgress(p);
      })
      .catch(() => undefined);
  }, 500);
  try {
    await d.act(id, () =>
      hostCommand(
        [
          "virsh",
          "-c",
          d.uri,
          "migrate",
          "--live",
          "--p2p",
          "--persistent",
          "--undefinesource",
          "--copy-storage-inc",
          name,
          `qemu+tcp://${destIp}/system`,
        ],
        // past the completion timeout the job is aborted; this is the client's own deadline
        { host: d.host, instance: id, timeoutMs: (gib * COMPLETION_SECONDS_PER_GIB + 120) * 1000 },
      ),
    );
  } catch (e) {
    if (job.abort.aborted)
      throw new LiveMigrationAborted(
        `live migration of ${id} from host ${d.host} aborted; it runs here still`,
      );
    if (timedOut)
      throw new LiveMigrationAborted(
        `live migration of ${id} from host ${d.host} did not complete in ${gib * COMPLETION_SECONDS_PER_GIB} s (live_migration_completion_timeout) and was aborted; it runs here still`,
      );
    throw e;
  } finally {
    clearTimeout(completion);
    clearInterval(progress);
    job.abort.removeEventListener("abort", onAbort);
    job.forceComplete.removeEventListener("abort", onForce);
  }
  await d.removeFilters(id);
  rmSync(d.dir(id), { recursive: true, force: true });
  d.guests.delete(id);
}

const UNITS: Record<string, number> = { B: 1, KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30, TiB: 2 ** 40 };

/**
 * `virsh domjobinfo`'s memory lines ("Memory processed:  1.234 GiB") as bytes. A running job
 * without them (a block migration's disk copy comes before its memory's) is all zeros, as Nova
 * reads libvirt's job info then; no job: undefined.
 */
export function jobProgress(out: string) {
  if (!/^Job type:\s*(Bounded|Unbounded)/m.test(out)) return undefined;
  const read = (label: string) => {
    const m = new RegExp(`^${label}:\\s+([0-9.]+)\\s*(B|KiB|MiB|GiB|TiB)?`, "m").exec(out);
    return m ? Math.round(Number(m[1]) * (UNITS[m[2] ?? "B"] ?? 1)) : 0;
  };
  return {
    memory_total_bytes: read("Memory total"),
    memory_processed_bytes: read("Memory processed"),
    memory_remaining_bytes: read("Memory remaining"),
  };
}
