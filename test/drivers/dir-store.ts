// The images bucket as a directory, for the driver tests: what a driver puts, fetches and stages,
// and the ids it put.
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import type { ImageStore } from "../../lib/compute/image-store.js";

export function dirStore(dir: string): ImageStore & { puts: string[] } {
  mkdirSync(dir, { recursive: true });
  const puts: string[] = [];
  return {
    puts,
    async put(id, file) {
      puts.push(id);
      copyFileSync(file, join(dir, id));
      return { size: statSync(file).size, checksum: "md5", os_hash_value: "sha512" };
    },
    async fetch(id, file) {
      if (!existsSync(join(dir, id))) return false;
      copyFileSync(join(dir, id), file);
      return true;
    },
    async open(id) {
      return existsSync(join(dir, id))
        ? { body: Readable.from(readFileSync(join(dir, id))), size: statSync(join(dir, id)).size }
        : undefined;
    },
    async remove(id) {
      rmSync(join(dir, id), { force: true });
    },
    async downloadUrl(id) {
      return `file://${join(dir, id)}`;
    },
    async uploadUrl(id) {
      return `file://${join(dir, id)}`;
    },
    async putData(id, body) {
      writeFileSync(join(dir, id), body);
    },
  };
}
