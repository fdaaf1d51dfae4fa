/**
 * Finding a hook run from the command line, through the built bin: the id column of `logs` and
 * `logs show` by that id, by the whole run id, by the table's time, `last`, `last --failed` and
 * `--task N`; a selector that matches several runs lists them (exit 2), one that matches none says
 * so (exit 2); `run` and `watch` print the run id that `logs show` then finds.
 */
import { randomUUID } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { type LeaderRig, once, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask, type TempTeam } from "../helpers/temp-team.js";
import { type HookLogRecordInput, writeHookLog } from "../../extensions/teams-hooks/logs/hook-log.js";
import { makeRunResult } from "../helpers/invocation.js";

const outerRig = useLeaderRig();

/** Fails task 2 until `<team dir>/fixed` exists; passes everything else. */
const GATE = `if [ "$PI_TEAMS_TASK_ID" = 2 ] && [ ! -f "$PI_TEAMS_TEAM_DIR/fixed" ]; then echo "FAIL: task 2 is not done" >&2; exit 1; fi`;
const SHORT_ID = /\(run ([0-9a-f]{8}(?:\.\d+)?)\)$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface ThreeRuns {
  team: TempTeam;
  /** The short ids `run` printed: task 1 passed, task 2 failed, task 2 passed once fixed. */
  pass1: string;
  fail2: string;
  pass2: string;
}

/** `pi-teams-hooks run` three times by hand, each line's run id kept. */
async function threeRuns(rig: LeaderRig): Promise<ThreeRuns> {
  const team = await rig.team({
    tasks: [
      makeTask({ id: "1", status: "completed", owner: "ada" }),
      makeTask({ id: "2", status: "completed", owner: "brian" }),
    ],
  });
  await rig.hook(team, "on_task_completed.sh", GATE);
  const run = async (task: string, code: number): Promise<string> => {
    const ran = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", task]);
    if (ran.code !== code)
      throw new Error(`run --task ${task}: exit ${ran.code}, expected ${code}\n${ran.stdout}${ran.stderr}`);
    const id = SHORT_ID.exec(ran.stdout.trimEnd())?.[1];
    if (id === undefined) throw new Error(`no run id in: ${ran.stdout}`);
    return id;
  };
  const pass1 = await run("1", 0);
  const fail2 = await run("2", 1);
  await writeFile(path.join(team.teamDir, "fixed"), "");
  const pass2 = await run("2", 0);
  return { team, pass1, fail2, pass2 };
}

/** The three runs of `threeRuns`, made once for the tests below that only read them. */
const sharedRuns = once(() => threeRuns(outerRig.shared));

/** `logs show …` in the team. */
/** A terminal wide enough for every column of the table (narrow ones: cli-terminal.test.ts). */
const WIDE = { env: { COLUMNS: "250" } };

function show(team: TempTeam, ...args: string[]): ReturnType<typeof runBin> {
  return runBin(["logs", "show", ...args, "--team-dir", team.teamDir]);
}

/** The `run id:` line of `logs show`. */
function runIdOf(stdout: string): string | undefined {
  return /^run id: +(\S+)$/m.exec(stdout)?.[1];
}

/** The first cell of each data row of a table (a listing on stderr starts with one line of its own). */
function idColumn(table: string, skip = 1): string[] {
  return table
    .trimEnd()
    .split("\n")
    .slice(skip)
    .filter((line) => !line.startsWith("pick one"))
    .map((line) => line.split(/ {2,}/)[0] ?? "");
}

describe.concurrent("logs show finds a run", () => {
  it("by the id in the first column of logs, which is the id run printed; by the whole run id of --json", async (context) => {
    const { expect } = context;
    const { team, pass1, fail2, pass2 } = await sharedRuns();

    const table = await runBin(["logs", "--team-dir", team.teamDir], WIDE);
    expect(table.code).toBe(0);
    expect(table.stdout.split("\n")[0]).toMatch(/^id {8}time \(UTC\) /);
    expect(idColumn(table.stdout)).toEqual([pass1, fail2, pass2]);

    const full: string[] = [];
    for (const [id, task, outcome] of [
      [pass1, "1", "passed"],
      [fail2, "2", "failed"],
      [pass2, "2", "passed"],
    ] as const) {
      const shown = await show(team, id);
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toMatch(new RegExp(`^task: +#${task} `, "m"));
      expect(shown.stdout).toMatch(new RegExp(`^outcome: +${outcome}$`, "m"));
      const runId = runIdOf(shown.stdout) ?? "";
      expect(runId).toMatch(UUID);
      expect(runId.startsWith(id)).toBe(true);
      full.push(runId);
    }

    // --json rows carry the whole run id; it finds the same log, as does any 4 characters of it.
    const rows = (await runBin(["logs", "--team-dir", team.teamDir, "--json"])).stdout
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as { file: string; result: { runId: string } });
    expect(rows.map((r) => r.result.runId)).toEqual(full);
    for (const row of rows) {
      const byFull = await show(team, row.result.runId);
      expect(byFull.code).toBe(0);
      expect(byFull.stdout.split("\n")[0]).toBe(`log:          ${row.file}`);
      expect(runIdOf((await show(team, row.result.runId.slice(0, 4).toUpperCase())).stdout)).toBe(row.result.runId);
    }
  });

  it("run --json has the whole run id; logs show finds it by a prefix of it", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", status: "completed", owner: "ada" })] });
    await rig.hook(team, "on_task_completed.sh", GATE);
    const ran = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--json"]);
    expect(ran.code).toBe(0);
    const { result, logFile } = JSON.parse(ran.stdout) as { result: { runId: string }; logFile: string };
    expect(result.runId).toMatch(UUID);
    const shown = await show(team, result.runId.slice(0, 13));
    expect(shown.code).toBe(0);
    expect(shown.stdout.split("\n")[0]).toBe(`log:          ${logFile}`);
    expect(runIdOf(shown.stdout)).toBe(result.runId);
  });

  it("last, last --failed and --task N: the newest run that the words keep", async (context) => {
    const { expect } = context;
    const { team, pass1, fail2, pass2 } = await sharedRuns();
    const cases: Array<[string[], string]> = [
      [["last"], pass2],
      [["last", "--failed"], fail2],
      [["--failed"], fail2],
      [["--task", "1"], pass1],
      [["--task", "#2"], pass2],
      [["last", "--task", "2"], pass2],
      [["last", "--task", "2", "--failed"], fail2],
    ];
    for (const [args, id] of cases) {
      const shown = await show(team, ...args);
      expect(shown.code, `${args.join(" ")}: ${shown.stderr}`).toBe(0);
      expect(runIdOf(shown.stdout)?.startsWith(id), args.join(" ")).toBe(true);
    }

    const none = await show(team, "last", "--failed", "--task", "1");
    expect(none).toEqual({
      code: 2,
      stdout: "",
      stderr: `pi-teams-hooks logs show: no hook log (task #1, outcome failed|timed_out|error) in ${path.join(team.teamDir, "hook-logs")}\n`,
    });
    const mixed = await show(team, "task-2", "--failed");
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toContain(
      '--task and --failed pick the newest matching run: give them alone or after last (logs show last --failed), not with "task-2"',
    );
  });

  it("a selector with several runs lists them newest first with their ids (exit 2); one with none says so (exit 2)", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const { team, fail2, pass2 } = await sharedRuns();

    const listed = await runBin(["logs", "show", "task-2", "--team-dir", team.teamDir], WIDE);
    expect(listed.code).toBe(2);
    expect(listed.stdout).toBe("");
    const lines = listed.stderr.trimEnd().split("\n");
    expect(lines[0]).toBe('pi-teams-hooks logs show: "task-2" matches 2 runs, newest first:');
    expect(lines[1]).toMatch(/^id {8}time \(UTC\) +event +task +member +hook +outcome/);
    expect(idColumn(listed.stderr, 2)).toEqual([pass2, fail2]);
    expect(lines.at(-1)).toBe("pick one by its id: pi-teams-hooks logs show <id>");
    expect(runIdOf((await show(team, fail2)).stdout)?.startsWith(fail2)).toBe(true);

    const nothing = await show(team, "00000000-0000-4000-8000-000000000000");
    expect(nothing.code).toBe(2);
    expect(nothing.stdout).toBe("");
    expect(nothing.stderr).toBe(
      `pi-teams-hooks logs show: no hook log matches "00000000-0000-4000-8000-000000000000" in ${path.join(team.teamDir, "hook-logs")} (run ids are the first column of pi-teams-hooks logs)\n`,
    );
    const tooShort = await show(team, fail2.slice(0, 3));
    expect(tooShort.code).toBe(2);
    expect(tooShort.stderr).toContain("give 4 characters of a run id at least");

    const empty = await rig.team({});
    expect(await show(empty, "last")).toEqual({
      code: 2,
      stdout: "",
      stderr: `pi-teams-hooks logs show: no hook log in ${path.join(empty.teamDir, "hook-logs")}\n`,
    });
  });
});

/** A log written as a run would have left it, at a chosen time with a chosen run id. */
function record(team: TempTeam, at: string, taskId: string, runId: string): HookLogRecordInput {
  return {
    invocation: {
      event: "task_completed",
      teamId: team.teamId,
      teamDir: team.teamDir,
      taskListId: team.teamId,
      style: "normal",
      memberName: "ada",
      completedTask: makeTask({ id: taskId, status: "completed" }),
    },
    result: makeRunResult({
      ran: true,
      hookPath: "/hooks/on_task_completed.sh",
      command: ["bash", "/hooks/on_task_completed.sh"],
      outcome: "passed",
      exitCode: 0,
      durationMs: 40,
      runId,
    }),
    key: `task_completed:${taskId}:${at}`,
    startedAt: at,
  };
}

describe.concurrent("logs show by the table's time, and ids that share their start", () => {
  it("the time as the table prints it (quoted or as two words): one run is shown, several are listed", async (context) => {
    const { expect } = context;
    const team = await outerRig.scoped(context).team({});
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    await writeHookLog(team.teamDir, record(team, "2026-03-01T09:00:00.100Z", "1", a));
    await writeHookLog(team.teamDir, record(team, "2026-03-01T09:00:00.900Z", "2", b));
    const lone = await writeHookLog(team.teamDir, record(team, "2026-03-01T09:00:01.000Z", "3", c));

    const table = (await runBin(["logs", "--team-dir", team.teamDir], WIDE)).stdout.trimEnd().split("\n");
    const times = table.slice(1).map((line) => line.split(/ {2,}/)[1] ?? "");
    expect(times).toEqual(["2026-03-01 09:00:00", "2026-03-01 09:00:00", "2026-03-01 09:00:01"]);

    const one = await show(team, times[2] ?? "");
    expect(one.code).toBe(0);
    expect(one.stdout.split("\n")[0]).toBe(`log:          ${lone}`);
    const twoWords = await show(team, "2026-03-01", "09:00:01");
    expect(runIdOf(twoWords.stdout)).toBe(c);

    const several = await show(team, times[0] ?? "");
    expect(several.code).toBe(2);
    expect(several.stderr.split("\n")[0]).toBe(
      'pi-teams-hooks logs show: "2026-03-01 09:00:00" matches 2 runs, newest first:',
    );
    expect(idColumn(several.stderr, 2)).toEqual([b.slice(0, 8), a.slice(0, 8)]);
  });

  it("ids that share their first 8 characters are shown as far as they differ; the shared 8 list both; a chain's .2 is its own", async (context) => {
    const { expect } = context;
    const team = await outerRig.scoped(context).team({});
    const A = "4a739620-51eb-42cb-945b-c9232b60cf26";
    const B = "4a739620-5fff-4d0c-8a1e-0b2d6f1c9a77";
    await writeHookLog(team.teamDir, record(team, "2026-03-01T09:00:00.000Z", "1", A));
    await writeHookLog(team.teamDir, record(team, "2026-03-01T09:00:00.050Z", "1", `${A}.2`));
    await writeHookLog(team.teamDir, record(team, "2026-03-01T09:05:00.000Z", "2", B));

    const table = await runBin(["logs", "--team-dir", team.teamDir], WIDE);
    expect(idColumn(table.stdout)).toEqual(["4a739620-51", "4a739620.2", "4a739620-5f"]);
    for (const [id, runId] of [
      ["4a739620-51", A],
      ["4a739620.2", `${A}.2`],
      ["4a739620-5f", B],
      ["4a73.2", `${A}.2`],
    ] as const) {
      expect(runIdOf((await show(team, id)).stdout), id).toBe(runId);
    }
    const shared = await show(team, "4a739620");
    expect(shared.code).toBe(2);
    expect(shared.stderr.split("\n")[0]).toBe('pi-teams-hooks logs show: "4a739620" matches 2 runs, newest first:');
    expect(idColumn(shared.stderr, 2)).toEqual(["4a739620-5f", "4a739620-51"]);
  });
});

describe.concurrent("watch prints the run id", () => {
  it("each JSON event has the deciding run's runId, and a chain's runIds; logs show finds each", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", status: "in_progress", owner: "alice" })] });
    const chain = path.join(team.teamsRoot, "_hooks", "on_task_completed.d");
    await mkdir(chain, { recursive: true });
    for (const name of ["10-format.sh", "20-lint.sh"])
      await writeFile(path.join(chain, name), "#!/usr/bin/env bash\nexit 0\n", { mode: 0o755 });
    const leader = await rig.leader(team);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1);
    expect(await leader.stop()).toMatchObject({ code: 0 });

    const runIds = event?.runIds ?? [];
    expect(runIds).toHaveLength(2);
    expect(runIds[0]).toMatch(UUID);
    expect(runIds[1]).toBe(`${runIds[0]}.2`);
    expect(event?.runId).toBe(runIds[1]); // all passed: the last one decided
    for (const [i, runId] of runIds.entries()) {
      const shown = await show(team, `${runId.slice(0, 8)}${i === 0 ? "" : ".2"}`);
      expect(shown.code, shown.stderr).toBe(0);
      expect(runIdOf(shown.stdout)).toBe(runId);
      expect(shown.stdout).toMatch(new RegExp(`^key: +${event?.key.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, "m"));
    }
  });

  it("each human event line ends with its run's short id, which logs show finds", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: [
        makeTask({ id: "1", status: "completed", owner: "ada" }),
        makeTask({ id: "2", status: "completed", owner: "brian" }),
      ],
    });
    await rig.hook(team, "on_task_completed.sh", GATE);
    const watched = await runBin(["watch", "--team-dir", team.teamDir, "--once", "--catch-up"]);
    expect(watched.code, watched.stderr).toBe(0);
    const lines = watched.stdout.split("\n").filter((line) => / task_completed #\d /.test(line));
    expect(lines).toHaveLength(2);
    for (const [task, outcome] of [
      ["1", "passed"],
      ["2", "failed"],
    ]) {
      const line = lines.find((l) => l.includes(` task_completed #${task} `)) ?? "";
      expect(line).toMatch(new RegExp(` ${outcome} `));
      const id = SHORT_ID.exec(line)?.[1] ?? "";
      expect(id, line).toMatch(/^[0-9a-f]{8}$/);
      const shown = await show(team, id);
      expect(shown.stdout).toMatch(new RegExp(`^task: +#${task} `, "m"));
      expect(runIdOf(shown.stdout)?.startsWith(id)).toBe(true);
    }
  });
});
