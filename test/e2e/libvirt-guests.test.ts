// `npm start -- --driver libvirt --hosts 2`, as a test: two libvirt hosts on this machine (each a
// network namespace with a libvirtd of its own, local/libvirt-hosts.ts), the project's guest image
// (build/guest.qcow2, uploaded by the runtime through Glance's API) in the catalog with its data in
// the images bucket, and servers that are real QEMU virtual machines, driven through the public API
// only. A server boots and prints its uuid, hostname and fixed IP on its console, answers ping from
// its host's namespace, is snapshotted and its snapshot boots on the other host; a port hot-plugged
// into it (os-interface) is seen by the guest and answers; it live-migrates with its uptime counter
// still counting and still answers on both addresses; the port unplugged, the guest loses it; it
// cold-migrates to the other host with its
// disk (a mark its first boot wrote on the disk is there) and resizes back with it, grown to the
// new flavor; it is evacuated from a host that lost power, rebuilt from its image on the
// other and answering on its address there; and deleting everything leaves no domain, disk, handed
// over disk or claim. Without root, QEMU, libvirtd or the image it skips, saying why; with CI set
// it fails instead.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { GetObjectCommand, ListObjectsV2Command } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { s3Client } from "../../lib/aws/clients.js";
import { MIGRATIONS_PREFIX } from "../../lib/compute/image-store.js";
import { resources } from "../../lib/config.js";
import { listInstanceMigrations } from "../../lib/instances/migrations.js";
import { PUBLIC_NETWORK_ID } from "../../lib/network/seed.js";
import { realGuestsUnavailable } from "../../local/libvirt-hosts.js";
import { GUEST_IMAGE_ID } from "../../local/runtime/guest-image.js";
import type { Runtime } from "../../local/runtime.js";
import { GUEST_IMAGE } from "../../scripts/image/build.js";
import { ADMIN, type Client, eventually, leakedClaims, startTestRuntime } from "./harness.js";

const FILE = "test/e2e/libvirt-guests.test.ts";

// the runtime builds the guest image when it is missing or stale (local/runtime/guest-image.ts)
const why = realGuestsUnavailable();
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

/** The address a hot-plugged port is given (os-interface's fixed_ips), and the guest sets on its NIC. */
const HOTPLUG_IP = "10.20.250.250";

/**
 * The guest's user_data, run at every boot: its root disk's size as the guest sees it, and the
 * mark a first boot wrote at 512 MiB, far past the image's 64 MiB (the guest runs from RAM and
 * never writes its disk otherwise). A disk made from the image has no mark. Then, every second,
 * the NICs it has: one that appears (a hot-plugged port) is said on the console with its MAC and
 * given HOTPLUG_IP (there is no DHCP server to give it one), with its replies routed out of it: on
 * the same subnet as eth0 they would leave by eth0, whose port's anti-spoofing drops a source
 * address not its own, as Neutron's does. One that goes is said too.
 */
const USER_DATA = `#!/bin/sh
mark=$(dd if=/dev/vda bs=1M skip=512 count=1 2>/dev/null | tr -cd 'a-z0-9-' | head -c 40)
echo "novaless-test disk $(cat /sys/block/vda/size) sectors, mark \${mark:-none}"
if [ -z "$mark" ]; then
  mark=m-$(cat /proc/sys/kernel/random/uuid)
  printf '%s' "$mark" | dd of=/dev/vda bs=1M seek=512 2>/dev/null && sync && echo "novaless-test wrote mark $mark"
fi
seen=" $(ls /sys/class/net | tr '\\n' ' ') "
while :; do
  now=" $(ls /sys/class/net | tr '\\n' ' ') "
  for dev in $now; do
    case "$seen" in *" $dev "*) continue ;; esac
    ip link set "$dev" up && ip addr add ${HOTPLUG_IP}/16 dev "$dev"
    ip rule add from ${HOTPLUG_IP} table 100 && ip route add 10.20.0.0/16 dev "$dev" table 100
    echo "novaless-test nic $dev $(cat /sys/class/net/$dev/address) up"
  done
  for dev in $seen; do
    case "$now" in *" $dev "*) continue ;; esac
    echo "novaless-test nic $dev gone"
  done
  seen=$now
  sleep 1
done
`;

/** A root disk of `gb` GiB, in the 512-byte sectors /sys/block/vda/size counts. */
const sectors = (gb: number) => gb * 2 ** 21;

/** Waits for the console to show `line`. */
async function consoleShows(id: string, line: string): Promise<void> {
  await eventually(
    async () =>
      String(
        (await admin.post(`/v2.1/servers/${id}/action`, { "os-getConsoleOutput": { length: 100 } })).body
          .output ?? "",
      ),
    (o) => o.includes(line),
    90_000,
  );
}

/** The images bucket's object of a move's disk: its name, or NoSuchKey. */
async function handedOverDisk(migrationUuid: string): Promise<string> {
  return s3Client()
    .send(
      new GetObjectCommand({ Bucket: resources().imagesBucket, Key: `${MIGRATIONS_PREFIX}${migrationUuid}` }),
    )
    .then(
      () => "found",
      (e: Error) => e.name,
    );
}

/** The server's latest migration record. */
async function latestMigration(id: string) {
  const all = await listInstanceMigrations(id);
  return all.sort((x, y) => x.id - y.id).at(-1)!;
}

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
    /** what the server's first boot wrote on its disk */
    let mark: string;

    it("boots: the console shows the server's uuid, hostname and fixed IP; its host pings it; a snapshot boots on the other host", async () => {
      const t0 = Date.now();
      id = await admin.createServer({
        name: "guest-1",
        imageRef: GUEST_IMAGE_ID,
        flavorRef: "1",
        config_drive: true,
        networks: [{ uuid: PUBLIC_NETWORK_ID }],
        user_data: Buffer.from(USER_DATA).toString("base64"),
      });
      expect((await admin.waitForStatus(id, ["ACTIVE", "ERROR"], 180_000)).status).toBe("ACTIVE");
      ({ ip, host } = await booted(id));
      await consoleShows(id, `novaless-test disk ${sectors(1)} sectors, mark none`);
      await consoleShows(id, "novaless-test wrote mark m-");
      const out = (await admin.post(`/v2.1/servers/${id}/action`, { "os-getConsoleOutput": {} })).body.output;
      mark = /novaless-test wrote mark (m-[0-9a-f-]+)/.exec(String(out))![1]!;
      console.info(`${FILE}: create → banner on the console in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      // Its port is in the project's default group, which admits ingress from the group's members
      // only: the host's ping is dropped on the tap. A rule admitting ICMP reaches the host
      // (refresh_port_filters) and the guest answers within seconds.
      const ports = (await admin.get(`/networking/v2.0/ports?device_id=${id}`)).body.ports as {
        security_groups: string[];
      }[];
      expect(ports).toHaveLength(1);
      const [group] = ports[0]!.security_groups;
      expect(group).toBeDefined();
      expect(await pings(host, ip)).toBe(false);
      const t2 = Date.now();
      const rule = await admin.post("/networking/v2.0/security-group-rules", {
        security_group_rule: {
          security_group_id: group,
          direction: "ingress",
          protocol: "icmp",
          ethertype: "IPv4",
        },
      });
      expect(rule.status, JSON.stringify(rule.body)).toBe(201);
      expect(await eventually(() => pings(host, ip), Boolean, 30_000)).toBe(true);
      console.info(
        `${FILE}: an ICMP rule added → the guest answers ping in ${((Date.now() - t2) / 1000).toFixed(1)} s`,
      );

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

    /** the port hot-plugged into the running guest */
    let plugged: { port_id: string; mac_addr: string };

    it("hot-plugs a port: the guest sees the NIC and answers on its address from its host's namespace", async () => {
      const t0 = Date.now();
      const r = await admin.post(`/v2.1/servers/${id}/os-interface`, {
        interfaceAttachment: { net_id: PUBLIC_NETWORK_ID, fixed_ips: [{ ip_address: HOTPLUG_IP }] },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      plugged = r.body.interfaceAttachment;
      console.info(`${FILE}: interface attached in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      await consoleShows(id, `novaless-test nic eth1 ${plugged.mac_addr} up`);
      expect(await eventually(() => pings(host, HOTPLUG_IP), Boolean, 30_000)).toBe(true);
      // in the domain libvirt runs, and in the one it would start again
      const lv = runtime.hosts.get(host)!.libvirt!;
      for (const flags of [[], ["--inactive"]])
        expect(await lv.exec(["virsh", "-c", lv.uri, "dumpxml", ...flags, `instance-${id}`])).toContain(
          plugged.mac_addr,
        );
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
      // the hot-plugged port came along, bound to the destination
      expect(await eventually(() => pings(other, HOTPLUG_IP), Boolean, 30_000)).toBe(true);
      const port = await admin.get(`/networking/v2.0/ports/${plugged.port_id}`);
      expect(port.body.port["binding:host_id"]).toBe(other);
      host = other;
    });

    it("unplugs the port: the guest loses the NIC, its address stops answering, the port is deleted", async () => {
      const t0 = Date.now();
      expect((await admin.delete(`/v2.1/servers/${id}/os-interface/${plugged.port_id}`)).status).toBe(202);
      await consoleShows(id, "novaless-test nic eth1 gone");
      await eventually(
        async () => (await admin.get(`/networking/v2.0/ports/${plugged.port_id}`)).status,
        (st) => st === 404,
      );
      console.info(`${FILE}: interface detached in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      expect(await pings(host, HOTPLUG_IP)).toBe(false);
      const ifaces = (await admin.get(`/v2.1/servers/${id}/os-interface`)).body.interfaceAttachments;
      expect(ifaces.map((i: { port_id: string }) => i.port_id)).not.toContain(plugged.port_id);
      const lv = runtime.hosts.get(host)!.libvirt!;
      for (const flags of [[], ["--inactive"]])
        expect(await lv.exec(["virsh", "-c", lv.uri, "dumpxml", ...flags, `instance-${id}`])).not.toContain(
          plugged.mac_addr,
        );
    });

    it("cold-migrates to the other host with its disk and confirms; resizes back with it, grown, and confirms; answering on its address each time", async () => {
      const source = host;
      const other = [...runtime.hosts.keys()].find((h) => h !== host)!;
      /** the move to VERIFY_RESIZE on `to`, the guest there reading its first boot's mark, then confirmed */
      const moved = async (action: Record<string, unknown>, to: string, flavor: string, gb: number) => {
        const t0 = Date.now();
        expect((await admin.post(`/v2.1/servers/${id}/action`, action)).status).toBe(202);
        expect((await admin.waitForStatus(id, ["VERIFY_RESIZE", "ERROR"], 180_000)).status).toBe(
          "VERIFY_RESIZE",
        );
        expect(hostOf(await server(id))).toBe(to);
        // the mark its first boot wrote, on a disk of the flavor's size: carried, not made from
        // the image
        await consoleShows(id, `novaless-test disk ${sectors(gb)} sectors, mark ${mark}`);
        console.info(
          `${FILE}: ${Object.keys(action)[0]} → ${to} with its disk in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
        );
        const migration = await latestMigration(id);
        expect(await handedOverDisk(migration.uuid)).toBe("found");
        expect((await admin.post(`/v2.1/servers/${id}/action`, { confirmResize: null })).status).toBe(204);
        const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"], 120_000);
        expect([s.status, (s.flavor as Record<string, unknown>).id, hostOf(s)]).toEqual([
          "ACTIVE",
          flavor,
          to,
        ]);
        // confirmed: the handed-over disk and the source's copy go
        await eventually(
          () => handedOverDisk(migration.uuid),
          (x) => x === "NoSuchKey",
          30_000,
        );
        const from = to === other ? source : other;
        expect(existsSync(join(runtime.hosts.get(from)!.libvirt!.instancesPath, id))).toBe(false);
        expect(await eventually(() => pings(to, ip), Boolean, 30_000)).toBe(true);
      };
      // a cold migration (admin): the same flavor, the disk as it was
      await moved({ migrate: null }, other, "1", 1);
      // a resize to the only other host, the source: grown to m1.small's 20 GB with qemu-img
      // resize, after the source flattened it (a standalone qcow2)
      await moved({ resize: { flavorRef: "2" } }, source, "2", 20);
      const disk = JSON.parse(
        execFileSync(
          "qemu-img",
          [
            "info",
            "-U",
            "--output=json",
            join(runtime.hosts.get(source)!.libvirt!.instancesPath, id, "disk"),
          ],
          { timeout: 20_000 },
        ).toString(),
      );
      expect([disk.format, disk["backing-filename"], disk["virtual-size"]]).toEqual([
        "qcow2",
        undefined,
        20 * 2 ** 30,
      ]);
      host = source;
    });

    it("evacuates from a host that lost power: rebuilt from its image on the other host, on the same address, its port bound there", async () => {
      const dead = host;
      const other = [...runtime.hosts.keys()].find((h) => h !== dead)!;
      const lv = runtime.hosts.get(dead)!.libvirt!;
      // the power cut: the agent stops and the guest with it (its domain stays defined, as a
      // host's does across a power loss); the operator fences the host (forced_down)
      expect((await admin.post(`/local/hosts/${dead}/stop`, {})).status).toBe(202);
      await lv.exec(["virsh", "-c", lv.uri, "destroy", `instance-${id}`]);
      const down = await admin.at("2.53").call("PUT", `/v2.1/os-services/${dead}`, { forced_down: true });
      expect(down.status).toBe(200);
      const t0 = Date.now();
      const r = await admin.at("2.68").post(`/v2.1/servers/${id}/action`, { evacuate: {} });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"], 180_000);
      expect([s.status, hostOf(s)]).toEqual(["ACTIVE", other]);
      // from the image: the flavor's disk, without the mark the old one had
      await consoleShows(id, `novaless-test disk ${sectors(20)} sectors, mark none`);
      console.info(`${FILE}: evacuation ${dead} → ${other} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      const b = await booted(id);
      expect([b.host, b.ip]).toEqual([other, ip]);
      expect(await eventually(() => pings(other, ip), Boolean, 30_000)).toBe(true);
      const ports = await admin.get(`/networking/v2.0/ports?device_id=${id}`);
      expect(ports.body.ports.map((p: Record<string, unknown>) => p["binding:host_id"])).toEqual([other]);

      // the host comes back: its copy of the evacuated server goes, then the evacuation completes
      const up = await admin.at("2.53").call("PUT", `/v2.1/os-services/${dead}`, { forced_down: false });
      expect(up.status).toBe(200);
      expect((await admin.post(`/local/hosts/${dead}/start`, {})).status).toBe(202);
      await eventually(
        async () => (await latestMigration(id)).status,
        (st) => st === "completed",
        60_000,
      );
      expect((await lv.exec(["virsh", "-c", lv.uri, "list", "--all", "--name"])).trim()).toBe("");
      host = other;
    });

    it("deleting everything leaves no domain, disk, handed-over disk or claim", async () => {
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
      const handedOver = await s3Client().send(
        new ListObjectsV2Command({ Bucket: resources().imagesBucket, Prefix: MIGRATIONS_PREFIX }),
      );
      expect(handedOver.KeyCount ?? 0).toBe(0);
    });
  },
);
