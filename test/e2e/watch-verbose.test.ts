/**
 * `watch --verbose` through the built bin: for each change the leader looks at, one line that says
 * whether it became an event and why not (a reason code in `--json`): a task present at the first
 * start (baseline), a file that is not a task file, a file that is not a task, a completion that is a
 * new event, a gate skipped by its `members` matcher, an event without a gate, the same completion
 * written again (already in the ledger), a file whose stat did not change (same signature), a file
 * deleted. Without --verbose none of these lines is printed.
 */
import { chmod, mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { type LeaderLine, type LeaderProcess, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask, type TempTeam } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();

const T0 = "2025-01-01T00:00:00.000Z";

/** The `{"type":"verbose"}` lines so far, optionally only those of `reason` about the file `name`. */
function why(leader: LeaderProcess, reason?: string, name?: string): LeaderLine[] {
  return leader
    .linesOf("verbose")
    .filter(
      (l) =>
        (reason === undefined || l.reason === reason) &&
        (name === undefined || (typeof l.file === "string" && path.basename(l.file) === name)),
    );
}

/** A gate file in the global chain dir of task_completed, with a settings line. */
async function chainGate(team: TempTeam, name: string, settings: string): Promise<void> {
  const dir = path.join(team.teamsRoot, "_hooks", "on_task_completed.d");
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, name), `#!/usr/bin/env bash\n# pi-teams-hooks: ${settings}\nexit 0\n`, {
    mode: 0o755,
  });
}

describe.concurrent("watch --verbose", () => {
  it("says why each change did or did not become an event, with a reason code in --json", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: [
        makeTask({ id: "1", owner: "ada", status: "completed", metadata: { completedAt: T0 } }),
        makeTask({ id: "2", owner: "alice", status: "in_progress" }),
        makeTask({ id: "3", owner: "alice", status: "in_progress" }),
      ],
    });
    await rig.hook(team, "on_task_completed.sh", "exit 0");
    await chainGate(team, "10-lint.sh", "members=bob");
    const leader = await rig.leader(team, ["--verbose", "--reconcile-ms", "200"]);

    // Present at the first start: history, not run.
    const [baseline] = why(leader, "baseline", "1.json");
    expect(baseline).toMatchObject({
      type: "verbose",
      reason: "baseline",
      taskId: "1",
      event: "task_completed",
      file: team.taskFile("1"),
    });
    expect(baseline?.key).toMatch(/^task_completed:1:/);

    // A file in the task list folder whose name is not <id>.json.
    await writeFile(path.join(team.tasksDir, "notes.txt"), "not a task\n");
    await leader.waitFor("not_task_file", () => why(leader, "not_task_file", "notes.txt").length > 0);
    // A .json file that is not a task: said as a warning too. (Written whole, through a temp file the
    // leader ignores: a look between the create and the write would find it empty.)
    await writeFile(path.join(team.tasksDir, "9.json.tmp.test"), "{");
    await rename(path.join(team.tasksDir, "9.json.tmp.test"), path.join(team.tasksDir, "9.json"));
    const [invalid] = await leader.waitFor(
      "invalid_task",
      () => why(leader, "invalid_task", "9.json").length > 0 && why(leader, "invalid_task", "9.json"),
    );
    expect(invalid?.detail).toMatch(/^invalid JSON/);

    // A completion: a new event; the lint gate's matcher does not take alice.
    const done = await rig.worker<{ final: Record<string, string> }>("complete", {
      tasksDir: team.tasksDir,
      ids: ["2"],
    });
    const key = `task_completed:2:${done.final["2"]}`;
    await leader.waitForEvents(1, (e) => e.key === key);
    expect(why(leader, "new_event", "2.json")).toEqual([
      expect.objectContaining({ taskId: "2", event: "task_completed", key, file: team.taskFile("2") }),
    ]);
    expect(why(leader, "matcher_skipped", "2.json")).toEqual([
      expect.objectContaining({
        taskId: "2",
        key,
        hook: "on_task_completed.d/10-lint.sh",
        detail: expect.stringMatching(/^members=bob: member alice does not match/),
      }),
    ]);

    // The same content written again (a new inode, so the file is read): its event is in the ledger, where its
    // gate life reached (passed).
    // (The leader's own write of the gate's metadata may have said so already: only a new line counts.)
    const file = team.taskFile("2");
    const seen = why(leader, "in_ledger", "2.json").length;
    const text = await readFile(file, "utf8");
    await writeFile(`${file}.tmp.test`, text);
    await rename(`${file}.tmp.test`, file);
    const known = await leader.waitFor("in_ledger", () => why(leader, "in_ledger", "2.json")[seen]);
    expect(known).toMatchObject({ taskId: "2", key, detail: "passed" });

    // A change of attributes only (its mode set to what it was): the stat signature (inode, size,
    // mtime) is the one last seen, so the file is not even read.
    const before = why(leader, "same_signature", "2.json").length;
    await chmod(file, (await stat(file)).mode & 0o7777);
    await leader.waitFor("same_signature", () => why(leader, "same_signature", "2.json").length > before);

    // A failure with no gate for task_failed: an event, recorded as handled, and the line says why nothing ran.
    await rig.worker("abort", { tasksDir: team.tasksDir, ids: ["3"], by: "alice" });
    await leader.waitForEvents(1, (e) => e.event === "task_failed");
    expect(why(leader, "no_gate", "3.json")).toEqual([
      // At the start: its claim, without a start gate, is nothing.
      expect.objectContaining({
        taskId: "3",
        event: "task_started",
        detail: "a claim is nothing without a start gate",
      }),
      expect.objectContaining({ taskId: "3", event: "task_failed", detail: "recorded as handled (outcome no_hook)" }),
    ]);

    await rm(file);
    await leader.waitFor("gone", () => why(leader, "gone", "2.json").length > 0);

    // Every verbose line has a reason code, the file and the task id (null when unknown).
    for (const line of why(leader))
      expect(Object.keys(line)).toEqual(expect.arrayContaining(["reason", "file", "taskId"]));
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("-v prints one line per file in words, from the team dir; without it, nothing more", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: [
        makeTask({ id: "1", owner: "ada", status: "completed", metadata: { completedAt: T0 } }),
        makeTask({ id: "2" }),
      ],
    });
    const list = path.relative(team.teamDir, team.tasksDir);

    const plain = await runBin(["watch", "--team-dir", team.teamDir, "--once"]);
    expect(plain.code).toBe(0);
    expect(plain.stdout).not.toContain("1.json");

    // A second start: the ledger has the baseline now.
    const verbose = await runBin(["watch", "--team-dir", team.teamDir, "--once", "-v"]);
    expect(verbose.code, verbose.stderr).toBe(0);
    expect(verbose.stdout).toMatch(
      new RegExp(
        `^${list}/1\\.json: same signature as last seen: unchanged since the last leader saved its scan state`,
        "m",
      ),
    );
    expect(verbose.stdout).toMatch(new RegExp(`^${list}/2\\.json: same signature as last seen`, "m"));

    // A fresh team: the first start's baseline, and a pending task that is no event.
    const fresh = await rig.team({
      tasks: [
        makeTask({ id: "1", owner: "ada", status: "completed", metadata: { completedAt: T0 } }),
        makeTask({ id: "2" }),
      ],
    });
    const first = await runBin(["watch", "--team-dir", fresh.teamDir, "--once", "--verbose"]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(
      new RegExp(
        `^${list}/1\\.json: baseline \\(present at start-up; key task_completed:1:${T0}\\): recorded as history, not run`,
        "m",
      ),
    );
    expect(first.stdout).toMatch(new RegExp(`^${list}/2\\.json: no event: status pending$`, "m"));
  });
});
