/**
 * doctor on real team dirs and hooks dirs: which hook would run and why, each way a candidate can be
 * unusable, the team files read as the leader reads them, the policy's sources, lock files, and the
 * command's output and exit codes.
 */
import { copyFile, mkdir, utimes, writeFile } from "node:fs/promises";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { main, type CliIo } from "../../extensions/teams-hooks/cli/main.js";
import {
  diagnose,
  type Check,
  type DoctorReport,
  type EventHookReport,
} from "../../extensions/teams-hooks/doctor/diagnose.js";
import type { HookEventName } from "../../extensions/teams-hooks/contract/contract.js";
import { SETTINGS } from "../../extensions/teams-hooks/settings/table.js";
import { makeTask, makeTempTeam, type TempTeam, type TempTeamOptions } from "../helpers/temp-team.js";

const EXAMPLES = path.resolve("hooks");
const BASE_ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin" };

const teams: TempTeam[] = [];
afterEach(async () => {
  for (const team of teams.splice(0)) await team.cleanup();
});

/** A temp team with `<teams root>/_hooks` holding `hooks` (name → content, or a mode with content). */
async function setup(
  options: TempTeamOptions & { hooks?: Record<string, string | { content: string; mode: number } | "dir"> } = {},
): Promise<{ team: TempTeam; hooksDir: string }> {
  const team = await makeTempTeam(options);
  teams.push(team);
  const hooksDir = path.join(team.teamsRoot, "_hooks");
  if (options.hooks) {
    await mkdir(hooksDir, { mode: 0o755 });
    for (const [name, spec] of Object.entries(options.hooks)) {
      const file = path.join(hooksDir, name);
      if (spec === "dir") await mkdir(file);
      else if (typeof spec === "string") await writeFile(file, spec, { mode: 0o644 });
      else {
        await writeFile(file, spec.content);
        fs.chmodSync(file, spec.mode);
      }
    }
  }
  return { team, hooksDir };
}

async function report(team: TempTeam, env: Record<string, string> = {}, hooksDir?: string): Promise<DoctorReport> {
  return diagnose({ teamDir: team.teamDir, hooksDir, env: { ...BASE_ENV, ...env }, cwd: team.teamsRoot });
}

function event(r: DoctorReport, name: HookEventName): EventHookReport {
  const found = r.hooks.find((e) => e.event === name);
  if (!found) throw new Error(`no report for ${name}`);
  return found;
}

const lines = (checks: Check[]): string[] => checks.map((c) => `${c.level}: ${c.message}`);

describe("doctor: which hook runs", () => {
  it("finds the example gates, says how each one runs, and reports no problem", async () => {
    const { team, hooksDir } = await setup({ hooks: {} });
    for (const name of fs.readdirSync(EXAMPLES).filter((n) => n.startsWith("on_")))
      await copyFile(path.join(EXAMPLES, name), path.join(hooksDir, name));
    // The teams root has no package.json: the example gate's default, npm test, is told its command.
    const r = await report(team, { PI_TEAMS_GATE_CMD: "true" });
    expect(r.errors).toBe(0);
    expect(r.warnings).toBe(0);
    expect(event(r, "task_completed").hook).toEqual({
      path: path.join(hooksDir, "on_task_completed.sh"),
      command: ["bash", path.join(hooksDir, "on_task_completed.sh")],
    });
    expect(lines(event(r, "task_completed").checks)).toEqual([
      expect.stringMatching(/^ok: on_task_completed\.sh runs with bash \(\/.*bash\)$/),
    ]);
    expect(lines(event(r, "task_failed").checks)).toEqual([
      `ok: on_task_failed.mjs runs with node (${process.execPath})`,
    ]);
    expect(r.hooksDir).toMatchObject({ dir: hooksDir, source: "default" });
  });

  it.each([
    [
      "no #! line on a bare executable",
      { content: "echo hi\n", mode: 0o755 },
      /no #! line, so the system cannot start it \(ENOEXEC\)/,
    ],
    [
      "a CRLF #! line",
      { content: "#!/bin/sh\r\necho hi\r\n", mode: 0o755 },
      /its #! line ends in CRLF, so the system looks for an interpreter named "\/bin\/sh\\r"/,
    ],
    [
      "an interpreter not on PATH",
      { content: "#!/usr/bin/env no-such-interpreter-xyz\n", mode: 0o755 },
      /no-such-interpreter-xyz is not on PATH, so env exits 127/,
    ],
    [
      "an interpreter that does not exist",
      { content: "#!/opt/nowhere/python9\n", mode: 0o755 },
      /interpreter \/opt\/nowhere\/python9 \(from "#!\/opt\/nowhere\/python9"\) does not exist/,
    ],
    [
      "env given two words without -S",
      { content: "#!/usr/bin/env node --no-warnings\n", mode: 0o755 },
      /env gets "node --no-warnings" as one program name and exits 127; write #!\/usr\/bin\/env -S node --no-warnings/,
    ],
  ])("is an error when the chosen bare hook has %s", async (_case, spec, message) => {
    const { team } = await setup({ hooks: { on_task_completed: spec } });
    const r = await report(team);
    const checks = event(r, "task_completed").checks;
    expect(checks[0]).toMatchObject({ level: "error", message: expect.stringMatching(message) });
    expect(r.errors).toBe(1);
  });

  it.each([
    ["#!/usr/bin/env -S node --no-warnings\n", /runs directly with node \(/],
    ["#!/bin/sh\necho ok\n", /runs directly with \/bin\/sh$/],
    ["#!/usr/bin/env bash\n", /runs directly with bash \(/],
  ])("accepts the bare hook %j", async (content, message) => {
    const { team } = await setup({ hooks: { on_idle: { content, mode: 0o755 } } });
    const r = await report(team);
    expect(event(r, "idle").checks[0]).toMatchObject({ level: "ok", message: expect.stringMatching(message) });
    expect(r.errors).toBe(0);
  });

  it("accepts a binary executable without a #! line", async () => {
    const { team, hooksDir } = await setup({ hooks: {} });
    await copyFile("/bin/true", path.join(hooksDir, "on_idle"));
    fs.chmodSync(path.join(hooksDir, "on_idle"), 0o755);
    expect(event(await report(team), "idle").checks[0]).toMatchObject({
      level: "ok",
      message: "on_idle runs directly (a binary executable)",
    });
  });

  it("explains each skipped candidate: an error when nothing else runs, a warning when another file runs instead", async () => {
    const { team } = await setup({
      hooks: {
        on_idle: "echo not executable\n",
        on_task_completed: "dir",
        "on_task_completed.sh": "echo ok\n",
        on_task_failed: "#!/bin/sh\n",
        "on_task_failed.js": "console.log(1)\n",
      },
    });
    const r = await report(team);
    expect(lines(event(r, "idle").checks)).toEqual([
      `error: skipped on_idle: not executable (chmod +x ${path.join(team.teamsRoot, "_hooks", "on_idle")}): no gate runs for this event`,
    ]);
    expect(lines(event(r, "task_completed").checks)).toEqual([
      expect.stringMatching(/^ok: on_task_completed\.sh runs with bash/),
      "warn: skipped on_task_completed: is a directory, not a file; on_task_completed.sh runs instead",
    ]);
    expect(event(r, "task_failed").hook?.path).toMatch(/on_task_failed\.js$/);
    expect(event(r, "task_failed").candidates.map((c) => c.status)).toEqual([
      "skipped",
      "absent",
      "chosen",
      "absent",
      "absent",
    ]);
    expect(r.errors).toBe(1);
  });

  it("names a file that exists but never runs because an earlier one does", async () => {
    const { team } = await setup({ hooks: { "on_idle.sh": "echo sh\n", "on_idle.mjs": "console.log(1)\n" } });
    const e = event(await report(team), "idle");
    expect(e.candidates.map((c) => [path.basename(c.path), c.status])).toEqual([
      ["on_idle", "absent"],
      ["on_idle.sh", "chosen"],
      ["on_idle.js", "absent"],
      ["on_idle.mjs", "shadowed"],
      ["on_idle.ts", "absent"],
    ]);
    expect(lines(e.checks)).toContain("info: not used: on_idle.mjs (on_idle.sh comes first)");
  });

  it("checks .sh hooks: bash on PATH, CRLF line endings, a #! line for another interpreter", async () => {
    const { team } = await setup({
      hooks: {
        "on_idle.sh": "set -e\r\necho hi\r\n",
        "on_task_completed.sh": "#!/usr/bin/env python3\nprint(1)\n",
        "on_task_failed.sh": "echo hi\n",
      },
    });
    const r = await report(team);
    expect(event(r, "idle").checks[0]).toMatchObject({
      level: "error",
      message: expect.stringContaining("has CRLF line endings: bash reads each \\r as part of a command"),
    });
    expect(lines(event(r, "task_completed").checks)[1]).toMatch(
      /^warn: on_task_completed\.sh starts with "#!\/usr\/bin\/env python3", but a \.sh hook runs with bash/,
    );
    const noBash = await report(team, { PATH: path.join(team.teamsRoot, "empty-bin") });
    expect(event(noBash, "task_failed").checks[0]).toMatchObject({
      level: "error",
      message: "on_task_failed.sh: bash is not on PATH, and .sh hooks run with bash",
    });
  });

  it("warns about a world-writable hooks dir, and explains that a world-writable gate is refused (C13)", async () => {
    const { team, hooksDir } = await setup({ hooks: { "on_idle.sh": { content: "echo hi\n", mode: 0o666 } } });
    fs.chmodSync(hooksDir, 0o777);
    fs.chmodSync(path.join(hooksDir, "on_idle.sh"), 0o666); // past the umask
    const r = await report(team);
    expect(lines(r.hooksDir.checks)).toContain(
      `warn: ${hooksDir} is world-writable: any user can replace a gate (chmod o-w ${hooksDir})`,
    );
    expect(lines(event(r, "idle").checks)).toContain(
      "error: on_idle.sh is world-writable (mode 0666): any user can rewrite it (chmod o-w): the leader refuses it (insecure_hook) unless started with --allow-insecure-hooks",
    );
    expect(r.errors).toBe(1);
  });
});

describe("doctor: the hooks dir", () => {
  it("treats a missing default hooks dir as a warning (no gates at all)", async () => {
    const { team } = await setup();
    const r = await report(team);
    expect(r.errors).toBe(0);
    expect(lines(r.hooksDir.checks)).toEqual([
      expect.stringMatching(
        /^warn: the default hooks dir .*_hooks does not exist \(pi-teams-hooks init creates it\): no gate runs$/,
      ),
    ]);
    expect(r.hooks.every((e) => e.hook === null && e.checks.length === 0)).toBe(true);
  });

  it("treats a missing --hooks-dir or PI_TEAMS_HOOKS_DIR, or one that is a file, as an error", async () => {
    const { team } = await setup({ files: { "not-a-dir": "x" } });
    expect((await report(team, {}, "nowhere")).hooksDir.checks[0]).toMatchObject({
      level: "error",
      message: expect.stringContaining(`--hooks-dir ${path.join(team.teamsRoot, "nowhere")} does not exist`),
    });
    expect((await report(team, { PI_TEAMS_HOOKS_DIR: "gates" })).hooksDir.checks[0]).toMatchObject({
      level: "error",
      message: expect.stringContaining("PI_TEAMS_HOOKS_DIR"),
    });
    expect((await report(team, {}, path.join(team.teamDir, "not-a-dir"))).hooksDir.checks[0]).toMatchObject({
      level: "error",
      message: expect.stringContaining("is not a directory"),
    });
  });

  it("warns when the hooks dir holds no hook for any event", async () => {
    const { team } = await setup({ hooks: { "README.md": "hi" } });
    const r = await report(team);
    expect(lines(r.hooksDir.checks)[1]).toMatch(/^warn: no hook in .*: no gate runs for any event/);
    expect(lines(event(r, "idle").checks)).toEqual(["info: no on_idle[.sh|.js|.mjs|.ts]: nothing runs"]);
  });
});

describe("doctor: the team dir", () => {
  it("reports a missing team dir as an error and skips what lives in it", async () => {
    const { team } = await setup();
    const r = await diagnose({ teamDir: path.join(team.teamsRoot, "ghost"), env: BASE_ENV, cwd: team.teamsRoot });
    expect(lines(r.team.checks)).toEqual([`error: team dir ${path.join(team.teamsRoot, "ghost")} does not exist`]);
    expect(r.team.identity).toBeNull();
    expect(r.locks.checks).toEqual([]);
  });

  it("names each malformed task file and its field, and counts the good ones", async () => {
    const { team } = await setup({
      tasks: [
        makeTask({ id: "1" }),
        { ...makeTask({ id: "2" }), status: "done" },
        { id: "3", raw: "{not json" },
        makeTask({ id: "4", status: "completed" }),
        { id: "5", raw: "[]" },
      ],
    });
    const checks = (await report(team)).team.checks;
    expect(lines(checks)).toContain(
      `ok: task list ${team.tasksDir}: 2 task(s) (1 pending, 0 in progress, 1 completed)`,
    );
    const bad = checks.filter((c) => c.level === "warn");
    expect(bad.map((c) => [path.basename(c.file ?? ""), c.field])).toEqual([
      ["2.json", "status"],
      ["3.json", undefined],
      ["5.json", undefined],
    ]);
    expect(bad[0]?.message).toBe(
      `${team.taskFile("2")}: status: expected "pending" | "in_progress" | "completed", got "done" — not a task, skipped by the leader`,
    );
    expect(bad[1]?.message).toContain("invalid JSON");
  });

  it("reports config.json problems with the file and field, and the defaults that apply", async () => {
    const broken = await setup({ config: "{ nope" });
    const brokenChecks = lines((await report(broken.team)).team.checks);
    expect(brokenChecks).toContainEqual(
      expect.stringMatching(/^warn: .*config\.json: invalid JSON .* — using defaults for the whole config$/),
    );

    const typed = await setup({ config: { teamId: "test-team", leadName: 42 } });
    expect(lines((await report(typed.team)).team.checks)).toContainEqual(
      expect.stringMatching(
        /^warn: .*config\.json: leadName: expected a non-empty string, got 42 — using "team-lead"$/,
      ),
    );

    const none = await setup();
    expect(lines((await report(none.team)).team.checks)).toContainEqual(
      "info: no config.json: defaults apply (team test-team, task list test-team, lead team-lead, style normal)",
    );
  });

  it("warns when the task list named by the config does not exist but another one does", async () => {
    const { team } = await setup({ files: { "tasks/beta/1.json": JSON.stringify(makeTask()) } });
    fs.rmSync(team.tasksDir, { recursive: true });
    expect(lines((await report(team)).team.checks)).toContainEqual(
      expect.stringMatching(
        /^warn: no task list .*tasks\/test-team, but tasks\/ holds beta: is taskListId "test-team" right\?/,
      ),
    );
  });

  it("reads the leader inbox: an error when it is not a JSON array, a warning per bad message", async () => {
    const bad = await setup({ inbox: "oops" });
    const badChecks = (await report(bad.team)).team.checks.filter((c) => c.level === "error");
    expect(badChecks).toEqual([
      expect.objectContaining({
        file: bad.team.inboxFile("team", "team-lead"),
        message: expect.stringContaining("the leader cannot see idle notifications"),
      }),
    ]);

    const mixed = await setup({ inbox: [{ from: "a", text: "t", timestamp: "x", read: true }, { from: "b" }] });
    const checks = (await report(mixed.team)).team.checks;
    expect(lines(checks)).toContain(
      `ok: leader inbox ${mixed.team.inboxFile("team", "team-lead")}: 1 message(s), 0 unread`,
    );
    expect(checks.find((c) => c.level === "warn")).toMatchObject({
      field: "[1].text",
      message: expect.stringContaining("message [1]"),
    });
  });
});

describe("doctor: policy and locks", () => {
  it("gives every setting in force and where it comes from, as the leader computes them", async () => {
    const { team } = await setup({
      config: { hooks: { failureAction: "reopen", failureMode: { idle: "closed" }, limits: { maxHooksPerEvent: 4 } } },
    });
    const r = await report(team, { PI_TEAMS_HOOKS_FOLLOWUP_OWNER: "lead", PI_TEAMS_HOOK_TIMEOUT_MS: "soon" });
    expect(r.policy.values).toEqual({
      failureAction: "reopen",
      maxReopensPerTask: SETTINGS.maxReopensPerTask.default,
      followupOwner: "lead",
    });
    expect(r.policy.origins).toEqual({
      failureAction: "config.json hooks.failureAction",
      maxReopensPerTask: "default",
      followupOwner: "PI_TEAMS_HOOKS_FOLLOWUP_OWNER",
    });
    expect(r.policy.timeoutMs).toEqual({ value: SETTINGS.timeoutMs.default, source: "default", origin: "default" });
    expect(r.policy.failureModes.idle).toEqual({
      value: "closed",
      source: "config",
      origin: "config.json hooks.failureMode.idle",
    });
    expect(r.policy.failureModes.task_completed).toEqual({ value: "closed", source: "default", origin: "default" });
    expect(r.policy.limits.maxHooksPerEvent).toEqual({
      value: 4,
      source: "config",
      origin: "config.json hooks.limits.maxHooksPerEvent",
    });
    expect(r.policy.block).toEqual({ valid: true, from: "file", problems: [] });
    expect(lines(r.policy.checks)).toEqual([
      expect.stringMatching(/^warn: PI_TEAMS_HOOK_TIMEOUT_MS: "soon" is not valid/),
    ]);
  });

  it("a block with one bad value is refused whole, with a warning per problem saying what applies instead", async () => {
    const { team } = await setup({
      config: { hooks: { failureAction: "reopen", maxReopensPerTask: "many", limits: { maxHooksPerEvent: "none" } } },
    });
    const r = await report(team, { PI_TEAMS_HOOKS_FOLLOWUP_OWNER: "lead" });
    expect(r.policy.values).toEqual({
      failureAction: SETTINGS.failureAction.default,
      maxReopensPerTask: SETTINGS.maxReopensPerTask.default,
      followupOwner: "lead",
    });
    expect(r.policy.origins).toEqual({
      failureAction: "default",
      maxReopensPerTask: "default",
      followupOwner: "PI_TEAMS_HOOKS_FOLLOWUP_OWNER",
    });
    expect(r.policy.limits.maxHooksPerEvent).toEqual({
      value: SETTINGS.maxHooksPerEvent.default,
      source: "default",
      origin: "default",
    });
    expect(r.policy.block).toMatchObject({ valid: false, from: "none" });
    const file = path.join(team.teamDir, "config.json");
    expect(lines(r.policy.checks)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^warn: ${file}: hooks\\.maxReopensPerTask: .*got "many" — the "hooks" block is refused whole; defaults and the environment apply$`,
        ),
      ),
      expect.stringMatching(
        new RegExp(
          `^warn: ${file}: hooks\\.limits\\.maxHooksPerEvent: .*got "none" — the "hooks" block is refused whole; defaults and the environment apply$`,
        ),
      ),
    ]);
    expect(r.policy.block.problems).toEqual(r.policy.checks.map((c) => c.message));
  });

  it("a config.json that is not JSON is said once, in the team checks", async () => {
    const { team } = await setup({ config: "{ nope" });
    const r = await report(team);
    expect(lines(r.team.checks).filter((l) => l.includes("invalid JSON"))).toHaveLength(1);
    expect(r.policy.checks).toEqual([]);
    expect(r.policy.block).toEqual({ valid: false, from: "none", problems: [expect.stringContaining("invalid JSON")] });
  });

  it("says what hooks are shown and what is redacted, never a secret's value", async () => {
    const hooks = {
      failureAction: "warn",
      handlers: [
        {
          name: "ci",
          events: ["task_completed"],
          url: "https://ci.example/gate",
          secretHeaders: { Authorization: "CI_GATE_TOKEN" },
        },
      ],
      projection: { "http:ci": ["task.id", "task.subject"], "on_task_failed.d/10-x.sh": [] },
      confidential: true,
      redactEnv: ["DEPLOY_TOKEN", "SHORT_ONE", "NOT_SET"],
    };
    const { team } = await setup({ config: { hooks } });
    const r = await report(team, {
      CI_GATE_TOKEN: "Bearer s3cr3t-value",
      DEPLOY_TOKEN: "deploy-value-1",
      SHORT_ONE: "ab",
    });
    expect(r.policy.projection).toEqual({
      value: hooks.projection,
      source: "config",
      origin: "config.json hooks.projection",
    });
    expect(r.policy.confidential).toMatchObject({ value: true, origin: "config.json hooks.confidential" });
    expect(r.policy.redactEnv).toMatchObject({
      value: ["DEPLOY_TOKEN", "SHORT_ONE", "NOT_SET"],
      origin: "config.json hooks.redactEnv",
    });
    const said = lines(r.policy.checks).join("\n");
    expect(said).toContain(
      "info: hooks.confidential: HTTP handlers are sent, and hook logs keep, no task description or metadata",
    );
    expect(said).toContain("ok: http:ci is shown task.id, task.subject (hooks.projection)");
    expect(said).toContain(
      "warn: hooks.projection names on_task_failed.d/10-x.sh, which runs for no event: the projection applies to nothing (gates: http:ci)",
    );
    expect(said).toContain("warn: SHORT_ONE's value is 2 character(s): too short to be redacted from hook output");
    expect(said).toContain("info: NOT_SET (hooks.redactEnv) is not set in this environment: nothing to redact for it");
    expect(said).toContain(
      "ok: redacted from hook output: the values of CI_GATE_TOKEN, DEPLOY_TOKEN, SHORT_ONE, NOT_SET, and credential shapes",
    );
    expect(JSON.stringify(r)).not.toMatch(/s3cr3t-value|deploy-value-1/);
  });

  it("gives the setsid sweep and where it comes from", async () => {
    expect((await report((await setup({ config: { hooks: { sweep: "always" } } })).team)).policy.sweep).toEqual({
      value: "always",
      source: "config",
      origin: "config.json hooks.sweep",
    });
    expect((await report((await setup({})).team)).policy.sweep).toEqual({
      value: "auto",
      source: "default",
      origin: "default",
    });
  });

  it("gives hooks.sandbox and where it comes from, and warns for each gate that runs unsandboxed and why", async () => {
    const team = await setup({ config: { hooks: { sandbox: "off" } }, hooks: { "on_idle.sh": "echo hi\n" } });
    const off = await report(team.team);
    expect(off.policy.sandbox).toEqual({ value: "off", source: "config", origin: "config.json hooks.sandbox" });
    expect(lines(event(off, "idle").chain.checks)).toContain(
      "warn: on_idle.sh runs unsandboxed, with the leader's authority (hooks.sandbox off)",
    );
    const gate = await setup({ hooks: { "on_idle.sh": "# pi-teams-hooks: sandbox=off\necho hi\n" } });
    const own = await report(gate.team);
    expect(own.policy.sandbox).toEqual({ value: "auto", source: "default", origin: "default" });
    expect(lines(event(own, "idle").chain.checks)).toContain(
      "warn: on_idle.sh runs unsandboxed, with the leader's authority (its settings line says sandbox=off)",
    );
    // Sandboxed where this machine can (it can here: the tests run gates in it): nothing to say.
    const auto = await report((await setup({ hooks: { "on_idle.sh": "echo hi\n" } })).team);
    expect(lines(event(auto, "idle").chain.checks).filter((l) => l.includes("sandbox"))).toEqual([]);
  });

  it("warns in its Access section that a node gate's node_modules any user can write is not used", async () => {
    const { team, hooksDir } = await setup({ hooks: { "on_idle.mjs": "console.log(1)\n" } });
    const modules = path.join(hooksDir, "node_modules");
    await mkdir(modules);
    fs.chmodSync(modules, 0o777);
    const r = await report(team);
    expect(lines(r.access?.checks ?? [])).toContain(
      `warn: on_idle.mjs: ${modules} is not used: everyone can write it, so another user could put a package there`,
    );
  });

  it("finds lock files anywhere in the team dir: stale, held too long, held now, leftovers", async () => {
    const { team } = await setup({
      files: {
        "tasks/test-team/1.json.lock": JSON.stringify({ pid: 2_147_000_000, createdAt: "2020-01-01T00:00:00Z" }),
        "config.json.lock": JSON.stringify({
          pid: process.pid,
          createdAt: new Date().toISOString(),
          label: "policy set",
        }),
        "mailboxes/team/inboxes/team-lead.json.lock": JSON.stringify({ pid: process.pid, createdAt: "x" }),
        "mailboxes/team/inboxes/old.json.lock": "",
        "hook-state/leader.lock.stale.1.2.lock": "",
      },
    });
    const old = (Date.now() - 120_000) / 1000;
    await utimes(path.join(team.teamDir, "mailboxes/team/inboxes/team-lead.json.lock"), old, old);
    await utimes(path.join(team.teamDir, "mailboxes/team/inboxes/old.json.lock"), old, old);
    const r = await report(team);
    expect(lines(r.locks.checks).map((l) => l.replaceAll(team.teamDir, "<team>"))).toEqual([
      expect.stringMatching(
        new RegExp(`^info: lock <team>/config\\.json\\.lock held by pid ${process.pid} \\(policy set\\), [0-9] s old$`),
      ),
      "info: <team>/hook-state/leader.lock.stale.1.2.lock: left over from a stale-lock takeover; inert, safe to delete",
      "warn: stale lock <team>/mailboxes/team/inboxes/old.json.lock: no readable pid and 120 s old; the next writer takes it over (or: rm -f '<team>/mailboxes/team/inboxes/old.json.lock')",
      `warn: lock <team>/mailboxes/team/inboxes/team-lead.json.lock held by pid ${process.pid}, 120 s old: other writers give up after 10 s`,
      "warn: stale lock <team>/tasks/test-team/1.json.lock: process 2147000000 is gone; the next writer takes it over (or: rm -f '<team>/tasks/test-team/1.json.lock')",
    ]);
    expect(r.locks.found.map((l) => l.stale)).toEqual([false, true, false, true]);
    expect(r.errors).toBe(0);
  });
});

describe("doctor: who besides the leader's user can change the gates and its state", () => {
  const me = os.userInfo().username;
  const recipe = `(docs/security.md, "A leader under its own user")`;
  const access = (r: DoctorReport): NonNullable<DoctorReport["access"]> => {
    if (!r.access) throw new Error("no access report");
    return r.access;
  };
  const entries = (r: DoctorReport, root: string): Array<[string, string, boolean, string[]]> =>
    access(r).entries.map((e) => {
      const others = e.others.map((o) => (o.through === null ? o.who : `${o.who} through ${o.through}`));
      return [path.relative(root, e.path), e.role, e.exists, others.map((o) => o.replaceAll(root, "<root>"))];
    });

  it("under one user: no other user can, and agents of that user still can (visible, not prevented)", async () => {
    const gate = { content: "exit 0\n", mode: 0o755 };
    const { team, hooksDir } = await setup({ hooks: { "on_idle.sh": gate }, tasks: [makeTask()] });
    // A .ts gate's tsx: packages, not gates, not looked at.
    fs.mkdirSync(path.join(hooksDir, "node_modules", "tsx"), { recursive: true });
    const r = await report(team, { XDG_STATE_HOME: path.join(team.teamsRoot, "state") });
    expect(lines(access(r).checks)).toEqual([
      `info: the gates, hook-state/, hook-logs/ and the approved trust record can be changed by ${me} alone, and the team's files are written by ${me} too: agents that run as ${me} can still change them; trust makes each change visible, it cannot prevent it; to prevent it, run the leader under its own user ` +
        recipe,
    ]);
    expect(entries(r, team.teamsRoot)).toEqual([
      ["_hooks", "hooks dir", true, []],
      ["_hooks/on_idle.sh", "gate", true, []],
      ["test-team/hooks", "team hooks layer", false, []],
      ["test-team/hook-state", "leader state", false, []],
      ["test-team/hook-logs", "hook logs", false, []],
      ["state/pi-teams-hooks/trust", "approved trust record", false, []],
    ]);
    expect(access(r).leader).toEqual({ uid: process.getuid?.(), user: me });
    expect(r.warnings).toBe(0);
  });

  it("warns for what any user can write, or replace through a folder above it that is not sticky", async () => {
    const { team } = await setup({ hooks: {}, files: { "hook-state/trust.json": "{}\n" } });
    const state = path.join(team.teamsRoot, "state");
    fs.mkdirSync(state, { mode: 0o777 });
    fs.chmodSync(state, 0o777);
    fs.chmodSync(path.join(team.teamDir, "hook-state", "trust.json"), 0o666);
    fs.chmodSync(team.teamDir, 0o777);
    const r = await report(team, { XDG_STATE_HOME: state });
    expect(entries(r, team.teamsRoot)).toEqual([
      ["_hooks", "hooks dir", true, []],
      ["test-team/hooks", "team hooks layer", false, ["every user through <root>/test-team"]],
      ["test-team/hook-state", "leader state", true, ["every user through <root>/test-team"]],
      ["test-team/hook-state/trust.json", "leader state", true, ["every user", "every user through <root>/test-team"]],
      ["test-team/hook-logs", "hook logs", false, ["every user through <root>/test-team"]],
      ["state/pi-teams-hooks/trust", "approved trust record", false, ["every user through <root>/state"]],
    ]);
    expect(lines(access(r).checks).map((l) => l.replaceAll(team.teamsRoot, "<root>"))).toEqual([
      `warn: <root>/test-team/hooks (team hooks layer) does not exist, and can be created by every user through <root>/test-team: another user can add or change a gate of the team layer: the leader holds its events until trust approves the change, but cannot prevent it ${recipe}`,
      `warn: <root>/test-team/hook-state (leader state) can be written or replaced by every user through <root>/test-team: another user can change the leader's state (trust.json, the ledger, decisions of held gates): visible where the leader checks it, not prevented ${recipe}`,
      // Its folder's route is said with the folder: what is new here is that anyone can write it.
      `warn: <root>/test-team/hook-state/trust.json (leader state) can be written or replaced by every user: another user can change the leader's state (trust.json, the ledger, decisions of held gates): visible where the leader checks it, not prevented ${recipe}`,
      `warn: <root>/test-team/hook-logs (hook logs) does not exist, and can be created by every user through <root>/test-team: another user can change or remove what the hook logs say ${recipe}`,
      `warn: <root>/state/pi-teams-hooks/trust (approved trust record) does not exist, and can be created by every user through <root>/state: another user can change the approved trust record that trust.json is held to, and have a gate of theirs run as trusted ${recipe}`,
    ]);
    expect(r.warnings).toBe(5 + 1); // and the hooks dir holds no gate

    // A folder others can write is said once, not again for each file in it.
    fs.chmodSync(path.join(team.teamDir, "hook-state", "trust.json"), 0o644);
    fs.writeFileSync(path.join(team.teamDir, "hook-state", "ledger.jsonl"), "");
    fs.chmodSync(path.join(team.teamDir, "hook-state"), 0o777);
    const once = await report(team, { XDG_STATE_HOME: state });
    const saidOnce = lines(access(once).checks).filter((l) => l.includes("hook-state"));
    expect(saidOnce.map((l) => l.replaceAll(team.teamsRoot, "<root>").split(": another")[0])).toEqual([
      "warn: <root>/test-team/hook-state (leader state) can be written or replaced by every user, every user through <root>/test-team",
    ]);
    expect(entries(once, team.teamsRoot).find(([p]) => p === "test-team/hook-state/ledger.jsonl")?.[3]).toEqual([
      "every user through <root>/test-team/hook-state",
      "every user through <root>/test-team",
    ]);
    fs.chmodSync(path.join(team.teamDir, "hook-state"), 0o755);
    fs.chmodSync(path.join(team.teamDir, "hook-state", "trust.json"), 0o666);

    // Sticky (as /tmp): others still add entries to the folder, but rename or remove only their own.
    fs.chmodSync(team.teamDir, 0o1777);
    for (const dir of ["hooks", "hook-logs"]) fs.mkdirSync(path.join(team.teamDir, dir), { mode: 0o755 });
    fs.chmodSync(state, 0o1777);
    const sticky = await report(team, { XDG_STATE_HOME: state });
    expect(entries(sticky, team.teamsRoot).filter(([, , , others]) => others.length > 0)).toEqual([
      ["test-team/hook-state/trust.json", "leader state", true, ["every user"]],
      ["state/pi-teams-hooks/trust", "approved trust record", false, ["every user through <root>/state"]],
    ]);
  });

  const asRoot = it.skipIf(process.getuid?.() !== 0);
  asRoot(
    "names another user that owns the state, and those that write the team's files (chown: root only)",
    async () => {
      const { team } = await setup({ hooks: {}, tasks: [makeTask()] });
      const env = { XDG_STATE_HOME: path.join(team.teamsRoot, "state") };
      fs.chownSync(team.taskFile("1"), 65534, 65534);
      const other = (await report(team, env)).access;
      expect(other?.teamWriters).toEqual([expect.stringMatching(/^(nobody|uid 65534)$/)]);
      expect(lines(other?.checks ?? [])).toEqual([
        expect.stringMatching(
          /^ok: the gates, hook-state\/, hook-logs\/ and the approved trust record can be changed by root \(the leader's user\) alone; the team's files are written by (nobody|uid 65534), who cannot change them$/,
        ),
      ]);
      fs.mkdirSync(path.join(team.teamDir, "hook-state"));
      fs.chownSync(path.join(team.teamDir, "hook-state"), 65534, 65534);
      const owned = await report(team, env);
      expect(entries(owned, team.teamsRoot).find(([p]) => p === "test-team/hook-state")?.[3]).toEqual([
        expect.stringMatching(/^user (nobody|uid 65534) \(owner\)$/),
      ]);
      expect(owned.access?.checks.map((c) => c.level)).toEqual(["warn"]);
    },
  );
});

describe("pi-teams-hooks doctor (the command)", () => {
  async function doctor(
    args: string[],
    opts: { isTTY?: boolean; env?: Record<string, string> } = {},
  ): Promise<{ code: number; stdout: string; stderr: string }> {
    let stdout = "";
    let stderr = "";
    const io: CliIo = {
      stdout: (t) => void (stdout += t),
      stderr: (t) => void (stderr += t),
      env: { ...BASE_ENV, ...opts.env },
      cwd: process.cwd(),
      isTTY: opts.isTTY ?? false,
      stopSignal: new Promise<string>(() => {}),
    };
    const code = await main(["doctor", ...args], io);
    return { code, stdout, stderr };
  }

  it("prints readable sections with plain marks when not on a terminal, and exits 0 without errors", async () => {
    const { team, hooksDir } = await setup({ hooks: { "on_idle.sh": "echo hi\n" }, tasks: [makeTask()] });
    const out = await doctor(["--team-dir", team.teamDir]);
    expect(out.code).toBe(0);
    expect(out.stdout).toContain(
      `pi-teams-hooks doctor: ${team.teamDir}\n\nHooks\n  ok   hooks dir ${hooksDir} (default: <teams root>/_hooks)\n`,
    );
    expect(out.stdout).toContain("  idle (on_idle): on_idle.sh\n    ok   on_idle.sh runs with bash (");
    expect(out.stdout).toContain(
      "  task_completed (on_task_completed): no hook\n    --   no on_task_completed[.sh|.js|.mjs|.ts]: nothing runs\n",
    );
    expect(out.stdout).toContain(
      "  task_started (on_task_started): no hook\n    --   no on_task_started[.sh|.js|.mjs|.ts]: nothing runs\n",
    );
    expect(out.stdout).toContain(
      "\nPolicy (config.json hooks > environment > default; flags of watch and run override)\n  failure action              warn             default\n  max reopens per task        3                default\n  follow-up owner             member           default\n  hook timeout                60000ms          default\n  failure mode task_completed closed           default\n  failure mode task_failed    closed           default\n  failure mode idle           open             default\n  failure mode task_started   closed           default\n  max hooks per event         16               default\n  chain deadline              300000ms         default\n  max payload                 8388608 bytes    default\n  setsid sweep                auto             default\n  exit codes                  v1               default\n  sandbox                     auto             default\n  defer timeout               86400000ms       default\n  writable fields             metadata         default\n  confidential                false            default\n  redact env                  -                default\n  reassign on reopen          true             default\n  projection                  -                default\n",
    );
    const me = os.userInfo().username;
    const heading = `\nAccess (who besides ${me}, the leader's user, can change the gates and its state)\n`;
    expect(out.stdout).toContain(`${heading}  --   the gates, hook-state/, `);
    expect(out.stdout.indexOf("\nAccess (")).toBeGreaterThan(out.stdout.indexOf("\nTeam\n"));
    expect(out.stdout.indexOf("\nAccess (")).toBeLessThan(out.stdout.indexOf("\nPolicy ("));
    expect(out.stdout).toMatch(/\nLocks\n {2}ok {3}no lock files left behind\n\nno problems found\n$/);
    expect(out.stdout).not.toContain("\u001b[");
  });

  it("uses ✓ ! ✗ marks in colour on a terminal, and exits 1 when a gate would not run", async () => {
    const { team } = await setup({ hooks: { on_idle: "echo hi\n" } });
    const out = await doctor(["--team-dir", team.teamDir], { isTTY: true });
    expect(out.code).toBe(1);
    expect(out.stdout).toContain("\u001b[31m✗\u001b[0m skipped on_idle: not executable");
    expect(out.stdout).toContain("\u001b[32m✓\u001b[0m");
    expect(out.stdout).toMatch(/1 error\(s\), \d+ warning\(s\): a gate would not run as configured\n$/);
    const plain = await doctor(["--team-dir", team.teamDir], { isTTY: true, env: { NO_COLOR: "1" } });
    expect(plain.stdout).toContain("    FAIL skipped on_idle: not executable");
  });

  it("--json prints the report as one object", async () => {
    const { team } = await setup({ hooks: { on_idle: "echo hi\n" } });
    const out = await doctor(["--team-dir", team.teamDir, "--json"]);
    expect(out.code).toBe(1);
    const parsed = JSON.parse(out.stdout) as DoctorReport;
    expect(parsed).toEqual(JSON.parse(JSON.stringify(await report(team))));
    expect(parsed.errors).toBe(1);
  });

  it("warns about a line that looks like a settings line but is not read, and shows the one that is", async () => {
    const gate = `#!/usr/bin/env bash\n# pi-teams-hooks: mode=shadow\n# PI-TEAMS-HOOKS: timeout=5s\nexit 0\n`;
    const { team } = await setup({ hooks: { "on_task_completed.sh": { content: gate, mode: 0o755 } } });
    const out = await doctor(["--team-dir", team.teamDir]);
    expect(out.stdout).toContain("on_task_completed.sh settings (line 2): mode=shadow");
    expect(out.stdout).toContain(
      "on_task_completed.sh:3: looks like a settings line, but is not read (only a line that starts `# pi-teams-hooks:` or `// pi-teams-hooks:`, in lower case, is read)",
    );
  });

  it("is a usage error without --team-dir outside a team dir (exit 2)", async () => {
    const out = await doctor([]);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain(
      "--team-dir DIR or --team ID is required (--team looks under $PI_TEAMS_ROOT_DIR), or run the command inside a team dir",
    );
  });
});
