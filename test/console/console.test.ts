// The web console in a real browser (Debian's chromium through puppeteer-core, no download):
// sign in through the form, watch a server go ACTIVE on the fleet map, open its explanation, see
// the network public's used and free addresses follow a port made and deleted, run a dry run that
// fits and one that cannot, disable a service with a reason, resize a server and confirm, migrate
// it and revert, live-migrate one (its progress shown) and force it to complete, rebuild it from
// another image, drain a host cold and another live, pause and unpause a server, shelve it,
// offload it (its claim leaves its host's page) and unshelve it onto a host picked in the dialog,
// snapshot it, create a project and a user with a role there and disable the user (its token then
// refused), and see that a member gets its own servers and never a host name nor a migrate
// button, its own project only, and networks without their provider attributes. Screenshots go
// to test-artifacts/console/.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { PUBLIC_NETWORK_ID } from "../../lib/network/seed.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, startTestRuntime } from "../e2e/harness.js";
import { ARTIFACTS, findChromium, launch } from "./browsers.js";

const chromium = findChromium();
if (!chromium)
  console.warn(
    "test/console: chromium is missing (Debian package chromium; scripts/install-test-tools.sh): these tests skip",
  );

describe.skipIf(!chromium)("the web console in chromium", () => {
  let runtime: Runtime;
  let client: Client;
  let browser: Browser;
  let page: Page;
  const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    ({ runtime, client } = await startTestRuntime({
      hosts: 6,
      buildMs: 400,
      // offloaded only when an admin asks, so that SHELVED and the offload can both be seen
      env: { NOVALESS_SHELVED_OFFLOAD_TIME: "-1" },
      // `public` (10.20.0.0/16), as `npm start` seeds it
      seedNetwork: true,
    }));
    browser = await launch("chromium", chromium!);
    page = await browser.newPage();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await runtime?.stop();
  });

  const signIn = async (fill: () => Promise<void>) => {
    await page.goto(`${runtime.url}/console`, { waitUntil: "domcontentloaded" });
    await page.waitForSelector("form[aria-label='Sign in']");
    await fill();
    await page.click("form[aria-label='Sign in'] button[type=submit]");
    await page.waitForSelector("header nav");
  };
  // (browser-side code is passed as text: this file is compiled without the DOM's types)
  const text = (selector: string) =>
    page.$eval(selector, (e) => (e as unknown as { innerText: string }).innerText);
  const until = (expression: string, timeout = 20_000) => page.waitForFunction(expression, { timeout });
  /** the server page's status reads `want` */
  const status = (want: string) =>
    until(
      `document.querySelector("[data-testid=server-status]")?.textContent?.trim() === ${JSON.stringify(want)}`,
      30_000,
    );
  /**
   * clicks an action's button, checks what the dialog says will happen, picks from its list,
   * types its name (an image's), confirms; an API refusal fails here
   */
  const act = async (action: string, choice?: (values: string[]) => string, says?: RegExp, name?: string) => {
    const button = `[data-testid=server-actions] button[data-action=${action}]:not([disabled])`;
    await page.waitForSelector(button, { timeout: 20_000 });
    await page.click(button);
    await page.waitForSelector("dialog[open] button[type=submit]");
    if (says) expect(await text("dialog[open] p")).toMatch(says);
    let picked: string | undefined;
    if (choice) {
      const values = await page.$$eval("dialog[open] select[name=choice] option", (os) =>
        os.map((o) => (o as unknown as { value: string }).value),
      );
      picked = choice(values);
      await page.select("dialog[open] select[name=choice]", picked);
    }
    if (name) await page.type("dialog[open] input[name=reason]", name);
    await page.click("dialog[open] button[type=submit]");
    await until(
      `!document.querySelector("dialog[open]") || document.querySelector("dialog[open] [role=alert]")`,
    );
    const refused = await page.$("dialog[open] [role=alert]");
    if (refused) throw new Error(`${action}: ${await text("dialog[open] [role=alert]")}`);
    return picked;
  };

  it("refuses a wrong password in the form, saying why", async () => {
    await page.goto(`${runtime.url}/console`, { waitUntil: "domcontentloaded" });
    await page.waitForSelector("input[name=user]");
    await page.type("input[name=user]", "admin");
    await page.type("input[name=password]", "wrong");
    await page.click("form[aria-label='Sign in'] button[type=submit]");
    await page.waitForSelector("[role=alert]");
    expect(await text("[role=alert]")).toMatch(/requires authentication/);
  });

  it("signs in with the README's credentials and shows the fleet", async () => {
    await signIn(async () => {
      await page.type("input[name=user]", "admin");
      await page.type("input[name=password]", "admin-secret");
      await page.type("input[name=project]", "admin");
    });
    await page.waitForSelector("[data-testid=fleet-summary]");
    await until(`document.querySelector("[data-testid=fleet-summary]")?.textContent?.startsWith("6 hosts")`);
    expect(await text("header")).toContain("admin");
  });

  it("watches a server go ACTIVE on the fleet map, and the map answers the keyboard", async () => {
    // the newest servers are read whole once, then only what changed (changes-since)
    const listings: string[] = [];
    const onRequest = (r: { url(): string }) => {
      if (r.url().includes("/servers/detail")) listings.push(r.url());
    };
    page.on("request", onRequest);
    const id = await client.as(ADMIN).createServer({ name: "console-watch", flavorRef: "3" });
    await page.waitForSelector("[data-testid=recent-servers] li[data-server='console-watch']", {
      timeout: 20_000,
    });
    await page.waitForSelector(
      "[data-testid=recent-servers] li[data-server='console-watch'][data-status='ACTIVE']",
      {
        timeout: 30_000,
      },
    );
    // the host's cell now counts it: the summary's instances come from os-fleet's change feed
    await until(
      `Number(document.querySelector("[data-testid=fleet-summary]")?.getAttribute("data-instances")) >= 1`,
    );
    // Color by starts on a real class, VCPU, shown in its select
    expect(
      await page.$eval("select[name=color]", (e) => {
        const select = e as unknown as { value: string; selectedOptions: { textContent: string }[] };
        return [select.value, select.selectedOptions[0]?.textContent];
      }),
    ).toEqual(["VCPU", "VCPU"]);
    // the legend's ramp is a gradient, as the cells are colored
    expect(
      await page.$eval(
        "[data-testid=fleet-ramp]",
        (e) =>
          (
            globalThis as unknown as { getComputedStyle(e: unknown): { backgroundImage: string } }
          ).getComputedStyle(e).backgroundImage,
      ),
    ).toMatch(/^linear-gradient/);
    // a fleet this small has its names on the map: dark text pixels on the first host's tile
    // (idle, the ramp's light end), none once names are turned off
    const textPixels = `(() => {
      const c = document.querySelector("canvas[role=img]");
      const d = c.getContext("2d").getImageData(2 * devicePixelRatio, 24 * devicePixelRatio, 30 * devicePixelRatio, 16 * devicePixelRatio).data;
      let dark = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && d[i] < 120) dark++;
      return dark;
    })()`;
    expect(await page.$eval("canvas[role=img]", (e) => e.getAttribute("data-names"))).toBe("true");
    expect(await page.evaluate(textPixels)).toBeGreaterThan(10);
    await page.click("input[name=names]");
    await until(`document.querySelector("canvas[role=img]").getAttribute("data-names") === "false"`);
    // the attribute is set with the state, the canvas drawn on the next frame: wait for it
    await until(`${textPixels} === 0`);
    expect(await page.evaluate(textPixels)).toBe(0);
    await page.click("input[name=names]");
    await until(`document.querySelector("canvas[role=img]").getAttribute("data-names") === "true"`);
    // names stay reachable by keyboard: the focused host is read out
    await page.focus("canvas[role=img]");
    await page.keyboard.press("ArrowRight");
    expect(await text("[data-testid=fleet-focused]")).toMatch(/^host-\d, zone \w+, up, VCPU \d+ of \d+/);
    await shot("fleet");
    const server = await client.as(ADMIN).get(`/v2.1/servers/${id}`);
    expect(server.body.server.status).toBe("ACTIVE");
    page.off("request", onRequest);
    expect(listings.length).toBeGreaterThan(0);
    expect(listings.every((u) => u.includes("changes-since="))).toBe(true);
  });

  it("opens the server: its timeline and why the scheduler chose its host", async () => {
    await page.click("[data-testid=recent-servers] li[data-server='console-watch'] a");
    await page.waitForSelector("[data-testid=decision-summary]", { timeout: 20_000 });
    // the server and its explanation are fetched apart: either may come first
    await page.waitForSelector("[data-testid=server-host]", { timeout: 20_000 });
    const host = await text("[data-testid=server-host]");
    expect(host).toMatch(/^host-\d$/);
    expect(await text("[data-testid=decision-summary]")).toContain(host);
    // its address on public (the network `auto` picks), from the port the conductor made
    const address = "[data-testid=server-addresses] li[data-network=public]";
    await page.waitForSelector(address);
    expect(await text(address)).toMatch(
      /^public: 10\.20\.\d+\.\d+ \(IPv4, fixed, MAC fa:16:3e(:[0-9a-f]{2}){3}\)$/,
    );
    // the chosen host's bar, among the runners-up, each split by weigher
    await page.waitForSelector(`table.weights tr.chosen[data-host='${host}']`);
    expect((await page.$$("table.weights tbody tr")).length).toBeGreaterThan(1);
    expect((await page.$$("table.weights tr.chosen .segment")).length).toBeGreaterThan(0);
    await until(`document.querySelector("[data-testid=timeline]")?.textContent?.includes("create")`);
    expect(await text("[data-testid=timeline]")).toContain("compute_build_and_run_instance");
    await shot("server");
  });

  it("lists the networks; a network's page shows its subnet's used and free addresses and its ports, a server's port linking to it", async () => {
    const admin = client.as(ADMIN);
    await page.goto(`${runtime.url}/console#/networks`);
    const row = "[data-testid=networks-table] tr[data-network=public]";
    await page.waitForSelector(row, { timeout: 20_000 });
    // an admin sees the provider attributes
    expect(await text(row)).toMatch(/^public\s+ACTIVE\s+yes\s+flat\s+physnet1\s+\S+\s+10\.20\.0\.0\/16$/);
    // a port on console-watch, at an address asked for
    const watch = (await admin.get("/v2.1/servers?name=console-watch")).body.servers[0].id as string;
    const created = await admin.post("/networking/v2.0/ports", {
      port: {
        network_id: PUBLIC_NETWORK_ID,
        device_id: watch,
        device_owner: "compute:nova",
        fixed_ips: [{ ip_address: "10.20.3.7" }],
      },
    });
    expect(created.status).toBe(201);
    await page.click(`${row} a`);
    const subnet = "[data-testid=subnets-table] tr[data-subnet='10.20.0.0/16']";
    await page.waitForSelector(subnet, { timeout: 20_000 });
    expect(await text(subnet)).toMatch(/10\.20\.0\.1\s+10\.20\.0\.2 – 10\.20\.255\.254/);
    const port = `[data-testid=ports-table] tr[data-port='${created.body.port.id}']`;
    await page.waitForSelector(port, { timeout: 20_000 });
    expect(await text(`${port} [data-testid=port-ips]`)).toBe("10.20.3.7");
    expect(await text(port)).toContain(created.body.port.mac_address);
    expect(await page.$eval(`${port} a`, (a) => a.getAttribute("href"))).toBe(`#/servers/${watch}`);
    // console-watch's own port, the conductor's, is there too
    const own = (await admin.get(`/networking/v2.0/ports?device_id=${watch}`)).body.ports.find(
      (p: { id: string }) => p.id !== created.body.port.id,
    );
    expect(own.device_owner).toMatch(/^compute:/);
    await page.waitForSelector(
      `[data-testid=ports-table] tr[data-port='${own.id}'] a[href='#/servers/${watch}']`,
    );
    /** the page's used and free figures match the ports the API holds on the subnet (the pool: 65,533) */
    const figures = async () => {
      const ports = (await admin.get(`/networking/v2.0/ports?network_id=${PUBLIC_NETWORK_ID}`)).body.ports;
      const used = ports.flatMap((p: { fixed_ips: unknown[] }) => p.fixed_ips).length;
      await until(
        `document.querySelector("${subnet}")?.dataset.used === "${used}" && document.querySelector("${subnet}")?.dataset.free === "${65_533 - used}"`,
      );
      return used;
    };
    const used = await figures();
    expect(used).toBeGreaterThan(0);
    expect(await text(subnet)).toContain(`${(65_533 - used).toLocaleString("en")} of 65,533`);
    await shot("network");

    // deleted: gone from the page, its address free again
    expect((await admin.delete(`/networking/v2.0/ports/${created.body.port.id}`)).status).toBe(204);
    await until(`!document.querySelector("${port}")`);
    expect(await figures()).toBe(used - 1);

    // the servers list shows console-watch's address
    await page.goto(`${runtime.url}/console#/servers`);
    const listed = "[data-testid=servers-table] tr[data-server='console-watch'] [data-testid=server-address]";
    await page.waitForSelector(listed, { timeout: 20_000 });
    expect(await text(listed)).toBe(own.fixed_ips[0].ip_address);
  });

  it("runs a dry run that fits, and one that cannot be placed with its filter funnel", async () => {
    await page.goto(`${runtime.url}/console#/plan`);
    await page.waitForSelector("form[aria-label='Dry run'] select[name=flavor] option");
    await page.waitForSelector("form[aria-label='Dry run'] select[name=image] option");
    // Flavor and Image start on their lists' first entries, shown, not blank
    for (const name of ["flavor", "image"])
      await until(`(() => {
        const s = document.querySelector("form[aria-label='Dry run'] select[name=${name}]");
        return s.value !== "" && s.selectedIndex === 0;
      })()`);
    // on public, as a create naming it would be (networks are required from 2.37)
    await page.waitForSelector(
      `form[aria-label='Dry run'] select[name=network] option[value='${PUBLIC_NETWORK_ID}']`,
    );
    await page.select("form[aria-label='Dry run'] select[name=network]", PUBLIC_NETWORK_ID);
    await page.click("form[aria-label='Dry run'] button[type=submit]");
    await page.waitForSelector("[data-testid=plan][data-no-valid-host='false']");
    expect(await text("[data-testid=plan] h2")).toBe("1 placement");
    // m1.xlarge (8 vCPU, 16 GB) 60 times over 6 hosts: no valid host
    await page.select("select[name=flavor]", "5");
    await page.$eval("input[name=count]", (e) => {
      (e as unknown as { value: string }).value = "";
    });
    await page.type("input[name=count]", "60");
    await page.click("form[aria-label='Dry run'] button[type=submit]");
    await page.waitForSelector("[data-testid=plan][data-no-valid-host='true']");
    expect(await text("[data-testid=decision-summary]")).toMatch(/hosts are available/);
    // the instance that found no host, its funnel naming what the hosts lacked
    expect(await text("table.funnel tr.rejecting")).toMatch(/lacked MEMORY_MB/);
    expect(await page.$("table.weights")).toBeNull();
    await shot("dry-run");
  });

  it("disables a compute service with a reason, after asking", async () => {
    await page.goto(`${runtime.url}/console#/operations`);
    await page.waitForSelector("[data-testid=services-table] tr[data-host='host-2'] button");
    const [disable] = await page.$$("[data-testid=services-table] tr[data-host='host-2'] button");
    await disable!.click();
    await page.waitForSelector("dialog[open] input[name=reason]");
    await page.type("dialog[open] input[name=reason]", "maintenance: firmware");
    await page.click("dialog[open] button[type=submit]");
    await page.waitForSelector(
      "[data-testid=services-table] tr[data-host='host-2'][data-status='disabled']",
      {
        timeout: 20_000,
      },
    );
    const services = await client.as(ADMIN).get("/v2.1/os-services?host=host-2");
    expect(services.body.services[0]).toMatchObject({
      status: "disabled",
      disabled_reason: "maintenance: firmware",
    });
    await shot("operations");
  });

  it("resizes a server and confirms, then migrates it to a chosen host and reverts, each after asking", async () => {
    const admin = client.as(ADMIN);
    const id = await admin.createServer({ name: "console-move", flavorRef: "1" });
    await admin.waitForStatus(id, ["ACTIVE"]);
    await page.goto(`${runtime.url}/console#/servers/${id}`);
    await status("ACTIVE");

    // resize to m1.small (flavor 2), confirm: ACTIVE with the new flavor
    await act("resize", () => "2");
    await status("VERIFY_RESIZE");
    expect(await text("[data-testid=server-flavor]")).toBe("m1.small");
    await act("confirmResize");
    await status("ACTIVE");
    expect(await text("[data-testid=server-flavor]")).toBe("m1.small");
    await until(
      `document.querySelector("[data-testid=migrations] tr[data-type=resize][data-status=confirmed]")`,
    );
    await until(`document.querySelector("[data-testid=timeline]")?.textContent?.includes("confirmResize")`);
    expect(await text("[data-testid=timeline]")).toContain("compute_finish_resize");

    // migrate to a host picked in the dialog (2.56), then revert: back on its source
    const from = await text("[data-testid=server-host]");
    const target = await act("migrate", (hosts) => hosts.find((h) => h && h !== from)!);
    expect(target).toMatch(/^host-\d$/);
    await status("VERIFY_RESIZE");
    expect(await text("[data-testid=server-host]")).toBe(target);
    await until(
      `document.querySelector("[data-testid=migrations] tr[data-type=migration][data-status=finished] [data-testid=migration-dest]")?.textContent === ${JSON.stringify(target)}`,
    );
    await act("revertResize");
    await status("ACTIVE");
    expect(await text("[data-testid=server-host]")).toBe(from);
    expect(await text("[data-testid=server-flavor]")).toBe("m1.small");
    await until(
      `document.querySelector("[data-testid=migrations] tr[data-type=migration][data-status=reverted]")`,
    );
    await until(
      `document.querySelector("[data-testid=timeline]")?.textContent?.includes("compute_finish_revert_resize")`,
    );
    expect(await text("[data-testid=timeline]")).toContain("cold migration to another host");
    await shot("moves");
  });

  it("live-migrates a server after asking, shows its copy's progress, forces it to complete; then rebuilds it", async () => {
    const admin = client.as(ADMIN);
    const id = await admin.createServer({ name: "console-live", flavorRef: "1" });
    await admin.waitForStatus(id, ["ACTIVE"]);
    // a slow copy, so that its progress shows and force complete has something to end (a minute:
    // on a busy machine the steps before the copy take their time; force complete ends it)
    for (const h of runtime.hosts.values()) (h.driver as FakeDriver).liveMigrationMs = 60_000;
    await page.goto(`${runtime.url}/console#/servers/${id}`);
    await status("ACTIVE");
    const from = await text("[data-testid=server-host]");
    const target = await act("live-migrate", (hosts) => hosts.find((h) => h && h !== from)!);
    await page.waitForSelector("[data-testid=live-migration][data-status=running]", { timeout: 60_000 });
    await until(
      `/^\\d+% of \\d+ MiB copied$/.test(document.querySelector("[data-testid=live-progress]")?.textContent ?? "")`,
    );
    expect(await text("[data-testid=server-status]")).toMatch(/MIGRATING\s+migrating/);
    await shot("live-migration");
    await act("force_complete");
    await until(
      `document.querySelector("[data-testid=server-host]")?.textContent === ${JSON.stringify(target)} && document.querySelector("[data-testid=server-status]")?.textContent?.trim() === "ACTIVE"`,
      30_000,
    );
    for (const h of runtime.hosts.values()) (h.driver as FakeDriver).liveMigrationMs = 300;
    await until(
      `document.querySelector("[data-testid=migrations] tr[data-type=live-migration][data-status=completed]")`,
    );
    await until(
      `document.querySelector("[data-testid=timeline]")?.textContent?.includes("compute_post_live_migration_at_destination")`,
    );
    const live = await text("[data-testid=timeline]");
    expect(live).toContain("live-migration (live migration: the server keeps running while it moves)");
    expect(live).toContain("live_migration_force_complete");
    expect(live).toContain("compute_live_migration");

    // rebuild from another image, on the same host
    const before = (await admin.get(`/v2.1/servers/${id}`)).body.server.image.id;
    // ubuntu (the fake hypervisor's, as cirros is): its host accepts it
    const ubuntu = "a1b2c3d4-0000-4000-8000-000000000002";
    expect(before).not.toBe(ubuntu);
    const image = await act("rebuild", () => ubuntu);
    await until(
      `[...document.querySelectorAll("[data-testid=timeline] li")].some((li) => li.textContent.includes("compute_rebuild_instance") && li.textContent.includes("Success"))`,
      30_000,
    );
    await status("ACTIVE");
    expect(await text("[data-testid=server-host]")).toBe(target);
    expect(await text("[data-testid=timeline]")).toContain(
      "rebuild (rebuild from an image on the same host)",
    );
    expect((await admin.get(`/v2.1/servers/${id}`)).body.server.image.id).toBe(image);
    await shot("rebuild");
  });

  it("drains a host after asking, each server's outcome shown as it goes", async () => {
    const admin = client.as(ADMIN);
    const ids: string[] = [];
    for (const name of ["drain-1", "drain-2"])
      ids.push(await admin.createServer({ name, availability_zone: "nova:host-4" }));
    for (const id of ids) await admin.waitForStatus(id, ["ACTIVE"]);
    await page.goto(`${runtime.url}/console#/hosts/host-4`);
    await page.waitForSelector("[data-testid=drain] button[data-action=drain]:not([disabled])");
    await page.click("[data-testid=drain] button[data-action=drain]");
    await page.waitForSelector("dialog[open] input[name=reason]");
    expect(await text("dialog[open] h2")).toBe("Drain host-4?");
    await page.type("dialog[open] input[name=reason]", "maintenance: drain");
    await page.click("dialog[open] button[type=submit]");
    // the rows appear as the moves begin, then each ends migrated
    await page.waitForSelector("[data-testid=drain-table] tr[data-server='drain-1']", { timeout: 20_000 });
    await page.waitForSelector("[data-testid=drain][data-done=true]", { timeout: 60_000 });
    for (const name of ["drain-1", "drain-2"])
      expect(await text(`[data-testid=drain-table] tr[data-server='${name}']`)).toMatch(
        /migrated\s+to host-\d$/,
      );
    // earlier tests' servers may have been on host-4 too: every one of them left
    expect(await text("[data-testid=drain-summary]")).toMatch(
      /^(\d+) of \1 server\(s\) migrated, 0 failed, 0 skipped; host-4 is empty\.$/,
    );
    expect((await admin.get("/v2.1/servers/detail?all_tenants=1&host=host-4")).body.servers).toEqual([]);
    expect((await admin.get("/v2.1/os-services?host=host-4")).body.services[0]).toMatchObject({
      status: "disabled",
      disabled_reason: "maintenance: drain",
    });
    for (const id of ids) expect((await admin.get(`/v2.1/servers/${id}`)).body.server.status).toBe("ACTIVE");
    await shot("drain");
  });

  it("drains a host live after asking: each server keeps running while it moves", async () => {
    const admin = client.as(ADMIN);
    const id = await admin.createServer({ name: "live-drain", availability_zone: "nova:host-5" });
    await admin.waitForStatus(id, ["ACTIVE"]);
    await page.goto(`${runtime.url}/console#/hosts/host-5`);
    await page.waitForSelector("[data-testid=drain] button[data-action=drain]:not([disabled])");
    await page.click("[data-testid=drain] button[data-action=drain]");
    await page.waitForSelector("dialog[open] input[name=reason]");
    await page.type("dialog[open] input[name=reason]", "maintenance: live");
    await page.select("dialog[open] select[name=choice]", "live");
    await page.click("dialog[open] button[type=submit]");
    await page.waitForSelector("[data-testid=drain][data-done=true]", { timeout: 60_000 });
    expect(await text("[data-testid=drain-table] tr[data-server='live-drain']")).toMatch(
      /migrated\s+to host-\d \(live\)$/,
    );
    expect(await text("[data-testid=drain-summary]")).toMatch(
      /^(\d+) of \1 server\(s\) migrated \(\1 live, 0 cold\), 0 failed, 0 skipped; host-5 is empty\.$/,
    );
    const m = (await admin.at("2.23").get(`/v2.1/os-migrations?instance_uuid=${id}`)).body.migrations;
    expect(m.map((x: { migration_type: string; status: string }) => [x.migration_type, x.status])).toEqual([
      ["live-migration", "completed"],
    ]);
  });

  it("pauses and unpauses a server, shelves it, offloads it (its claim leaves its host), unshelves it onto another host and snapshots it, each after asking", async () => {
    const admin = client.as(ADMIN);
    const id = await admin.createServer({ name: "console-shelf", flavorRef: "1" });
    await admin.waitForStatus(id, ["ACTIVE"]);
    const vcpus = (await admin.get("/v2.1/flavors/1")).body.flavor.vcpus as number;
    /** the host's page: its instances (os-fleet) and VCPU used (placement), once both are read */
    const hostPage = async (host: string) => {
      await page.goto(`${runtime.url}/console#/hosts/${host}`);
      await page.waitForSelector("[data-testid=host-row]", { timeout: 20_000 });
      await page.waitForSelector("tr[data-rc=VCPU]", { timeout: 20_000 });
    };
    const figures = () =>
      page.evaluate(`({
        instances: Number(document.querySelector("[data-testid=host-row]").getAttribute("data-instances")),
        vcpu: Number(document.querySelector("tr[data-rc=VCPU]").getAttribute("data-used")),
      })`) as Promise<{ instances: number; vcpu: number }>;
    const onHost = `document.querySelector("[data-testid=servers-table] tr[data-server='console-shelf']")`;

    await page.goto(`${runtime.url}/console#/servers/${id}`);
    await status("ACTIVE");
    const from = await text("[data-testid=server-host]");
    // the fake driver's diagnostics, said to be synthetic
    await until(`document.querySelector("[data-testid=diagnostics-state]")?.textContent === "running"`);
    expect(await text("[data-testid=diagnostics]")).toContain("synthetic figures");
    await act("pause", undefined, /frozen in memory .* keeps its host and its claim/);
    await status("PAUSED");
    expect(await page.$("[data-testid=server-actions] button[data-action=pause]")).toBeNull();
    // read again as its status changed: Nova's compute answers only for a running guest
    await until(
      `document.querySelector("[data-testid=diagnostics] [role=alert]")?.textContent?.includes("while it is in power state paused")`,
    );
    await act("unpause");
    await status("ACTIVE");

    await hostPage(from);
    await until(`${onHost} !== null`);
    const before = await figures();
    await page.goto(`${runtime.url}/console#/servers/${id}`);
    await act("shelve", undefined, /SHELVED_OFFLOADED frees the host's claim/);
    await status("SHELVED");
    expect(await text("[data-testid=server-host]")).toBe(from);
    expect(await text("[data-testid=shelf-note]")).toContain(`${from} keeps its claim`);
    await act("shelveOffload", undefined, new RegExp(`^${from} destroys its guest and frees its claim`));
    await status("SHELVED_OFFLOADED");
    expect(await text("[data-testid=server-host]")).toBe("none");
    expect(await text("[data-testid=shelf-note]")).toMatch(/no host holds a claim for it/);
    expect(await text("[data-testid=diagnostics]")).toMatch(/No host runs it now/);
    await shot("shelved-offloaded");
    // in the list: its status, and no host
    await page.goto(`${runtime.url}/console#/servers`);
    await page.waitForSelector(
      "[data-testid=servers-table] tr[data-server='console-shelf'][data-status=SHELVED_OFFLOADED]",
      {
        timeout: 20_000,
      },
    );
    expect(await text("[data-testid=servers-table] tr[data-server='console-shelf']")).toMatch(
      /SHELVED_OFFLOADED.*none/s,
    );
    // its host's page: the server gone, its instance and its VCPU no longer counted there
    await hostPage(from);
    await until(
      `${onHost} === null && Number(document.querySelector("[data-testid=host-row]")?.getAttribute("data-instances")) === ${before.instances - 1} && Number(document.querySelector("tr[data-rc=VCPU]")?.getAttribute("data-used")) === ${before.vcpu - vcpus}`,
    );
    await shot("offloaded-host");

    // unshelve to a host picked in the dialog (2.91): scheduled, claimed and spawned there
    await page.goto(`${runtime.url}/console#/servers/${id}`);
    await status("SHELVED_OFFLOADED");
    const target = await act(
      "unshelve",
      (hosts) => hosts.find((h) => h && h !== from)!,
      /schedules it as a build/,
    );
    expect(target).toMatch(/^host-\d$/);
    await until(
      `document.querySelector("[data-testid=server-host]")?.textContent === ${JSON.stringify(target)} && document.querySelector("[data-testid=server-status]")?.textContent?.trim() === "ACTIVE"`,
      30_000,
    );
    await until(
      `document.querySelector("[data-testid=timeline]")?.textContent?.includes("compute_unshelve_instance")`,
    );
    const timeline = await text("[data-testid=timeline]");
    for (const entry of [
      "pause (the guest is frozen in memory, on its host)",
      "compute_pause_instance",
      "compute_unpause_instance",
      "compute_shelve_instance",
      "shelveOffload (its host lets it go: the claim is freed)",
      "compute_shelve_offload_instance",
      "schedule_instances (the conductor picks a host and claims it, as for a build)",
    ])
      expect(timeline).toContain(entry);
    expect(timeline).toMatch(new RegExp(`compute_unshelve_instance .* Success · on ${target}`));
    await shot("unshelved");
    await hostPage(target!);
    await until(`${onHost} !== null`);
    expect((await admin.get(`/v2.1/servers/${id}`)).body.server["OS-EXT-SRV-ATTR:host"]).toBe(target);

    // a snapshot named in the dialog: an image of the project (suspend and resume share pause's
    // path through the table of actions)
    await page.goto(`${runtime.url}/console#/servers/${id}`);
    await status("ACTIVE");
    await act("createImage", undefined, /copies its disk into a new image/, "console-shelf-snap");
    await until(
      `[...document.querySelectorAll("[data-testid=timeline] li")].some((li) => li.textContent.includes("compute_snapshot_instance") && li.textContent.includes("Success"))`,
      30_000,
    );
    const images = (await admin.get("/image/v2/images?name=console-shelf-snap")).body.images;
    expect(images.map((i: { status: string }) => i.status)).toEqual(["active"]);
  });

  it("creates a project and a user with member there, assigns and removes a role, and disables the user after asking: its token stops working", async () => {
    await page.goto(`${runtime.url}/console#/projects`);
    const form = (label: string) => `form[aria-label='${label}']`;
    await page.waitForSelector(`${form("New project")} input[name=name]`, { timeout: 20_000 });
    await page.type(`${form("New project")} input[name=name]`, "tenant-1");
    await page.type(`${form("New project")} input[name=description]`, "made in the console");
    await page.click(`${form("New project")} button[type=submit]`);
    const project = "[data-testid=projects-table] tr[data-project='tenant-1']";
    await page.waitForSelector(`${project}[data-enabled=true]`, { timeout: 20_000 });
    expect(await text(project)).toMatch(/^tenant-1\s+\S+\s+default\s+enabled\s+made in the console/);

    // alice: tenant-1 her default project, member there, given in the same form
    await page.type(`${form("New user")} input[name=name]`, "alice");
    await page.type(`${form("New user")} input[name=password]`, "alice-secret");
    const optionValue = (select: string, label: string) =>
      page.$$eval(
        `${select} option`,
        (os, l) =>
          os
            .map((o) => o as unknown as { value: string; textContent: string })
            .find((o) => o.textContent === l)?.value,
        label,
      );
    const tenant = (await optionValue(`${form("New user")} select[name=project]`, "tenant-1"))!;
    await page.select(`${form("New user")} select[name=project]`, tenant);
    await page.select(`${form("New user")} select[name=role]`, "member");
    await page.click(`${form("New user")} button[type=submit]`);
    const alice = "[data-testid=users-table] tr[data-user='alice']";
    /** alice's roles as the page shows them: target:role, … */
    const roles = (want: string) =>
      until(
        `[...document.querySelectorAll("${alice} [data-testid=user-roles] [data-role]")].map((e) => e.closest("li").dataset.target + ":" + e.dataset.role).join() === ${JSON.stringify(want)}`,
      );
    await roles("tenant-1:member");
    expect(await text(`${alice} td:nth-of-type(2)`)).toBe("tenant-1");

    // reader on demo too, then removed after asking
    await page.select(
      `${form("Assign a role")} select[name=user]`,
      (await optionValue(`${form("Assign a role")} select[name=user]`, "alice"))!,
    );
    await page.select(`${form("Assign a role")} select[name=project]`, "demo");
    await page.select(`${form("Assign a role")} select[name=role]`, "reader");
    await page.click(`${form("Assign a role")} button[type=submit]`);
    await roles("demo:reader,tenant-1:member");
    await page.click(`${alice} li[data-target=demo] button[data-action=remove-role]`);
    await page.waitForSelector("dialog[open] button[type=submit]");
    expect(await text("dialog[open] h2")).toBe("Remove reader from alice on demo?");
    await page.click("dialog[open] button[type=submit]");
    await roles("tenant-1:member");
    await shot("projects");

    // her token, scoped to tenant-1, works until she is disabled
    const signin = await client.post("/identity/v3/auth/tokens", {
      auth: {
        identity: {
          methods: ["password"],
          password: { user: { name: "alice", domain: { id: "default" }, password: "alice-secret" } },
        },
        scope: { project: { id: tenant } },
      },
    });
    expect(signin.status).toBe(201);
    const token = signin.headers.get("x-subject-token")!;
    expect((await client.as(token).get("/v2.1/servers")).status).toBe(200);
    await page.click(`${alice} button[data-action=disable]`);
    await page.waitForSelector("dialog[open] button[type=submit]");
    expect(await text("dialog[open] p")).toMatch(
      /can no longer sign in, and the tokens it holds stop working/,
    );
    await page.click("dialog[open] button[type=submit]");
    await page.waitForSelector(`${alice}[data-enabled=false]`, { timeout: 20_000 });
    // Keystone's validation reads the user at once: a revoked token is 404 Could not find token
    const validated = await fetch(`${runtime.url}/identity/v3/auth/tokens`, {
      headers: { "x-auth-token": ADMIN, "x-subject-token": token },
    });
    expect(validated.status).toBe(404);
    // Compute may remember a validation for [token] revocation_cache_time (2 s)
    const refused = await eventually(
      () => client.as(token).get("/v2.1/servers"),
      (r) => r.status === 401,
    );
    expect(refused.status).toBe(401);
  });

  it("shows a member its own servers and never a host name", async () => {
    await client.createServer({ name: "demo-own" });
    await page.click("header button");
    await signIn(async () => {
      await page.click("input[type=radio]:not(:checked)");
      await page.type("input[name=token]", "demo-token");
    });
    await page.waitForSelector("[data-testid=servers-table] tr[data-server='demo-own']", { timeout: 20_000 });
    const nav = await text("header nav");
    expect(nav).not.toContain("Fleet");
    expect(nav).not.toContain("Operations");
    await page.click("[data-testid=servers-table] tr[data-server='demo-own'] a");
    await page.waitForSelector("[data-testid=server-status]");
    await until(`document.querySelector("[data-testid=timeline]")?.textContent?.includes("create")`);
    // a member may resize its server (here to its own flavor: Nova's 400, shown in the dialog),
    // never migrate it
    await page.waitForSelector("[data-testid=server-actions] button[data-action=resize]:not([disabled])");
    expect(await page.$("[data-testid=server-actions] button[data-action=migrate]")).toBeNull();
    await page.click("[data-testid=server-actions] button[data-action=resize]");
    await page.waitForSelector("dialog[open] select[name=choice]");
    const current = await page.$$eval(
      "dialog[open] select[name=choice] option",
      (os) =>
        os
          .map((o) => o as unknown as { value: string; textContent: string })
          .find((o) => o.textContent.endsWith("(current)"))?.value,
    );
    await page.select("dialog[open] select[name=choice]", current!);
    await page.click("dialog[open] button[type=submit]");
    await page.waitForSelector("dialog[open] [role=alert]");
    expect(await text("dialog[open] [role=alert]")).toBe("When resizing, instances must change flavor!");
    await page.click("dialog[open] button[type=button]");
    expect(await page.$("[data-testid=migrations]")).toBeNull();
    const html = await page.content();
    expect(html).not.toMatch(/host-\d/);
    expect(await page.$("[data-testid=servers-table] tr[data-server='console-watch']")).toBeNull();
    await shot("member");
    // nor a host's page, nor its drain
    await page.goto(`${runtime.url}/console#/hosts/host-4`);
    await page.waitForSelector("main [role=alert]");
    expect(await page.$("[data-action=drain]")).toBeNull();
  });

  it("shows a member its own project and itself, and nothing to create or change", async () => {
    // still signed in as demo
    await page.goto(`${runtime.url}/console#/projects`);
    await page.waitForSelector("[data-testid=projects-table] tr[data-project=demo]", { timeout: 20_000 });
    await page.waitForSelector("[data-testid=users-table] tr[data-user=demo]");
    const names = (table: string, attr: string) =>
      page.$$eval(`[data-testid=${table}] tbody tr`, (rows, a) => rows.map((r) => r.getAttribute(a)), attr);
    expect(await names("projects-table", "data-project")).toEqual(["demo"]);
    expect(await names("users-table", "data-user")).toEqual(["demo"]);
    expect(await page.$("main form")).toBeNull();
    expect(await page.$("main button")).toBeNull();
    expect(await text("header nav")).toContain("Project");
  });

  it("shows a member the shared network public without its provider attributes", async () => {
    await page.goto(`${runtime.url}/console#/networks`);
    const row = "[data-testid=networks-table] tr[data-network=public]";
    await page.waitForSelector(row, { timeout: 20_000 });
    expect(await text(row)).toMatch(/^public\s+ACTIVE\s+yes\s+10\.20\.0\.0\/16$/);
    expect(await text("[data-testid=networks-table] thead")).not.toContain("Physical network");
  });
});
