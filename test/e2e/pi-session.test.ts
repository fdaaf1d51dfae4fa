/**
 * The extension inside real pi (RPC mode, no model, no network) as a team leader: the team dir comes
 * from the session id, the test acts as two workers in it, and reads what a pi user would see (the
 * notifications, `/gates status`, the `quality_gates` tool's answer to the leader's model).
 */
import { existsSync } from "node:fs";
import { chmod, mkdir, readFile, readdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, hookProcesses, waitUntil, workerOp } from "../helpers/leader-rig.js";
import {
  PI_TEST_MS,
  PI_WAIT_MS,
  PiRpc,
  SCRIPTED_MODEL,
  TEAM_CLEANUP,
  type PiWorld,
  createTeam,
  piEnv,
  piMissing,
  piWorld,
} from "../helpers/pi-rig.js";

const missing = piMissing();
if (missing) console.warn(`skipping the real-pi tests: ${missing}`);

async function sessionId(pi: PiRpc): Promise<string> {
  const state = await pi.request({ type: "get_state" });
  const id = (state.data as { sessionId?: unknown } | undefined)?.sessionId;
  if (typeof id !== "string" || !id) throw new Error(`get_state gave no session id: ${JSON.stringify(state)}`);
  return id;
}

describe.skipIf(missing !== null)("in real pi, as a team leader", { timeout: PI_TEST_MS }, () => {
  let w: PiWorld;
  beforeAll(async () => {
    await ensureBuilt(); // the extension loads the leader from the build when it is current (pi/load.ts)
    w = await piWorld();
  });
  afterAll(async () => {
    await rm(w.root, { recursive: true, force: true });
  });

  it("gates the session's team: a pass, a failure reopened with a follow-up, /gates status and the tool's answer, a clean exit", async () => {
    const calls = [{ name: "quality_gates", arguments: { action: "recent_failures" } }];
    const pi = new PiRpc({
      env: piEnv(w.home, {
        PI_TEAMS_ROOT_DIR: w.teamsRoot,
        PI_TEAMS_GATES: "1",
        PI_TEST_TOOL_CALLS: JSON.stringify(calls),
      }),
      cwd: w.root,
      extensions: [SCRIPTED_MODEL],
      args: ["--provider", "scripted", "--model", "caller"],
    });
    try {
      const id = await sessionId(pi);
      const teamDir = path.join(w.teamsRoot, id);
      // Before the team exists, the extension waits for it (pi-agent-teams creates it at session start).
      expect((await pi.command("/gates status", /quality gates:/)).message).toContain(
        `waiting for the team dir ${teamDir}`,
      );

      const tasksDir = await createTeam(teamDir, id);
      await waitUntil(
        "the leader to watch the team",
        async () => /quality gates: watching/.test((await pi.command("/gates status", /quality gates:/)).message),
        { timeoutMs: PI_WAIT_MS, intervalMs: 300, context: () => pi.context() },
      );

      // The lead picks the policy from pi, with the CLI's validation: a typo is refused, naming the values.
      const typo = await pi.command("/gates policy set --failure-action reopen-followup", /failure-action/);
      expect(typo.level).toBe("error");
      expect(typo.message).toMatch(/reopen_followup/);
      const set = await pi.command("/gates policy set --failure-action reopen_followup", /config\.json/);
      expect(set.level).toBe("info");
      expect(set.message).toMatch(/failure action\s+reopen_followup\s+config\.json/);
      await waitUntil(
        "the leader to apply the new policy",
        async () =>
          /failure action\s+reopen_followup/.test((await pi.command("/gates status", /quality gates:/)).message),
        { timeoutMs: PI_WAIT_MS, intervalMs: 300, context: () => pi.context() },
      );

      await Promise.all([
        workerOp("complete", { tasksDir, ids: ["1"] }),
        workerOp("complete", { tasksDir, ids: ["2"] }),
      ]);

      const pass = await pi.waitForNotice(/^Gate on_task_completed\.sh passed for task #1 \(\d+(\.\d)?m?s\)$/);
      expect(pass.level).toBe("info");
      const fail = await pi.waitForNotice(/^Gate on_task_completed\.sh failed for task #2/);
      expect(fail.level).toBe("warning");
      expect(fail.message).toContain("FAIL: build of task 2 is red");
      expect(fail.message).toMatch(/→ reopened \(1\/\d+\), reassigned to brian, follow-up #3 for brian/);

      const reopened = JSON.parse(await readFile(path.join(tasksDir, "2.json"), "utf8")) as { status: string };
      expect(reopened.status).toBe("pending");
      const followup = JSON.parse(await readFile(path.join(tasksDir, "3.json"), "utf8")) as {
        subject: string;
        owner?: string;
      };
      expect(followup.subject).toBe("Quality gate failed: on_task_completed (task #2)");

      const status = (await pi.command("/gates status", /quality gates:/)).message;
      expect(status).toContain(`team dir: ${teamDir} (the session's team)`);
      expect(status).toMatch(/task_completed\s+on_task_completed\.sh \(global\)\s+trusted/);
      expect(status).toMatch(/failure action\s+reopen_followup\s+config\.json hooks\.failureAction/);
      expect(status).toContain("last 5 outcomes:");
      expect(status).toMatch(/#2\s+brian\s+on_task_completed\.sh\s+failed/);
      // The suite builds first, so pi gets the compiled leader rather than compiling the sources itself.
      expect(status).toContain("code: the compiled build (dist/)");

      const logs = await pi.command("/gates logs --task 2", /time \(UTC\)/);
      expect(logs.message.split("\n").slice(1)).toEqual([
        expect.stringMatching(/task_completed\s+#2\s+brian\s+on_task_completed\.sh\s+failed/),
      ]);
      expect((await pi.command("/gates logs --follow", /follow/)).message).toMatch(/would hold the session/);
      const doctor = await pi.command("/gates doctor", /^pi-teams-hooks doctor:/);
      expect(doctor.message).toContain(`pi-teams-hooks doctor: ${teamDir}`);
      expect(doctor.message).toMatch(/ok\s+on_task_completed\.sh runs with bash/);

      // The leader's model asks why task #2 bounced.
      expect((await pi.request({ type: "prompt", message: "why did task 2 bounce?" })).success).toBe(true);
      const answer = await waitUntil(
        "the tool's result",
        () => pi.lines.find((l) => l.type === "tool_execution_end" && l.toolName === "quality_gates"),
        { timeoutMs: PI_WAIT_MS, context: () => pi.context() },
      );
      expect(answer.isError).toBe(false);
      const text = (answer.result as { content: Array<{ text: string }> }).content[0]?.text ?? "";
      expect(text).toMatch(
        /task_completed #2 brian on_task_completed\.sh failed: .*FAIL: build of task 2 is red.*reopened/,
      );
      expect(text).toMatch(/\(log \S+_task_completed_task-2\S*\.json\)/);

      const runs = (await readFile(path.join(w.teamsRoot, "gate-runs.txt"), "utf8")).trim().split("\n").sort();
      expect(runs).toEqual(["1", "2"]);

      // A new session is a new team: the old team's leader stops (its lock goes), the new one is awaited.
      expect((await pi.request({ type: "new_session" })).success).toBe(true);
      const next = await sessionId(pi);
      expect(next).not.toBe(id);
      expect((await pi.command("/gates status", /quality gates:/)).message).toContain(
        `waiting for the team dir ${path.join(w.teamsRoot, next)}`,
      );
      expect(existsSync(path.join(teamDir, "hook-state", "leader.lock"))).toBe(false);

      const exit = await pi.close();
      expect(exit).toEqual({ code: 0, signal: null });
      expect(await hookProcesses(teamDir)).toEqual([]);
    } finally {
      if (pi.child.exitCode === null) pi.child.kill("SIGKILL");
    }
  });

  it("does not start beside pi-agent-teams' own hook runner (PI_TEAMS_HOOKS_ENABLED=1), says why once, and runs no gate", async () => {
    const pi = new PiRpc({
      env: piEnv(w.home, { PI_TEAMS_ROOT_DIR: w.teamsRoot, PI_TEAMS_GATES: "1", PI_TEAMS_HOOKS_ENABLED: "1" }),
      cwd: w.root,
    });
    try {
      const id = await sessionId(pi);
      const teamDir = path.join(w.teamsRoot, id);
      const notice = await pi.waitForNotice(/quality gates not started/);
      expect(notice.level).toBe("warning");
      expect(notice.message).toContain("PI_TEAMS_HOOKS_ENABLED=1");
      expect(notice.message).toMatch(/unset PI_TEAMS_HOOKS_ENABLED.*or drop PI_TEAMS_GATES=1/);

      const tasksDir = await createTeam(teamDir, id);
      await workerOp("complete", { tasksDir, ids: ["1", "2"] });
      // A new session (pi replaces it, the extension starts again): still off, and not said twice.
      expect((await pi.request({ type: "new_session" })).success).toBe(true);
      const status = (await pi.command("/gates status", /quality gates:/)).message;
      expect(status).toContain("quality gates: off — pi-agent-teams' own hook runner is on");
      expect(pi.notices().filter((n) => /quality gates not started/.test(n.message))).toHaveLength(1);

      expect(await pi.close()).toEqual({ code: 0, signal: null });
      expect(await readdir(teamDir)).not.toContain("hook-logs");
      expect(await readdir(teamDir)).not.toContain("hook-state");
    } finally {
      if (pi.child.exitCode === null) pi.child.kill("SIGKILL");
    }
  });

  it("exits without a word when pi-agent-teams removes the session's empty team at shutdown", async () => {
    // Its handler runs before ours, as when pi-agent-teams is loaded first: the folder is gone when
    // our leader stops.
    const env = piEnv(w.home, { PI_TEAMS_ROOT_DIR: w.teamsRoot, PI_TEAMS_GATES: "1" });
    const pi = new PiRpc({ env, cwd: w.root, first: [TEAM_CLEANUP] });
    try {
      const id = await sessionId(pi);
      const teamDir = path.join(w.teamsRoot, id);
      await createTeam(teamDir, id, { empty: true });
      const status = async () => (await pi.command("/gates status", /quality gates:/)).message;
      const watching = async () => /quality gates: watching/.test(await status());
      await waitUntil("watching", watching, { timeoutMs: PI_WAIT_MS, intervalMs: 300, context: () => pi.context() });
      expect(existsSync(path.join(teamDir, "hook-state", "leader.lock"))).toBe(true);

      expect(await pi.close()).toEqual({ code: 0, signal: null });
      // Removed, and nothing of ours written there again (the scan state, the ledger, the lock).
      expect(existsSync(teamDir)).toBe(false);
      expect(pi.notices().filter((n) => n.level !== "info")).toEqual([]);
      expect(pi.stderr).not.toMatch(/not saved|warning|error/i);
    } finally {
      if (pi.child.exitCode === null) pi.child.kill("SIGKILL");
    }
  });

  it("on exit, a gate still running gets its grace and then ends with its whole process group; pi exits 0", async () => {
    // Switched on by pi's flag this time, not the environment.
    const pi = new PiRpc({ env: piEnv(w.home, { PI_TEAMS_ROOT_DIR: w.teamsRoot }), cwd: w.root, args: ["--gates"] });
    try {
      const id = await sessionId(pi);
      const teamDir = path.join(w.teamsRoot, id);
      const tasksDir = await createTeam(teamDir, id);
      // The team's own layer replaces the global gate with one that never ends, and a child of its own.
      await mkdir(path.join(teamDir, "hooks"), { recursive: true });
      await writeFile(path.join(teamDir, "hooks", "on_task_completed.sh"), "#!/bin/sh\nsleep 600 &\nsleep 600\n");
      await chmod(path.join(teamDir, "hooks", "on_task_completed.sh"), 0o755);
      await waitUntil(
        "watching",
        async () => /quality gates: watching/.test((await pi.command("/gates status", /quality gates:/)).message),
        { timeoutMs: PI_WAIT_MS, intervalMs: 300, context: () => pi.context() },
      );
      await workerOp("complete", { tasksDir, ids: ["1"] });
      await waitUntil("the hanging gate and its child", async () => (await hookProcesses(teamDir)).length >= 2, {
        timeoutMs: PI_WAIT_MS,
      });
      // The session is not held by it: the command answers while the gate runs.
      expect((await pi.command("/gates status", /quality gates:/)).message).toMatch(/quality gates: watching/);

      expect(await pi.close(PI_WAIT_MS)).toEqual({ code: 0, signal: null });
      expect(await hookProcesses(teamDir)).toEqual([]);
    } finally {
      if (pi.child.exitCode === null) pi.child.kill("SIGKILL");
    }
  });
});
