/**
 * A settings typo, through the built bin: an unknown key of config.json's `hooks` block near a
 * setting's name, a key of its strict parts (`limits`), and an unknown key of a gate's own settings
 * line each get the name that was probably meant, in watch's warnings and in doctor.
 */
import { describe, expect, it } from "vitest";
import { runBin, useLeaderRig } from "../helpers/leader-rig.js";

const rig = useLeaderRig();
const config = (hooks: Record<string, unknown>) => ({
  version: 1,
  teamId: "test-team",
  taskListId: "test-team",
  leadName: "team-lead",
  members: [],
  hooks,
});

describe("a settings typo", () => {
  it("in config.json's hooks block or a gate's settings line gets a did you mean, in watch and doctor", async () => {
    const team = await rig.team({ config: config({ failureAcion: "reopen", ownedByAnotherTool: true }) });
    await rig.hook(team, "on_task_completed.sh", "# pi-teams-hooks: timout=30s\nexit 0");
    const key = `${team.teamDir}/config.json: hooks.failureAcion: not a setting of pi-teams-hooks (did you mean failureAction?) — ignored`;
    const line = `on_task_completed.sh:2: unknown setting "timout" (did you mean timeout?) (settings: timeout,`;
    const watch = await runBin(["watch", "--team-dir", team.teamDir, "--once"]);
    expect(watch.stderr).toContain(`warning: ${key}`);
    expect(watch.stderr).toContain(`warning: ${line}`);
    expect(watch.stderr).not.toContain("ownedByAnotherTool"); // near no setting: another tool's, left alone
    const doctor = await runBin(["doctor", "--team-dir", team.teamDir]);
    expect(doctor.stdout).toContain(key);
    expect(doctor.stdout).toContain(line);

    const strict = await rig.team({ config: config({ limits: { maxHooksPerEvnt: 3 } }) });
    const refused = await runBin(["doctor", "--team-dir", strict.teamDir]);
    expect(refused.stdout).toContain(
      `hooks.limits: Unrecognized key: "maxHooksPerEvnt" (did you mean maxHooksPerEvent?)`,
    );
  });
});
