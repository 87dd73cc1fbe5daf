// Where Debian's browsers are (puppeteer-core downloads none): the variable naming it, else the
// first of the usual names on PATH. Shared by the console's tests and its benchmark.
import { execFileSync } from "node:child_process";

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

/** Headless chromium as root in CI: its sandbox needs user namespaces the machine may not have. */
export const CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"];
