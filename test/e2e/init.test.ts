/**
 * `pi-teams-hooks init` through the built bin: where the gates go (flag, team dir, PI_TEAMS_ROOT_DIR,
 * PI_TEAMS_HOOKS_DIR), execute bits, and never overwriting without --force.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";

const execFileAsync = promisify(execFile);
const BIN = path.resolve("dist/teams-hooks/bin.js");
const GATES = ["on_idle.sh", "on_task_completed.sh", "on_task_failed.mjs"];

async function cli(args: string[], env: Record<string, string | undefined> = {}, cwd?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const base = { ...process.env };
  delete base.PI_TEAMS_ROOT_DIR;
  delete base.PI_TEAMS_HOOKS_DIR;
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [BIN, ...args], { env: { ...base, ...env }, cwd });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof e.code !== "number") throw error;
    return { code: e.code, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});
async function tempRoot(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "teams-hooks-init-"));
  dirs.push(dir);
  return dir;
}

function listing(dir: string): Array<[string, string]> {
  return fs.readdirSync(dir).sort().map((name) => [name, (fs.statSync(path.join(dir, name)).mode & 0o777).toString(8)]);
}

describe("pi-teams-hooks init", () => {
  it("copies the example gates with execute bits into --hooks-dir, and prints what it wrote", async () => {
    const root = await tempRoot();
    const dir = path.join(root, "my hooks");
    const out = await cli(["init", "--hooks-dir", dir]);
    expect(out.code).toBe(0);
    expect(listing(dir)).toEqual(GATES.map((g) => [g, "755"]));
    for (const gate of GATES) {
      expect(fs.readFileSync(path.join(dir, gate), "utf8")).toBe(fs.readFileSync(path.resolve("hooks", gate), "utf8"));
      expect(out.stdout).toContain(`  wrote ${gate} (mode 755)\n`);
    }
    expect(out.stdout.split("\n")[0]).toBe(`hooks dir ${dir} (--hooks-dir)`);
  });

  it("defaults to <teams root>/_hooks: the parent of --team-dir, or PI_TEAMS_ROOT_DIR, with PI_TEAMS_HOOKS_DIR under it", async () => {
    const root = await tempRoot();
    const team = path.join(root, "alpha");
    expect((await cli(["init", "--team-dir", team])).stdout).toContain(`hooks dir ${path.join(root, "_hooks")} (_hooks under the parent of --team-dir)`);
    expect(listing(path.join(root, "_hooks")).map(([name]) => name)).toEqual(GATES);

    const other = await tempRoot();
    const fromRoot = await cli(["init"], { PI_TEAMS_ROOT_DIR: other });
    expect(fromRoot.stdout).toContain(`hooks dir ${path.join(other, "_hooks")} (_hooks under PI_TEAMS_ROOT_DIR)`);
    const relative = await cli(["init"], { PI_TEAMS_ROOT_DIR: other, PI_TEAMS_HOOKS_DIR: "gates" });
    expect(relative.stdout).toContain(`hooks dir ${path.join(other, "gates")} (PI_TEAMS_HOOKS_DIR under PI_TEAMS_ROOT_DIR)`);
    const absolute = path.join(other, "abs");
    expect((await cli(["init"], { PI_TEAMS_HOOKS_DIR: absolute })).stdout).toContain(`hooks dir ${absolute} (PI_TEAMS_HOOKS_DIR)`);
  });

  it("says what is missing when it cannot know the teams root, and writes nothing", async () => {
    const cwd = await tempRoot();
    const out = await cli(["init"], {}, cwd);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain("where should the gates go? Give --hooks-dir DIR, or --team-dir DIR");
    expect(out.stderr).toContain("PI_TEAMS_ROOT_DIR");
    expect(fs.readdirSync(cwd)).toEqual([]);
  });

  it("refuses to overwrite without --force, naming the files and writing none; --force replaces them", async () => {
    const dir = path.join(await tempRoot(), "_hooks");
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, "on_task_completed.sh"), "# mine\n");
    const refused = await cli(["init", "--hooks-dir", dir]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `pi-teams-hooks init: not overwriting 1 existing file(s) (nothing written; --force replaces them):\n  ${path.join(dir, "on_task_completed.sh")}\n`,
    );
    expect(fs.readdirSync(dir)).toEqual(["on_task_completed.sh"]);
    expect(fs.readFileSync(path.join(dir, "on_task_completed.sh"), "utf8")).toBe("# mine\n");

    const forced = await cli(["init", "--hooks-dir", dir, "--force"]);
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain("  replaced on_task_completed.sh (mode 755)\n");
    expect(listing(dir)).toEqual(GATES.map((g) => [g, "755"]));
  });

  it("warns when a file earlier in the lookup order would run instead of a copied gate", async () => {
    const dir = path.join(await tempRoot(), "_hooks");
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, "on_idle"), "#!/bin/sh\n", { mode: 0o755 });
    const out = await cli(["init", "--hooks-dir", dir]);
    expect(out.code).toBe(0);
    expect(out.stdout).toContain("note: on_idle comes before on_idle.sh in the lookup order, so the on_idle example will not run");
  });

  it("rejects arguments it does not take", async () => {
    expect((await cli(["init", "extra"])).code).toBe(2);
    expect((await cli(["init", "--hooks-dir", ""])).stderr).toContain("--hooks-dir must not be empty");
  });
});
