/**
 * A team runtime removes the team dir just before our leader stops (pi-agent-teams does it at
 * `session_shutdown` for a session's team that never had a task or a teammate): the leader (in this
 * process, with the options the pi extension gives it) stops without a warning and without writing
 * anything back into the removed folder. A save that fails while the team dir is there still warns.
 */
import { existsSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startLeaderHere } from "../helpers/leader-here.js";
import type { Leader } from "../../extensions/teams-hooks/leader/leader.js";
import { resolveTeamSetup } from "../../extensions/teams-hooks/team/setup.js";
import { makeTempTeam, type TempTeam } from "../helpers/temp-team.js";

const teams: TempTeam[] = [];
const leaders: Leader[] = [];
afterEach(async () => {
  for (const leader of leaders.splice(0)) await leader.stop();
  for (const team of teams.splice(0)) await team.cleanup();
});

interface Watched {
  team: TempTeam;
  leader: Leader;
  warnings: () => string[];
}

/** An empty team (config.json, no task) as pi-agent-teams' leader creates it, watched as the pi extension does. */
async function watchedEmptyTeam(): Promise<Watched> {
  const config = { version: 1, teamId: "test-team", taskListId: "test-team", leadName: "team-lead", members: [] };
  const team = await makeTempTeam({ config });
  teams.push(team);
  const env = { PATH: process.env.PATH ?? "" };
  const setup = await resolveTeamSetup({ teamDir: team.teamDir, env, processCwd: team.teamsRoot });
  const reloadSetup = (lastValidHooks: Record<string, unknown> | undefined) =>
    resolveTeamSetup({ teamDir: team.teamDir, env, processCwd: team.teamsRoot, lastValidHooks });
  const over = { inbox: "observe" as const, reconcileMs: 5_000, reloadSetup };
  const { leader, warnings } = await startLeaderHere(setup, env, over, leaders);
  return { team, leader, warnings };
}

describe("the team dir removed by its runtime just before the leader stops", () => {
  it("stop() says nothing and writes nothing back: no scan state, no lock, no folder created again", async () => {
    const { team, leader, warnings } = await watchedEmptyTeam();
    expect(existsSync(path.join(team.teamDir, "hook-state", "leader.lock"))).toBe(true);
    // As pi-agent-teams removes it: the whole folder, recursive and forced.
    await rm(team.teamDir, { recursive: true, force: true });
    await leader.stop();
    expect(warnings()).toEqual([]);
    expect(existsSync(team.teamDir)).toBe(false);
  });

  it("a scan state that cannot be saved in a team dir still there is said", async () => {
    const { team, leader, warnings } = await watchedEmptyTeam();
    // A folder where the state file goes: the rename over it fails (EISDIR), whoever runs the test.
    await mkdir(path.join(team.teamDir, "hook-state", "task-files.json", "x"), { recursive: true });
    await leader.stop();
    const notSaved = /hook-state\/task-files\.json: not saved \(.*\); the next start reads every task file$/;
    expect(warnings()).toEqual([expect.stringMatching(notSaved)]);
  });
});
