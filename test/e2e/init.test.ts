/**
 * `pi-teams-hooks init` through the built bin: where the gates go (flag, team dir, PI_TEAMS_ROOT_DIR,
 * PI_TEAMS_HOOKS_DIR), execute bits, and never overwriting without --force; with --from-claude, the
 * wrapper gates written from a Claude Code settings file, and what is refused.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { tempDirs } from "../helpers/temp-team.js";

const execFileAsync = promisify(execFile);
const BIN = path.resolve("dist/teams-hooks/bin.js");
const GATES = ["on_idle.sh", "on_task_completed.sh", "on_task_failed.mjs"];

async function cli(
  args: string[],
  env: Record<string, string | undefined> = {},
  cwd?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
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

const tempRoot = tempDirs("teams-hooks-init-");

function listing(dir: string): Array<[string, string]> {
  return fs
    .readdirSync(dir)
    .sort()
    .map((name) => [name, (fs.statSync(path.join(dir, name)).mode & 0o777).toString(8)]);
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

  it("the example gate outside a project: init says what it needs; run, watch, doctor warn; it says why", async () => {
    const root = await tempRoot();
    const team = path.join(root, "alpha");
    const now = new Date().toISOString();
    const task = {
      id: "1",
      subject: "Parse",
      description: "d",
      owner: "ada",
      status: "completed",
      blocks: [],
      blockedBy: [],
      createdAt: now,
      updatedAt: now,
    };
    fs.mkdirSync(path.join(team, "tasks", "alpha"), { recursive: true });
    fs.writeFileSync(path.join(team, "tasks", "alpha", "1.json"), `${JSON.stringify(task)}\n`);
    const init = await cli(["init", "--team-dir", team]);
    expect(init.stdout).toContain(
      "default: npm test --silent, which needs a package.json)\nin the folder the leader runs in (or --cwd)",
    );
    const gate = path.join(root, "_hooks", "on_task_completed.sh");
    const warning = `warning: ${gate} runs \`npm test --silent\` in ${root}, which has no package.json (nor a`;
    const env = { PI_TEAMS_GATE_CMD: undefined };

    const run = await cli(["run", "task_completed", "--team-dir", team, "--task", "1"], env, root);
    expect(run.stderr).toContain(warning);
    expect(run.stdout).toContain(`exit code 1 • gate not set up: no package.json in ${root} or above for \`npm test`);
    expect(run.stdout).not.toContain("check exited");
    const watch = await cli(["watch", "--team-dir", team, "--once"], env, root);
    expect(watch.stderr).toContain(warning);
    expect((await cli(["doctor", "--team-dir", team], env, root)).stdout).toContain(
      `warn ${gate} runs \`npm test --silent\``,
    );

    // In a project (a package.json in the working directory), or with a command of its own, nothing to say.
    // The project's own folder, not a folder below it: the test's temp dirs lie under /dev/shm or /tmp,
    // which the sandboxed gate sees as a private tmpfs, so a package.json above its working directory
    // would be hidden from it here (not so for a project outside /tmp and /dev/shm).
    fs.writeFileSync(path.join(root, "package.json"), JSON.stringify({ scripts: { test: "exit 0" } }));
    const inProject = await cli(["run", "task_completed", "--team-dir", team, "--task", "1"], env, root);
    expect(inProject.stderr).not.toContain("package.json");
    expect(inProject.stdout).toContain("task_completed #1 on_task_completed.sh passed");
    fs.rmSync(path.join(root, "package.json"));
    const ownCommand = await cli(
      ["run", "task_completed", "--team-dir", team, "--task", "1"],
      { PI_TEAMS_GATE_CMD: "true" },
      root,
    );
    expect(ownCommand.stderr).not.toContain("package.json");
    expect(ownCommand.code).toBe(0);
  });

  it("in a fresh npm project (npm init -y), init and doctor say the default gate would fail every task, and the fix", async () => {
    const root = await tempRoot();
    const team = path.join(root, "alpha");
    fs.mkdirSync(team);
    const project = path.join(root, "project");
    fs.mkdirSync(project);
    await execFileAsync("npm", ["init", "-y"], { cwd: project });
    const manifest = path.join(project, "package.json");
    expect(JSON.parse(fs.readFileSync(manifest, "utf8")).scripts.test).toMatch(/no test specified/);
    const env = { PI_TEAMS_GATE_CMD: undefined };
    const placeholder = `${manifest} has npm's placeholder test script (echo "Error: no test specified" && exit 1): the default gate would fail every task until the project has tests; give ${manifest} a test script that runs the project's tests (e.g. "test": "node --test"), or set PI_TEAMS_GATE_CMD to the check to run`;

    const init = await cli(["init", "--team-dir", team], env, project);
    expect(init.code).toBe(0);
    expect(init.stdout).toContain(`  note: on_task_completed.sh runs npm test here: ${placeholder}\n`);
    const gate = path.join(root, "_hooks", "on_task_completed.sh");
    const doctor = await cli(["doctor", "--team-dir", team], env, project);
    expect(doctor.stdout).toContain(`warn ${gate} runs \`npm test --silent\` in ${project}: ${placeholder}`);

    // No test script at all: the same, said so.
    fs.writeFileSync(manifest, JSON.stringify({ name: "project", version: "1.0.0", scripts: {} }));
    const bare = await cli(["doctor", "--team-dir", team], env, project);
    expect(bare.stdout).toContain(`${manifest} has no test script (npm test: Missing script: "test")`);
    // Real tests, or a command of its own: nothing to say.
    fs.writeFileSync(manifest, JSON.stringify({ name: "project", version: "1.0.0", scripts: { test: "node --test" } }));
    expect((await cli(["init", "--team-dir", team, "--force"], env, project)).stdout).not.toContain("note:");
    expect((await cli(["doctor", "--team-dir", team], env, project)).stdout).not.toContain("npm test");
    fs.writeFileSync(manifest, JSON.stringify({ scripts: { test: 'echo "Error: no test specified" && exit 1' } }));
    const own = await cli(["doctor", "--team-dir", team], { PI_TEAMS_GATE_CMD: "make check" }, project);
    expect(own.stdout).not.toContain("placeholder");
  });

  it("defaults to <teams root>/_hooks: the parent of --team-dir, or PI_TEAMS_ROOT_DIR, with PI_TEAMS_HOOKS_DIR under it", async () => {
    const root = await tempRoot();
    const team = path.join(root, "alpha");
    fs.mkdirSync(team);
    expect((await cli(["init", "--team-dir", team])).stdout).toContain(
      `hooks dir ${path.join(root, "_hooks")} (_hooks under the parent of --team-dir)`,
    );
    expect(listing(path.join(root, "_hooks")).map(([name]) => name)).toEqual(GATES);

    const other = await tempRoot();
    const fromRoot = await cli(["init"], { PI_TEAMS_ROOT_DIR: other });
    expect(fromRoot.stdout).toContain(`hooks dir ${path.join(other, "_hooks")} (_hooks under PI_TEAMS_ROOT_DIR)`);
    const relative = await cli(["init"], { PI_TEAMS_ROOT_DIR: other, PI_TEAMS_HOOKS_DIR: "gates" });
    expect(relative.stdout).toContain(
      `hooks dir ${path.join(other, "gates")} (PI_TEAMS_HOOKS_DIR under PI_TEAMS_ROOT_DIR)`,
    );
    const absolute = path.join(other, "abs");
    expect((await cli(["init"], { PI_TEAMS_HOOKS_DIR: absolute })).stdout).toContain(
      `hooks dir ${absolute} (PI_TEAMS_HOOKS_DIR)`,
    );
  });

  it("--team ID: the team under PI_TEAMS_ROOT_DIR, whose global hooks dir gets the gates; the next steps name it by --team", async () => {
    const root = await tempRoot();
    fs.mkdirSync(path.join(root, "alpha"));
    const out = await cli(["init", "--team", "alpha"], { PI_TEAMS_ROOT_DIR: root });
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout.split("\n")[0]).toBe(`hooks dir ${path.join(root, "_hooks")} (_hooks under PI_TEAMS_ROOT_DIR)`);
    expect(listing(path.join(root, "_hooks"))).toEqual(GATES.map((g) => [g, "755"]));
    expect(out.stdout).toContain("Check:  pi-teams-hooks doctor --team alpha\n");
    expect(out.stdout).toContain("Try:    pi-teams-hooks run task_completed --team alpha --task <id>\n");
    // The hooks dir it names is the one the team's commands use.
    const doctor = await cli(["doctor", "--team", "alpha", "--json"], { PI_TEAMS_ROOT_DIR: root });
    expect(JSON.parse(doctor.stdout)).toMatchObject({ hooksDir: { dir: path.join(root, "_hooks") } });

    const both = await cli(["init", "--team", "alpha", "--team-dir", path.join(root, "alpha")], {
      PI_TEAMS_ROOT_DIR: root,
    });
    expect(both).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("--team-dir and --team: give one, not both"),
    });
    const noRoot = await cli(["init", "--team", "alpha"]);
    expect(noRoot).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("--team alpha: PI_TEAMS_ROOT_DIR is not set"),
    });
    const bad = await cli(["init", "--team", "a/b"], { PI_TEAMS_ROOT_DIR: root });
    expect(bad).toMatchObject({ code: 2, stderr: expect.stringContaining('--team "a/b" is not a team id') });
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
    expect(out.stdout).toContain(
      "note: on_idle comes before on_idle.sh in the lookup order, so the on_idle example will not run",
    );
  });

  it("rejects arguments it does not take", async () => {
    expect((await cli(["init", "extra"])).code).toBe(2);
    expect((await cli(["init", "--hooks-dir", ""])).stderr).toContain("--hooks-dir must not be empty");
  });
});

/** Every file under `dir`, relative, with its mode: what a run wrote, and nothing else. */
function tree(dir: string): Array<[string, string]> {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true }) as string[])
    .map((name) => name.split(path.sep).join("/"))
    .filter((name) => fs.statSync(path.join(dir, name)).isFile())
    .sort()
    .map((name) => [name, (fs.statSync(path.join(dir, name)).mode & 0o777).toString(8)]);
}

const LINT = '"$CLAUDE_PROJECT_DIR"/scripts/lint.sh --max-warnings 0';
const IDLE = "git diff --quiet || { echo 'commit your work first' >&2; exit 2; }\necho idle-ok";
const SETTINGS = {
  permissions: { allow: ["Bash(npm test:*)"] },
  hooks: {
    PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "./guard.sh" }] }],
    TaskCompleted: [
      {
        hooks: [
          { type: "command", command: "npm test --silent" },
          { type: "http", url: "https://ci.example.com/hook" },
        ],
      },
      { matcher: "ignored-here", hooks: [{ type: "command", command: LINT, timeout: 120 }] },
    ],
    TeammateIdle: [
      {
        hooks: [
          { type: "prompt", prompt: "Is the teammate done?" },
          { type: "command", command: IDLE },
        ],
      },
    ],
  },
};

async function claudeProject(settings: unknown = SETTINGS): Promise<{ root: string; settings: string; hooks: string }> {
  const root = await tempRoot();
  fs.mkdirSync(path.join(root, "proj", ".claude"), { recursive: true });
  const file = path.join(root, "proj", ".claude", "settings.json");
  fs.writeFileSync(file, typeof settings === "string" ? settings : JSON.stringify(settings, null, 2));
  return { root, settings: file, hooks: path.join(root, "_hooks") };
}

const WRAPPERS = ["on_idle.d/claude-1.sh", "on_task_completed.d/claude-1.sh", "on_task_completed.d/claude-2.sh"];

describe("pi-teams-hooks init --from-claude", () => {
  it("writes one wrapper per command hook, running it unchanged, and names each one written, skipped or not mapped", async () => {
    const p = await claudeProject();
    // A relative path, from the project: the wrappers name the settings file by its absolute path.
    const out = await cli(
      ["init", "--hooks-dir", p.hooks, "--from-claude", ".claude/settings.json"],
      {},
      path.join(p.root, "proj"),
    );
    expect(out.stderr).toBe("");
    expect(out.code).toBe(0);
    expect(tree(p.hooks)).toEqual(WRAPPERS.map((w) => [w, "755"]));
    const from = `from ${p.settings}, run unchanged (written by pi-teams-hooks init --from-claude).`;
    expect(fs.readFileSync(path.join(p.hooks, "on_task_completed.d/claude-1.sh"), "utf8")).toBe(
      `#!/usr/bin/env bash\n# pi-teams-hooks: format=claude\n# Claude Code's TaskCompleted hook 1 ${from}\nnpm test --silent\n`,
    );
    expect(fs.readFileSync(path.join(p.hooks, "on_task_completed.d/claude-2.sh"), "utf8")).toBe(
      `#!/usr/bin/env bash\n# pi-teams-hooks: format=claude timeout=120s\n# Claude Code's TaskCompleted hook 2 ${from}\n${LINT}\n`,
    );
    expect(fs.readFileSync(path.join(p.hooks, "on_idle.d/claude-1.sh"), "utf8")).toBe(
      `#!/usr/bin/env bash\n# pi-teams-hooks: format=claude\n# Claude Code's TeammateIdle hook 1 ${from}\n${IDLE}\n`,
    );

    expect(out.stdout).toContain(`hooks dir ${p.hooks} (--hooks-dir)\nfrom the Claude Code settings ${p.settings}\n`);
    expect(out.stdout).toContain(
      "  wrote on_task_completed.d/claude-1.sh (mode 755): TaskCompleted hook 1: npm test --silent\n",
    );
    expect(out.stdout).toContain(
      `  wrote on_task_completed.d/claude-2.sh (mode 755): TaskCompleted hook 2, timeout 120s: ${LINT}\n`,
    );
    expect(out.stdout).toContain(
      "  wrote on_idle.d/claude-1.sh (mode 755): TeammateIdle hook 1: git diff --quiet || { echo 'commit your work first' >&2; exit 2; } (+1 more line(s))\n",
    );
    expect(out.stdout).toContain(
      '  skipped hooks.TaskCompleted[0].hooks[1]: type "http" (only command hooks can run here)\n',
    );
    expect(out.stdout).toContain(
      '  skipped hooks.TeammateIdle[0].hooks[0]: type "prompt" (only command hooks can run here)\n',
    );
    expect(out.stdout).toContain(
      '  note: hooks.TaskCompleted[1].matcher "ignored-here" is ignored: TaskCompleted takes no matcher',
    );
    expect(out.stdout).toContain("  not mapped: PreToolUse (only TaskCompleted and TeammateIdle become gates");
    expect(out.stdout).toContain(`Check:  pi-teams-hooks doctor --team-dir <team dir> --hooks-dir ${p.hooks}\n`);
    expect(out.stdout).not.toContain("on_task_completed.sh"); // the examples are not copied
  });

  it("the wrapper runs the command as bash runs it: quoting, pipes, exit code and stderr kept", async () => {
    const cmd = `printf '%s|' "$CLAUDE_PROJECT_DIR" 'a b' | tr '|' '\\n' >&2; exit 2`;
    const p = await claudeProject({ hooks: { TaskCompleted: [{ hooks: [{ type: "command", command: cmd }] }] } });
    expect((await cli(["init", "--hooks-dir", p.hooks, "--from-claude", p.settings])).code).toBe(0);
    const run = await execFileAsync("bash", [path.join(p.hooks, "on_task_completed.d/claude-1.sh")], {
      env: { ...process.env, CLAUDE_PROJECT_DIR: "/x y" },
    }).catch((e: unknown) => e);
    const failed = run as { code?: number; stderr?: string };
    expect(failed.code).toBe(2);
    expect(failed.stderr).toBe("/x y\na b\n");
  });

  it("refuses to overwrite an existing wrapper without --force, writing none; --force replaces them all", async () => {
    const p = await claudeProject();
    fs.mkdirSync(path.join(p.hooks, "on_idle.d"), { recursive: true });
    fs.writeFileSync(path.join(p.hooks, "on_idle.d/claude-1.sh"), "# mine\n");
    const refused = await cli(["init", "--hooks-dir", p.hooks, "--from-claude", p.settings]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `pi-teams-hooks init: not overwriting 1 existing file(s) (nothing written; --force replaces them):\n  ${path.join(p.hooks, "on_idle.d/claude-1.sh")}\n`,
    );
    expect(tree(p.hooks)).toEqual([["on_idle.d/claude-1.sh", "644"]]);
    expect(fs.readFileSync(path.join(p.hooks, "on_idle.d/claude-1.sh"), "utf8")).toBe("# mine\n");

    const forced = await cli(["init", "--hooks-dir", p.hooks, "--from-claude", p.settings, "--force"]);
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain("  replaced on_idle.d/claude-1.sh (mode 755): TeammateIdle hook 1:");
    expect(forced.stdout).toContain("  wrote on_task_completed.d/claude-1.sh (mode 755)");
    expect(tree(p.hooks)).toEqual(WRAPPERS.map((w) => [w, "755"]));
    expect(fs.readFileSync(path.join(p.hooks, "on_idle.d/claude-1.sh"), "utf8")).toContain(`\n${IDLE}\n`);
  });

  it("names a wrapper left from an earlier run that this run did not write (it still runs)", async () => {
    const p = await claudeProject();
    expect((await cli(["init", "--hooks-dir", p.hooks, "--from-claude", p.settings])).code).toBe(0);
    fs.writeFileSync(
      p.settings,
      JSON.stringify({ hooks: { TaskCompleted: [{ hooks: [{ type: "command", command: "make check" }] }] } }),
    );
    const again = await cli(["init", "--hooks-dir", p.hooks, "--from-claude", p.settings, "--force"]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(
      "  note: on_idle.d/claude-1.sh was not written now (an earlier run's?) and still runs",
    );
    expect(again.stdout).toContain("  note: on_task_completed.d/claude-2.sh was not written now");
  });

  it.each([
    [
      "a file that is not there",
      null,
      (f: string) => `${f}: file not found (the Claude Code settings file; nothing written)`,
    ],
    ["a file that is not JSON", '{"hooks": {', (f: string) => `${f}: invalid JSON (`],
    [
      "hooks that is an array",
      { hooks: [] },
      (f: string) => `${f}: hooks: expected an object (event name → matcher groups), got an array`,
    ],
    [
      "an event that is not an array",
      { hooks: { TeammateIdle: { hooks: [] } } },
      (f: string) => `${f}: hooks.TeammateIdle: expected an array of matcher groups, got an object`,
    ],
    [
      "a group's hooks that is not an array",
      { hooks: { TaskCompleted: [{ hooks: "npm test" }] } },
      (f: string) => `${f}: hooks.TaskCompleted[0].hooks: expected an array of hooks, got "npm test"`,
    ],
    [
      "a command that is not a string",
      {
        hooks: {
          TaskCompleted: [
            {
              hooks: [
                { type: "command", command: "ok" },
                { type: "command", command: 42 },
              ],
            },
          ],
        },
      },
      (f: string) => `${f}: hooks.TaskCompleted[0].hooks[1].command: expected a string, got 42`,
    ],
  ])("%s: exit 2, the file and the JSON path named, nothing written", async (_name, settings, message) => {
    const p = await claudeProject(settings ?? "");
    if (settings === null) fs.rmSync(p.settings);
    const out = await cli(["init", "--hooks-dir", p.hooks, "--from-claude", p.settings]);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain(message(p.settings));
    expect(out.stdout).toBe("");
    expect(fs.existsSync(p.hooks)).toBe(false);
  });

  it("lists every problem at once, each with its path", async () => {
    const p = await claudeProject({
      hooks: {
        TaskCompleted: [{ hooks: [{ type: "command" }] }],
        TeammateIdle: [{ hooks: [{ type: "command", command: "x", timeout: "30" }] }],
      },
    });
    const out = await cli(["init", "--hooks-dir", p.hooks, "--from-claude", p.settings]);
    expect(out.code).toBe(2);
    expect(out.stderr).toBe(
      `pi-teams-hooks init: cannot use the Claude Code settings (nothing written):\n  ${p.settings}: hooks.TaskCompleted[0].hooks[0].command: expected a string, got missing\n  ${p.settings}: hooks.TeammateIdle[0].hooks[0].timeout: expected a number of seconds, more than 0 and at most 2147483, got "30"\n`,
    );
  });

  it("a settings file with no TaskCompleted or TeammateIdle command hook: says so, exit 1, nothing written", async () => {
    const p = await claudeProject({
      hooks: {
        Stop: [{ hooks: [{ type: "command", command: "./notify.sh" }] }],
        TaskCompleted: [{ hooks: [{ type: "agent", prompt: "check it" }] }],
      },
    });
    const out = await cli(["init", "--hooks-dir", p.hooks, "--from-claude", p.settings]);
    expect(out.code).toBe(1);
    expect(out.stderr).toBe(
      `pi-teams-hooks init: ${p.settings} has no command hook for TaskCompleted or TeammateIdle: nothing written\n  skipped hooks.TaskCompleted[0].hooks[0]: type "agent" (only command hooks can run here)\n  not mapped: Stop (only TaskCompleted and TeammateIdle become gates; the other events have no counterpart here)\n`,
    );
    expect(fs.existsSync(p.hooks)).toBe(false);
    expect((await cli(["init", "--hooks-dir", p.hooks, "--from-claude", ""])).stderr).toContain(
      "--from-claude must not be empty",
    );
  });

  it("--help describes the flag", async () => {
    const out = await cli(["init", "--help"]);
    expect(out.stdout).toContain("[--from-claude FILE]");
    expect(out.stdout).toContain("  --from-claude FILE      a Claude Code settings file");
  });
});
