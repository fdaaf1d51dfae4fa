/**
 * A gate that ends after the worker completed the task again: the leader records the gate's result,
 * but the task must go on standing for the newer completion. For a completion without
 * `metadata.completedAt` (keyed by its `updatedAt`) a leader write that moved `updatedAt` would make the
 * task read as the older completion's key, and a leader that had not seen the newer one yet (a hint
 * still queued, or a restart) would never run its gate.
 */
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { TeamIdentity } from "../../extensions/teams-hooks/contract/team-files.js";
import { taskEvent } from "../../extensions/teams-hooks/contract/events.js";
import { invokeEvent } from "../../extensions/teams-hooks/event/invoke.js";
import { readTask } from "../../extensions/teams-hooks/team/tasks.js";
import { teamSettings } from "../helpers/team-settings.js";
import { makeTask, makeTempTeam, type TempTeam } from "../helpers/temp-team.js";

const T1 = "2026-12-02T10:00:00.000Z";
const T2 = "2026-12-02T10:05:00.000Z";

let team: TempTeam | undefined;
afterEach(async () => {
  await team?.cleanup();
});

describe("the gate of an older completion", () => {
  it.each([
    ["passes", "exit 0"],
    ["fails", "exit 1"],
  ])("%s after the worker completed again: the task still stands for the newer completion", async (_verdict, exit) => {
    const judged = makeTask({ id: "1", status: "completed", owner: "alice", updatedAt: T1 });
    team = await makeTempTeam({ teamId: "stale", tasks: [judged] });
    const hooksDir = path.join(team.teamsRoot, "_hooks");
    fs.mkdirSync(hooksDir, { recursive: true });
    // While the gate runs, the worker completes the task again (no completedAt: keyed by updatedAt),
    // writing as workers do: the whole file under a temporary name, renamed into place.
    const newer = path.join(team.teamDir, "newer.json");
    fs.writeFileSync(newer, JSON.stringify({ ...judged, description: "done again", updatedAt: T2 }, null, 2));
    const file = team.taskFile("1");
    fs.writeFileSync(
      path.join(hooksDir, "on_task_completed.sh"),
      `#!/usr/bin/env bash\ncp "${newer}" "${file}.tmp.1" && mv "${file}.tmp.1" "${file}"\n${exit}\n`,
      { mode: 0o755 },
    );

    const identity: TeamIdentity = {
      teamId: "stale",
      teamDir: team.teamDir,
      taskListId: team.taskListId,
      leadName: "lead",
      style: "normal",
    };
    const keyA = `task_completed:1:${T1}`;
    expect(taskEvent(judged)?.key).toBe(keyA);
    const outcome = await invokeEvent({
      setup: {
        identity,
        hooksDir,
        teamHooksDir: path.join(team.teamDir, "hooks"),
        cwd: team.teamsRoot,
        settings: teamSettings({ hooks: { failureAction: "reopen" }, timeoutMs: 10_000 }),
      },
      event: "task_completed",
      key: keyA,
      taskId: "1",
      member: "alice",
      timestamp: T1,
      applyPolicy: true,
      env: process.env,
    });
    expect(outcome.problems).toEqual([]);

    const after = await readTask(file);
    if (!after.ok) throw new Error(after.problem.message);
    expect(after.value.description).toBe("done again");
    expect(after.value.metadata?.qualityGateEventKey).toBe(keyA); // the judged completion's result is recorded…
    expect(taskEvent(after.value)?.key).toBe(`task_completed:1:${T2}`); // …and the newer completion keeps its key
    expect(after.value.status).toBe("completed"); // never reopened: nobody has checked the newer work yet
  });
});
