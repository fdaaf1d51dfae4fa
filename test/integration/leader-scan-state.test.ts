/**
 * The scan state a leader saves at shutdown (`hook-state/task-files.json`): the next start stats each
 * task file and reads only the changed ones. A saved entry is only ever trusted for a file whose stat
 * signature is unchanged, so what changed while the leader was down still runs, and a state that is
 * corrupt or belongs to another task list is ignored.
 */
import { execFileSync } from "node:child_process";
import { readFile, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readLogs, seedTasks, taskJson, useLeaderRig, elapse } from "../helpers/leader-rig.js";
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
  names: string[];
  sigs: string[];
  keys: Array<string | null>;
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

/**
 * Gives task 5 a new completion *without changing its stat signature*: rewritten in place (same inode)
 * with text of the same length, then its timestamps set back exactly (`touch -r`). A leader that reads
 * the file sees a new completion; one that trusts its saved state does not.
 */
async function newCompletionBehindSameSignature(team: TempTeam): Promise<void> {
  const file = team.taskFile("5");
  const reference = path.join(team.teamsRoot, "task-5-times");
  execFileSync("touch", ["-r", file, reference]);
  const text = await readFile(file, "utf8");
  const changed = text.replaceAll(T0, T0_SAME_LENGTH);
  expect(changed.length).toBe(text.length);
  await writeFile(file, changed); // in place: same inode
  execFileSync("touch", ["-r", reference, file]);
}

const T0_SAME_LENGTH = "2025-01-09T00:00:00.000Z";

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
  it("holds each task file's signature and event key", async () => {
    const team = await teamWithSavedState();
    const state = await readState(team);
    expect(state.version).toBe(4);
    expect(state.tasksDir).toBe(team.tasksDir);
    expect([...state.names].sort()).toEqual(Array.from({ length: 20 }, (_, i) => `${i + 1}.json`).sort());
    expect(state.sigs).toHaveLength(20);
    expect(state.keys[state.names.indexOf("3.json")]).toBe(`task_completed:3:${T0}`);
  }, 60_000);

  it("a restart runs what changed while the leader was down, exactly once, and nothing else", async () => {
    const team = await teamWithSavedState();
    await rewriteTask(team, "3", { status: "completed", metadata: { completedAt: "2025-02-01T00:00:00.000Z" } });
    await rewriteTask(team, "21", { status: "completed", metadata: { completedAt: "2025-02-01T00:00:00.000Z" } });
    await writeFile(team.taskFile("7"), "{ not json");

    const second = await rig.leader(team);
    await second.waitFor("two events", () => second.events().length >= 2);
    expect(
      second
        .events()
        .map((e) => e.taskId)
        .sort(),
    ).toEqual(["21", "3"]);
    expect(second.warnings().join("\n")).toContain(team.taskFile("7"));
    expect(await second.stop()).toMatchObject({ code: 0 });
    expect((await readLogs(team.teamDir)).length).toBe(2);
  }, 60_000);

  it("a file whose signature is unchanged and whose event is handled is not read again", async () => {
    const team = await teamWithSavedState();
    await newCompletionBehindSameSignature(team);
    const second = await rig.leader(team, ["--reconcile-ms", "200"]);
    await elapse(200 * 3); // a negative check: only time can show it
    expect(second.events()).toEqual([]);
    expect(await second.stop()).toMatchObject({ code: 0 });

    // The control: without the saved state the same file is read, and its completion runs.
    await rm(stateFile(team));
    const third = await rig.leader(team);
    await third.waitFor("the event", () => third.events().length >= 1);
    expect(third.events().map((e) => e.key)).toEqual([`task_completed:5:${T0_SAME_LENGTH}`]);
    expect(await third.stop()).toMatchObject({ code: 0 });
  }, 60_000);

  it("a saved entry whose event is not handled yet is read, and its event runs", async () => {
    const team = await teamWithSavedState();
    await newCompletionBehindSameSignature(team);
    // As if the previous leader had seen the new completion and stopped before running it.
    const state = await readState(team);
    const at = state.names.indexOf("5.json");
    expect(at).toBeGreaterThanOrEqual(0);
    state.keys[at] = `task_completed:5:${T0_SAME_LENGTH}`;
    await writeFile(stateFile(team), JSON.stringify(state));

    const second = await rig.leader(team);
    await second.waitFor("the event", () => second.events().length >= 1);
    expect(second.events().map((e) => e.key)).toEqual([`task_completed:5:${T0_SAME_LENGTH}`]);
    expect(await second.stop()).toMatchObject({ code: 0 });
  }, 60_000);

  it.each([
    ["corrupt", (_state: SavedState) => "{ torn"],
    ["of another task list", (state: SavedState) => JSON.stringify({ ...state, tasksDir: "/elsewhere/tasks/other" })],
    ["of another version", (state: SavedState) => JSON.stringify({ ...state, version: 99 })],
    ["torn between its arrays", (state: SavedState) => JSON.stringify({ ...state, keys: state.keys.slice(1) })],
  ])(
    "a state that is %s is ignored without a warning: every file is read",
    async (_what, mangle) => {
      const team = await teamWithSavedState();
      await newCompletionBehindSameSignature(team);
      await writeFile(stateFile(team), mangle(await readState(team)));

      const second = await rig.leader(team);
      await second.waitFor("the event", () => second.events().length >= 1);
      expect(second.events().map((e) => e.taskId)).toEqual(["5"]); // read: the state was not trusted
      expect(second.warnings()).toEqual([]);
      expect(await second.stop()).toMatchObject({ code: 0 });
      expect((await readState(team)).version).toBe(4); // replaced by a good one at shutdown
    },
    60_000,
  );
});
