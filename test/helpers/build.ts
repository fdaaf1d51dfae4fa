/**
 * The build the tests run: `dist/`, made by `npm run build` when it was not built from the current
 * sources. The suite's global set-up (global-setup.ts) calls `buildIfStale()` once, before any test
 * file starts; test files then take the build as it is (`ensureBuilt` in leader-rig.ts).
 *
 * No vitest import here: the global set-up runs in vitest's main process, outside any test.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { constants as fsConstants } from "node:fs";
import { mkdir, open, readFile, readdir, stat, unlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const SOURCE_DIR = path.join(REPO_ROOT, "extensions", "teams-hooks");
/** Per checkout (a worktree may share node_modules through a link). */
const STAMP_FILE = path.join(
  REPO_ROOT,
  "node_modules",
  ".cache",
  "pi-teams-hooks-leader-rig",
  `${createHash("sha256").update(REPO_ROOT).digest("hex").slice(0, 16)}.sha256`,
);
/** A lock taken longer ago than this was left by a killed run. */
const STALE_LOCK_MS = 120_000;
const LOCK_WAIT_MS = 180_000;

/**
 * Rebuilds dist/ (once per process, under a cross-process lock) unless it was built from the current
 * sources, and resolves with the hash of the sources it was built from. "Current" is a hash of every
 * source file, the dashboard's assets and what the build itself reads (BUILD_INPUTS), kept in
 * node_modules/.cache after each build here: mtimes alone are fooled when another
 * build (another engineer's, a parallel run's) finishes after an edit it did not see. Without a stamp
 * (a fresh `npm ci`, which builds), up-to-date mtimes are trusted once.
 *
 * Once per process, not per module instance: vitest loads the global set-up once for each project,
 * each time as a new module, all in its main process. `again` checks anew (a rerun in watch mode).
 */
export function buildIfStale(opts: { again?: boolean; lockDir?: string } = {}): Promise<string> {
  const key = Symbol.for("pi-teams-hooks.test-build");
  const shared = globalThis as unknown as Record<symbol, Promise<string> | undefined>;
  if (opts.again) shared[key] = undefined;
  shared[key] ??= build(opts.lockDir ?? os.tmpdir());
  return shared[key];
}

async function sourceNames(): Promise<string[]> {
  const names = await readdir(SOURCE_DIR, { recursive: true });
  return names.filter((n) => n.endsWith(".ts") && !n.endsWith(".d.ts")).sort();
}

/** What else `npm run build` reads: its script and configs, the build steps, the files it copies. */
const BUILD_INPUTS = [
  "package.json",
  "tsconfig.build.json",
  "tsconfig.pi.json",
  "scripts/vendor-zod.mjs",
  "scripts/bundle-bin.mjs",
];

async function sourcesHash(): Promise<string> {
  const hash = createHash("sha256");
  const assets = (await readdir(SOURCE_DIR, { recursive: true, withFileTypes: true }))
    .filter((entry) => entry.isFile() && !entry.name.endsWith(".ts"))
    .map((entry) => path.relative(REPO_ROOT, path.join(entry.parentPath, entry.name)));
  const files = [
    ...(await sourceNames()).map((name) => path.relative(REPO_ROOT, path.join(SOURCE_DIR, name))),
    ...assets.sort(),
    ...BUILD_INPUTS,
  ];
  for (const name of files) {
    hash
      .update(`${name}\0`)
      .update(await readFile(path.join(REPO_ROOT, name)).catch(() => Buffer.from("(none)")))
      .update("\0");
  }
  return hash.digest("hex");
}

async function staleByMtime(): Promise<string[]> {
  const stale: string[] = [];
  for (const name of await sourceNames()) {
    const source = await stat(path.join(SOURCE_DIR, name));
    const built = path.join(REPO_ROOT, "dist", "teams-hooks", name.replace(/\.ts$/, ".js"));
    const output = await stat(built).catch(() => null);
    if (!output || output.mtimeMs < source.mtimeMs) stale.push(name);
  }
  return stale;
}

async function isCurrent(hash: string): Promise<boolean> {
  const stamp = await readFile(STAMP_FILE, "utf8").catch(() => null);
  if (stamp !== null) return stamp.trim() === hash;
  return (await staleByMtime()).length === 0;
}

/** Takes the build lock, waiting while another run (this checkout's) holds it. */
async function lock(file: string): Promise<void> {
  const deadline = performance.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      await (await open(file, fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_WRONLY)).close();
      return;
    } catch {
      const age = Date.now() - ((await stat(file).catch(() => null))?.mtimeMs ?? 0);
      if (age > STALE_LOCK_MS) await unlink(file).catch(() => undefined);
    }
    if (performance.now() > deadline) throw new Error(`the build lock ${file} was held for ${LOCK_WAIT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** `lockDir`: where the cross-process lock goes, the same for every run (the temp dir the run started with). */
async function build(lockDir: string): Promise<string> {
  const before = await sourcesHash();
  if (await isCurrent(before)) return before;
  const lockFile = path.join(lockDir, `pi-teams-hooks-build-${REPO_ROOT.replace(/[^A-Za-z0-9]/g, "_")}.lock`);
  await lock(lockFile);
  try {
    const hash = await sourcesHash(); // what this build compiles (another run may have built it meanwhile)
    const stamp = await readFile(STAMP_FILE, "utf8").catch(() => null);
    if (stamp?.trim() === hash) return hash;
    const result = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn("npm", ["run", "build"], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] });
      let output = "";
      child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
      child.on("close", (code) => resolve({ code, output }));
    });
    if (result.code !== 0) throw new Error(`npm run build failed:\n${result.output}`);
    await mkdir(path.dirname(STAMP_FILE), { recursive: true });
    await writeFile(STAMP_FILE, `${hash}\n`);
    return hash;
  } finally {
    await unlink(lockFile).catch(() => undefined);
  }
}
