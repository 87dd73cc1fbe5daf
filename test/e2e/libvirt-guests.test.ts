// `npm start -- --driver libvirt --hosts 2`, as a test: two libvirt hosts on this machine (each a
// network namespace with a libvirtd of its own, local/libvirt-hosts.ts), the project's guest image
// (build/guest.qcow2, uploaded by the runtime through Glance's API) in the catalog with its data in
// the images bucket, and servers that are real QEMU virtual machines, driven through the public API
// only. A server boots and prints its
// uuid, hostname and fixed IP on its console, answers ping from its host's namespace, is
// snapshotted and its snapshot boots on the other host; it live-migrates with its uptime counter
// still counting and still answers on its address; it resizes; and deleting everything leaves no
// domain, disk or claim. Without root, QEMU, libvirtd or the image it skips, saying why; with CI
// set it fails instead.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PUBLIC_NETWORK_ID } from "../../lib/network/seed.js";
import { libvirtHostsUnavailable } from "../../local/libvirt-hosts.js";
import { GUEST_IMAGE_ID } from "../../local/runtime/guest-image.js";
import type { Runtime } from "../../local/runtime.js";
import { GUEST_IMAGE, missingBuildTools } from "../../scripts/image/build.js";
import { ADMIN, type Client, eventually, leakedClaims, startTestRuntime } from "./harness.js";

const FILE = "test/e2e/libvirt-guests.test.ts";

// the runtime builds the guest image when it is missing or stale (local/runtime/guest-image.ts)
const tools = missingBuildTools();
const why =
  libvirtHostsUnavailable() ??
  (tools.missing.length
    ? `the guest image cannot be built: missing ${tools.missing.join(", ")} (Debian's ${tools.packages.join(" ")})`
    : undefined);
if (why) console.warn(`${FILE}: ${why}: ${process.env.CI ? "CI is set, so this fails" : "it skips"}`);

let runtime: Runtime;
let client: Client;
let admin: Client;

/** The last `novaless-guest uptime N` the server printed, from os-getConsoleOutput. */
async function uptime(id: string): Promise<number> {
  const r = await admin.post(`/v2.1/servers/${id}/action`, { "os-getConsoleOutput": { length: 20 } });
  const all = [...String(r.body.output).matchAll(/novaless-guest uptime (\d+)/g)];
  return all.length ? Number(all.at(-1)![1]) : -1;
}

async function server(id: string): Promise<Record<string, unknown>> {
  return (await admin.get(`/v2.1/servers/${id}`)).body.server;
}

function fixedIp(s: Record<string, unknown>): string {
  const addresses = s.addresses as Record<string, { addr: string }[]>;
  return Object.values(addresses).flat()[0]!.addr;
}

const hostOf = (s: Record<string, unknown>) => s["OS-EXT-SRV-ATTR:host"] as string;

/** One ping from the host's own namespace: true when the guest answered. */
async function pings(host: string, ip: string): Promise<boolean> {
  return runtime.hosts
    .get(host)!
    .libvirt!.exec(["ping", "-c", "1", "-W", "2", ip])
    .then(
      () => true,
      () => false,
    );
}

/** The server's console says its uuid, hostname and address, and its counter is counting. */
async function booted(id: string): Promise<{ ip: string; host: string; ms: number }> {
  const t0 = Date.now();
  const s = await server(id);
  const ip = fixedIp(s);
  const out = await eventually(
    async () =>
      String(
        (await admin.post(`/v2.1/servers/${id}/action`, { "os-getConsoleOutput": { length: 200 } })).body
          .output ?? "",
      ),
    (o) => o.includes(id) && o.includes(ip) && o.includes("novaless-guest uptime"),
    90_000,
  );
  expect(out).toContain(String(s["OS-EXT-SRV-ATTR:hostname"] ?? s.name));
  return { ip, host: hostOf(s), ms: Date.now() - t0 };
}

const CI_MUST_RUN = Boolean(process.env.CI);
describe.skipIf(why !== undefined && !CI_MUST_RUN)(
  "real guests on two libvirt hosts, through the API",
  () => {
    beforeAll(async () => {
      if (why) throw new Error(`${FILE}: ${why}`);
      ({ runtime, client } = await startTestRuntime({
        hosts: 2,
        driver: "libvirt",
        transport: "long-poll",
        heartbeatSeconds: 1,
        seedNetwork: true,
      }));
      admin = client.as(ADMIN);
      // the runtime uploaded the guest image through Glance's API (local/runtime/guest-image.ts):
      // what the images bucket holds is build/guest.qcow2, byte for byte
      const shown = await admin.get(`/image/v2/images/${GUEST_IMAGE_ID}`);
      const built = readFileSync(GUEST_IMAGE);
      expect(shown.body).toMatchObject({
        name: "novaless-guest",
        status: "active",
        disk_format: "qcow2",
        size: built.length,
        checksum: createHash("md5").update(built).digest("hex"),
      });
    }, 180_000);

    afterAll(async () => {
      await runtime?.stop();
    });

    let id: string;
    let ip: string;
    let host: string;

    it("boots: the console shows the server's uuid, hostname and fixed IP; its host pings it; a snapshot boots on the other host", async () => {
      const t0 = Date.now();
      id = await admin.createServer({
        name: "guest-1",
        imageRef: GUEST_IMAGE_ID,
        flavorRef: "1",
        config_drive: true,
        networks: [{ uuid: PUBLIC_NETWORK_ID }],
      });
      expect((await admin.waitForStatus(id, ["ACTIVE", "ERROR"], 180_000)).status).toBe("ACTIVE");
      ({ ip, host } = await booted(id));
      console.info(`${FILE}: create → banner on the console in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      expect(await eventually(() => pings(host, ip), Boolean, 30_000)).toBe(true);

      const t1 = Date.now();
      const snap = await admin.at("2.45").post(`/v2.1/servers/${id}/action`, {
        createImage: { name: "guest-1-snap" },
      });
      expect(snap.status).toBe(202);
      const snapId = snap.body.image_id as string;
      await eventually(
        async () => (await admin.get(`/image/v2/images/${snapId}`)).body.status,
        (s) => s === "active",
        180_000,
      );
      console.info(`${FILE}: snapshot active in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
      const other = [...runtime.hosts.keys()].find((h) => h !== host)!;
      const fromSnap = await admin.at("2.74").createServer({
        name: "from-snap",
        imageRef: snapId,
        flavorRef: "1",
        config_drive: true,
        networks: [{ uuid: PUBLIC_NETWORK_ID }],
        host: other,
      });
      expect((await admin.waitForStatus(fromSnap, ["ACTIVE", "ERROR"], 180_000)).status).toBe("ACTIVE");
      const b = await booted(fromSnap);
      expect(b.host).toBe(other);
      expect(await eventually(() => pings(other, b.ip), Boolean, 30_000)).toBe(true);
      expect((await admin.delete(`/v2.1/servers/${fromSnap}`)).status).toBe(204);
      await admin.waitForStatus(fromSnap, ["GONE"], 120_000);
    });

    it("live-migrates with its disk: the uptime counter keeps counting and it answers on the same address at the destination", async () => {
      const before = await eventually(
        () => uptime(id),
        (n) => n > 0,
      );
      const other = [...runtime.hosts.keys()].find((h) => h !== host)!;
      const t0 = Date.now();
      const r = await admin
        .at("2.30")
        .post(`/v2.1/servers/${id}/action`, { "os-migrateLive": { host: other, block_migration: true } });
      expect(r.status, JSON.stringify(r.body)).toBe(202);
      const moved = await eventually(
        () => server(id),
        (s) => hostOf(s) === other && s.status === "ACTIVE" && s["OS-EXT-STS:task_state"] === null,
        180_000,
      );
      console.info(
        `${FILE}: live migration ${host} → ${other} in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
      );
      expect(hostOf(moved)).toBe(other);
      // still counting, not started again: an uptime past the one before the move
      const after = await eventually(
        () => uptime(id),
        (n) => n > before,
        30_000,
      );
      expect(after).toBeGreaterThan(before);
      expect(await eventually(() => pings(other, ip), Boolean, 30_000)).toBe(true);
      host = other;
    });

    it("resizes and confirms: ACTIVE on the bigger flavor, answering on its address", async () => {
      const r = await admin.post(`/v2.1/servers/${id}/action`, { resize: { flavorRef: "2" } });
      expect(r.status).toBe(202);
      await admin.waitForStatus(id, ["VERIFY_RESIZE", "ERROR"], 180_000);
      expect((await admin.post(`/v2.1/servers/${id}/action`, { confirmResize: null })).status).toBe(204);
      const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"], 120_000);
      expect([s.status, (s.flavor as Record<string, unknown>).id]).toEqual(["ACTIVE", "2"]);
      const b = await booted(id);
      expect(await eventually(() => pings(b.host, b.ip), Boolean, 30_000)).toBe(true);
    });

    it("deleting everything leaves no domain, disk or claim", async () => {
      expect((await admin.delete(`/v2.1/servers/${id}`)).status).toBe(204);
      await admin.waitForStatus(id, ["GONE"], 120_000);
      for (const h of runtime.hosts.values()) {
        await eventually(
          () => h.libvirt!.exec(["virsh", "-c", h.libvirt!.uri, "list", "--all", "--name"]).catch(() => "?"),
          (out) => out.trim() === "",
          30_000,
        );
        const left = existsSync(h.libvirt!.instancesPath)
          ? readdirSync(h.libvirt!.instancesPath).filter((f) => !f.startsWith("_"))
          : [];
        expect(left, h.name).toEqual([]);
      }
      expect(await eventually(leakedClaims, (l) => l.length === 0, 30_000)).toEqual([]);
    });
  },
);
