/**
 * A real headless Chromium for the dashboard's tests: the system's (Debian's `chromium` package,
 * which `.ci/run` installs), driven by playwright-core. `CHROMIUM_PATH` names another binary. No
 * browser is a failure that says how to get one, never a skipped test.
 */
import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

const CANDIDATES = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome", "/usr/bin/google-chrome-stable"];

export function chromiumPath(): string {
  const given = process.env.CHROMIUM_PATH;
  if (given) return given;
  const found = CANDIDATES.find((file) => existsSync(file));
  if (!found) throw new Error(`no Chromium found (looked for ${CANDIDATES.join(", ")}): install it (apt-get install chromium) or set CHROMIUM_PATH`);
  return found;
}

/** Headless; `--no-sandbox` because the tests may run as root, where Chromium's sandbox refuses to start (the pages are the tests' own). */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
}
