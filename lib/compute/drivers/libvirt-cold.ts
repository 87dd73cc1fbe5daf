// Nova's libvirt resize and cold migration, for LibvirtDriver. Hosts share no storage, so the
// source hands the guest's root disk to the destination through the images bucket: powered off,
// the disk is flattened into a standalone qcow2 (`qemu-img convert`, its backing image merged in)
// and put at migrations/<migration uuid>; the destination fetches it as the guest's disk, grows it
// to the new flavor's root_gb (`qemu-img resize`, never smaller), makes the config drive again and
// defines and starts the domain (Nova's finish_migration). The source keeps its guest, defined and
// off, until confirm destroys it or revert starts it again; both remove the handed-over object. On
// its own host (allow_resize_to_same_host) the disk stays where it is and is grown there, the
// guest's directory kept beside it as it was (<dir>_resize, Nova's inst_base_resize) until confirm
// removes it or revert puts it back. Without qemu-img (disks are copies) the disk travels and
// stays as it is, ungrown, as spawn there does not size it either. The ephemeral and swap disks
// are not carried (Nova carries the ephemeral one): the destination makes them empty.
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import type { ImageStore } from "../image-store.js";
import {
  type ColdMigration,
  type ColdMigrationDriver,
  type GuestSpec,
  POWER_STATE,
  type PowerState,
} from "./driver.js";
import { sparse } from "./guest-files.js";
import { hostCommand } from "./host-command.js";
import { domainName } from "./libvirt-xml.js";

/** A disk's copy or flattening may take a while (the snapshot's deadline). */
const DISK_COPY_MS = 30 * 60_000;

/**
 * Marks in the guest's directory, each a migration's uuid: whose object holds this guest's disk,
 * which move finished here, and which was last confirmed or reverted here (a late cast of it
 * changes nothing).
 */
const HANDED_OVER = "resize.handed-over";
const FINISHED = "resize.finished";
const ENDED = "resize.ended";

function markOf(dir: string, mark: string): string | undefined {
  try {
    return readFileSync(join(dir, mark), "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}

/** What the guest's directory was before a move on its own host (Nova's inst_base_resize). */
export const keptDir = (dir: string): string => `${dir}_resize`;

/** The migration whose handed-over disk is this guest's, if any. */
export const handedOver = (dir: string): string | undefined => markOf(dir, HANDED_OVER);

/** A disk file's format by its magic: qcow2 ("QFI\xfb"), else raw. */
function formatOf(file: string): "qcow2" | "raw" {
  const magic = Buffer.alloc(4);
  const fd = openSync(file, "r");
  try {
    readSync(fd, magic, 0, 4, 0);
  } finally {
    closeSync(fd);
  }
  return magic.equals(Buffer.from([0x51, 0x46, 0x49, 0xfb])) ? "qcow2" : "raw";
}

/** What a cold migration uses of its LibvirtDriver. */
export interface ColdDomains {
  /** this host's name, for errors */
  host: string;
  /** Nova's instances_path: the flattened disks are made under it, in _migrations */
  instancesPath: string;
  /** qemu-img is there: disks are qcow2 overlays, flattened and grown by it */
  qemuImg(): boolean;
  /** the instance's directory */
  dir(id: string): string;
  /** a virsh command over the driver's own connection */
  virsh(command: string): Promise<string>;
  domstate(id: string): Promise<PowerState>;
  /** throws GuestNotFound for a guest the driver does not have */
  known(id: string): void;
  /** the driver acting on a guest (its state changes meanwhile are no events) */
  act<T>(id: string, work: () => Promise<T>): Promise<T>;
  /** the driver's guests and their power states */
  guests: Map<string, PowerState>;
  /** the spec a guest was defined from, if known here */
  specOf(id: string): GuestSpec | undefined;
  powerOff(id: string): Promise<void>;
  /** the guest's domain and files gone from this host (not what it handed over) */
  undefine(id: string): Promise<void>;
  /**
   * The guest's config drive, XML and spec written in its directory, its domain defined (again),
   * and started when `start`.
   */
  define(guest: GuestSpec, rootFormat: "qcow2" | "raw", start: boolean): Promise<void>;
  /** the handed-over disks: migrations/<migration uuid> in the images bucket */
  store: ImageStore;
}

export function coldMigrationOps(d: ColdDomains): ColdMigrationDriver {
  const ctx = (id: string, timeoutMs?: number) => ({ host: d.host, instance: id, timeoutMs });

  /** The root disk at least `rootGb` (never shrunk; a copied disk stays as it is). */
  const grow = async (id: string, disk: string, rootGb: number) => {
    if (!d.qemuImg()) return;
    const format = formatOf(disk);
    const info = JSON.parse(
      await hostCommand(["qemu-img", "info", "--output=json", "-f", format, disk], ctx(id)),
    ) as { "virtual-size": number };
    if (rootGb * 2 ** 30 > info["virtual-size"])
      await hostCommand(["qemu-img", "resize", "-f", format, disk, `${rootGb}G`], ctx(id));
  };

  /**
   * The flavor's other disks: the ephemeral one kept and grown where it is (its own host), else
   * made empty; swap made anew, as Nova's finish_migration does.
   */
  const otherDisks = (guest: GuestSpec, dir: string) => {
    const { ephemeral_gb, swap } = guest.flavor;
    const eph = join(dir, "disk.eph0");
    if (ephemeral_gb > 0) {
      if (!existsSync(eph)) sparse(eph, ephemeral_gb * 2 ** 30);
      else if (statSync(eph).size < ephemeral_gb * 2 ** 30) truncateSync(eph, ephemeral_gb * 2 ** 30);
    }
    rmSync(join(dir, "disk.swap"), { force: true });
    if (swap > 0) sparse(join(dir, "disk.swap"), swap * 2 ** 20);
  };

  /** The source's disk, flattened, put at migrations/<uuid>; the work file goes whatever happens. */
  const handOver = async (id: string, uuid: string) => {
    const work = join(d.instancesPath, "_migrations");
    mkdirSync(work, { recursive: true });
    const file = join(work, uuid);
    const disk = join(d.dir(id), "disk");
    try {
      await hostCommand(
        d.qemuImg()
          ? ["qemu-img", "convert", "-O", "qcow2", disk, file]
          : ["cp", "--sparse=always", disk, file],
        ctx(id, DISK_COPY_MS),
      );
      await d.store.put(uuid, file);
    } finally {
      rmSync(file, { force: true });
    }
    writeFileSync(join(d.dir(id), HANDED_OVER), uuid);
  };

  /** The object the guest's disk was handed over as (`uuid`), and its directory's mark of it. */
  const removeHandedOver = async (id: string, uuid: string | undefined) => {
    if (!uuid) return;
    await d.store.remove(uuid).catch((e: Error) => {
      throw new Error(
        `host ${d.host} could not remove the disk instance ${id} handed over for migration ${uuid} (migrations/${uuid} in the images bucket): ${e.message}`,
      );
    });
    rmSync(join(d.dir(id), HANDED_OVER), { force: true });
  };

  /** Its own host: the disk grown where it is, the directory as it was kept first. */
  const finishInPlace = async (guest: GuestSpec, m: ColdMigration, powerOn: boolean) => {
    const id = guest.instance_uuid;
    const dir = d.dir(id);
    d.known(id);
    await d.act(id, async () => {
      if ((await d.domstate(id)) !== POWER_STATE.SHUTDOWN)
        await d.virsh(`destroy ${domainName(id)}`).catch(() => undefined);
      if (!existsSync(keptDir(dir))) {
        // a copy, then a rename: a kept directory is always whole (reflinked where the
        // filesystem can, sparse files kept sparse)
        const part = `${keptDir(dir)}.part`;
        rmSync(part, { recursive: true, force: true });
        await hostCommand(
          ["cp", "-a", "--reflink=auto", "--sparse=always", dir, part],
          ctx(id, DISK_COPY_MS),
        );
        renameSync(part, keptDir(dir));
      }
    });
    try {
      await d.act(id, async () => {
        const disk = join(dir, "disk");
        await grow(id, disk, guest.flavor.root_gb);
        otherDisks(guest, dir);
        await d.define(guest, formatOf(disk), powerOn);
        writeFileSync(join(dir, FINISHED), m.uuid);
      });
    } catch (e) {
      // the guest as the source left it, for the next host or the move's failure to start
      await restoreKept(id).catch(() => undefined);
      throw e;
    }
  };

  /** The kept directory back in place of the guest's, its domain defined from it (off). */
  const restoreKept = async (id: string) => {
    const dir = d.dir(id);
    if (!existsSync(keptDir(dir))) return;
    await d.act(id, async () => {
      await d.virsh(`destroy ${domainName(id)}`).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
      renameSync(keptDir(dir), dir);
      await d.virsh(`define "${join(dir, "libvirt.xml")}"`);
      d.guests.set(id, await d.domstate(id));
    });
  };

  return {
    async migrateDiskAndPowerOff(id, m, flavor) {
      const old = d.specOf(id)?.flavor;
      if (flavor && old && (flavor.root_gb < old.root_gb || flavor.ephemeral_gb < old.ephemeral_gb))
        throw new Error(
          `Unable to resize disk down: instance ${id} on host ${d.host} has disks of ${old.root_gb} GB (root) and ${old.ephemeral_gb} GB (ephemeral), flavor ${flavor.name} ${flavor.root_gb} GB and ${flavor.ephemeral_gb} GB`,
        );
      const dir = d.dir(id);
      if (markOf(dir, FINISHED) === m.uuid || markOf(dir, ENDED) === m.uuid) return;
      await d.powerOff(id);
      // on its own host the destination finds the disk where it is
      if (m.sameHost) return;
      const earlier = handedOver(dir);
      if (earlier === m.uuid) return; // a redelivered cast: handed over already
      // a move that failed after its hand-over left its object; this one replaces it
      if (earlier) await removeHandedOver(id, earlier);
      await d.act(id, () => handOver(id, m.uuid));
    },

    async finishMigration(guest, m, powerOn) {
      const id = guest.instance_uuid;
      const dir = d.dir(id);
      // a redelivered cast of one finished here
      if (d.guests.has(id) && markOf(dir, FINISHED) === m.uuid) return;
      if (m.sameHost) return finishInPlace(guest, m, powerOn);
      // a copy of another life here (an older move's) gives way, as a rebuild's does
      if (d.guests.has(id)) await d.undefine(id);
      try {
        await d.act(id, async () => {
          mkdirSync(dir, { recursive: true });
          const disk = join(dir, "disk");
          if (!(await d.store.fetch(m.uuid, disk)))
            throw new Error(
              `migrations/${m.uuid} is not in the images bucket: its source handed no disk over (it does so only for a move to another host) or it was removed`,
            );
          await grow(id, disk, guest.flavor.root_gb);
          otherDisks(guest, dir);
          await d.define(guest, formatOf(disk), powerOn);
          writeFileSync(join(dir, FINISHED), m.uuid);
        });
      } catch (e) {
        await d.undefine(id).catch(() => undefined);
        throw new Error(
          `host ${d.host} could not finish migration ${m.uuid} of instance ${id}: ${(e as Error).message}`,
        );
      }
    },

    async finishRevertMigration(guest, m, powerOn) {
      const id = guest.instance_uuid;
      // its own host: the resized guest gives way to the kept one (Nova renames inst_base_resize
      // back); on another host the source's guest waited here, defined and off
      await restoreKept(id);
      d.known(id);
      await d.act(id, async () => {
        if (powerOn && (await d.domstate(id)) !== POWER_STATE.RUNNING)
          await d.virsh(`start ${domainName(id)}`);
        d.guests.set(id, await d.domstate(id));
      });
      await removeHandedOver(id, handedOver(d.dir(id)));
      writeFileSync(join(d.dir(id), ENDED), m.uuid);
    },

    async confirmMigration(id, m) {
      const dir = d.dir(id);
      // (read first: on another host the guest's directory goes with it)
      const uuid = handedOver(dir);
      if (m.sameHost) {
        rmSync(keptDir(dir), { recursive: true, force: true });
        if (existsSync(dir)) writeFileSync(join(dir, ENDED), m.uuid);
      } else await d.undefine(id);
      await removeHandedOver(id, uuid);
    },
  };
}
