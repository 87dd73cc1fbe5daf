// `npm run image:build`: the project's own guest image, build/guest.qcow2, in the spirit of
// CirrOS, from Debian's packages only (no download):
//   1. the kernel: Debian's cloud kernel (/boot/vmlinuz-*-cloud-amd64) and the few modules the
//      guest needs from its /lib/modules (virtio, the IDE cdrom, ISO 9660, the ACPI button),
//      with their dependencies from modules.dep;
//   2. the initramfs, which is the whole userland: busybox-static and its applets' links, the
//      modules, /etc/inittab (busybox init) and scripts/image/init.sh as /etc/init.d/novaless;
//   3. the disk: an MBR (syslinux's mbr.bin) and one FAT partition holding syslinux, the kernel
//      and the initramfs (mkfs.vfat, mtools and syslinux's installer work on the image file, so
//      nothing is mounted and no root is needed), converted to qcow2.
// The guest runs from RAM and never writes its disk, so any number of overlays share it.
// Every external command has a deadline and its failure names it; a missing tool names its
// Debian package. Same inputs, same image: entries are dated SOURCE_DATE_EPOCH (or a fixed date).
import { type ExecFileException, execFile } from "node:child_process";
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { type CpioEntry, newcArchive } from "./cpio.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const HERE = fileURLToPath(new URL(".", import.meta.url));
export const GUEST_IMAGE = join(ROOT, "build", "guest.qcow2");

/** Disk geometry: 1 MiB before the partition (the MBR and its gap), 63 MiB of FAT16. */
const SECTOR = 512;
const PART_START = 2048;
const DISK_BYTES = 64 * 1024 * 1024;
const PART_SECTORS = DISK_BYTES / SECTOR - PART_START;

/** What the guest prints on the serial console: the kernel's warnings and worse (NMIs included). */
export const KERNEL_CMDLINE = "console=tty0 console=ttyS0,115200n8 loglevel=5";

/** Modules the guest cannot do without, then those it uses where the kernel has them. */
const REQUIRED_MODULES = [
  "virtio_pci",
  "virtio_net",
  "virtio_blk",
  "ata_piix",
  "sr_mod",
  "isofs",
  "button",
  "evdev",
];
const OPTIONAL_MODULES = ["virtio_scsi", "ahci", "vfat", "nls_cp437", "nls_ascii"];

const DEFAULT_EPOCH = 1735689600; // 2025-01-01T00:00:00Z
const epoch = () => Number(process.env.SOURCE_DATE_EPOCH ?? DEFAULT_EPOCH);

/** Tools by command, each with the Debian package that has it. */
const TOOLS = {
  "mkfs.vfat": "dosfstools",
  mmd: "mtools",
  mcopy: "mtools",
  syslinux: "syslinux",
  "qemu-img": "qemu-utils",
} as const;
type Tool = keyof typeof TOOLS;

// mkfs.vfat is in /usr/sbin, which a user's PATH may lack.
const PATH = [process.env.PATH ?? "", "/usr/sbin", "/sbin"].filter(Boolean).join(delimiter);
const ENV = {
  ...process.env,
  PATH,
  SOURCE_DATE_EPOCH: String(epoch()),
  TZ: "UTC",
  MTOOLS_SKIP_CHECK: "1",
  MTOOLSRC: "/dev/null",
};

export class ImageBuildError extends Error {
  override name = "ImageBuildError";
}

function onPath(command: string): boolean {
  return PATH.split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

function run(command: Tool, args: string[], timeoutMs = 60_000): Promise<string> {
  const line = `${command} ${args.join(" ")}`;
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { env: ENV, timeout: timeoutMs },
      (err: ExecFileException | null, stdout, stderr) => {
        if (!err) return resolve(stdout);
        const why = err.killed
          ? `timed out after ${timeoutMs / 1000} s`
          : `failed (${err.code ?? err.signal}): ${stderr.trim() || err.message}`;
        reject(new ImageBuildError(`image build: \`${line}\` ${why}`));
      },
    );
  });
}

interface Kernel {
  version: string;
  vmlinuz: string;
  modulesDir: string;
}

/** $NOVALESS_IMAGE_KERNEL's version, else the newest Debian cloud kernel in /boot. */
function findKernel(): Kernel {
  const wanted = process.env.NOVALESS_IMAGE_KERNEL;
  const versions = wanted
    ? [wanted]
    : readdirSync("/boot")
        .filter((f) => /^vmlinuz-.*-cloud-amd64$/.test(f))
        .map((f) => f.slice("vmlinuz-".length))
        .sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
  const version = versions.at(-1);
  const kernel = version && {
    version,
    vmlinuz: `/boot/vmlinuz-${version}`,
    modulesDir: `/lib/modules/${version}`,
  };
  if (!kernel || !existsSync(kernel.vmlinuz) || !existsSync(join(kernel.modulesDir, "modules.dep")))
    throw new ImageBuildError(
      `image build: no kernel ${wanted ? `${wanted} (NOVALESS_IMAGE_KERNEL)` : "/boot/vmlinuz-*-cloud-amd64"} ` +
        "with its modules: install Debian's linux-image-cloud-amd64",
    );
  try {
    accessSync(kernel.vmlinuz, constants.R_OK);
  } catch {
    throw new ImageBuildError(
      `image build: cannot read ${kernel.vmlinuz} (Debian makes it root's alone: 0600)`,
    );
  }
  return kernel;
}

/** The modules to load, dependencies first, as paths under the kernel's modules directory. */
export function resolveModules(modulesDep: string, builtin: string, kernel: string): string[] {
  const name = (path: string) =>
    path
      .replace(/^.*\//, "")
      .replace(/\.ko(\.[a-z]+)?$/, "")
      .replace(/-/g, "_");
  const deps = new Map<string, { path: string; deps: string[] }>();
  for (const line of modulesDep.split("\n")) {
    const [path, rest] = line.split(":");
    if (path && rest !== undefined)
      deps.set(name(path), { path, deps: rest.trim().split(/\s+/).filter(Boolean) });
  }
  const builtIn = new Set(builtin.split("\n").filter(Boolean).map(name));
  const order: string[] = [];
  const visit = (path: string) => {
    if (order.includes(path)) return;
    for (const dep of deps.get(name(path))?.deps ?? []) visit(dep);
    order.push(path);
  };
  for (const module of [...REQUIRED_MODULES, ...OPTIONAL_MODULES]) {
    const found = deps.get(module);
    if (found) visit(found.path);
    else if (!builtIn.has(module) && REQUIRED_MODULES.includes(module))
      throw new ImageBuildError(`image build: kernel ${kernel} has no module ${module}, built in or not`);
  }
  return order;
}

/** busybox-static's binary: the dynamic one (Debian's busybox) would need a libc in the image. */
function findBusybox(): string {
  const path = ["/bin/busybox", "/usr/bin/busybox"].find((p) => existsSync(p));
  if (!path) throw new ImageBuildError("image build: no busybox: install Debian's busybox-static");
  const elf = readFileSync(path);
  const phoff = Number(elf.readBigUInt64LE(0x20));
  const phentsize = elf.readUInt16LE(0x36);
  const phnum = elf.readUInt16LE(0x38);
  for (let i = 0; i < phnum; i++) {
    if (elf.readUInt32LE(phoff + i * phentsize) === 3 /* PT_INTERP */)
      throw new ImageBuildError(
        `image build: ${path} is dynamically linked (Debian's busybox): install busybox-static`,
      );
  }
  return path;
}

async function busyboxApplets(busybox: string): Promise<string[]> {
  const out = await new Promise<string>((resolve, reject) =>
    execFile(busybox, ["--list-full"], { timeout: 10_000 }, (err, stdout) =>
      err
        ? reject(new ImageBuildError(`image build: \`${busybox} --list-full\` failed: ${err.message}`))
        : resolve(stdout),
    ),
  );
  return out.split("\n").filter((p) => p && p !== "linuxrc");
}

const INITTAB = `::sysinit:/etc/init.d/novaless boot
::respawn:/etc/init.d/novaless uptime
::once:/sbin/acpid -f
::askfirst:-/bin/sh
::ctrlaltdel:/sbin/reboot
::shutdown:/etc/init.d/novaless shutdown
`;

/** The initramfs: busybox, its applets, the modules, the init and its configuration. */
async function initramfs(kernel: Kernel, busybox: string): Promise<{ archive: Buffer; modules: string[] }> {
  const read = (f: string) => readFileSync(join(kernel.modulesDir, f), "utf8");
  const modules = resolveModules(read("modules.dep"), read("modules.builtin"), kernel.version);
  const applets = await busyboxApplets(busybox);
  const dirs = new Set<string>();
  const entries: CpioEntry[] = [];
  const dir = (path: string) => {
    if (!path || path === "." || dirs.has(path)) return;
    dir(dirname(path));
    dirs.add(path);
    entries.push({ type: "dir", path });
  };
  const file = (path: string, data: Buffer | string, mode = 0o644) => {
    dir(dirname(path));
    entries.push({ type: "file", path, data: Buffer.from(data), mode });
  };
  for (const d of ["dev", "proc", "sys", "run", "root", "mnt/config", "var/log"]) dir(d);
  entries.push({ type: "dir", path: "tmp", mode: 0o1777 });
  entries.push({ type: "char", path: "dev/console", major: 5, minor: 1 });
  file("bin/busybox", readFileSync(busybox), 0o755);
  for (const applet of applets) {
    if (applet === "bin/busybox") continue;
    dir(dirname(applet));
    entries.push({ type: "symlink", path: applet, target: "/bin/busybox" });
  }
  entries.push({ type: "symlink", path: "init", target: "/bin/busybox" });
  const modulesDir = `lib/modules/${kernel.version}`;
  for (const m of modules) file(`${modulesDir}/${m}`, readFileSync(join(kernel.modulesDir, m)));
  file("etc/novaless/modules", modules.map((m) => `${m}\n`).join(""));
  file("etc/init.d/novaless", readFileSync(join(HERE, "init.sh")), 0o755);
  file("etc/inittab", INITTAB);
  file("etc/acpi/PWRF/00000080", "#!/bin/sh\nexec /etc/init.d/novaless power-button\n", 0o755);
  file("etc/hostname", "novaless-guest\n");
  file("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
  file("etc/group", "root:x:0:\n");
  file("etc/profile", "export PATH=/sbin:/bin:/usr/sbin:/usr/bin\nexport PS1='\\h:\\w\\$ '\n");
  return { archive: newcArchive(entries, epoch()), modules };
}

/** An MBR: syslinux's boot code and one active FAT16 (LBA) partition from sector 2048. */
function mbr(bootCode: Buffer): Buffer {
  const out = Buffer.alloc(SECTOR);
  bootCode.copy(out, 0, 0, 440);
  out.writeUInt32LE(0x4e4f5641, 440); // disk signature "NOVA"
  const chs = (lba: number) => {
    const c = Math.floor(lba / (255 * 63));
    if (c > 1023) return [0xfe, 0xff, 0xff];
    return [Math.floor(lba / 63) % 255, ((lba % 63) + 1) | ((c >> 2) & 0xc0), c & 0xff];
  };
  const entry = 446;
  out[entry] = 0x80;
  out.set(chs(PART_START), entry + 1);
  out[entry + 4] = 0x0e;
  out.set(chs(PART_START + PART_SECTORS - 1), entry + 5);
  out.writeUInt32LE(PART_START, entry + 8);
  out.writeUInt32LE(PART_SECTORS, entry + 12);
  out.writeUInt16LE(0xaa55, 510);
  return out;
}

const SYSLINUX_CFG = `SERIAL 0 115200
DEFAULT novaless
PROMPT 0
TIMEOUT 0
LABEL novaless
  LINUX /vmlinuz
  INITRD /initrd.gz
  APPEND ${KERNEL_CMDLINE}
`;

const MBR_BIN = "/usr/lib/syslinux/mbr/mbr.bin";

/** The build's missing commands and files, and the Debian packages that have them. */
export function missingBuildTools(): { missing: string[]; packages: string[] } {
  const missing: string[] = (Object.keys(TOOLS) as Tool[]).filter((t) => !onPath(t));
  const packages = new Set<string>(missing.map((t) => TOOLS[t as Tool]));
  if (!existsSync(MBR_BIN)) {
    missing.push(MBR_BIN);
    packages.add("syslinux-common");
  }
  return { missing, packages: [...packages] };
}

function checkTools(): void {
  const { missing, packages } = missingBuildTools();
  if (missing.length > 0)
    throw new ImageBuildError(
      `image build: missing ${missing.join(", ")}: install Debian's ${packages.join(" ")}`,
    );
}

export interface BuiltImage {
  path: string;
  /** the qcow2 file's size */
  bytes: number;
  virtualBytes: number;
  kernel: string;
  initramfsBytes: number;
  modules: string[];
  seconds: number;
}

/** Builds the image at `out` (default build/guest.qcow2), replacing it at the end in one rename. */
export async function buildGuestImage(out = GUEST_IMAGE): Promise<BuiltImage> {
  const started = performance.now();
  checkTools();
  const kernel = findKernel();
  const busybox = findBusybox();
  const { archive, modules } = await initramfs(kernel, busybox);
  const initrd = gzipSync(archive, { level: 9 });

  mkdirSync(dirname(out), { recursive: true });
  const work = mkdtempSync(join(dirname(out), ".guest-image-"));
  try {
    const stage = (name: string, data: Buffer | string) => {
      const path = join(work, name);
      writeFileSync(path, data);
      utimesSync(path, epoch(), epoch());
      return path;
    };
    const raw = join(work, "disk.raw");
    writeFileSync(raw, mbr(readFileSync(MBR_BIN)));
    truncateSync(raw, DISK_BYTES);
    await run("mkfs.vfat", [
      "-F",
      "16",
      "-n",
      "NOVALESS",
      "-i",
      "4e4f5641",
      "--invariant",
      "-h",
      String(PART_START),
      `--offset=${PART_START}`,
      raw,
      String((PART_SECTORS * SECTOR) / 1024),
    ]);
    const fat = `${raw}@@${PART_START * SECTOR}`;
    await run("mcopy", [
      "-i",
      fat,
      "-m",
      stage("syslinux.cfg", SYSLINUX_CFG),
      stage("vmlinuz", readFileSync(kernel.vmlinuz)),
      stage("initrd.gz", initrd),
      "::/",
    ]);
    await run("syslinux", ["--offset", String(PART_START * SECTOR), "--install", raw]);
    const qcow2 = join(work, "guest.qcow2");
    await run("qemu-img", ["convert", "-f", "raw", "-O", "qcow2", raw, qcow2], 120_000);
    renameSync(qcow2, out);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return {
    path: out,
    bytes: statSync(out).size,
    virtualBytes: DISK_BYTES,
    kernel: kernel.version,
    initramfsBytes: initrd.length,
    modules,
    seconds: (performance.now() - started) / 1000,
  };
}

/** The build's inputs, for freshness: this folder's files, the kernel, busybox, syslinux's MBR. */
function inputs(): string[] {
  const own = readdirSync(HERE).map((f) => join(HERE, f));
  let kernel: string[] = [];
  try {
    const k = findKernel();
    kernel = [k.vmlinuz, join(k.modulesDir, "modules.dep")];
  } catch {
    // buildGuestImage says what is missing
  }
  return [...own, ...kernel, "/bin/busybox", MBR_BIN].filter((f) => existsSync(f));
}

/** build/guest.qcow2 when it is newer than everything it is built from, else a new build. */
export async function ensureGuestImage(
  out = GUEST_IMAGE,
): Promise<{ path: string; built: BuiltImage | null }> {
  if (existsSync(out)) {
    const built = statSync(out).mtimeMs;
    if (inputs().every((f) => statSync(f).mtimeMs < built)) return { path: out, built: null };
  }
  return { path: out, built: await buildGuestImage(out) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  buildGuestImage().then(
    (img) => {
      const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
      process.stdout.write(
        `${img.path}: ${mib(img.bytes)} (virtual ${mib(img.virtualBytes)}), kernel ${img.kernel}, ` +
          `initramfs ${mib(img.initramfsBytes)} with ${img.modules.length} modules, ${img.seconds.toFixed(1)} s\n`,
      );
    },
    (err: unknown) => {
      process.stderr.write(`${err instanceof ImageBuildError ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
