/**
 * The chain of hooks per event against real files in temp dirs: byte-wise order,
 * the v1 file first, the team layer replacing and switching off global files, each skip rule, missing
 * and unusable layers; and `doctor` showing a chain and its skips.
 */
import { execFileSync } from "node:child_process";
import { chmod, mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  compareNames,
  discoverChain,
  teamHooksDir,
  type ChainDiscovery,
} from "../../extensions/teams-hooks/gates/chain.js";
import { main, type CliIo } from "../../extensions/teams-hooks/cli/main.js";
import type { HookEventName } from "../../extensions/teams-hooks/contract/contract.js";
import { diagnose } from "../../extensions/teams-hooks/doctor/diagnose.js";
import { tempDirs } from "../helpers/temp-team.js";

const isRoot = process.getuid?.() === 0;
const BASE_ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin" };

const tempDir = tempDirs("teams-hooks-chain-");

/** A file spec: text (mode 0644), an executable script, a directory, a symlink, or a fifo. */
type Spec = string | { exec: string } | "dir" | { link: string } | "fifo";

/** Writes `files` (paths relative to `dir`, parents created) and returns `dir`. */
async function layout(dir: string, files: Record<string, Spec>): Promise<string> {
  for (const [name, spec] of Object.entries(files)) {
    const file = path.join(dir, name);
    await mkdir(path.dirname(file), { recursive: true });
    if (spec === "dir") await mkdir(file);
    else if (spec === "fifo") execFileSync("mkfifo", [file]);
    else if (typeof spec === "string") await writeFile(file, spec, { mode: 0o644 });
    else if ("exec" in spec) await writeFile(file, spec.exec, { mode: 0o755 });
    else await symlink(spec.link, file);
  }
  return dir;
}

/** Two fresh layers: a global hooks dir and a team dir's `hooks/` layer (created only when given files). */
async function layers(
  global: Record<string, Spec>,
  team?: Record<string, Spec>,
): Promise<{ globalDir: string; teamDir: string }> {
  const root = await tempDir();
  const globalDir = await layout(path.join(root, "_hooks"), global);
  await mkdir(globalDir, { recursive: true });
  const teamDir = teamHooksDir(path.join(root, "my-team"));
  if (team) {
    await mkdir(teamDir, { recursive: true });
    await layout(teamDir, team);
  }
  return { globalDir, teamDir };
}

async function chain(
  dirs: { globalDir: string; teamDir: string | null },
  event: HookEventName = "task_completed",
): Promise<ChainDiscovery> {
  return discoverChain({ ...dirs, event });
}

/** `layer:name` of each hook, in order. */
const order = (found: ChainDiscovery): string[] =>
  found.hooks.map((h) => `${h.layer}:${h.kind === "v1" ? "v1 " : ""}${h.name}`);
/** `layer:path relative to its layer root` and the skip code, in order. */
function skips(found: ChainDiscovery, dirs: { globalDir: string; teamDir: string }): string[] {
  return found.skipped.map(
    (s) => `${s.layer}:${path.relative(s.layer === "global" ? dirs.globalDir : dirs.teamDir, s.path)}:${s.code}`,
  );
}

/** Runs every hook of the chain, in order, as the runner would (no shell), and returns their output lines. */
function runAll(found: ChainDiscovery): string[] {
  return found.hooks.map((h) => execFileSync(h.hook.command, h.hook.args, { encoding: "utf8" }).trim());
}

const D = "on_task_completed.d";
const echo = (word: string): string => `echo ${word}\n`;

describe("discoverChain: order", () => {
  it("runs the v1 file first, then the .d files in byte-wise name order (10-a before 2-b, upper case before lower)", async () => {
    const dirs = await layers({
      "on_task_completed.sh": echo("v1"),
      [`${D}/2-b.sh`]: echo("2-b"),
      [`${D}/10-a.sh`]: echo("10-a"),
      [`${D}/a.mjs`]: "console.log('a')\n",
      [`${D}/B`]: { exec: "#!/bin/sh\necho B\n" },
      [`${D}/_u.js`]: "console.log('_u')\n",
      [`${D}/-dash.sh`]: echo("-dash"),
    });
    const found = await chain(dirs);
    expect(order(found)).toEqual([
      "global:v1 on_task_completed.sh",
      "global:-dash.sh",
      "global:10-a.sh",
      "global:2-b.sh",
      "global:B",
      "global:_u.js",
      "global:a.mjs",
    ]);
    expect(found.skipped).toEqual([]);
    // Each launches by the v1 rules: .sh with bash, .js/.mjs with this node, a bare file directly.
    const byName = new Map(found.hooks.map((h) => [h.name, [h.hook.command, ...h.hook.args]]));
    const file = (name: string): string => path.join(dirs.globalDir, D, name);
    expect(byName.get("2-b.sh")).toEqual(["bash", file("2-b.sh")]);
    expect(byName.get("a.mjs")).toEqual([process.execPath, file("a.mjs")]);
    expect(byName.get("_u.js")).toEqual([process.execPath, file("_u.js")]);
    expect(byName.get("B")).toEqual([file("B")]);
    expect(runAll(found)).toEqual(["v1", "-dash", "10-a", "2-b", "B", "_u", "a"]);
  });

  it("compares names by bytes, not by locale", () => {
    expect(["b", "a", "Z", "10", "9", "é", "_"].sort(compareNames)).toEqual(["10", "9", "Z", "_", "a", "b", "é"]);
  });

  it("merges the two layers' .d files by name, the team's file replacing the global one of the same name", async () => {
    const dirs = await layers(
      { [`${D}/10-a.sh`]: echo("global 10-a"), [`${D}/30-c.sh`]: echo("global 30-c") },
      { [`${D}/20-b.sh`]: echo("team 20-b"), [`${D}/30-c.sh`]: echo("team 30-c") },
    );
    const found = await chain(dirs);
    expect(order(found)).toEqual(["global:10-a.sh", "team:20-b.sh", "team:30-c.sh"]);
    expect(runAll(found)).toEqual(["global 10-a", "team 20-b", "team 30-c"]);
    expect(found.skipped).toEqual([
      {
        path: path.join(dirs.globalDir, D, "30-c.sh"),
        layer: "global",
        code: "replaced",
        reason: `replaced by ${path.join(dirs.teamDir, D, "30-c.sh")}`,
      },
    ]);
  });
});

describe("discoverChain: the v1 file across layers", () => {
  it("takes the team's v1 file instead of the global one, even under another suffix", async () => {
    const dirs = await layers(
      { "on_task_completed.sh": echo("global v1"), [`${D}/10-a.sh`]: echo("10-a") },
      { "on_task_completed.mjs": "console.log('team v1')\n" },
    );
    const found = await chain(dirs);
    expect(order(found)).toEqual(["team:v1 on_task_completed.mjs", "global:10-a.sh"]);
    expect(runAll(found)).toEqual(["team v1", "10-a"]);
    expect(found.skipped).toEqual([
      {
        path: path.join(dirs.globalDir, "on_task_completed.sh"),
        layer: "global",
        code: "replaced",
        reason: `replaced by ${path.join(dirs.teamDir, "on_task_completed.mjs")}`,
      },
    ]);
    expect(found.v1.global.hook?.hookPath).toBe(path.join(dirs.globalDir, "on_task_completed.sh"));
    expect(found.v1.team?.hook?.hookPath).toBe(path.join(dirs.teamDir, "on_task_completed.mjs"));
  });

  it("lets a team v1 file that cannot run still take the slot: the global one does not come back", async () => {
    const dirs = await layers({ "on_task_completed.sh": echo("global v1") }, { on_task_completed: "echo team\n" });
    const found = await chain(dirs);
    const bare = path.join(dirs.teamDir, "on_task_completed");
    expect(found.hooks).toEqual([]);
    expect(found.skipped).toEqual([
      { path: bare, layer: "team", code: "unusable", reason: `not executable (chmod +x ${bare})` },
      {
        path: path.join(dirs.globalDir, "on_task_completed.sh"),
        layer: "global",
        code: "replaced",
        reason: `replaced by ${bare}`,
      },
    ]);
  });

  it("switches the global v1 file off with <its file name>.disabled in the team layer", async () => {
    const dirs = await layers(
      { "on_task_completed.sh": echo("global v1"), [`${D}/10-a.sh`]: echo("10-a") },
      { "on_task_completed.sh.disabled": "" },
    );
    const found = await chain(dirs);
    expect(order(found)).toEqual(["global:10-a.sh"]);
    expect(found.skipped).toEqual([
      {
        path: path.join(dirs.globalDir, "on_task_completed.sh"),
        layer: "global",
        code: "disabled",
        reason: `disabled by ${path.join(dirs.teamDir, "on_task_completed.sh.disabled")}`,
      },
    ]);
  });

  it("says when a v1 .disabled file names another file than the global v1 hook, and leaves that hook on", async () => {
    const dirs = await layers({ "on_task_completed.sh": echo("global v1") }, { "on_task_completed.disabled": "" });
    const found = await chain(dirs);
    expect(order(found)).toEqual(["global:v1 on_task_completed.sh"]);
    expect(found.skipped).toEqual([
      {
        path: path.join(dirs.teamDir, "on_task_completed.disabled"),
        layer: "team",
        code: "disables_nothing",
        reason: "switches off nothing: the global v1 hook is on_task_completed.sh",
      },
    ]);
  });
});

describe("discoverChain: .disabled in the team layer's .d", () => {
  it("switches the same-named global file off; one naming no global file is reported", async () => {
    const dirs = await layers(
      { [`${D}/10-a.sh`]: echo("10-a"), [`${D}/20-b.sh`]: echo("20-b") },
      { [`${D}/20-b.sh.disabled`]: "", [`${D}/99-none.disabled`]: "" },
    );
    const found = await chain(dirs);
    expect(order(found)).toEqual(["global:10-a.sh"]);
    expect(found.skipped).toEqual([
      {
        path: path.join(dirs.globalDir, D, "20-b.sh"),
        layer: "global",
        code: "disabled",
        reason: `disabled by ${path.join(dirs.teamDir, D, "20-b.sh.disabled")}`,
      },
      {
        path: path.join(dirs.teamDir, D, "99-none.disabled"),
        layer: "team",
        code: "disables_nothing",
        reason: `switches off nothing: no global ${D}/99-none`,
      },
    ]);
  });

  it("keeps the team's own file of that name running (only the global one is switched off)", async () => {
    const dirs = await layers(
      { [`${D}/20-b.sh`]: echo("global") },
      { [`${D}/20-b.sh`]: echo("team"), [`${D}/20-b.sh.disabled`]: "" },
    );
    const found = await chain(dirs);
    expect(runAll(found)).toEqual(["team"]);
    expect(skips(found, dirs)).toEqual([`global:${D}/20-b.sh:replaced`]);
  });
});

describe("discoverChain: skip rules", () => {
  it.each<{ name: string; spec: Spec; code: string; reason: string | RegExp }>([
    {
      name: "my hook.sh",
      spec: echo("x"),
      code: "bad_name",
      reason: "name has characters outside [A-Za-z0-9_.-] (rename it to run it)",
    },
    {
      name: "café.sh",
      spec: echo("x"),
      code: "bad_name",
      reason: "name has characters outside [A-Za-z0-9_.-] (rename it to run it)",
    },
    { name: "10-a.sh~", spec: echo("x"), code: "ignored_name", reason: "name ends in ~ (a backup or editor file)" },
    {
      name: "10-a.sh.bak",
      spec: echo("x"),
      code: "ignored_name",
      reason: "name ends in .bak (a backup or editor file)",
    },
    {
      name: ".10-a.sh.swp",
      spec: echo("x"),
      code: "ignored_name",
      reason: "name ends in .swp (a backup or editor file)",
    },
    {
      name: "10-a.sh.disabled",
      spec: echo("x"),
      code: "switched_off",
      reason: "switched off (name ends in .disabled)",
    },
    {
      name: "10-lint",
      spec: "#!/bin/sh\n",
      code: "unusable",
      reason: /^not executable \(chmod \+x \/.*\/on_task_completed\.d\/10-lint\)$/,
    },
    { name: "10-dir", spec: "dir", code: "unusable", reason: "is a directory, not a file" },
    { name: "10-dir.sh", spec: "dir", code: "unusable", reason: "is a directory, not a file" },
    {
      name: "10-gone.sh",
      spec: { link: "/nonexistent/gone.sh" },
      code: "unusable",
      reason: "broken symlink (to /nonexistent/gone.sh)",
    },
    { name: "10-fifo", spec: "fifo", code: "unusable", reason: "not a regular file (fifo)" },
  ])("skips $name ($code), and the rest of the chain still runs", async ({ name, spec, code, reason }) => {
    const dirs = await layers({ [`${D}/${name}`]: spec, [`${D}/50-ok.sh`]: echo("ok") });
    const found = await chain(dirs);
    expect(runAll(found)).toEqual(["ok"]);
    expect(found.skipped).toEqual([
      {
        path: path.join(dirs.globalDir, D, name),
        layer: "global",
        code,
        reason: typeof reason === "string" ? reason : expect.stringMatching(reason),
      },
    ]);
  });

  it("skips bad names in the team layer too, without letting them replace or switch off anything", async () => {
    const dirs = await layers(
      { [`${D}/10-a.sh`]: echo("global") },
      { [`${D}/10-a.sh~`]: echo("team"), [`${D}/10 a.sh.disabled`]: "" },
    );
    const found = await chain(dirs);
    expect(runAll(found)).toEqual(["global"]);
    expect(skips(found, dirs)).toEqual([`team:${D}/10 a.sh.disabled:bad_name`, `team:${D}/10-a.sh~:ignored_name`]);
  });

  it("runs a symlink to a script, under the link's path", async () => {
    const store = await layout(await tempDir(), { "gate.sh": echo("linked") });
    const dirs = await layers({ [`${D}/10-link.sh`]: { link: path.join(store, "gate.sh") } });
    const found = await chain(dirs);
    expect(found.hooks[0]?.hook).toEqual({
      hookPath: path.join(dirs.globalDir, D, "10-link.sh"),
      command: "bash",
      args: [path.join(dirs.globalDir, D, "10-link.sh")],
    });
    expect(runAll(found)).toEqual(["linked"]);
  });

  it("reports a symlink loop and never throws", async () => {
    const dirs = await layers({ [`${D}/10-loop`]: { link: "10-loop" } });
    const found = await chain(dirs);
    expect(found.hooks).toEqual([]);
    expect(skips(found, dirs)).toEqual([`global:${D}/10-loop:unusable`]);
    expect(found.skipped[0]?.reason).toMatch(/symlink loop|broken symlink/);
  });
});

describe("discoverChain: missing and unusable layers", () => {
  it("finds nothing, quietly, when no layer exists", async () => {
    const root = await tempDir();
    const found = await discoverChain({
      globalDir: path.join(root, "_hooks"),
      teamDir: path.join(root, "team", "hooks"),
      event: "idle",
    });
    expect(found).toMatchObject({ hooks: [], skipped: [] });
    expect(found.v1.global.dirProblem).toBe("missing");
    expect(found.v1.team?.dirProblem).toBe("missing");
  });

  it("treats a missing team layer, or none at all, as only the global one", async () => {
    const dirs = await layers({ "on_idle.sh": echo("v1"), "on_idle.d/10-a.sh": echo("10-a") });
    for (const teamDir of [dirs.teamDir, null]) {
      const found = await chain({ globalDir: dirs.globalDir, teamDir }, "idle");
      expect(order(found)).toEqual(["global:v1 on_idle.sh", "global:10-a.sh"]);
      expect(found.skipped).toEqual([]);
      expect(found.v1.team === null).toBe(teamDir === null);
    }
  });

  it("runs the team layer alone when the global hooks dir is missing", async () => {
    const root = await tempDir();
    const teamDir = await layout(path.join(root, "team", "hooks"), { "on_idle.d/10-a.sh": echo("team") });
    const found = await discoverChain({ globalDir: path.join(root, "_hooks"), teamDir, event: "idle" });
    expect(runAll(found)).toEqual(["team"]);
    expect(found.skipped).toEqual([]);
  });

  it("has only the v1 file when there is no .d dir, and only this event's .d dir counts", async () => {
    const dirs = await layers({ "on_task_completed.sh": echo("v1"), "on_idle.d/10-a.sh": echo("idle") });
    expect(order(await chain(dirs))).toEqual(["global:v1 on_task_completed.sh"]);
  });

  it("reports a .d that is a file or a broken symlink, and still runs the v1 file", async () => {
    const dirs = await layers(
      { "on_task_completed.sh": echo("v1"), [D]: "oops\n" },
      { [D]: { link: "/nonexistent/dir.d" } },
    );
    const found = await chain(dirs);
    expect(runAll(found)).toEqual(["v1"]);
    expect(found.skipped).toEqual([
      { path: path.join(dirs.globalDir, D), layer: "global", code: "dir_unusable", reason: "not a directory" },
      {
        path: path.join(dirs.teamDir, D),
        layer: "team",
        code: "dir_unusable",
        reason: "broken symlink (to /nonexistent/dir.d)",
      },
    ]);
  });

  it("reports a team layer that is not a directory, and runs the global hooks", async () => {
    const dirs = await layers({ "on_idle.sh": echo("v1") });
    await mkdir(path.dirname(dirs.teamDir), { recursive: true });
    await writeFile(dirs.teamDir, "not a dir\n");
    const found = await chain(dirs, "idle");
    expect(runAll(found)).toEqual(["v1"]);
    expect(found.skipped).toEqual([
      { path: dirs.teamDir, layer: "team", code: "dir_unusable", reason: expect.stringContaining("not a directory") },
    ]);
  });

  it.skipIf(isRoot)("reports an unreadable team layer or .d dir, and runs the global hooks", async () => {
    const dirs = await layers(
      { "on_idle.sh": echo("v1"), "on_idle.d/10-a.sh": echo("10-a") },
      { "on_idle.d/20-b.sh": echo("team") },
    );
    await chmod(path.join(dirs.globalDir, "on_idle.d"), 0o000);
    const unreadableD = await chain(dirs, "idle");
    expect(skips(unreadableD, dirs)).toEqual(["global:on_idle.d:dir_unusable"]);
    expect(unreadableD.skipped[0]?.reason).toBe("cannot be read (EACCES)");
    expect(runAll(unreadableD)).toEqual(["v1", "team"]);
    await chmod(path.join(dirs.globalDir, "on_idle.d"), 0o755);

    await chmod(dirs.teamDir, 0o000);
    const unreadableLayer = await chain(dirs, "idle");
    expect(runAll(unreadableLayer)).toEqual(["v1", "10-a"]);
    expect(skips(unreadableLayer, dirs)).toEqual(["team::dir_unusable"]);
    await chmod(dirs.teamDir, 0o755);
  });

  it("treats one dir given as both layers as one layer", async () => {
    const dirs = await layers({ "on_idle.sh": echo("v1"), "on_idle.d/10-a.sh": echo("10-a") });
    const found = await chain({ globalDir: dirs.globalDir, teamDir: `${dirs.globalDir}/` }, "idle");
    expect(order(found)).toEqual(["global:v1 on_idle.sh", "global:10-a.sh"]);
    expect(found.v1.team).toBeNull();
  });
});

describe("doctor shows the chain", () => {
  async function teamWithChain(): Promise<{ root: string; teamDir: string; globalDir: string }> {
    const root = await tempDir();
    const teamDir = path.join(root, "my-team");
    const globalDir = await layout(path.join(root, "_hooks"), {
      "on_task_completed.sh": echo("v1"),
      [`${D}/10-lint.sh`]: echo("global lint"),
      [`${D}/20-test.mjs`]: "console.log('test')\n",
      [`${D}/my notes.sh`]: echo("x"),
      [`${D}/30-old.sh.bak`]: echo("x"),
    });
    await layout(teamHooksDir(teamDir), { [`${D}/10-lint.sh`]: echo("team lint"), [`${D}/40-check`]: "#!/bin/sh\n" });
    return { root, teamDir, globalDir };
  }

  it("reports each hook in order with its layer and command, and each skip with its level", async () => {
    const { root, teamDir, globalDir } = await teamWithChain();
    const r = await diagnose({ teamDir, env: BASE_ENV, cwd: root });
    const event = r.hooks.find((e) => e.event === "task_completed");
    const layer = teamHooksDir(teamDir);
    expect(r.teamHooksDir).toEqual({
      dir: layer,
      checks: [
        { level: "ok", message: `team hooks layer ${layer} (its files replace the global ones of the same name)` },
      ],
    });
    expect(event?.chain.hooks).toEqual([
      {
        layer: "global",
        kind: "v1",
        name: "on_task_completed.sh",
        path: path.join(globalDir, "on_task_completed.sh"),
        command: ["bash", path.join(globalDir, "on_task_completed.sh")],
      },
      {
        layer: "team",
        kind: "chain",
        name: `${D}/10-lint.sh`,
        path: path.join(layer, D, "10-lint.sh"),
        command: ["bash", path.join(layer, D, "10-lint.sh")],
      },
      {
        layer: "global",
        kind: "chain",
        name: `${D}/20-test.mjs`,
        path: path.join(globalDir, D, "20-test.mjs"),
        command: [process.execPath, path.join(globalDir, D, "20-test.mjs")],
      },
    ]);
    expect(event?.chain.checks.map((c) => `${c.level}: ${c.message}`)).toEqual([
      expect.stringMatching(new RegExp(`^ok: team ${D}/10-lint\\.sh runs with bash \\(/.*bash\\)$`)),
      `ok: global ${D}/20-test.mjs runs with node (${process.execPath})`,
      `info: skipped global ${D}/10-lint.sh: replaced by ${path.join(layer, D, "10-lint.sh")}`,
      `info: skipped global ${D}/30-old.sh.bak: name ends in .bak (a backup or editor file)`,
      `error: skipped team ${D}/40-check: not executable (chmod +x ${path.join(layer, D, "40-check")})`,
      `warn: skipped global ${D}/my notes.sh: name has characters outside [A-Za-z0-9_.-] (rename it to run it)`,
    ]);
    expect(r.errors).toBe(1);
  });

  it("prints the chain in the doctor command's output, and leaves a v1-only event as it was", async () => {
    const { root, teamDir, globalDir } = await teamWithChain();
    await layout(globalDir, { "on_idle.sh": echo("idle") });
    let stdout = "";
    const io: CliIo = {
      stdout: (t) => void (stdout += t),
      stderr: () => undefined,
      env: { ...BASE_ENV, COLUMNS: "400" }, // a wide terminal: each hook's whole command
      cwd: root,
      isTTY: false,
      stopSignal: new Promise<string>(() => {}),
    };
    const code = await main(["doctor", "--team-dir", teamDir], io);
    expect(code).toBe(1);
    const layer = teamHooksDir(teamDir);
    expect(stdout).toContain(`  ok   team hooks layer ${layer} (its files replace the global ones of the same name)\n`);
    expect(stdout).toContain(
      [
        "  task_completed (on_task_completed): 3 hook(s), in this order:",
        `    1. global on_task_completed.sh             bash ${path.join(globalDir, "on_task_completed.sh")}`,
        `    2. team   ${D}/10-lint.sh   bash ${path.join(layer, D, "10-lint.sh")}`,
        `    3. global ${D}/20-test.mjs  ${process.execPath} ${path.join(globalDir, D, "20-test.mjs")}`,
        "    ok   on_task_completed.sh runs with bash (",
      ].join("\n"),
    );
    expect(stdout).toContain(
      `    warn skipped global ${D}/my notes.sh: name has characters outside [A-Za-z0-9_.-] (rename it to run it)\n`,
    );
    expect(stdout).toContain(
      `    FAIL skipped team ${D}/40-check: not executable (chmod +x ${path.join(layer, D, "40-check")})\n`,
    );
    expect(stdout).toMatch(/\n {2}idle \(on_idle\): on_idle\.sh\n {4}ok {3}on_idle\.sh runs with bash \(/);
  });

  it("says a switched-off global v1 file does not run, and an unusable default hooks dir leaves the team's hooks running", async () => {
    const root = await tempDir();
    const teamDir = path.join(root, "my-team");
    await layout(teamHooksDir(teamDir), { "on_idle.d/10-a.sh": echo("team") });
    const r = await diagnose({ teamDir, env: BASE_ENV, cwd: root });
    expect(r.hooksDir.checks).toEqual([
      {
        level: "info",
        message: `the default hooks dir ${path.join(root, "_hooks")} does not exist (pi-teams-hooks init creates it): only the team layer's hooks run`,
        file: path.join(root, "_hooks"),
      },
    ]);
    expect(r.hooks.find((e) => e.event === "idle")?.chain.hooks.map((h) => h.name)).toEqual(["on_idle.d/10-a.sh"]);

    await layout(path.join(root, "_hooks"), { "on_idle.sh": echo("v1"), "on_task_failed.sh": echo("v1") });
    await layout(teamHooksDir(teamDir), { "on_idle.sh.disabled": "" });
    const off = await diagnose({ teamDir, env: BASE_ENV, cwd: root });
    const idle = off.hooks.find((e) => e.event === "idle");
    expect(idle?.checks).toEqual([
      {
        level: "info",
        message: `on_idle.sh does not run: disabled by ${path.join(teamHooksDir(teamDir), "on_idle.sh.disabled")}`,
        file: path.join(root, "_hooks", "on_idle.sh"),
      },
    ]);
    expect(off.errors).toBe(0);
  });
});
