/**
 * Task ids and member names that are not safe file names (`a/b`, `a.b`: both map onto `a-b`'s file)
 * are refused at the boundary, through the built bin: an idle notification naming one runs no gate
 * and sends no message, with one warning naming the field; `run --task a/b` is a usage error.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { BIN, readInboxFile, readTaskFile, useLeaderRig } from "../helpers/leader-rig.js";

const rig = useLeaderRig();
const execFileAsync = promisify(execFile);
const AT = "2025-01-01T00:00:00.000Z";

/** Task a-b, completed by carol before the leader starts (so its own completion is history). */
async function namesTeam() {
  const team = await rig.team({
    config: { teamId: "alpha", taskListId: "alpha", hooks: { failureAction: "reopen" } },
    tasks: [
      {
        id: "a-b",
        subject: "The real a-b",
        description: "",
        owner: "carol",
        status: "completed",
        blocks: [],
        blockedBy: [],
        metadata: { completedAt: AT },
        createdAt: AT,
        updatedAt: AT,
      },
    ],
  });
  // Fails, and says which task it judged: any run of it is a gate of a-b.
  await rig.hook(team, "on_task_completed.sh", `echo "$PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/gates.txt"\nexit 1`);
  return team;
}

describe("names that are not safe file names", () => {
  it.each([
    {
      field: "completedTaskId",
      note: { from: "dave", completedTaskId: "a/b", completedStatus: "completed" },
      value: "a/b",
    },
    { field: "from", note: { from: "a/b" }, value: "a/b" },
    { field: "from", note: { from: "dave.x", completedTaskId: "a-b", completedStatus: "completed" }, value: "dave.x" },
  ])(
    "an idle notification with $field $value: no event, no gate, no message, one warning",
    async ({ field, note, value }) => {
      const team = await namesTeam();
      const leader = await rig.leader(team, ["--reconcile-ms", "200"]);
      await rig.worker("idle", { inboxFile: team.inboxFile("team", "team-lead"), ...note });
      // A safe notification after it: once its event is out, the one before has been looked at.
      await rig.worker("idle", { inboxFile: team.inboxFile("team", "team-lead"), from: "erin" });
      await leader.waitForEvents(1, (e) => e.member === "erin");

      expect(leader.events().map((e) => `${e.event} ${e.member ?? ""} ${e.taskId ?? ""}`.trim())).toEqual([
        "idle erin",
      ]);
      expect(existsSync(path.join(team.teamDir, "gates.txt"))).toBe(false);
      expect((await readTaskFile(team, "a-b")).status).toBe("completed");
      for (const member of ["carol", "dave", "a-b", "dave-x"])
        expect(await readInboxFile(team, "alpha", member)).toEqual([]);
      const named = leader.warnings().filter((w) => w.includes(field));
      expect(named).toEqual([
        expect.stringContaining(
          `${team.inboxFile("team", "team-lead")}: message [0] ${field}: ${JSON.stringify(value)} is not a safe name`,
        ),
      ]);
      expect(named[0]).toContain("idle notification skipped");
      expect(await leader.stop()).toMatchObject({ code: 0 });
    },
  );

  it.each([
    [
      ["--task", "a/b"],
      '--task "a/b" is not a safe name (only A-Z, a-z, 0-9, _ and - are: it would share the file of "a-b")',
    ],
    [["--task", "a-b", "--member", "c.d"], '--member "c.d" is not a safe name'],
    [["--task", "a-b", "--lead", "x/y"], '--lead "x/y" is not a safe name'],
  ])(
    "run task_completed %j exits 2, naming the flag, the value and the allowed characters; no gate runs",
    async (flags, message) => {
      const team = await namesTeam();
      const run = await execFileAsync(process.execPath, [
        BIN,
        "run",
        "task_completed",
        "--team-dir",
        team.teamDir,
        ...flags,
        "--apply-policy",
      ]).then(
        () => ({ code: 0, stderr: "" }),
        (error: { code?: number; stderr?: string }) => ({ code: error.code, stderr: error.stderr ?? "" }),
      );
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(message);
      expect(existsSync(path.join(team.teamDir, "gates.txt"))).toBe(false);
    },
  );
});
