// Hook discovery against real files in temp dirs: lookup order, exec bit, directories, symlinks,
// and hooks dirs that are missing, not directories, or not searchable.
import { execFile, execFileSync } from "node:child_process";
import { chmod, mkdir, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { findHook } from "../../extensions/teams-hooks/gates/discover.js";
import type { HookDiscovery } from "../../extensions/teams-hooks/gates/discover.js";
import { compileModules } from "../fixtures/workers/modules.js";
import { reachableTempDir } from "../helpers/reachable-tmp.js";
import { tempDirs } from "../helpers/temp-team.js";

const run = promisify(execFile);
const isRoot = process.getuid?.() === 0;

const tempDir = tempDirs("teams-hooks-discover-");
const reachableDir = tempDirs("teams-hooks-discover-", reachableTempDir);

/** Tiny hooks that print which kind ran, so a chosen command is also proven to start. */
const SOURCES: Record<string, string> = {
  "": "#!/bin/sh\necho bare\n",
  ".sh": "echo sh\n",
  ".js": "console.log('js')\n",
  ".mjs": "console.log('mjs')\n",
};

async function hooksDirWith(base: string, suffixes: string[]): Promise<string> {
  const dir = await tempDir();
  for (const suffix of suffixes) {
    await writeFile(path.join(dir, base + suffix), SOURCES[suffix] ?? "", { mode: suffix === "" ? 0o755 : 0o644 });
  }
  return dir;
}

function statuses(found: HookDiscovery): string[] {
  return found.candidates.map((c) => `${path.basename(c.path)}:${c.status}`);
}

describe("findHook", () => {
  it.each([
    { present: ["", ".sh", ".js", ".mjs"], wins: "", output: "bare" },
    { present: [".sh", ".js", ".mjs"], wins: ".sh", output: "sh" },
    { present: [".js", ".mjs"], wins: ".js", output: "js" },
    { present: [".mjs"], wins: ".mjs", output: "mjs" },
  ])("chooses $wins first when $present exist", async ({ present, wins, output }) => {
    const dir = await hooksDirWith("on_task_completed", present);
    const found = await findHook(dir, "task_completed");
    const file = path.join(dir, `on_task_completed${wins}`);

    const expected = {
      "": [file, []],
      ".sh": ["bash", [file]],
      ".js": [process.execPath, [file]],
      ".mjs": [process.execPath, [file]],
    }[wins];
    expect(found.hook).toEqual({ hookPath: file, command: expected?.[0], args: expected?.[1] });
    // Every name before the winner is reported absent; nothing after it is looked at.
    const order = ["", ".sh", ".js", ".mjs"];
    const before = order.slice(0, order.indexOf(wins)).map((s) => `on_task_completed${s}:absent`);
    expect(statuses(found)).toEqual([...before, `on_task_completed${wins}:chosen`]);
    expect(found.dirProblem).toBeUndefined();

    const hook = found.hook;
    if (!hook) throw new Error("no hook");
    expect(execFileSync(hook.command, hook.args, { encoding: "utf8" }).trim()).toBe(output);
  });

  it("finds nothing, quietly, when the dir has no file for the event", async () => {
    const dir = await hooksDirWith("on_task_completed", ["", ".sh"]);
    const found = await findHook(dir, "task_failed");
    expect(found.hook).toBeNull();
    expect(found.dirProblem).toBeUndefined();
    expect(found.candidates.map((c) => [path.basename(c.path), c.status, c.reason])).toEqual([
      ["on_task_failed", "absent", undefined],
      ["on_task_failed.sh", "absent", undefined],
      ["on_task_failed.js", "absent", undefined],
      ["on_task_failed.mjs", "absent", undefined],
      ["on_task_failed.ts", "absent", undefined],
    ]);
  });

  it("skips a bare file without an execute bit, says how to fix it, and takes the .sh next in line", async () => {
    const dir = await hooksDirWith("on_task_completed", [".sh"]);
    const bare = path.join(dir, "on_task_completed");
    await writeFile(bare, SOURCES[""] ?? "", { mode: 0o644 });

    const found = await findHook(dir, "task_completed");
    expect(found.hook?.hookPath).toBe(`${bare}.sh`);
    expect(found.candidates[0]).toEqual({ path: bare, status: "skipped", reason: `not executable (chmod +x ${bare})` });
    expect(found.candidates[1]?.status).toBe("chosen");
  });

  it("does not require an execute bit for .sh / .js / .mjs", async () => {
    const dir = await hooksDirWith("on_idle", [".js"]);
    const found = await findHook(dir, "idle");
    expect(found.hook?.args).toEqual([path.join(dir, "on_idle.js")]);
  });

  it("skips a directory named like the hook", async () => {
    const dir = await hooksDirWith("on_idle", [".sh"]);
    await mkdir(path.join(dir, "on_idle"));
    await mkdir(path.join(dir, "on_idle.js"));

    const found = await findHook(dir, "idle");
    expect(found.hook?.hookPath).toBe(path.join(dir, "on_idle.sh"));
    expect(found.candidates[0]).toEqual({
      path: path.join(dir, "on_idle"),
      status: "skipped",
      reason: "is a directory, not a file",
    });

    await rm(path.join(dir, "on_idle.sh"));
    const none = await findHook(dir, "idle");
    expect(none.hook).toBeNull();
    expect(statuses(none)).toEqual([
      "on_idle:skipped",
      "on_idle.sh:absent",
      "on_idle.js:skipped",
      "on_idle.mjs:absent",
      "on_idle.ts:absent",
    ]);
  });

  it("follows symlinks: a link to a regular file is a hook, and runs under the link's path", async () => {
    const dir = await tempDir();
    const store = await tempDir();
    await writeFile(path.join(store, "gate.sh"), "#!/bin/sh\necho linked\n", { mode: 0o755 });
    await symlink(path.join(store, "gate.sh"), path.join(dir, "on_task_failed"));

    const found = await findHook(dir, "task_failed");
    const file = path.join(dir, "on_task_failed");
    expect(found.hook).toEqual({ hookPath: file, command: file, args: [] });
    expect(execFileSync(file, { encoding: "utf8" }).trim()).toBe("linked");
  });

  it("skips a broken symlink and a symlink to a directory, with reasons", async () => {
    const dir = await tempDir();
    await symlink(path.join(dir, "gone.sh"), path.join(dir, "on_idle"));
    await symlink(os.tmpdir(), path.join(dir, "on_idle.sh"));
    await writeFile(path.join(dir, "on_idle.mjs"), "", "utf8");

    const found = await findHook(dir, "idle");
    expect(found.hook?.hookPath).toBe(path.join(dir, "on_idle.mjs"));
    expect(found.candidates.map((c) => c.reason)).toEqual([
      `broken symlink (to ${path.join(dir, "gone.sh")})`,
      "is a directory, not a file",
      undefined,
      undefined,
    ]);
  });

  it("skips a fifo: only regular files run", async () => {
    const dir = await hooksDirWith("on_idle", [".js"]);
    execFileSync("mkfifo", [path.join(dir, "on_idle.sh")]);
    const found = await findHook(dir, "idle");
    expect(found.candidates[1]).toMatchObject({ status: "skipped", reason: "not a regular file (fifo)" });
    expect(found.hook?.hookPath).toBe(path.join(dir, "on_idle.js"));
  });

  it("resolves a relative hooks dir to an absolute hook path", async () => {
    const dir = await hooksDirWith("on_idle", [".sh"]);
    const found = await findHook(path.relative(process.cwd(), dir), "idle");
    expect(found.hook?.hookPath).toBe(path.join(dir, "on_idle.sh"));
    expect(found.hook?.args).toEqual([path.join(dir, "on_idle.sh")]);
  });

  it("reports a missing hooks dir on every candidate, without throwing", async () => {
    const missing = path.join(await tempDir(), "_hooks");
    const found = await findHook(missing, "task_completed");
    expect(found.hook).toBeNull();
    expect(found.dirProblem).toBe("missing");
    expect(found.candidates).toHaveLength(5);
    for (const candidate of found.candidates) {
      expect(candidate).toMatchObject({ status: "absent", reason: `hooks dir missing: ${missing}` });
    }
  });

  it("reports a hooks dir that is a regular file, or lies under one (ENOTDIR)", async () => {
    const file = path.join(await tempDir(), "_hooks");
    await writeFile(file, "not a dir", "utf8");
    for (const dir of [file, path.join(file, "nested")]) {
      const found = await findHook(dir, "idle");
      expect(found.hook).toBeNull();
      expect(found.dirProblem).toBe("not_a_directory");
      expect(found.candidates[0]?.reason).toBe(`hooks dir is not a directory: ${dir}`);
    }
  });

  // As root, chmod 000 blocks nothing, so the same check then runs in a child with an unprivileged uid.
  it.skipIf(isRoot)("reports an unsearchable hooks dir (chmod 000) as unreadable", async () => {
    const dir = await hooksDirWith("on_idle", [".sh"]);
    await chmod(dir, 0o000);
    const found = await findHook(dir, "idle");
    expect(found.hook).toBeNull();
    expect(found.dirProblem).toBe("unreadable");
    expect(found.candidates[0]).toMatchObject({ status: "skipped", reason: `hooks dir unreadable (EACCES): ${dir}` });
  });

  it.skipIf(!isRoot)("reports an unsearchable hooks dir as unreadable (checked as uid 65534)", async () => {
    // Compiled outside the clone, zod included: uid 65534 may not be able to reach the clone at all.
    const modules = await compileModules(["gates/discover"], { forOtherUsers: true });
    tempDir.removeAfter(modules.dir);
    const outDir = modules.dir;
    const parent = await reachableDir();
    await chmod(parent, 0o755);
    const dir = path.join(parent, "_hooks");
    await mkdir(dir);
    await writeFile(path.join(dir, "on_idle.sh"), SOURCES[".sh"] ?? "", "utf8");
    await writeFile(path.join(dir, "on_idle"), SOURCES[""] ?? "", { mode: 0o755 });

    const discover = pathToFileURL(path.join(outDir, "gates/discover.js")).href;
    const script = `import { findHook } from ${JSON.stringify(discover)};
      process.stdout.write(JSON.stringify(await findHook(process.argv[1], "idle")));`;
    const asNobody = (): Promise<{ stdout: string }> =>
      run(process.execPath, ["--input-type=module", "-e", script, dir], { uid: 65534, gid: 65534, cwd: parent });

    await chmod(dir, 0o755); // control: the same child finds the hook when it may search the dir
    expect(JSON.parse((await asNobody()).stdout)).toMatchObject({ hook: { hookPath: path.join(dir, "on_idle") } });

    for (const mode of [0o000, 0o644]) {
      await chmod(dir, mode); // 0o644: listable but not searchable, so the entries cannot be stat'ed
      const found = JSON.parse((await asNobody()).stdout) as HookDiscovery;
      expect(found.hook).toBeNull();
      expect(found.dirProblem).toBe("unreadable");
      expect(found.candidates).toHaveLength(5);
      expect(found.candidates[0]).toMatchObject({ status: "skipped", reason: `hooks dir unreadable (EACCES): ${dir}` });
    }
  });
});
