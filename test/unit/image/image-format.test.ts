// Glance's format inspection of an upload's first bytes (lib/catalog/image-format.ts).
import { describe, expect, it } from "vitest";
import { FORMAT_HEADER_BYTES, formatMismatch, inspectFormat } from "../../../lib/catalog/image-format.js";

function qcow2({ version = 3, backing = 0n, incompatible = 0n } = {}): Buffer {
  const b = Buffer.alloc(FORMAT_HEADER_BYTES);
  b.write("QFI\xfb", 0, "latin1");
  b.writeUInt32BE(version, 4);
  b.writeBigUInt64BE(backing, 8);
  b.writeBigUInt64BE(1n << 30n, 24);
  b.writeBigUInt64BE(incompatible, 72);
  return b;
}

describe("inspectFormat", () => {
  it("reads a qcow2's virtual size from its header", () => {
    expect(inspectFormat(qcow2(), 5000)).toEqual({ format: "qcow2", virtualSize: 2 ** 30 });
  });

  it("finds a qcow2 that names a backing file or an external data file unsafe", () => {
    expect(inspectFormat(qcow2({ backing: 512n }), 5000).unsafe).toBe("it names a backing file");
    expect(inspectFormat(qcow2({ incompatible: 4n }), 5000).unsafe).toBe("it names an external data file");
    // version 2 has no incompatible-features field: bytes there are not read as one
    expect(inspectFormat(qcow2({ version: 2, incompatible: 4n }), 5000).unsafe).toBeUndefined();
  });

  it("knows vmdk, vhd, vhdx, vdi and ISO 9660 by their magic, and anything else as raw", () => {
    const at = (offset: number, text: string) => {
      const b = Buffer.alloc(FORMAT_HEADER_BYTES);
      b.write(text, offset, "latin1");
      return b;
    };
    expect(inspectFormat(at(0, "KDMV"), 10).format).toBe("vmdk");
    expect(inspectFormat(at(0, "conectix"), 10).format).toBe("vhd");
    expect(inspectFormat(at(0, "vhdxfile"), 10).format).toBe("vhdx");
    const vdi = Buffer.alloc(FORMAT_HEADER_BYTES);
    vdi.writeUInt32LE(0xbeda107f, 0x40);
    expect(inspectFormat(vdi, 10).format).toBe("vdi");
    expect(inspectFormat(at(0x8001, "CD001"), 70000)).toEqual({ format: "iso", virtualSize: 70000 });
    expect(inspectFormat(Buffer.from("hello"), 5)).toEqual({ format: "raw", virtualSize: 5 });
  });
});

describe("formatMismatch", () => {
  it("lets data through that is its disk_format, an ISO as raw, and kernels and ramdisks unread", () => {
    expect(formatMismatch("qcow2", inspectFormat(qcow2(), 1))).toBeUndefined();
    expect(formatMismatch("raw", { format: "iso", virtualSize: 1 })).toBeUndefined();
    expect(formatMismatch("aki", { format: "raw", virtualSize: 1 })).toBeUndefined();
  });

  it("refuses data of another format, and unsafe data whatever it claims", () => {
    expect(formatMismatch("raw", inspectFormat(qcow2(), 1))).toBe(
      "Image data does not match disk_format raw: it is qcow2",
    );
    expect(formatMismatch("qcow2", { format: "raw", virtualSize: 1 })).toBe(
      "Image data does not match disk_format qcow2: it is raw",
    );
    expect(formatMismatch("ami", inspectFormat(qcow2({ backing: 1n }), 1))).toBe(
      "Image data is unsafe: qcow2 it names a backing file",
    );
  });
});
