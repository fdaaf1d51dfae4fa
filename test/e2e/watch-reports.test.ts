/**
 * An idle notification that reports a task event its task file contradicts, through the built bin
 * and a real leader: a failure reported for a task whose file says completed runs `idle` only (the
 * file is the truth of the task's state, docs/hook-contract.md "Events"), and `watch -v` says why;
 * a failure reported for a task still in progress runs `task_failed`, as the contract says.
 */
import { rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { useLeaderRig } from "../helpers/leader-rig.js";
import { makeMessage, makeTask, type TempTeam } from "../helpers/temp-team.js";

const rig = useLeaderRig();

async function notify(t: TempTeam, notes: Array<Record<string, unknown>>): Promise<void> {
  const file = t.inboxFile("team", t.leadName);
  const messages = notes.map((n) =>
    makeMessage({
      from: String(n.from),
      text: JSON.stringify({ type: "idle_notification", ...n }),
      timestamp: String(n.timestamp),
    }),
  );
  await writeFile(`${file}.tmp.test`, JSON.stringify(messages));
  await rename(`${file}.tmp.test`, file);
}

describe("an idle notification reporting a failure", () => {
  it("of a task whose file says completed runs idle only, -v says why; in progress, task_failed", async () => {
    const t = await rig.team({
      tasks: [
        makeTask({ id: "3", owner: "ada", status: "completed", metadata: { completedAt: "2026-12-06T06:00:00.000Z" } }),
        makeTask({ id: "4", owner: "bob", status: "in_progress" }),
      ],
      inbox: [],
    });
    for (const name of ["on_idle.sh", "on_task_failed.sh"]) await rig.hook(t, name, "exit 0");
    const leader = await rig.leader(t, ["--verbose"]);
    await notify(t, [
      {
        from: "ada",
        timestamp: "2026-12-06T07:00:00.000Z",
        completedTaskId: "3",
        completedStatus: "failed",
        failureReason: "tests red",
      },
      {
        from: "bob",
        timestamp: "2026-12-06T07:00:01.000Z",
        completedTaskId: "4",
        completedStatus: "failed",
        failureReason: "stuck",
      },
    ]);
    const events = await leader.waitForEvents(3);
    expect(events.map((e) => `${e.event} ${e.taskId ?? e.member}`).sort()).toEqual([
      "idle ada",
      "idle bob",
      "task_failed 4",
    ]);
    const why = leader.linesOf("verbose").filter((l) => l.reason === "report_not_in_file");
    expect(why).toEqual([
      expect.objectContaining({
        file: path.join(t.teamDir, "mailboxes", "team", "inboxes", "team-lead.json"),
        taskId: "3",
        detail:
          "ada reports task #3 failed, but its file says completed: the completion is gated, not a failure; the notification runs idle only",
      }),
    ]);
  });
});
