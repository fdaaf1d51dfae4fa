/**
 * The lead's broken gate is the lead's: a gate whose own file does not parse (bash -n, node --check) fails
 * before it judges anything, so through the built bin its event is held for the lead (exit 3) rather than
 * failed against the worker, the task is not reopened and no follow-up is made, and the message names the
 * author's file and line (never the run's private copy). `doctor` names it and exits 1. A gate that parses
 * and exits 1 still fails the work as before.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readTaskFile, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask, type TempTeam } from "../helpers/temp-team.js";

const rig = useLeaderRig();

const config = {
  version: 1,
  teamId: "alpha",
  taskListId: "alpha",
  leadName: "team-lead",
  members: [],
  hooks: { failureAction: "reopen_followup" },
};

async function teamWith(name: string, body: string): Promise<{ team: TempTeam; file: string }> {
  const team = await rig.team({
    config,
    tasks: [
      makeTask({ id: "1", owner: "ada", status: "completed", metadata: { completedAt: "2026-12-02T10:00:00.000Z" } }),
    ],
  });
  const file = await rig.hook(team, name, body);
  return { team, file };
}

const applyPolicy = (team: TempTeam) =>
  runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--apply-policy"]);

/** The ids of the team's tasks: a follow-up would be a second one. */
async function taskIds(team: TempTeam): Promise<string[]> {
  const { readdir } = await import("node:fs/promises");
  return (await readdir(team.tasksDir)).filter((f) => /^\d+\.json$/.test(f)).sort();
}

describe("a gate whose own file does not parse", () => {
  it.each([
    // The rig writes a `#!/usr/bin/env bash` line first: `if then` is line 2.
    { name: "on_task_completed.sh", body: "if then\n  exit 0\nfi", at: "2: syntax error near unexpected token `then'" },
    { name: "on_task_completed", body: 'echo "unterminated', at: "2: unexpected EOF while looking for matching `\"'" },
    {
      name: "on_task_completed.mjs",
      body: "const ok = ;\nprocess.exit(0);",
      at: "1: SyntaxError: Unexpected token ';'",
    },
  ])("$name is held for the lead, named by its own file and line, and doctor exits 1", async ({ name, body, at }) => {
    const { team, file } = await teamWith(name, body);
    const run = await applyPolicy(team);
    expect(run.code, run.stdout + run.stderr).toBe(3);
    expect(run.stdout).toContain(
      `held: waiting for the team lead: does not parse: ${file}:${at}; its events are held until it is fixed`,
    );
    expect(run.stdout).not.toContain("pi-teams-hooks/runs");
    expect(run.stdout).not.toContain(".syntax-");
    const task = await readTaskFile(team, "1");
    expect(task.status).toBe("completed");
    expect(task.metadata).toMatchObject({ qualityGateStatus: "held", qualityGateHeld: "approval" });
    expect(await taskIds(team)).toEqual(["1.json"]);

    const doctor = await runBin(["doctor", "--team-dir", team.teamDir]);
    expect(doctor.code, doctor.stdout).toBe(1);
    expect(doctor.stdout).toContain(
      `FAIL ${name}: does not parse: ${file}:${at}; its events are held until it is fixed`,
    );
  });

  it("a gate that parses and exits 1 still fails the work: reopened, with a follow-up", async () => {
    const { team, file } = await teamWith("on_task_completed.sh", 'echo "lint failed" >&2\nexit 1');
    const run = await applyPolicy(team);
    expect(run.code, run.stdout + run.stderr).toBe(1);
    expect(run.stdout).not.toContain("does not parse");
    expect(run.stdout).toContain("→ reopened (1/3)");
    expect(run.stdout).toContain("follow-up #2 for ada");
    expect((await readTaskFile(team, "1")).status).toBe("pending");
    expect(await taskIds(team)).toEqual(["1.json", "2.json"]);
    const doctor = await runBin(["doctor", "--team-dir", team.teamDir]);
    expect(doctor.stdout).toContain(`ok   ${path.basename(file)} runs with bash`);
  });

  it.each([
    { name: "on_task_completed.sh", body: "if then\n  exit 0\nfi", at: "2: syntax error near unexpected token `then'" },
    {
      name: "on_task_completed.mjs",
      body: "const ok = ;\nprocess.exit(0);",
      at: "1: SyntaxError: Unexpected token ';'",
    },
  ])(
    "$name trusted with trust --all: said at once, naming its own file and line, on stderr and to the lead",
    async ({ name, body, at }) => {
      const { team, file } = await teamWith(name, body);
      const trusted = await runBin(["trust", "--team-dir", team.teamDir, "--all", "--yes"]);
      expect(trusted.code, trusted.stdout + trusted.stderr).toBe(0);
      expect(trusted.stderr).toContain(
        `warning: trusted, but does not parse: ${file}:${at}; its events are held until it is fixed`,
      );
      const json = await runBin(["trust", "--team-dir", team.teamDir, "--json"]);
      expect(JSON.parse(json.stdout)).toMatchObject({ changes: [], unparsed: [] });
      const inbox = JSON.parse(await readFile(team.inboxFile("team", team.leadName), "utf8")) as Array<{
        text: string;
      }>;
      expect(inbox.filter((m) => m.text.includes(`${file}:${at}`))).toHaveLength(1);
    },
  );

  it("trusted on first use by the leader's first start: said at the start, naming its own file and line", async () => {
    const { team, file } = await teamWith("on_task_completed.sh", "if then\n  exit 0\nfi");
    const leader = await rig.leader(team);
    const at = "2: syntax error near unexpected token `then'";
    await leader.waitFor("the warning", () =>
      leader.warnings().find((w) => w.includes(`trusted on first use, but does not parse: ${file}:${at}`)),
    );
    const note = await leader.waitFor("the lead's note", async () => {
      const inbox = JSON.parse(
        await readFile(team.inboxFile("team", team.leadName), "utf8").catch(() => "[]"),
      ) as Array<{ text: string }>;
      return inbox.find((m) => m.text.includes(`${file}:${at}`));
    });
    expect(note.text).toContain("was trusted on first use");
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});
