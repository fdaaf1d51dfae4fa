/**
 * The scan state a leader saves at shutdown (`hook-state/task-files.json`): the next start stats each
 * task file and reads only the changed ones. A saved entry is only ever trusted for a file whose stat
 * signature is unchanged, so what changed while the leader was down still runs, and a state that is
 * corrupt or belongs to another task list is ignored.
 */
import { readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readLogs, seedTasks, taskJson, useLeaderRig } from "../helpers/leader-rig.js";
import type { TempTeam } from "../helpers/temp-team.js";

const rig = useLeaderRig();

const T0 = "2025-01-01T00:00:00.000Z";
const RECORD = `echo "$PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/runs.txt"`;

function stateFile(team: TempTeam): string {
  return path.join(team.teamDir, "hook-state", "task-files.json");
}

interface SavedState {
  version: number;
  tasksDir: string;
  files: Record<string, [string, { key: string; [field: string]: unknown } | null]>;
}

async function readState(team: TempTeam): Promise<SavedState> {
  return JSON.parse(await readFile(stateFile(team), "utf8")) as SavedState;
}

/** Rewrites a task file the way a worker does (a new inode): its signature changes. */
async function rewriteTask(team: TempTeam, id: string, fields: Record<string, unknown>): Promise<void> {
  const tmp = `${team.taskFile(id)}.tmp.test.${Date.now()}`;
  await writeFile(tmp, taskJson({ id, owner: "alice", ...fields }));
  await rename(tmp, team.taskFile(id));
}

/** A team whose first leader baselined 20 old completions and stopped, leaving its scan state. */
async function teamWithSavedState(): Promise<TempTeam> {
  const team = await rig.team();
  await seedTasks(team, 1, 20, () => ({ status: "completed", metadata: { completedAt: T0 } }));
  await rig.hook(team, "on_task_completed.sh", RECORD);
  const first = await rig.leader(team);
  expect(first.linesOf("ready")[0]).toMatchObject({ tasks: 20, baseline: 20 });
  expect(await first.stop()).toMatchObject({ code: 0 });
  return team;
}

describe("the scan state saved at shutdown", () => {
  it("holds each task file's signature and event", async () => {
    const team = await teamWithSavedState();
    const state = await readState(team);
    expect(state.version).toBe(1);
    expect(state.tasksDir).toBe(team.tasksDir);
    expect(Object.keys(state.files).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `${i + 1}.json`).sort());
    expect(state.files["3.json"]?.[1]).toMatchObject({ key: `task_completed:3:${T0}`, event: "task_completed", taskId: "3" });
  }, 60_000);

  it("a restart runs what changed while the leader was down, exactly once, and nothing else", async () => {
    const team = await teamWithSavedState();
    await rewriteTask(team, "3", { status: "completed", metadata: { completedAt: "2025-02-01T00:00:00.000Z" } });
    await rewriteTask(team, "21", { status: "completed", metadata: { completedAt: "2025-02-01T00:00:00.000Z" } });
    await writeFile(team.taskFile("7"), "{ not json");

    const second = await rig.leader(team);
    await second.waitFor("two events", () => second.events().length >= 2);
    expect(second.events().map((e) => e.taskId).sort()).toEqual(["21", "3"]);
    expect(second.warnings().join("\n")).toContain(team.taskFile("7"));
    expect(await second.stop()).toMatchObject({ code: 0 });
    expect((await readLogs(team.teamDir)).length).toBe(2);
  }, 60_000);

  it("an unchanged file is not read again: its saved event is what the restart goes by", async () => {
    const team = await teamWithSavedState();
    // Tamper with the saved event of an unchanged file: only a leader that trusts the state sees it.
    const state = await readState(team);
    const entry = state.files["5.json"];
    if (!entry?.[1]) throw new Error("no saved event for task 5");
    entry[1] = { ...entry[1], key: "task_completed:5:from-the-saved-state" };
    await writeFile(stateFile(team), JSON.stringify(state));

    const second = await rig.leader(team);
    await second.waitFor("the event", () => second.events().length >= 1);
    expect(second.events().map((e) => e.key)).toEqual(["task_completed:5:from-the-saved-state"]);
    expect(await second.stop()).toMatchObject({ code: 0 });
  }, 60_000);

  it("a saved entry whose file changed since is not trusted: the file is read", async () => {
    const team = await teamWithSavedState();
    const state = await readState(team);
    const entry = state.files["5.json"];
    if (!entry?.[1]) throw new Error("no saved event for task 5");
    entry[1] = { ...entry[1], key: "task_completed:5:from-the-saved-state" };
    await writeFile(stateFile(team), JSON.stringify(state));
    await rewriteTask(team, "5", { status: "completed", metadata: { completedAt: T0 }, comment: "edited, same completion" });

    const second = await rig.leader(team, ["--reconcile-ms", "200"]);
    await new Promise((resolve) => setTimeout(resolve, 200 * 3)); // a negative check: only time can show it
    expect(second.events()).toEqual([]);
    expect(await second.stop()).toMatchObject({ code: 0 });
  }, 60_000);

  it.each([
    ["corrupt", (_state: SavedState) => "{ torn"],
    ["of another task list", (state: SavedState) => JSON.stringify({ ...state, tasksDir: "/elsewhere/tasks/other" })],
    ["of another version", (state: SavedState) => JSON.stringify({ ...state, version: 99 })],
  ])("a state that is %s is ignored without a warning: every file is read", async (_what, mangle) => {
    const team = await teamWithSavedState();
    const state = await readState(team);
    // Tampered so that trusting it would show (as above)…
    const entry = state.files["5.json"];
    if (entry?.[1]) entry[1] = { ...entry[1], key: "task_completed:5:from-the-saved-state" };
    await writeFile(stateFile(team), mangle(state));
    await rewriteTask(team, "21", { status: "completed", metadata: { completedAt: "2025-02-01T00:00:00.000Z" } });

    const second = await rig.leader(team);
    await second.waitFor("the event", () => second.events().length >= 1);
    expect(second.events().map((e) => e.taskId)).toEqual(["21"]); // …and it is not trusted
    expect(second.warnings()).toEqual([]);
    expect(await second.stop()).toMatchObject({ code: 0 });
    expect((await readState(team)).version).toBe(1); // replaced by a good one at shutdown
  }, 60_000);
});
