/**
 * Failure policies end to end: `pi-teams-hooks watch` runs as a child process on a temp team dir, a
 * worker process completes a task twice (with the lock protocol), and a gate that fails (exit 1 with a
 * stderr line) or passes is applied. Each case asserts what a team leader would look at: the hook logs
 * (one per run, with a `policy` block), the task's metadata, the reopen cap, the follow-up tasks and
 * the messages in the task namespace — and that the leader's own writes never start another run.
 */
import { readFile, rename, writeFile } from "node:fs/promises";
import { type ExpectStatic, describe, expect, expect as globalExpect, it } from "vitest";
import type { Task } from "../../extensions/teams-hooks/contract/team-files.js";
import {
  type LeaderProcess,
  type LeaderRig,
  readAllTaskFiles,
  readHighWatermark,
  readInboxFile,
  readLogs,
  readTaskFile,
  releaseHooks,
  UNTIL_RELEASED,
  useLeaderRig,
  elapse,
} from "../helpers/leader-rig.js";

const rig = useLeaderRig();
const outerRig = rig;

const RECONCILE_MS = 200;
const LIST = "sprint-1";
const LEAD = "boss";
const HOOK = "on_task_completed.sh";
/** The gate's name in metadata, subjects and messages: the v1 file's base name, as pi-agent-teams has it. */
const GATE = "on_task_completed";
const FAILURE_SUMMARY = "exit code 1 • lint failed: 3 problems";
const FAILING_GATE = `echo "checking task $PI_TEAMS_TASK_ID"\necho "lint failed: 3 problems" >&2\nexit 1`;
/** A task_failed hook that must never run here: the leader's reopen is not a failure. */
const NEVER_FAILED = `echo "$PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/failed-runs.txt"`;
const EARLIER_ABORT = "2025-01-01T00:00:00.000Z";

type Action = "warn" | "followup" | "reopen" | "reopen_followup";
type Owner = "member" | "lead" | "none";

async function policyTeam(r: LeaderRig = rig) {
  return r.team({
    config: {
      version: 1,
      teamId: "alpha",
      taskListId: LIST,
      leadName: LEAD,
      createdAt: EARLIER_ABORT,
      updatedAt: EARLIER_ABORT,
      members: [],
    },
    tasks: [
      // Worked on by alice, who gave it up once before (an old abortedAt the reopen must not revive).
      {
        id: "1",
        subject: "Add the login form",
        description: "With validation",
        owner: "alice",
        status: "in_progress",
        blocks: [],
        blockedBy: [],
        metadata: { abortedAt: EARLIER_ABORT, abortedBy: "alice", abortReason: "flaky test" },
        createdAt: EARLIER_ABORT,
        updatedAt: EARLIER_ABORT,
        reviewer: "carol", // an unknown field: kept by every rewrite
      },
      {
        id: "2",
        subject: "Unrelated",
        description: "",
        owner: "dave",
        status: "pending",
        blocks: [],
        blockedBy: [],
        createdAt: EARLIER_ABORT,
        updatedAt: EARLIER_ABORT,
      },
    ],
    highWatermark: 2,
  });
}

/** Waits long enough for two reconcile passes to have found anything a watcher missed, then checks nothing new ran. */
async function expectSettled(
  leader: LeaderProcess,
  events: number,
  expect: ExpectStatic = globalExpect,
): Promise<void> {
  await elapse(RECONCILE_MS * 3); // a negative check: only time can show it
  expect(leader.events().map((e) => e.key)).toHaveLength(events);
}

function parseAssignment(text: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(text) as unknown;
    return value !== null && typeof value === "object" && (value as { type?: unknown }).type === "task_assignment"
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

const ACTIONS: Action[] = ["warn", "followup", "reopen", "reopen_followup"];
const OWNERS: Owner[] = ["member", "lead", "none"];
const CASES = ACTIONS.flatMap((action) => OWNERS.map((owner) => ({ action, owner })));

// Twelve leaders at once (each on its own team dir): the cases are independent, and mostly wait.
describe.concurrent("a failing gate, twice on one task, with --max-reopens 1 (the task's budget: one reopen or follow-up)", () => {
  it.for(CASES)(
    "--failure-action $action --followup-owner $owner",
    { timeout: 60_000 },
    async ({ action, owner }, context) => {
      const { expect } = context;
      const rig = outerRig.scoped(context);
      const team = await policyTeam(rig);
      await rig.hook(team, HOOK, FAILING_GATE);
      await rig.hook(team, "on_task_failed.sh", NEVER_FAILED);
      const leader = await rig.leader(team, [
        "--failure-action",
        action,
        "--followup-owner",
        owner,
        "--max-reopens",
        "1",
        "--reconcile-ms",
        String(RECONCILE_MS),
      ]);
      expect(leader.linesOf("policy")[0]).toMatchObject({
        policy: { failureAction: action, maxReopensPerTask: 1, followupOwner: owner },
        sources: { failureAction: "flag", maxReopensPerTask: "flag", followupOwner: "flag" },
      });

      const reopens = action === "reopen" || action === "reopen_followup";
      const followups = action === "followup" || action === "reopen_followup";
      // A reopen or a follow-up spends the task's budget (one unit a failure): the second failure finds it spent.
      const spends = reopens || followups;
      const followupOwner = owner === "member" ? "alice" : owner === "lead" ? LEAD : undefined;

      // First completion: the gate fails.
      const first = await rig.worker<{ final: Record<string, string> }>("complete", {
        tasksDir: team.tasksDir,
        ids: ["1"],
      });
      const key1 = `task_completed:1:${first.final["1"]}`;
      const [event1] = await leader.waitForEvents(1);
      expect(event1).toMatchObject({
        key: key1,
        event: "task_completed",
        taskId: "1",
        member: "alice",
        hook: HOOK,
        outcome: "failed",
        summary: FAILURE_SUMMARY,
        retry: false,
      });
      const afterFirst = await readTaskFile(team, "1");
      expect(afterFirst.status).toBe(reopens ? "pending" : "completed");
      expect(afterFirst.metadata?.reopenedByQualityGateCount).toBe(reopens ? 1 : undefined);

      // Second completion (alice fixed it, or not): fails again; a second reopen or follow-up would pass the budget.
      const second = await rig.worker<{ final: Record<string, string> }>("complete", {
        tasksDir: team.tasksDir,
        ids: ["1"],
      });
      // After the leader's reopen the task is in its next gate round: a new event whatever its stamp.
      const key2 = `task_completed:1:${second.final["1"]}${reopens ? "#r1" : ""}`;
      await leader.waitForEvents(2);
      await expectSettled(leader, 2, expect);

      // Hook logs: one per run, each with the policy that was applied.
      const logs = await readLogs(team.teamDir);
      expect(logs.map((l) => l.key)).toEqual([key1, key2]);
      for (const log of logs) {
        expect(log.result).toMatchObject({ outcome: "failed", exitCode: 1, timedOut: false });
        expect(log.result.stderr).toContain("lint failed: 3 problems");
        expect(log.invocation).toMatchObject({
          event: "task_completed",
          teamId: "alpha",
          taskListId: LIST,
          memberName: "alice",
        });
        expect(log.policy).toMatchObject({
          failureAction: action,
          maxReopensPerTask: 1,
          followupOwner: owner,
          passed: false,
        });
        expect(log.retry).toBeUndefined();
      }
      expect(logs[0]?.policy?.reopen).toEqual(reopens ? { kind: "reopen", count: 1, max: 1 } : null);
      expect(logs[1]?.policy?.reopen).toEqual(reopens ? { kind: "suppressed", count: 1, max: 1 } : null);

      // The task: gate metadata, its own fields and unknown ones kept.
      const task = await readTaskFile(team, "1");
      expect(task).toMatchObject({ subject: "Add the login form", owner: "alice", reviewer: "carol" });
      expect(task.metadata).toMatchObject({
        completedAt: second.final["1"],
        result: "done (1)",
        abortedAt: EARLIER_ABORT,
        qualityGateHook: GATE,
        qualityGateStatus: "failed",
        qualityGateSummary: FAILURE_SUMMARY,
        qualityGateFailureCount: 2,
        qualityGateLastFailureAt: expect.any(String),
        qualityGateAt: expect.any(String),
      });
      expect(task.metadata?.qualityGateLastSuccessAt).toBeUndefined();
      if (reopens) {
        // The second failure found the budget spent: the task stays completed, and says why.
        expect(task.status).toBe("completed");
        expect(task.metadata).toMatchObject({
          reopenedByQualityGateCount: 1,
          reopenedByQualityGateHook: GATE,
          reopenedByQualityGateAt: expect.any(String),
          qualityGateReopenSuppressed: true,
          qualityGateReopenSuppressedReason: "the gate budget of task #1 is spent (1 of 1 reopens and follow-ups)",
          qualityGateEscalated: true,
        });
      } else {
        expect(task.status).toBe("completed");
        expect(task.metadata?.reopenedByQualityGateCount).toBeUndefined();
        expect(task.metadata?.qualityGateReopenSuppressed).toBeUndefined();
        expect(task.metadata?.qualityGateEscalated).toBe(followups ? true : undefined);
      }
      // The unit spent is recorded on the task (its tree's root) by the key that spent it.
      expect(task.metadata?.qualityGateBudgetKeys).toEqual(spends ? [key1] : undefined);

      // Follow-up tasks: one, for the first failure (the second found the budget spent), id from .highwatermark,
      // owner by policy.
      const tasks = await readAllTaskFiles(team);
      const created = [...tasks.values()]
        .filter((t) => t.id !== "1" && t.id !== "2")
        .sort((a, b) => Number(a.id) - Number(b.id));
      if (followups) {
        expect(created.map((t) => t.id)).toEqual(["3"]);
        expect(await readHighWatermark(team)).toBe(3);
        for (const followup of created) {
          expect(followup).toMatchObject({ subject: `Quality gate failed: ${GATE} (task #1)`, status: "pending" });
          expect(followup.owner ?? undefined).toBe(followupOwner);
          expect(followup.metadata).toMatchObject({
            qualityGateFollowupFor: key1,
            qualityGateSourceTaskId: "1",
            qualityGateRootTaskId: "1",
          });
          expect(followup.description).toContain("lint failed: 3 problems");
          expect(followup.description).toContain(action);
        }
      } else {
        expect(created).toEqual([]);
        expect(await readHighWatermark(team)).toBe(2);
      }

      // Messages in the task namespace: an assignment per follow-up for its owner, a nudge per failure for alice.
      const inboxes = new Map<string, Array<{ from: string; text: string; read: boolean }>>();
      for (const member of ["alice", LEAD, "dave"]) inboxes.set(member, await readInboxFile(team, LIST, member));
      const assignments = [...inboxes.entries()].flatMap(([member, messages]) =>
        messages.flatMap((m) => {
          const parsed = parseAssignment(m.text);
          return parsed ? [{ member, ...parsed, from: m.from }] : [];
        }),
      );
      // The reopened task handed back to alice (once, for its one reopen); the follow-up's assignment to its owner.
      const expected = [
        ...(reopens
          ? [
              expect.objectContaining({
                member: "alice",
                type: "task_assignment",
                taskId: "1",
                subject: "Add the login form",
                assignedBy: LEAD,
                from: LEAD,
              }),
            ]
          : []),
        ...(followups && followupOwner
          ? [
              expect.objectContaining({
                member: followupOwner,
                type: "task_assignment",
                taskId: "3",
                subject: `Quality gate failed: ${GATE} (task #1)`,
                assignedBy: LEAD,
                from: LEAD,
              }),
            ]
          : []),
      ];
      const byTask = (m: Record<string, unknown>): string => String(m.taskId);
      expect(assignments.sort((a, b) => byTask(a).localeCompare(byTask(b)))).toEqual(expected);
      const nudges = (inboxes.get("alice") ?? []).filter((m) => parseAssignment(m.text) === null);
      expect(nudges).toHaveLength(2);
      for (const nudge of nudges) {
        expect(nudge).toMatchObject({ from: LEAD, read: false });
        expect(nudge.text).toContain(`Quality gate ${GATE} failed for task #1`);
      }
      if (reopens) {
        expect(nudges[0]?.text).toContain("was reopened");
        expect(nudges[1]?.text).toContain("was not reopened");
      }
      if (followups) {
        expect(nudges[0]?.text).toContain("Follow-up task #3 was created");
        expect(nudges[1]?.text).not.toContain("Follow-up task");
      }
      // Spent: the worker is asked to wait for the lead, not to remediate alone; the lead is told once.
      expect(nudges[1]?.text.includes("Please wait for the lead")).toBe(spends);
      expect(nudges[1]?.text.includes("remediate automatically")).toBe(!spends);
      const escalations = (await readInboxFile(team, "team", LEAD)).filter((m) => m.text.includes("is spent"));
      expect(escalations).toHaveLength(spends ? 1 : 0);
      expect(inboxes.get("dave")).toEqual([]);
      // Nothing in the team namespace for members (the leader's inbox is for workers to write).
      expect(await readInboxFile(team, "team", "alice")).toEqual([]);

      // The reopen's pending state (with an old abortedAt) was never taken for a failure.
      expect(leader.events((e) => e.event !== "task_completed")).toEqual([]);
      expect(leader.warnings()).toEqual([]);
      expect(await leader.stop()).toMatchObject({ code: 0 });
    },
  );
});

describe("gates that pass, and completions the leader's own writes must not repeat", () => {
  it("a passing gate records passed, clears suppression, and tells no one", async () => {
    const team = await policyTeam();
    await rig.hook(team, HOOK, "exit 0");
    const leader = await rig.leader(team, [
      "--failure-action",
      "reopen_followup",
      "--reconcile-ms",
      String(RECONCILE_MS),
    ]);
    const done = await rig.worker<{ final: Record<string, string> }>("complete", {
      tasksDir: team.tasksDir,
      ids: ["1"],
    });
    const [event] = await leader.waitForEvents(1);
    expect(event).toMatchObject({ outcome: "passed", actions: ["none"] });
    await expectSettled(leader, 1);

    const task = await readTaskFile(team, "1");
    expect(task.status).toBe("completed");
    expect(task.metadata).toMatchObject({
      completedAt: done.final["1"],
      qualityGateHook: GATE,
      qualityGateStatus: "passed",
      qualityGateSummary: expect.stringMatching(/^passed in \d+ms$/),
      qualityGateLastSuccessAt: expect.any(String),
      qualityGateReopenSuppressed: false,
    });
    expect(task.metadata?.qualityGateFailureCount).toBeUndefined();
    const logs = await readLogs(team.teamDir);
    expect(logs).toHaveLength(1);
    expect(logs[0]?.policy).toMatchObject({
      passed: true,
      failureAction: "reopen_followup",
      followupTaskId: null,
      nudged: null,
    });
    expect((await readAllTaskFiles(team)).size).toBe(2);
    expect(await readInboxFile(team, LIST, "alice")).toEqual([]);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it.each(["passes", "fails"] as const)(
    "a completion without metadata.completedAt (keyed by updatedAt) runs once when its gate %s",
    async (verdict) => {
      const team = await policyTeam();
      await rig.hook(team, HOOK, verdict === "passes" ? "exit 0" : FAILING_GATE);
      const leader = await rig.leader(team, ["--failure-action", "warn", "--reconcile-ms", String(RECONCILE_MS)]);
      // A runtime that marks completion by status alone: the key is the task's updatedAt, which the
      // gate's own metadata write changes.
      const updatedAt = new Date().toISOString();
      const completed: Task & Record<string, unknown> = {
        ...(await readTaskFile(team, "1")),
        status: "completed",
        updatedAt,
      };
      await writeFile(`${team.taskFile("1")}.tmp.test.1`, `${JSON.stringify(completed, null, 2)}\n`);
      await rename(`${team.taskFile("1")}.tmp.test.1`, team.taskFile("1"));

      const [event] = await leader.waitForEvents(1);
      expect(event?.key).toBe(`task_completed:1:${updatedAt}`);
      await expectSettled(leader, 1);
      const task = await readTaskFile(team, "1");
      expect(task.updatedAt).not.toBe(updatedAt); // the gate did rewrite it
      expect(task.metadata?.qualityGateStatus).toBe(verdict === "passes" ? "passed" : "failed");
      expect(await readLogs(team.teamDir)).toHaveLength(1);
      expect(await leader.stop()).toMatchObject({ code: 0 });
    },
  );
});

describe("task_failed and idle", () => {
  it("a failed task_failed gate under reopen_followup creates a follow-up and a nudge, and reopens nothing", async () => {
    const team = await policyTeam();
    await rig.hook(team, "on_task_failed.sh", `echo "flaky again" >&2\nexit 3`);
    const leader = await rig.leader(team, [
      "--failure-action",
      "reopen_followup",
      "--reconcile-ms",
      String(RECONCILE_MS),
    ]);
    const aborted = await rig.worker<{ final: Record<string, string> }>("abort", {
      tasksDir: team.tasksDir,
      ids: ["1"],
      reason: "cannot reproduce",
    });
    const [event] = await leader.waitForEvents(1);
    expect(event).toMatchObject({
      key: `task_failed:1:${aborted.final["1"]}`,
      outcome: "failed",
      summary: "exit code 3 • flaky again",
    });
    await expectSettled(leader, 1);

    const task = await readTaskFile(team, "1");
    expect(task.status).toBe("pending");
    expect(task.metadata).toMatchObject({
      abortReason: "cannot reproduce",
      qualityGateStatus: "failed",
      qualityGateHook: "on_task_failed",
      qualityGateFailureCount: 1,
    });
    expect(task.metadata?.reopenedByQualityGateCount).toBeUndefined();
    const followup = await readTaskFile(team, "3");
    expect(followup).toMatchObject({ subject: "Quality gate failed: on_task_failed (task #1)", owner: "alice" });
    const inbox = await readInboxFile(team, LIST, "alice");
    expect(inbox.map((m) => (parseAssignment(m.text) ? "assignment" : "nudge"))).toEqual(["assignment", "nudge"]);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("a failed on_idle gate is only reported: no metadata, no follow-up, no message", async () => {
    const team = await policyTeam();
    await rig.hook(team, "on_idle.sh", `echo "bob left work unfinished" >&2\nexit 1`);
    const leader = await rig.leader(team, [
      "--failure-action",
      "reopen_followup",
      "--reconcile-ms",
      String(RECONCILE_MS),
    ]);
    const before = await readAllTaskFiles(team);
    await rig.worker("idle", { inboxFile: team.inboxFile("team", LEAD), from: "bob" });
    const [event] = await leader.waitForEvents(1);
    expect(event).toMatchObject({ event: "idle", member: "bob", outcome: "failed", actions: [] });
    await expectSettled(leader, 1);
    const [log] = await readLogs(team.teamDir);
    expect(log?.policy).toBeUndefined();
    expect(await readAllTaskFiles(team)).toEqual(before);
    for (const member of ["bob", "alice", LEAD]) expect(await readInboxFile(team, LIST, member)).toEqual([]);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});

describe("where the policy comes from", () => {
  it("flag over config.json over environment over default, each with its source; a bad config value is a warning naming it", async () => {
    const team = await rig.team({
      config: {
        version: 1,
        teamId: "alpha",
        taskListId: LIST,
        leadName: LEAD,
        hooks: { failureAction: "reopen" },
        members: [],
      },
    });
    await rig.hook(team, HOOK, "exit 0");
    const env = {
      PI_TEAMS_HOOKS_FAILURE_ACTION: "followup",
      PI_TEAMS_HOOKS_MAX_REOPENS_PER_TASK: "5",
      PI_TEAMS_HOOKS_FOLLOWUP_OWNER: "none",
    };
    const leader = await rig.leader(team, ["--followup-owner", "lead"], { env });
    expect(leader.linesOf("policy")[0]).toMatchObject({
      policy: { failureAction: "reopen", maxReopensPerTask: 5, followupOwner: "lead" },
      sources: { failureAction: "config", maxReopensPerTask: "env", followupOwner: "flag" },
    });
    expect(await leader.stop()).toMatchObject({ code: 0 });

    // Issue 5: the hooks block is checked whole. One bad value refuses all of it (never half), with a
    // warning naming the field and the value, and the environment applies to every setting.
    await writeFile(
      `${team.teamDir}/config.json`,
      JSON.stringify({
        version: 1,
        teamId: "alpha",
        taskListId: LIST,
        leadName: LEAD,
        hooks: { failureAction: "reopen", maxReopensPerTask: "many" },
      }),
    );
    const refused = await rig.leader(team, [], { env });
    expect(refused.linesOf("policy")[0]).toMatchObject({
      policy: { failureAction: "followup", maxReopensPerTask: 5, followupOwner: "none" },
      sources: { failureAction: "env", maxReopensPerTask: "env", followupOwner: "env" },
    });
    expect(
      refused
        .warnings()
        .some((w) => w.includes("hooks.maxReopensPerTask") && w.includes("many") && w.includes("refused whole")),
    ).toBe(true);
    expect(await refused.stop()).toMatchObject({ code: 0 });

    // A bad flag is a usage error.
    const bad = await rig.leader(team, ["--failure-action", "explode"], { waitForWatching: false });
    expect(await bad.exited).toEqual({ code: 2, signal: null });
    expect(bad.stderr).toContain("explode");
  });
});

describe("a completion that arrives while the gate of the previous one runs", () => {
  // A worker that fixes its work and completes again while a slow gate (a test suite) still judges
  // the broken completion must not get the fixed completion reopened: policy.ts decideReopen only
  // reopens the completion the gate judged. The stale failure is recorded; the newer one is left alone.
  it("the failed gate of an older completion does not reopen the newer one", async () => {
    const team = await policyTeam();
    await rig.hook(
      team,
      HOOK,
      [
        `echo "start $PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/marks.txt"`,
        // The broken completion's gate runs until the test has written the fixed one (however slow the machine).
        `case "$PI_TEAMS_HOOK_CONTEXT_JSON" in *broken*) ${UNTIL_RELEASED}; echo "tests failed" >&2; exit 1;; esac`,
        "exit 0",
      ].join("\n"),
    );
    const leader = await rig.leader(team, ["--failure-action", "reopen", "--reconcile-ms", String(RECONCILE_MS)]);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"], result: "broken" });
    await leader.waitFor("the gate of the broken completion to start", async () => {
      return (await readFile(`${team.teamDir}/marks.txt`, "utf8").catch(() => "")).includes("start 1");
    });
    const fixed = await rig.worker<{ final: Record<string, string> }>("complete", {
      tasksDir: team.tasksDir,
      ids: ["1"],
      result: "fixed",
    });
    await releaseHooks(team.teamDir);
    const [broken, good] = await leader.waitForEvents(2);
    expect(broken?.outcome).toBe("failed");
    expect(good).toMatchObject({ key: `task_completed:1:${fixed.final["1"]}`, outcome: "passed" });
    await expectSettled(leader, 2);

    const task = await readTaskFile(team, "1");
    expect(task.metadata).toMatchObject({ completedAt: fixed.final["1"], qualityGateStatus: "passed" });
    expect(task.status).toBe("completed");
    expect(task.metadata?.reopenedByQualityGateCount).toBeUndefined();
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});
