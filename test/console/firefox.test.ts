// The console in Firefox (Debian's firefox-esr through puppeteer-core's WebDriver BiDi, no
// download): what console.test.ts checks in chromium, in short. Sign in through the form, the
// fleet map drawn and answering the keyboard, a server's page with its explanation, and the
// dry run's funnel. Screenshots go to test-artifacts/console/firefox-*.png.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Runtime } from "../../local/runtime.js";
import { type Client, startTestRuntime } from "../e2e/harness.js";
import { ARTIFACTS, findFirefox, launch } from "./browsers.js";

const firefox = findFirefox();
if (!firefox)
  console.warn(
    "test/console: firefox is missing (Debian package firefox-esr; scripts/install-test-tools.sh): its tests skip",
  );

describe.skipIf(!firefox)("the web console in firefox", () => {
  let runtime: Runtime;
  let client: Client;
  let browser: Browser;
  let page: Page;
  const shot = (name: string) =>
    page.screenshot({ path: join(ARTIFACTS, `firefox-${name}.png`) as `${string}.png`, fullPage: true });
  // (browser-side code is passed as text: this file is compiled without the DOM's types)
  const text = (selector: string) =>
    page.$eval(selector, (e) => (e as unknown as { textContent: string }).textContent);
  const until = (expression: string, timeout = 20_000) => page.waitForFunction(expression, { timeout });

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    ({ runtime, client } = await startTestRuntime({ hosts: 3, buildMs: 100 }));
    browser = await launch("firefox", firefox!);
    page = await browser.newPage();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await runtime?.stop();
  });

  it("signs in through the form; the fleet map is drawn and answers the keyboard", async () => {
    await page.goto(`${runtime.url}/console`);
    await page.waitForSelector("form[aria-label='Sign in']");
    await page.type("input[name=user]", "admin");
    await page.type("input[name=password]", "admin-secret");
    await page.type("input[name=project]", "admin");
    await page.click("form[aria-label='Sign in'] button[type=submit]");
    await until(`document.querySelector("[data-testid=fleet-summary]")?.textContent?.startsWith("3 hosts")`);
    // the canvas has pixels: some cell is not the background
    await until(`(() => {
      const c = document.querySelector("canvas");
      const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      for (let i = 3; i < d.length; i += 4) if (d[i] > 0) return true;
      return false;
    })()`);
    // Color by starts on VCPU; three hosts are named on the map
    await until(`document.querySelector("select[name=color]").selectedOptions[0]?.textContent === "VCPU"`);
    expect(await page.$eval("canvas[role=img]", (e) => e.getAttribute("data-names"))).toBe("true");
    await page.focus("canvas[role=img]");
    await page.keyboard.press("ArrowRight");
    expect(await text("[data-testid=fleet-focused]")).toMatch(/^host-\d, zone \w+, up/);
    await shot("fleet");
  });

  it("opens a server's page with why the scheduler chose its host", async () => {
    // placed and built first: the page shows the host the record names
    await client.waitForStatus(await client.createServer({ name: "ff-watch" }), ["ACTIVE"]);
    await page.goto(`${runtime.url}/console#/servers`);
    await page.waitForSelector("[data-testid=servers-table] tr[data-server='ff-watch'] a", {
      timeout: 20_000,
    });
    await page.click("[data-testid=servers-table] tr[data-server='ff-watch'] a");
    await page.waitForSelector("[data-testid=decision-summary]", { timeout: 20_000 });
    await page.waitForSelector("[data-testid=server-host]", { timeout: 20_000 });
    const host = (await text("[data-testid=server-host]")).trim();
    expect(host).toMatch(/^host-\d$/);
    expect(await text("[data-testid=decision-summary]")).toContain(host);
    await shot("server");
  });

  it("runs a dry run that cannot be placed and shows the filter funnel", async () => {
    await page.goto(`${runtime.url}/console#/plan`);
    await page.waitForSelector("form[aria-label='Dry run'] select[name=flavor] option");
    await page.select("select[name=flavor]", "5");
    await page.$eval("input[name=count]", (e) => {
      (e as unknown as { value: string }).value = "";
    });
    await page.type("input[name=count]", "60");
    await page.click("form[aria-label='Dry run'] button[type=submit]");
    await page.waitForSelector("[data-testid=plan][data-no-valid-host='true']", { timeout: 20_000 });
    expect(await text("table.funnel tr.rejecting")).toMatch(/lacked MEMORY_MB/);
    await shot("plan");
  });
});
