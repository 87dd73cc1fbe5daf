// What an image's data is, read from its first bytes, as Glance's format inspector reads an upload
// (oslo.utils' imageutils.format_inspector): the format the data shows, its virtual size where the
// format records one, and what makes it unsafe for a host to open. Glance refuses data that does
// not match the image's disk_format, and a qcow2 that names a backing file or an external data
// file (a host's qemu would open that path: CVE-2024-32498). Pure: bytes in, a verdict out.

/** How many leading bytes the inspection needs: ISO 9660's descriptor is at 32 KiB + 1. */
export const FORMAT_HEADER_BYTES = 64 * 1024;

export interface InspectedData {
  /** the format the bytes show; `raw` when they show none of the others */
  format: "qcow2" | "vmdk" | "vhd" | "vhdx" | "vdi" | "iso" | "raw";
  /** bytes the guest sees, where the header records it (qcow2, vhdx is not read: null) */
  virtualSize: number | null;
  /** why a host must not open it, if so */
  unsafe?: string;
}

const QCOW2_INCOMPATIBLE_DATA_FILE = 1n << 2n;

/** The format of data whose first bytes are `head` (at least FORMAT_HEADER_BYTES, or all of it). */
export function inspectFormat(head: Uint8Array, size: number): InspectedData {
  const b = Buffer.from(head.buffer, head.byteOffset, head.byteLength);
  const ascii = (at: number, text: string) =>
    b.length >= at + text.length && b.toString("latin1", at, at + text.length) === text;
  if (ascii(0, "QFI\xfb") && b.length >= 72) {
    const version = b.readUInt32BE(4);
    const backingOffset = b.readBigUInt64BE(8);
    const virtualSize = Number(b.readBigUInt64BE(24));
    if (backingOffset !== 0n) return { format: "qcow2", virtualSize, unsafe: "it names a backing file" };
    if (version >= 3 && b.length >= 80 && (b.readBigUInt64BE(72) & QCOW2_INCOMPATIBLE_DATA_FILE) !== 0n)
      return { format: "qcow2", virtualSize, unsafe: "it names an external data file" };
    return { format: "qcow2", virtualSize };
  }
  if (ascii(0, "KDMV")) return { format: "vmdk", virtualSize: null };
  if (ascii(0, "vhdxfile")) return { format: "vhdx", virtualSize: null };
  if (ascii(0, "conectix")) return { format: "vhd", virtualSize: null };
  if (b.length >= 0x44 && b.readUInt32LE(0x40) === 0xbeda107f) return { format: "vdi", virtualSize: null };
  if (ascii(0x8001, "CD001")) return { format: "iso", virtualSize: size };
  return { format: "raw", virtualSize: size };
}

/** disk_formats whose data Glance does not inspect (kernels, ramdisks, and formats it cannot read). */
const UNCHECKED = new Set(["ami", "ari", "aki", "ploop"]);

/**
 * Why data of `inspected` cannot be an image of `diskFormat`, or undefined when it can. An ISO is
 * also a valid raw disk (Glance's inspector lets raw through), anything else must be what it says.
 */
export function formatMismatch(diskFormat: string, inspected: InspectedData): string | undefined {
  if (inspected.unsafe) return `Image data is unsafe: ${inspected.format} ${inspected.unsafe}`;
  if (UNCHECKED.has(diskFormat)) return undefined;
  if (inspected.format === diskFormat) return undefined;
  if (diskFormat === "raw" && inspected.format === "iso") return undefined;
  return `Image data does not match disk_format ${diskFormat}: it is ${inspected.format}`;
}
