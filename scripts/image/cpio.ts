// The initramfs's archive: cpio's "newc" format, as the kernel unpacks it
// (Documentation/driver-api/early-userspace/buffer-format.rst). Written here rather than by
// cpio(1) so that the entries are root's and dated as asked without running as root, device nodes
// included (/dev/console, which the kernel opens before /init runs), and the bytes are the same
// on every build. Pure.

export type CpioEntry =
  | { type: "dir"; path: string; mode?: number }
  | { type: "file"; path: string; data: Buffer; mode?: number }
  | { type: "symlink"; path: string; target: string }
  | { type: "char"; path: string; major: number; minor: number; mode?: number };

const S_IFDIR = 0o040000;
const S_IFREG = 0o100000;
const S_IFLNK = 0o120000;
const S_IFCHR = 0o020000;

const pad4 = (n: number) => (4 - (n % 4)) % 4;
const hex8 = (n: number) => n.toString(16).padStart(8, "0");

function record(
  ino: number,
  mode: number,
  mtime: number,
  name: string,
  data: Buffer,
  rdev: [number, number] = [0, 0],
): Buffer {
  const nameBytes = Buffer.from(`${name}\0`);
  const fields = [ino, mode, 0, 0, mode & S_IFDIR ? 2 : 1, mtime, data.length, 0, 0, rdev[0], rdev[1]];
  const header = `070701${fields.map(hex8).join("")}${hex8(nameBytes.length)}${hex8(0)}`;
  return Buffer.concat([
    Buffer.from(header),
    nameBytes,
    Buffer.alloc(pad4(header.length + nameBytes.length)),
    data,
    Buffer.alloc(pad4(data.length)),
  ]);
}

/** An entry's mode, content and device numbers. */
function shape(e: CpioEntry): { mode: number; data: Buffer; rdev?: [number, number] } {
  if (e.type === "dir") return { mode: S_IFDIR | (e.mode ?? 0o755), data: Buffer.alloc(0) };
  if (e.type === "file") return { mode: S_IFREG | (e.mode ?? 0o644), data: e.data };
  if (e.type === "symlink") return { mode: S_IFLNK | 0o777, data: Buffer.from(e.target) };
  return { mode: S_IFCHR | (e.mode ?? 0o600), data: Buffer.alloc(0), rdev: [e.major, e.minor] };
}

/** The archive of `entries`, in their order (a directory before what it holds), owned by root. */
export function newcArchive(entries: readonly CpioEntry[], mtime: number): Buffer {
  const parts = entries.map((e, i) => {
    const { mode, data, rdev } = shape(e);
    return record(i + 1, mode, mtime, e.path.replace(/^\/+/, ""), data, rdev);
  });
  return Buffer.concat([...parts, record(0, 0, 0, "TRAILER!!!", Buffer.alloc(0))]);
}
