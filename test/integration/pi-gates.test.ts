/**
 * The pi extension's gate service in this process, without pi: the real leader on real team dirs,
 * real hooks, and the files pi-agent-teams writes (a team dir named after the session, an attach
 * claim). What pi would show is what the service notifies.
 */
import { existsSync, readdirSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { GateService, outcomeLine } from "../../extensions/teams-hooks/pi/gates.js";
import { gateSwitch } from "../../extensions/teams-hooks/pi/switch.js";
import { gatesTool } from "../../extensions/teams-hooks/pi/tool.js";
import { attachedTeam } from "../../extensions/teams-hooks/team/attach-claim.js";
import { waitUntil, workerOp, elapse } from "../helpers/leader-rig.js";
import { type PiWorld, createTeam, piWorld } from "../helpers/pi-rig.js";

const SESSION = "01a23d02-aaaa-7000-8000-000000000001";

interface Said {
  text: string;
  level: string;
}

describe("the gate service of the pi extension", () => {
  let w: PiWorld;
  let service: GateService;
  let said: Said[];
  /** The service's phase as it says it follows another team (the old leader stopped, the new one not started). */
  let phasesAtFollowing: string[];
  const notify = (text: string, level: string): void => {
    said.push({ text, level });
    if (text.startsWith("quality gates: following ")) phasesAtFollowing.push(service.status.phase);
  };
  const env = (): Record<string, string> => ({
    PI_TEAMS_ROOT_DIR: w.teamsRoot,
    PATH: process.env.PATH ?? "/usr/bin:/bin",
  });

  beforeEach(async () => {
    w = await piWorld();
    said = [];
    phasesAtFollowing = [];
    service = new GateService({ env: env(), processCwd: w.root, followMs: 100, waitMs: 50, reconcileMs: 100 });
  });
  afterEach(async () => {
    await service.end();
    await rm(w.root, { recursive: true, force: true });
  });

  const sessionDir = (): string => path.join(w.teamsRoot, SESSION);
  // Written as pi-agent-teams writes it, a temp file renamed over the claim: a look never reads it half written
  // (which would be no claim, and move the gates back to the session's team for a look).
  let claims = 0;
  const claim = async (teamDir: string, heartbeatAt = new Date().toISOString(), pid = process.pid) => {
    const file = path.join(teamDir, ".attach-claim.json");
    const temp = `${file}.tmp.${process.pid}.${++claims}`;
    await writeFile(
      temp,
      `${JSON.stringify({ holderSessionId: SESSION, claimedAt: heartbeatAt, heartbeatAt, pid }, null, 2)}\n`,
    );
    await rename(temp, file);
  };

  it("waits for the session's team dir, then gates it", async () => {
    await service.begin(SESSION, notify);
    expect(service.status).toMatchObject({ phase: "waiting", teamDir: sessionDir(), how: "the session's team" });
    const tasksDir = await createTeam(sessionDir(), SESSION);
    await waitUntil("watching", () => service.status.phase === "watching");
    await workerOp("complete", { tasksDir, ids: ["1"] });
    await waitUntil(
      "the pass notification",
      () => said.find((s) => /^Gate on_task_completed\.sh passed for task #1 /.test(s.text)),
      { context: () => JSON.stringify(said) },
    );
    expect(service.status.recent.map((r) => [r.taskId, r.outcome])).toEqual([["1", "passed"]]);
  });

  it("says a pass that let an error through as a warning that names the error", async () => {
    const gate = '#!/usr/bin/env bash\n# pi-teams-hooks: format=claude\necho "linter crashed" >&2\nexit 1\n';
    await writeFile(path.join(w.teamsRoot, "_hooks", "on_task_completed.sh"), gate);
    const tasksDir = await createTeam(sessionDir(), SESSION);
    await service.begin(SESSION, notify);
    await waitUntil("watching", () => service.status.phase === "watching");
    await workerOp("complete", { tasksDir, ids: ["1"] });
    const isPass = (s: Said): boolean => s.text.startsWith("Gate on_task_completed.sh passed");
    const context = (): string => JSON.stringify(said);
    const passed = await waitUntil("the notification", () => said.find(isPass), { context });
    const text = "Gate on_task_completed.sh passed (non-blocking error: exit code 1 • linter crashed) for task #1";
    expect(passed).toEqual({ text, level: "warning" });
  });

  it("follows the team the session attached to while the claim is fresh, and comes back when it goes", {
    timeout: 120_000,
  }, async () => {
    await createTeam(sessionDir(), SESSION);
    const other = path.join(w.teamsRoot, "release-team");
    const otherTasks = await createTeam(other, "release-team");
    await service.begin(SESSION, notify);
    await waitUntil(
      "watching its own team",
      () => service.status.phase === "watching" && service.status.teamDir === sessionDir(),
    );

    // "watching" only once the new team's leader watches: a completion written as soon as it says so is judged
    // (before, it said so from the old leader's stop on, and a first start took the completion as history).
    const unready: string[] = [];
    const sampler = setInterval(() => {
      const now = service.status;
      if (now.phase === "watching" && now.setup?.identity.teamDir !== now.teamDir) unready.push(JSON.stringify(now));
    }, 1);
    try {
      await claim(other);
      await waitUntil(
        "following the attached team",
        () => service.status.phase === "watching" && service.status.teamDir === other,
      );
    } finally {
      clearInterval(sampler);
    }
    expect(unready).toEqual([]);
    expect(phasesAtFollowing).toEqual(["starting"]);
    expect(service.status.how).toBe("attached to team release-team (/team attach)");
    expect(said).toContainEqual({
      text: `quality gates: following attached to team release-team (/team attach): ${other}`,
      level: "info",
    });
    // The session keeps its claim fresh meanwhile, as pi-agent-teams' heartbeat does: on a loaded machine the
    // wait below can outlast the 30 s after which a claim with no heartbeat is no claim.
    let beat = Promise.resolve();
    const heartbeat = setInterval(() => {
      beat = claim(other);
    }, 5_000);
    try {
      await workerOp("complete", { tasksDir: otherTasks, ids: ["2"] });
      // A bound for a loaded machine: this wait once took over 15 s in a whole run beside three other files.
      await waitUntil(
        "the attached team's gate",
        () =>
          said.find((s) =>
            /^Gate on_task_completed\.sh failed for task #2: .*FAIL: build of task 2 is red/.test(s.text),
          ),
        { timeoutMs: 60_000 },
      );
    } finally {
      clearInterval(heartbeat);
      await beat; // a heartbeat under way lands before the stale claim below, not after it
    }
    const log = await readFile(
      path.join(other, "hook-logs", readdirSync(path.join(other, "hook-logs"))[0] ?? ""),
      "utf8",
    );
    expect(JSON.parse(log).invocation.teamDir).toBe(other);

    // A stale claim (no heartbeat for over 30 s) is no claim: back to the session's team.
    await claim(other, new Date(Date.now() - 60_000).toISOString());
    await waitUntil(
      "back on the session's team",
      () => service.status.phase === "watching" && service.status.teamDir === sessionDir(),
    );
    expect(await attachedTeam(w.teamsRoot, SESSION, process.pid, Date.now())).toBeNull();
  });

  it("a claim of another process or another session is not this session's", async () => {
    const other = path.join(w.teamsRoot, "someone-elses");
    await mkdir(other, { recursive: true });
    await claim(other, new Date().toISOString(), process.pid + 1_000_000);
    expect(await attachedTeam(w.teamsRoot, SESSION, process.pid, Date.now())).toBeNull();
    await claim(other);
    expect(await attachedTeam(w.teamsRoot, "another-session", process.pid, Date.now())).toBeNull();
    expect(await attachedTeam(w.teamsRoot, SESSION, process.pid, Date.now())).toBe(other);
    await writeFile(path.join(other, ".attach-claim.json"), "{ not json");
    expect(await attachedTeam(w.teamsRoot, SESSION, process.pid, Date.now())).toBeNull();
  });

  it("survives its team dir deleted by another process: one warning, nothing run meanwhile, gates again once it is back", async () => {
    const tasksDir = await createTeam(sessionDir(), SESSION);
    await service.begin(SESSION, notify);
    await waitUntil("watching", () => service.status.phase === "watching");
    // Deleted the way a cleanup does it: moved away, then removed.
    await rename(sessionDir(), `${sessionDir()}.gone`);
    await rm(`${sessionDir()}.gone`, { recursive: true, force: true });
    await waitUntil("the gone warning", () => said.find((s) => s.level === "warning" && s.text.includes("is gone")), {
      context: () => JSON.stringify(said),
    });
    await elapse(400); // a negative check (one warning only): several reconcile scans while it is gone
    expect(said.filter((s) => s.text.includes("is gone"))).toHaveLength(1);

    const again = await createTeam(sessionDir(), SESSION);
    expect(again).toBe(tasksDir);
    await waitUntil("the back notice", () => said.find((s) => s.level === "info" && /is back/.test(s.text)), {
      context: () => JSON.stringify(said),
    });
    await workerOp("complete", { tasksDir, ids: ["1"] });
    await waitUntil(
      "a gate after the return",
      () => said.find((s) => /^Gate on_task_completed\.sh passed for task #1 /.test(s.text)),
      { context: () => JSON.stringify(said) },
    );
  });

  it("stops on end(): the team's leader lock is released, so watch can take the team", async () => {
    await createTeam(sessionDir(), SESSION);
    await service.begin(SESSION, notify);
    await waitUntil("watching", () => service.status.phase === "watching");
    const lock = path.join(sessionDir(), "hook-state", "leader.lock");
    expect(existsSync(lock)).toBe(true);
    await service.end();
    expect(service.status.phase).toBe("off");
    expect(existsSync(lock)).toBe(false);
  });

  it("the tool: policy_set refuses a bad value with the allowed ones, writes a good one; recent_failures lists the bounced task", async () => {
    const tasksDir = await createTeam(sessionDir(), SESSION);
    await service.begin(SESSION, notify);
    await waitUntil("watching", () => service.status.phase === "watching");
    const tool = gatesTool(
      {
        service: async () => service,
        report: () => import("../../extensions/teams-hooks/pi/report.js"),
        origin: async () => "source" as const,
      },
      env(),
      w.root,
    );
    await expect(
      tool.execute(
        "t1",
        { action: "policy_set", failureAction: "reopen-followup" },
        undefined,
        undefined,
        undefined as never,
      ),
    ).rejects.toThrow(
      'policy_set refused: failureAction: "reopen-followup" is not valid; expected one of warn, followup, reopen, reopen_followup',
    );
    const set = await tool.execute(
      "t2",
      { action: "policy_set", failureAction: "reopen", maxReopens: 1 },
      undefined,
      undefined,
      undefined as never,
    );
    expect(set.content[0]?.text).toMatch(/failure action\s+reopen\s+config\.json/);
    expect(JSON.parse(await readFile(path.join(sessionDir(), "config.json"), "utf8")).hooks).toEqual({
      failureAction: "reopen",
      maxReopensPerTask: 1,
    });

    await waitUntil("the new policy in force", () => service.status.setup?.settings.values.failureAction === "reopen");
    await workerOp("complete", { tasksDir, ids: ["2"] });
    await waitUntil("the failure", () => service.status.recent.find((r) => r.taskId === "2"));
    const failures = await tool.execute("t3", { action: "recent_failures" }, undefined, undefined, undefined as never);
    expect(failures.content[0]?.text).toMatch(
      /task_completed #2 brian on_task_completed\.sh failed: exit code 1 • FAIL: build of task 2 is red → reopened \(1\/1\)/,
    );
    expect((failures.details as { failures: unknown[] }).failures).toHaveLength(1);
  });
});

describe("the switch", () => {
  it.each([
    [{}, undefined, false, null],
    [{ PI_TEAMS_GATES: "1" }, undefined, true, null],
    [{}, true, true, null],
    [{ PI_TEAMS_GATES: "1", PI_TEAMS_WORKER: "1" }, true, false, null],
    [{ PI_TEAMS_GATES: "1", PI_TEAMS_HOOKS_ENABLED: "1" }, undefined, false, "warning"],
    [{ PI_TEAMS_HOOKS_ENABLED: "1" }, true, false, "warning"],
    [{ PI_TEAMS_HOOKS_ENABLED: "1" }, undefined, false, "info"],
  ] as const)("env %j, --gates %s: on %s, notice %s", (env, flag, on, notice) => {
    const decided = gateSwitch(env, flag);
    expect(decided.on).toBe(on);
    expect(decided.on ? null : (decided.notice?.level ?? null)).toBe(notice);
  });

  it("says passes of task events in one line, failures with their summary and actions, idle passes not at all", () => {
    const base = {
      time: "",
      key: "k",
      event: "task_completed" as const,
      taskId: "3",
      member: "ada",
      hook: "on_task_completed.sh",
      timedOut: false,
      durationMs: 120,
      retry: false,
      logFile: null,
      policyApplied: true,
    };
    expect(outcomeLine({ ...base, outcome: "passed", summary: "passed", actions: ["none"] })).toEqual({
      text: "Gate on_task_completed.sh passed for task #3 (120ms)",
      level: "info",
    });
    expect(
      outcomeLine({
        ...base,
        outcome: "failed",
        summary: "exit code 1 • lint",
        actions: ["reopened (1/3)", "nudge ada"],
      }),
    ).toEqual({
      text: "Gate on_task_completed.sh failed for task #3: exit code 1 • lint → reopened (1/3), nudge ada",
      level: "warning",
    });
    expect(
      outcomeLine({ ...base, event: "idle", taskId: null, outcome: "passed", summary: "", actions: [] }),
    ).toBeNull();
    const idle = { event: "idle" as const, taskId: null, hook: "on_idle.sh", outcome: "passed" as const };
    const nothing = { summary: "", actions: [] };
    const idleError = { ...base, ...idle, ...nothing };
    expect(outcomeLine({ ...idleError, nonBlocking: "exit code 1 • lint crashed" })).toEqual({
      text: "Gate on_idle.sh passed (non-blocking error: exit code 1 • lint crashed) for idle ada",
      level: "warning",
    });
    expect(outcomeLine({ ...base, outcome: "no_hook", summary: "no hook", actions: [] })).toBeNull();
    const claim = { ...base, event: "task_started" as const, hook: "on_task_started.sh" };
    expect(
      outcomeLine({
        ...claim,
        outcome: "failed",
        summary: "denied (deps.open) • #2 open",
        actions: ["claim put back (denial 1)", "told ada"],
      }),
    ).toEqual({
      text: "Gate on_task_started.sh failed for the claim of task #3: denied (deps.open) • #2 open → claim put back (denial 1), told ada",
      level: "warning",
    });
  });
});
