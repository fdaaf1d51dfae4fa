/**
 * A real headless Chromium for the dashboard's tests, driven by playwright-core: `CHROMIUM_PATH` if
 * set, else the system's (`chromium` and the like on PATH), else the headless Chromium that the dev
 * dependency @sparticuz/chromium ships inside its npm package, unpacked once into
 * `node_modules/.cache/` (docs/decisions/test-browser.md). No browser is a failure that
 * says how to get one, never a skipped test.
 */
import { accessSync, constants, createReadStream, existsSync, readFileSync, statSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { brotliDecompressSync, createBrotliDecompress } from "node:zlib";
import { type Browser, chromium } from "playwright-core";

const MIB = 1024 * 1024;

/**
 * The names a system's Chromium goes by, looked up on PATH in this order. A headless shell first (Debian's
 * and Alpine's chromium-headless-shell package, Google's chrome-headless-shell): the tests run headless
 * only, and the full browser's headless mode spends several times the CPU on each page (a new context and
 * page ~0.7 s against ~0.1 s).
 */
const NAMES = [
  "chromium-headless-shell",
  "chrome-headless-shell",
  "chromium",
  "chromium-browser",
  "google-chrome",
  "google-chrome-stable",
];

/** Which browser the tests launch, and the environment it needs beyond the tests' own. */
export interface ChromiumChoice {
  executable: string;
  source: "CHROMIUM_PATH" | "system" | "npm";
  env?: Record<string, string>;
}

/** `CHROMIUM_PATH`, else the system's, else the npm package's (unpacked on first use). */
export async function findChromium(): Promise<ChromiumChoice> {
  const given = process.env.CHROMIUM_PATH;
  if (given) {
    if (!existsSync(given))
      throw new Error(
        `CHROMIUM_PATH=${given}: no such file (unset it to use the system's Chromium or the one in node_modules)`,
      );
    return { executable: given, source: "CHROMIUM_PATH" };
  }
  const found = systemChromium();
  if (found) return { executable: found, source: "system" };
  return npmChromium();
}

function systemChromium(): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter).filter((entry) => path.isAbsolute(entry))) {
    for (const name of NAMES) {
      const file = path.join(dir, name);
      try {
        accessSync(file, constants.X_OK);
        if (statSync(file).isFile()) return file;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

/**
 * Headless; `--no-sandbox` because the tests may run as root, where Chromium's sandbox refuses to start (the pages are
 * the tests' own).
 */
export async function launchBrowser(choice?: ChromiumChoice): Promise<Browser> {
  const { executable, env } = choice ?? (await findChromium());
  return chromium.launch({
    executablePath: executable,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    ...(env ? { env: { ...process.env, ...env } } : {}),
  });
}

/**
 * The headless Chromium inside @sparticuz/chromium: `bin/chromium.br` (the browser, Brotli),
 * `bin/al2023.tar.br` (the NSS and expat libraries it links, so that it needs none of the system's)
 * and `bin/fonts.tar.br` (Open Sans, so that text has a width on a machine without fonts). Unpacked
 * into a folder of node_modules named by the package's version: into a temp folder first, then
 * renamed, so that two test workers starting at once never launch a half-written browser. The
 * package's own `executablePath()` is not used: it unpacks into the shared `/tmp/chromium`, which one
 * user's run leaves unusable for another's. `cacheRoot` is the folder to unpack into (a test's own).
 */
export async function npmChromium(cacheRoot?: string): Promise<ChromiumChoice> {
  const looked = `no CHROMIUM_PATH, no ${NAMES.join(", ")} on PATH`;
  let main: string;
  try {
    main = createRequire(import.meta.url).resolve("@sparticuz/chromium");
  } catch {
    throw new Error(
      `no Chromium found (${looked}), and the dev dependency @sparticuz/chromium is not installed: run npm ci, install a Chromium, or set CHROMIUM_PATH`,
    );
  }
  if (process.platform !== "linux" || process.arch !== "x64") {
    throw new Error(
      `no Chromium found (${looked}), and the one in @sparticuz/chromium is for x86-64 Linux only (this is ${process.platform} ${process.arch}): install a Chromium or set CHROMIUM_PATH`,
    );
  }
  // build/cjs/index.cjs → the package's root; its package.json is not among its exports.
  const root = path.resolve(path.dirname(main), "..", "..");
  const version = (JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { version: string }).version;
  const dir = path.join(cacheRoot ?? path.resolve(root, "..", "..", ".cache", "pi-teams-hooks"), `chromium-${version}`);
  const choice: ChromiumChoice = {
    executable: path.join(dir, "chromium"),
    source: "npm",
    env: {
      LD_LIBRARY_PATH: [path.join(dir, "lib"), process.env.LD_LIBRARY_PATH].filter(Boolean).join(":"),
      FONTCONFIG_FILE: path.join(dir, "fonts.conf"),
    },
  };
  if (existsSync(dir)) return choice;

  await mkdir(path.dirname(dir), { recursive: true });
  const temp = await mkdtemp(`${dir}.unpacking-`);
  try {
    const bin = path.join(root, "bin");
    await writeFile(path.join(temp, "chromium"), await decompressed(path.join(bin, "chromium.br")), { mode: 0o755 });
    for (const archive of ["al2023.tar.br", "fonts.tar.br"]) {
      await untar(path.join(bin, archive), brotliDecompressSync(await readFile(path.join(bin, archive))), temp);
    }
    // The system's fonts where there are any, and the package's always (its own fonts.conf names Lambda's folders).
    await writeFile(
      path.join(temp, "fonts.conf"),
      [
        `<?xml version="1.0"?>`,
        `<!DOCTYPE fontconfig SYSTEM "fonts.dtd">`,
        `<fontconfig>`,
        `  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>`,
        `  <dir>${xml(path.join(dir, "fonts"))}</dir>`,
        `  <cachedir>${xml(path.join(dir, "fontconfig-cache"))}</cachedir>`,
        `</fontconfig>`,
        ``,
      ].join("\n"),
    );
    await rename(temp, dir);
  } catch (error) {
    await rm(temp, { recursive: true, force: true });
    // Another worker finished first: its folder is complete (a rename is all or nothing).
    const code = (error as NodeJS.ErrnoException).code;
    if ((code === "ENOTEMPTY" || code === "EEXIST") && existsSync(dir)) return choice;
    throw new Error(
      `could not unpack the Chromium of @sparticuz/chromium ${version} into ${dir}: ${(error as Error).message}`,
    );
  }
  return choice;
}

/** The decompressions under way, by file: the unpackers in one process that start together share one. */
const decompressing = new Map<string, Promise<Buffer[]>>();

/**
 * A Brotli file's content, in 1 MiB chunks (the default 16 KiB ones cost the 190 MB browser ~2.2 s of
 * CPU instead of ~1.5 s). Unpackers in one process that start while it is being read share it (each still
 * writes a folder of its own); the bytes are not kept after that.
 */
function decompressed(file: string): Promise<Buffer[]> {
  let chunks = decompressing.get(file);
  if (!chunks) {
    const read: Buffer[] = [];
    chunks = pipeline(
      createReadStream(file, { highWaterMark: MIB }),
      createBrotliDecompress({ chunkSize: MIB }),
      async (source: AsyncIterable<Buffer>) => {
        for await (const chunk of source) read.push(chunk);
      },
    )
      .then(() => read)
      .finally(() => decompressing.delete(file));
    decompressing.set(file, chunks);
  }
  return chunks;
}

/** Regular files and folders of a ustar archive into `into`; the package's own fonts.conf is left out. */
async function untar(name: string, tar: Buffer, into: string): Promise<void> {
  const field = (header: Buffer, start: number, length: number) =>
    header
      .subarray(start, start + length)
      .toString("utf8")
      .replace(/\0.*$/s, "");
  for (let offset = 0; offset + 512 <= tar.length; ) {
    const header = tar.subarray(offset, offset + 512);
    if (header.every((byte) => byte === 0)) break;
    const prefix = field(header, 345, 155);
    const entry = (prefix ? `${prefix}/` : "") + field(header, 0, 100);
    const size = Number.parseInt(field(header, 124, 12).trim() || "0", 8);
    const type = String.fromCharCode(header[156] ?? 0);
    const body = tar.subarray(offset + 512, offset + 512 + size);
    offset += 512 + Math.ceil(size / 512) * 512;
    const parts = entry.split("/").filter((part) => part !== "" && part !== ".");
    if (parts.length === 0 || parts.includes("..") || entry.startsWith("/"))
      throw new Error(`${name}: entry "${entry}" leaves the folder`);
    const target = path.join(into, ...parts);
    if (type === "5") await mkdir(target, { recursive: true });
    else if (type === "0" || type === "\0") {
      if (entry === "fonts.conf") continue;
      await mkdir(path.dirname(target), { recursive: true });
      await writeFile(target, body, { mode: Number.parseInt(field(header, 100, 8).trim() || "644", 8) & 0o755 });
    } else throw new Error(`${name}: entry "${entry}" is of tar type "${type}", not a file or folder`);
  }
}

function xml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
