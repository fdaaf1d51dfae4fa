/**
 * config.json changing under a running `pi-teams-hooks watch` (the built bin): a config.json that is
 * not JSON, is deleted, or loses its `hooks` keeps the block in force — a failing gate still reopens —
 * with one warning naming the file for the change, and a `config` line when a valid block is back.
 * An explicit `"hooks": {}` is a valid empty block: the policy goes back to the defaults. A valid
 * change is in force, whole, from the next event on; a block refused for one field keeps the last
 * valid settings, whole (none of the refused block's other fields slips in).
 */
import { rename, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { TempTeam } from "../helpers/temp-team.js";
import { type LeaderProcess, readTaskFile, useLeaderRig } from "../helpers/leader-rig.js";

const rig = useLeaderRig();

const IDENTITY = { version: 1, teamId: "alpha", taskListId: "alpha", leadName: "team-lead", members: [] };
const REOPEN = { failureAction: "reopen" };

/** As an editor or a team runtime saves: a temp file, then a rename, so the leader sees one change. */
async function saveConfig(team: TempTeam, text: string): Promise<void> {
  const file = path.join(team.teamDir, "config.json");
  await writeFile(`${file}.tmp.${process.pid}`, text);
  await rename(`${file}.tmp.${process.pid}`, file);
}

async function reopenTeam() {
  const team = await rig.team({
    config: { ...IDENTITY, hooks: REOPEN },
    tasks: [
      {
        id: "1",
        subject: "One",
        description: "",
        owner: "alice",
        status: "in_progress",
        blocks: [],
        blockedBy: [],
        createdAt: "2025-01-01T00:00:00.000Z",
        updatedAt: "2025-01-01T00:00:00.000Z",
      },
      {
        id: "2",
        subject: "Two",
        description: "",
        owner: "alice",
        status: "in_progress",
        blocks: [],
        blockedBy: [],
        createdAt: "2025-01-01T00:00:00.000Z",
        updatedAt: "2025-01-01T00:00:00.000Z",
      },
    ],
  });
  await rig.hook(team, "on_task_completed.sh", `echo "lint failed" >&2\nexit 1`);
  return team;
}

const naming = (leader: LeaderProcess, file: string): string[] => leader.warnings().filter((w) => w.includes(file));

/** Completes `id` and waits for its gate: the reopen says which block was in force. */
async function failingGate(team: TempTeam, leader: LeaderProcess, id: string) {
  await rig.worker("complete", { tasksDir: team.tasksDir, ids: [id] });
  const [event] = await leader.waitForEvents(1, (e) => e.taskId === id);
  return event;
}

describe("watch: config.json broken while the leader runs", () => {
  // `again`: a second change in the same state (another broken save), which is not warned about again.
  it.each([
    {
      name: "is not JSON",
      why: /invalid JSON/,
      breakIt: (team: TempTeam, n: number) => saveConfig(team, `{ "hooks": { "failureAction": "warn"${" ".repeat(n)}`),
      again: true,
    },
    {
      name: "is deleted",
      why: /file not found/,
      breakIt: (team: TempTeam) => unlink(path.join(team.teamDir, "config.json")),
      again: false,
    },
    {
      name: "has no hooks block",
      why: /no "hooks" block/,
      breakIt: (team: TempTeam, n: number) => saveConfig(team, JSON.stringify({ ...IDENTITY, members: [`m${n}`] })),
      again: true,
    },
  ])(
    "config.json $name: the block in force stays (a failing gate still reopens), with one warning naming the file",
    async ({ why, breakIt, again }) => {
      const team = await reopenTeam();
      const file = path.join(team.teamDir, "config.json");
      const leader = await rig.leader(team, ["--reconcile-ms", "200"]);
      expect(leader.linesOf("policy")[0]).toMatchObject({
        policy: { failureAction: "reopen" },
        sources: { failureAction: "config" },
      });

      await breakIt(team, 1);
      const [warning] = await leader.waitFor("the warning naming config.json", () =>
        naming(leader, file).length > 0 ? naming(leader, file) : false,
      );
      expect(warning).toMatch(why);
      expect(warning).toContain('the last valid "hooks" block stays in force');
      const [refused] = await leader.waitFor("the refused config line", () =>
        leader.linesOf("config").length > 0 ? leader.linesOf("config") : false,
      );
      expect(refused).toMatchObject({ valid: false, policy: { failureAction: "reopen" } });

      const event = await failingGate(team, leader, "1");
      expect(event).toMatchObject({ outcome: "failed", actions: expect.arrayContaining(["reopened (1/3)"]) });
      expect((await readTaskFile(team, "1")).status).toBe("pending");

      if (again) await breakIt(team, 2);
      // The block back, the same as before: a `config` line says so. config.json reloads run one after
      // the other, so once it is out, the change before it has been looked at too.
      await saveConfig(team, JSON.stringify({ ...IDENTITY, hooks: REOPEN }));
      await leader.waitFor("the config line of the block back", () =>
        leader.linesOf("config").some((l) => l.valid === true),
      );
      expect(naming(leader, file)).toEqual([warning]);
      expect(leader.linesOf("config")).toHaveLength(2);
      expect(await leader.stop()).toMatchObject({ code: 0 });
    },
  );

  it('an explicit "hooks": {} is a valid empty block: the defaults apply, without a warning', async () => {
    const team = await reopenTeam();
    const leader = await rig.leader(team, ["--reconcile-ms", "200"]);
    await saveConfig(team, JSON.stringify({ ...IDENTITY, hooks: {} }));
    const [line] = await leader.waitFor("the config line", () =>
      leader.linesOf("config").length > 0 ? leader.linesOf("config") : false,
    );
    expect(line).toMatchObject({
      valid: true,
      policy: { failureAction: "warn" },
      sources: { failureAction: "default" },
    });
    const event = await failingGate(team, leader, "1");
    expect(event?.outcome).toBe("failed");
    expect(event?.actions).not.toContainEqual(expect.stringContaining("reopen"));
    expect((await readTaskFile(team, "1")).status).toBe("completed");
    expect(leader.warnings()).toEqual([]);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});

describe("watch: config.json changed while the leader runs", () => {
  it("a valid change is in force for the next event, every setting of it; a block refused for one field keeps the last valid settings, every one", async () => {
    const team = await reopenTeam();
    await saveConfig(team, JSON.stringify({ ...IDENTITY, hooks: {} }));
    const leader = await rig.leader(team, ["--reconcile-ms", "200"]);
    expect(leader.linesOf("policy")[0]).toMatchObject({
      policy: { failureAction: "warn", maxReopensPerTask: 3 },
      sources: { failureAction: "default" },
    });

    // Two settings of the policy and one that is not (who gets the reopened task again).
    await saveConfig(
      team,
      JSON.stringify({
        ...IDENTITY,
        hooks: { failureAction: "reopen", maxReopensPerTask: 5, reassignOnReopen: false },
      }),
    );
    await leader.waitFor("the config line of the new block", () =>
      leader.linesOf("config").some((l) => l.valid === true),
    );
    const changed = await failingGate(team, leader, "1");
    expect(changed?.actions).toContain("reopened (1/5)");
    expect(changed?.actions).not.toContainEqual(expect.stringContaining("reassigned"));
    expect((await readTaskFile(team, "1")).status).toBe("pending");

    // Refused for one field: none of its others (reassignOnReopen, maxReopensPerTask) is taken.
    await saveConfig(
      team,
      JSON.stringify({
        ...IDENTITY,
        hooks: { failureAction: "reopen", maxReopensPerTask: "many", reassignOnReopen: true },
      }),
    );
    const file = path.join(team.teamDir, "config.json");
    const [warning] = await leader.waitFor("the warning naming the field", () =>
      naming(leader, file).length > 0 ? naming(leader, file) : false,
    );
    expect(warning).toMatch(
      /hooks\.maxReopensPerTask: .*got "many" — the "hooks" block is refused whole; the last valid block stays in force$/,
    );
    const [refused] = await leader.waitFor("the refused config line", () => {
      const lines = leader.linesOf("config").filter((l) => l.valid === false);
      return lines.length > 0 ? lines : false;
    });
    expect(refused).toMatchObject({
      policy: { failureAction: "reopen", maxReopensPerTask: 5 },
      sources: { maxReopensPerTask: "config" },
    });
    const kept = await failingGate(team, leader, "2");
    expect(kept?.actions).toContain("reopened (1/5)");
    expect(kept?.actions).not.toContainEqual(expect.stringContaining("reassigned"));
    expect(naming(leader, file)).toEqual([warning]);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});
