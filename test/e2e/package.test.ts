/**
 * The package as npm would publish it: the file list of `npm pack --dry-run --json`, and those files
 * alone, copied where no dependency is installed, used as a user would (the bin, the library's types,
 * pi loading the extension).
 * No network, and no cache of npm's: the install through npm is given the dependencies as tarballs packed from
 * node_modules (the versions the lock file pins), beside the package's own.
 * `--ignore-scripts` because `prepack` rebuilds dist/ from scratch, under the tests that run it.
 */
import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, ensureBuilt } from "../helpers/leader-rig.js";

const execFileAsync = promisify(execFile);

interface PackedFile {
  path: string;
  size: number;
}
interface PackResult {
  name: string;
  version: string;
  size: number;
  unpackedSize: number;
  files: PackedFile[];
}
interface Manifest {
  version: string;
  bin: Record<string, string>;
  exports: Record<string, string | { types: string; default: string }>;
  pi: { extensions: string[] };
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  os: string[];
  repository: { url: string };
  bugs: { url: string };
  homepage: string;
}

const manifest = JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as Manifest;
const tmp = mkdtempSync(path.join(os.tmpdir(), "package-test-"));
/** The packed files alone, as `node_modules/pi-teams-hooks` of a project with nothing else installed. */
const installed = path.join(tmp, "project", "node_modules", "pi-teams-hooks");
let stdout = "";
let packed: PackResult;
let names: string[];

beforeAll(async () => {
  await ensureBuilt();
  ({ stdout } = await execFileAsync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
    cwd: REPO_ROOT,
    maxBuffer: 16 * 1024 * 1024,
  }));
  packed = (JSON.parse(stdout) as PackResult[])[0] as PackResult;
  names = packed.files.map((f) => f.path);
  for (const name of names) {
    mkdirSync(path.dirname(path.join(installed, name)), { recursive: true });
    copyFileSync(path.join(REPO_ROOT, name), path.join(installed, name));
  }
  writeFileSync(
    path.join(tmp, "project", "package.json"),
    '{ "name": "user-project", "version": "1.0.0", "private": true, "type": "module" }\n',
  );
}, 240_000);
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const strip = (p: string): string => p.replace(/^\.\//, "");

describe("npm pack", () => {
  it("prints only JSON on stdout", () => {
    expect(stdout.trimStart().startsWith("[")).toBe(true);
    expect(packed).toMatchObject({ name: "pi-teams-hooks", version: manifest.version });
  });

  it("ships the build once: no TypeScript sources, no source maps, no performance notes", () => {
    expect(names.filter((n) => n.endsWith(".ts") && !n.endsWith(".d.ts"))).toEqual([]);
    expect(names.filter((n) => n.startsWith("extensions/") || n.endsWith(".map"))).toEqual([]);
    expect(names).not.toContain("docs/performance.md");
    expect(names).toEqual(
      expect.arrayContaining([
        "LICENSE",
        "README.md",
        "package.json",
        "docs/hook-contract.md",
        "hooks/on_task_completed.sh",
        "examples/demo-team/config.json",
      ]),
    );
  });

  it("holds every file the manifest points at: the bin, each export and its types, pi's extension entry", () => {
    const pointed = [
      ...Object.values(manifest.bin),
      ...Object.values(manifest.exports).flatMap((e) => (typeof e === "string" ? [e] : [e.types, e.default])),
      ...manifest.pi.extensions,
    ].map(strip);
    expect(pointed.length).toBeGreaterThanOrEqual(6);
    expect(pointed.filter((p) => !names.includes(p))).toEqual([]);
  });

  it("runs no script when it is installed, and says where it comes from and where it runs", () => {
    expect(
      Object.keys(manifest.scripts).filter((s) => ["preinstall", "install", "postinstall", "prepare"].includes(s)),
    ).toEqual([]);
    expect(manifest.scripts.prepack).toContain("npm run build");
    expect(manifest.os).toEqual(["linux"]);
    expect(manifest.repository.url).toMatch(/^git\+https:\/\//);
    expect(manifest.bugs.url).toMatch(/^https:\/\//);
    expect(manifest.homepage).toMatch(/^https:\/\//);
  });
});

describe("the packed files, with no dependency installed", () => {
  const bin = (): string => path.join(installed, strip(manifest.bin["pi-teams-hooks"] ?? ""));

  it("the bin runs: --version, and schema (zod comes bundled)", async () => {
    const version = await execFileAsync(process.execPath, [bin(), "--version"], { cwd: tmp });
    expect(version.stdout).toBe(`${manifest.version}\n`);
    const schema = await execFileAsync(process.execPath, [bin(), "schema", "task"], { cwd: tmp });
    expect(schema.stdout).toBe(readFileSync(path.join(REPO_ROOT, "docs", "schema", "task.schema.json"), "utf8"));
  });

  it("the bin finds the package's own files from its chunks: init copies the example gates of hooks/", async () => {
    const gates = path.join(tmp, "gates");
    await execFileAsync(process.execPath, [bin(), "init", "--hooks-dir", gates], { cwd: tmp });
    const shipped = names.filter((n) => /^hooks\/on_[a-z_]+\.(sh|mjs)$/.test(n));
    expect(shipped.length).toBeGreaterThanOrEqual(2);
    for (const name of shipped) {
      expect(readFileSync(path.join(gates, path.basename(name)), "utf8")).toBe(
        readFileSync(path.join(installed, name), "utf8"),
      );
    }
  });

  it("pi loads the packed extension entry, which takes the leader from the packed build (skipped without pi)", async (ctx) => {
    const loader = path.join(
      REPO_ROOT,
      "node_modules",
      "@mariozechner",
      "pi-coding-agent",
      "dist",
      "core",
      "extensions",
      "loader.js",
    );
    if (!existsSync(loader)) ctx.skip();
    const entry = path.join(installed, strip(manifest.pi.extensions[0] ?? ""));
    const piLoad = path.join(installed, "dist", "teams-hooks", "pi", "load.js");
    const script = [
      `const { loadExtensions } = await import(${JSON.stringify(pathToFileURL(loader).href)});`,
      `const loaded = await loadExtensions([${JSON.stringify(entry)}], ${JSON.stringify(tmp)});`,
      `const { loadGatesCode } = await import(${JSON.stringify(pathToFileURL(piLoad).href)});`,
      "const from = (await loadGatesCode()).from;",
      "console.log(JSON.stringify({ errors: loaded.errors, extensions: loaded.extensions.length, from }));",
    ].join("\n");
    const { stdout: out } = await execFileAsync(process.execPath, ["--input-type=module", "-e", script], {
      cwd: tmp,
    });
    expect(JSON.parse(out.trim().split("\n").pop() ?? "")).toEqual({ errors: [], extensions: 1, from: "build" });
  });

  it("the declarations the exports name import only files of the package and Node's modules", () => {
    const seen = new Set<string>();
    const outside: string[] = [];
    const pending = Object.values(manifest.exports).flatMap((e) => (typeof e === "string" ? [] : [strip(e.types)]));
    for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
      if (seen.has(name)) continue;
      seen.add(name);
      const text = readFileSync(path.join(installed, name), "utf8");
      for (const [, spec = ""] of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*)"([^"]+)"/g)) {
        if (spec.startsWith("node:")) continue;
        const target = path.posix.join(path.posix.dirname(name), spec.replace(/\.js$/, ".d.ts"));
        if (!spec.startsWith(".") || !names.includes(target)) outside.push(`${name}: ${spec}`);
        else pending.push(target);
      }
    }
    expect(seen.size).toBeGreaterThan(20);
    expect(outside).toEqual([]);
  });

  it("a TypeScript user type-checks against the library and the gate helper without zod installed", async () => {
    const project = path.join(tmp, "project");
    writeFileSync(
      path.join(project, "use.ts"),
      [
        'import { TaskSchema, type Task, type RunResult, HOOK_CONTRACT_VERSION } from "pi-teams-hooks";',
        'import { runGate } from "pi-teams-hooks/hook";',
        'const task: Task = TaskSchema.parse({ id: "1", subject: "s", status: "pending" });',
        "const id: string = task.id;",
        "// @ts-expect-error a task's id is a string",
        "const wrong: number = task.id;",
        'const outcome: RunResult["outcome"] = "passed";',
        "const version: 1 = HOOK_CONTRACT_VERSION;",
        "export { id, wrong, outcome, version, runGate };",
        "",
      ].join("\n"),
    );
    const config = {
      compilerOptions: {
        strict: true,
        module: "NodeNext",
        moduleResolution: "NodeNext",
        target: "ES2022",
        noEmit: true,
        skipLibCheck: false,
        types: ["node"],
        typeRoots: [path.join(REPO_ROOT, "node_modules", "@types")],
      },
      files: ["use.ts"],
    };
    writeFileSync(path.join(project, "tsconfig.json"), JSON.stringify(config));
    const tsc = path.join(REPO_ROOT, "node_modules", "typescript", "bin", "tsc");
    const result = await execFileAsync(process.execPath, [tsc, "-p", project], { cwd: project }).catch(
      (error: { stdout?: string }) => ({ stdout: error.stdout ?? String(error) }),
    );
    expect(result.stdout).toBe("");
  }, 120_000);

  it("npm installs the tarball without running a script and links the bin (offline, its dependencies packed from node_modules)", async () => {
    const dest = path.join(tmp, "tarball");
    mkdirSync(dest);
    const { stdout: out } = await execFileAsync(
      "npm",
      ["pack", "--json", "--ignore-scripts", "--pack-destination", dest],
      { cwd: REPO_ROOT, maxBuffer: 16 * 1024 * 1024 },
    );
    const tarball = path.join(dest, (JSON.parse(out) as Array<{ filename: string }>)[0]?.filename ?? "");
    // The one dependency and its own, packed from what npm ci installed: an install needs neither registry nor cache.
    for (const dependency of ["chokidar", "readdirp"]) {
      await execFileAsync(
        "npm",
        ["pack", "--ignore-scripts", "--pack-destination", dest, `./node_modules/${dependency}`],
        {
          cwd: REPO_ROOT,
        },
      );
    }
    const tarballs = [
      tarball,
      ...["chokidar", "readdirp"].map((name) => {
        const version = (
          JSON.parse(readFileSync(path.join(REPO_ROOT, "node_modules", name, "package.json"), "utf8")) as {
            version: string;
          }
        ).version;
        return path.join(dest, `${name}-${version}.tgz`);
      }),
    ];
    const user = path.join(tmp, "npm-user");
    mkdirSync(user);
    writeFileSync(path.join(user, "package.json"), '{ "name": "npm-user", "version": "1.0.0", "private": true }\n');
    const install = await execFileAsync("npm", ["install", "--offline", "--no-audit", "--no-fund", ...tarballs], {
      cwd: user,
    }).then(
      (r) => ({ ok: true, text: r.stdout + r.stderr }),
      (error: { stdout?: string; stderr?: string }) => ({
        ok: false,
        text: `${error.stdout ?? ""}${error.stderr ?? ""}`,
      }),
    );
    expect(install).toMatchObject({ ok: true });
    expect(install.text).not.toMatch(/install-scripts|prepare/);
    const { stdout: version } = await execFileAsync(path.join(user, "node_modules", ".bin", "pi-teams-hooks"), [
      "--version",
    ]);
    expect(version).toBe(`${manifest.version}\n`);
  }, 120_000);
});
