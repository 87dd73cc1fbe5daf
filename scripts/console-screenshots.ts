// npx tsx scripts/console-screenshots.ts [-- --hosts 300 --out docs]
//
// The fleet map's screenshots in docs/console.md, taken in Debian's chromium (puppeteer-core) as
// the console's tests drive it: N hosts in three zones on the local runtime, each loaded with
// 0 to 11 m1.large's worth of servers forced onto it (m1.xlarge, and one m1.large for an odd
// count: MEMORY_MB use from idle to 92%), two disabled, one forced down; then the map colored by MEMORY_MB, with the host names it draws
// and the keyboard's focus on one host. Writes <out>/console-fleet.png (names on the map) and
// <out>/console-fleet-squares.png (the same fleet without names, as a larger fleet is drawn).
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startRuntime } from "../local/runtime.js";
import { quietLogs } from "../test/bench/support.js";
import { findChromium, launch } from "../test/console/browsers.js";

const { values } = parseArgs({
  options: { hosts: { type: "string", default: "300" }, out: { type: "string", default: "docs" } },
});
const hosts = Number(values.hosts);
const ADMIN = { "x-auth-token": "admin-token", "content-type": "application/json" };
quietLogs();
const print = (line: string) => process.stdout.write(`${line}\n`);

const chromium = findChromium();
if (!chromium) throw new Error("chromium is missing (Debian package chromium)");

async function api(url: string, method = "GET", body?: unknown, version = "2.53"): Promise<unknown> {
  const res = await fetch(url, {
    method,
    headers: { ...ADMIN, "openstack-api-version": `compute ${version}` },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${text.slice(0, 200)}`);
  return text ? JSON.parse(text) : undefined;
}

// deterministic: the same map every run
let seed = 7;
const random = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
};

const runtime = await startRuntime({
  port: 0,
  hosts,
  buildMs: 0,
  availabilityZones: ["az1", "az2", "az3"],
  env: { NOVALESS_QUOTA_INSTANCES: "-1", NOVALESS_QUOTA_CORES: "-1", NOVALESS_QUOTA_RAM: "-1" },
});
try {
  type Row = { host: string; zone: string; service_id: string; instances: number };
  const fleet = async () =>
    ((await api(`${runtime.url}/v2.1/os-fleet`)) as { fleet: { hosts: Row[] } }).fleet.hosts;
  const rows = await fleet();
  // u m1.large's memory per host, u from 0 to 11: u/2 m1.xlarge and u%2 m1.large, forced onto it
  const creates = rows.flatMap((r) => {
    const u = Math.floor(random() * 12);
    return [
      { r, flavor: "5", k: Math.floor(u / 2) },
      { r, flavor: "4", k: u % 2 },
    ].filter((c) => c.k > 0);
  });
  const total = creates.reduce((n, c) => n + c.k, 0);
  print(`${hosts} hosts: creating ${total} servers`);
  await Promise.all(
    Array.from({ length: 6 }, async () => {
      for (let c = creates.shift(); c; c = creates.shift())
        await api(`${runtime.url}/v2.1/servers`, "POST", {
          server: {
            name: `load-${c.r.host}`,
            flavorRef: c.flavor,
            imageRef: "cirros",
            networks: "none",
            availability_zone: `${c.r.zone}:${c.r.host}`,
            min_count: c.k,
            max_count: c.k,
          },
        });
    }),
  );
  for (let placed = 0, last = -1, still = 0; placed < total; ) {
    await new Promise((r) => setTimeout(r, 2_000));
    placed = (await fleet()).reduce((n, r) => n + r.instances, 0);
    print(`  ${placed} of ${total} placed`);
    still = placed === last ? still + 1 : 0;
    last = placed;
    if (still >= 15) throw new Error(`placing stopped at ${placed} of ${total}`);
  }
  const service = (i: number, body: unknown) =>
    api(`${runtime.url}/v2.1/os-services/${rows[i]!.service_id}`, "PUT", body);
  await service(4, { status: "disabled", disabled_reason: "maintenance" });
  await service(40, { status: "disabled", disabled_reason: "maintenance" });
  await service(17, { forced_down: true });

  const browser = await launch("chromium", chromium);
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 900 });
    await page.goto(`${runtime.url}/console`, { waitUntil: "domcontentloaded" });
    await page.waitForSelector("form[aria-label='Sign in']");
    await page.click("input[type=radio]:not(:checked)");
    await page.type("input[name=token]", "admin-token");
    await page.click("form[aria-label='Sign in'] button[type=submit]");
    await page.waitForFunction(
      `document.querySelector("[data-testid=fleet-summary]")?.textContent?.includes("1 forced down")`,
      { timeout: 60_000 },
    );
    await page.select("select[name=color]", "MEMORY_MB");
    await page.focus("canvas[role=img]");
    for (let i = 0; i < 27; i++) await page.keyboard.press("ArrowRight");
    await page.keyboard.press("ArrowDown");
    const frame = "new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))";
    await page.evaluate(frame);
    const shoot = async (name: string) => {
      // the controls down to the focused host's line
      const box = (await (await page.$(".fleet-main"))!.boundingBox())!;
      const end = (await (await page.$("[data-testid=fleet-focused]"))!.boundingBox())!;
      const path = join(values.out, name);
      await page.screenshot({
        path,
        clip: { x: box.x, y: box.y, width: box.width, height: end.y + end.height + 8 - box.y },
      });
      print(`wrote ${path}`);
    };
    await shoot("console-fleet.png");
    await page.click("input[name=names]");
    await page.evaluate(frame);
    await shoot("console-fleet-squares.png");
  } finally {
    await browser.close();
  }
} finally {
  await runtime.stop();
}
process.exit(0);
