// The images bucket's multipart sizes: the AWS CLI's 8 MiB parts, larger only where S3's
// 10,000 parts would not carry the disk.
import { describe, expect, it } from "vitest";
import { partSizeFor } from "../../../lib/compute/image-store.js";

const MiB = 2 ** 20;

describe("partSizeFor", () => {
  it("keeps the part size while 10,000 parts carry the data", () => {
    expect(partSizeFor(16 * MiB, 8 * MiB)).toBe(8 * MiB);
    expect(partSizeFor(80_000 * MiB, 8 * MiB)).toBe(8 * MiB);
  });

  it("grows in whole MiB past that, so that no upload needs a 10,001st part", () => {
    const size = 200 * 2 ** 30 + 1;
    const part = partSizeFor(size, 8 * MiB);
    expect(part % MiB).toBe(0);
    expect(Math.ceil(size / part)).toBeLessThanOrEqual(10_000);
    expect(Math.ceil(size / (part - MiB))).toBeGreaterThan(10_000);
  });
});
