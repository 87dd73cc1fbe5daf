// Where Debian's browsers are (puppeteer-core downloads none): the variable naming it, else the
// first of the usual names on PATH. Shared by the console's tests and its benchmark.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import puppeteer, { type Browser } from "puppeteer-core";

function findBrowser(variable: string, names: string[]): string | undefined {
  if (process.env[variable]) return process.env[variable];
  for (const name of names) {
    try {
      return execFileSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).trim() || undefined;
    } catch {
      // not this one
    }
  }
  return undefined;
}

export const findChromium = () =>
  findBrowser("CHROME_PATH", ["chromium", "chromium-browser", "google-chrome"]);
export const findFirefox = () => findBrowser("FIREFOX_PATH", ["firefox-esr", "firefox"]);

/** where the console's tests save their screenshots */
export const ARTIFACTS = join(process.cwd(), "test-artifacts", "console");

/** Headless, 1400×1000. Chromium as root in CI: its sandbox needs user namespaces it may lack. */
export function launch(browser: "chromium" | "firefox", executablePath: string): Promise<Browser> {
  return puppeteer.launch({
    browser: browser === "firefox" ? "firefox" : "chrome",
    executablePath,
    headless: true,
    ...(browser === "chromium"
      ? { args: ["--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"] }
      : {}),
    defaultViewport: { width: 1400, height: 1000 },
  });
}
