/**
 * The tests' browser on a machine without one: with no Chromium on PATH and no CHROMIUM_PATH, the
 * dashboard's tests launch the headless Chromium that the dev dependency @sparticuz/chromium ships,
 * unpacked by the first test worker that needs it (test/helpers/browser.ts). Run here even where a
 * system Chromium exists, which the other browser tests then use instead. The two unpackers at once are
 * in one process here, where they share one decompression; each writes and renames a folder of its own.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type ChromiumChoice, findChromium, launchBrowser, npmChromium } from "../helpers/browser.js";

const cache = mkdtempSync(path.join(os.tmpdir(), "pi-teams-chromium-"));

afterAll(() => {
  rmSync(cache, { recursive: true, force: true });
});

/** A page served on 127.0.0.1 whose script writes the title, with a line of text. */
async function servePage(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((_request, response) => {
    response.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    response.end(
      `<!doctype html><title>static</title><span style="font: 16px monospace">Quality gate failed: on_task_completed</span><script>document.title = "script ran"</script>`,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** The page's title and the width of its text, in the given browser. */
async function look(choice: ChromiumChoice, url: string): Promise<{ title: string; textWidth: number }> {
  const browser = await launchBrowser(choice);
  try {
    const tab = await browser.newPage();
    await tab.goto(url);
    return {
      title: await tab.title(),
      textWidth: (await tab.evaluate(`document.querySelector("span").getBoundingClientRect().width`)) as number,
    };
  } finally {
    await browser.close();
  }
}

describe("the Chromium from the npm registry", () => {
  it("is what the tests use with no Chromium on PATH and no CHROMIUM_PATH", async () => {
    const saved = { PATH: process.env.PATH, CHROMIUM_PATH: process.env.CHROMIUM_PATH };
    try {
      process.env.PATH = cache; // a folder of the test's own, with no browser in it
      delete process.env.CHROMIUM_PATH;
      const choice = await findChromium();
      expect(choice.source).toBe("npm");
      expect(choice.executable).toMatch(/node_modules\/\.cache\/pi-teams-hooks\/chromium-[\d.]+\/chromium$/);
    } finally {
      process.env.PATH = saved.PATH;
      if (saved.CHROMIUM_PATH === undefined) delete process.env.CHROMIUM_PATH;
      else process.env.CHROMIUM_PATH = saved.CHROMIUM_PATH;
    }
  });

  it("a system's headless shell on PATH is taken before its full Chromium", async () => {
    const saved = { PATH: process.env.PATH, CHROMIUM_PATH: process.env.CHROMIUM_PATH };
    const bin = mkdtempSync(path.join(os.tmpdir(), "pi-teams-chromium-path-"));
    try {
      for (const name of ["chromium", "chromium-headless-shell"])
        writeFileSync(path.join(bin, name), "", { mode: 0o755 });
      process.env.PATH = bin;
      delete process.env.CHROMIUM_PATH;
      expect(await findChromium()).toEqual({ executable: path.join(bin, "chromium-headless-shell"), source: "system" });
      rmSync(path.join(bin, "chromium-headless-shell"));
      expect(await findChromium()).toEqual({ executable: path.join(bin, "chromium"), source: "system" });
    } finally {
      process.env.PATH = saved.PATH;
      if (saved.CHROMIUM_PATH === undefined) delete process.env.CHROMIUM_PATH;
      else process.env.CHROMIUM_PATH = saved.CHROMIUM_PATH;
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it("a CHROMIUM_PATH that names no file is an error that names it", async () => {
    const saved = process.env.CHROMIUM_PATH;
    try {
      process.env.CHROMIUM_PATH = path.join(cache, "no-such-chrome");
      await expect(findChromium()).rejects.toThrow(`CHROMIUM_PATH=${path.join(cache, "no-such-chrome")}: no such file`);
    } finally {
      if (saved === undefined) delete process.env.CHROMIUM_PATH;
      else process.env.CHROMIUM_PATH = saved;
    }
  });

  it("two workers unpacking it at once both get a whole browser, which runs a page's script and draws text with or without the system's fonts", async () => {
    const [first, second] = await Promise.all([npmChromium(cache), npmChromium(cache)]);
    expect(second.executable).toBe(first.executable);
    expect(existsSync(first.executable)).toBe(true);
    // The loser's temp folder is gone; only the browser's folder is left.
    expect(readdirSync(cache)).toEqual([path.basename(path.dirname(first.executable))]);

    const page = await servePage();
    try {
      // With the system's fonts, where there are any: a Chromium without a font gives text no width.
      const withSystemFonts = await look(first, page.url);
      expect(withSystemFonts.title).toBe("script ran");
      expect(withSystemFonts.textWidth).toBeGreaterThan(100);
      // With none of the system's fonts, as on a machine that has none: the package's own.
      const onlyItsOwn = path.join(cache, "only-its-own-fonts.conf");
      writeFileSync(
        onlyItsOwn,
        `<?xml version="1.0"?>\n<fontconfig><dir>${path.join(path.dirname(first.executable), "fonts")}</dir></fontconfig>\n`,
      );
      const withoutSystemFonts = await look({ ...first, env: { ...first.env, FONTCONFIG_FILE: onlyItsOwn } }, page.url);
      expect(withoutSystemFonts.textWidth).toBeGreaterThan(100);
    } finally {
      await page.close();
    }
  });
});
