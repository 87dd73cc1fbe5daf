// The libvirt host harness cleans up after a harness whose process died without stopping it
// (local/libvirt-hosts.ts, sweepDeadHarnesses): what its lease's tag names (namespaces, links) and
// its directory go; a live harness's lease is left alone. Needs root and `ip` (iproute2); without
// them it skips, saying why; with CI set it fails instead.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LEASES, sweepDeadHarnesses } from "../../local/libvirt-hosts.js";

const FILE = "test/drivers/libvirt-hosts-sweep.test.ts";
const why =
  process.getuid?.() !== 0
    ? "needs root (ip netns)"
    : spawnSync("ip", ["-V"]).status !== 0
      ? "needs ip (apt-get install iproute2)"
      : undefined;
if (why && !process.env.CI) console.warn(`${FILE}: SKIPPED: ${why}`);

const ip = (...args: string[]) => execFileSync("ip", args, { encoding: "utf8" });
const names = () => [...ip("netns", "list").split("\n"), ...ip("-o", "link", "show").split("\n")].join("\n");

describe.skipIf(why && !process.env.CI)("the libvirt host harness's sweep", () => {
  it("removes what a dead harness's lease names and leaves a live one's", async () => {
    if (why) throw new Error(`${FILE}: ${why}`);
    // a process that has exited: its pid names no one now
    const dead = spawnSync("true").pid!;
    const [gone, kept] = ["nlde01", "nlde02"];
    const root = mkdtempSync(join(tmpdir(), "novaless-sweep-"));
    mkdirSync(LEASES, { recursive: true });
    for (const [tag, pid] of [
      [gone, dead],
      [kept, process.pid],
    ] as const) {
      ip("netns", "add", `${tag}-host-a`);
      ip("link", "add", `${tag}-mgmt`, "type", "bridge");
      writeFileSync(join(LEASES, `${tag}.json`), JSON.stringify({ tag, pid, root, ownRoot: tag === gone }));
    }
    try {
      const swept = await sweepDeadHarnesses();
      expect(swept.sort()).toEqual([`${gone}-host-a`, `${gone}-mgmt`]);
      expect(names()).not.toContain(gone);
      expect(existsSync(join(LEASES, `${gone}.json`))).toBe(false);
      expect(existsSync(root)).toBe(false);
      expect(names()).toContain(`${kept}-host-a`);
      expect(names()).toContain(`${kept}-mgmt`);
    } finally {
      for (const tag of [gone, kept]) {
        spawnSync("ip", ["netns", "del", `${tag}-host-a`]);
        spawnSync("ip", ["link", "del", `${tag}-mgmt`]);
        spawnSync("rm", ["-f", join(LEASES, `${tag}.json`)]);
      }
    }
  });
});
