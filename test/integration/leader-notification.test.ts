/**
 * The idle notification an event came from reaches its hooks as the context document's
 * `notification` (additive, still v1): a worker's `failureReason` arrives in `on_task_failed` and
 * `on_idle` through a real leader; an event seen only in a task file has no `notification` key.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask, type TempTeam } from "../helpers/temp-team.js";

const rig = useLeaderRig();

/** Each hook appends the document it read on stdin, as one JSON line, to docs.jsonl in the team dir. */
const KEEP_STDIN = `import { appendFileSync, readFileSync } from "node:fs";
import path from "node:path";
const doc = readFileSync(0, "utf8");
appendFileSync(path.join(process.env.PI_TEAMS_TEAM_DIR, "docs.jsonl"), JSON.stringify(JSON.parse(doc)) + "\\n");`;

async function docs(team: TempTeam): Promise<Array<Record<string, unknown>>> {
  const text = await readFile(path.join(team.teamDir, "docs.jsonl"), "utf8").catch(() => "");
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

const V1_KEYS = ["version", "event", "team", "member", "timestamp", "task"];

describe("the notification in the context document", () => {
  it("a failure reported by notification gives on_task_failed and on_idle the worker's failureReason", async () => {
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
    await rig.hook(team, "on_task_failed.mjs", KEEP_STDIN);
    await rig.hook(team, "on_idle.mjs", KEEP_STDIN);
    const leader = await rig.leader(team, ["--reconcile-ms", "200"]);
    const sent = await rig.worker<{ timestamp: string }>("idle", {
      inboxFile: team.inboxFile("team", team.leadName),
      from: "alice",
      completedTaskId: "1",
      completedStatus: "failed",
      failureReason: "npm test: 3 failing (api.test.ts)",
    });
    await leader.waitForEvents(2);
    const seen = await leader.waitFor("both documents", async () =>
      (await docs(team)).length === 2 ? docs(team) : false,
    );
    const failed = seen.find((d) => d.event === "task_failed");
    const idle = seen.find((d) => d.event === "idle");
    const note = {
      type: "idle_notification",
      from: "alice",
      timestamp: sent.timestamp,
      completedTaskId: "1",
      completedStatus: "failed",
      failureReason: "npm test: 3 failing (api.test.ts)",
    };
    // The work's story (additive) last: the error the worker reported, as the task file records none.
    expect(Object.keys(failed ?? {})).toEqual([...V1_KEYS, "notification", "work"]);
    expect(failed?.notification).toEqual(note);
    expect(failed?.work).toMatchObject({ createdBy: { kind: "worker" }, error: "npm test: 3 failing (api.test.ts)" });
    expect(idle?.notification).toEqual(note);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("the bundled on_task_failed.mjs journals the worker's failureReason", async () => {
    const team = await rig.team({
      tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress", subject: "Add the API" })],
    });
    await rig.hook(team, "on_task_failed.mjs", await readFile(path.resolve("hooks/on_task_failed.mjs"), "utf8"));
    const leader = await rig.leader(team, ["--reconcile-ms", "200"]);
    await rig.worker("idle", {
      inboxFile: team.inboxFile("team", team.leadName),
      from: "alice",
      completedTaskId: "1",
      completedStatus: "failed",
      failureReason: "npm test:\n3 failing",
    });
    await leader.waitForEvents(1);
    const journal = path.join(team.teamDir, "failure-journal.log");
    const line = await leader.waitFor(
      "the journal line",
      async () => (await readFile(journal, "utf8").catch(() => "")).trim() || false,
    );
    expect(line.split("\t").slice(1)).toEqual(["task #1", "alice", "npm test: 3 failing", "Add the API"]);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("a failure seen only in the task file has no notification key", async () => {
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
    await rig.hook(team, "on_task_failed.mjs", KEEP_STDIN);
    const leader = await rig.leader(team, ["--reconcile-ms", "200"]);
    await rig.worker("abort", { tasksDir: team.tasksDir, ids: ["1"] });
    await leader.waitForEvents(1);
    const [doc] = await leader.waitFor("the document", async () =>
      (await docs(team)).length === 1 ? docs(team) : false,
    );
    expect(doc?.event).toBe("task_failed");
    expect(Object.keys(doc ?? {})).toEqual([...V1_KEYS, "work"]);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});
