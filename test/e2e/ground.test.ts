/**
 * The leader keeps its ground: it does not start on a team dir whose state, logs or gates folder is a
 * link or can be written by another user, where a planted ledger line or a forged log would be taken
 * for its own; it says which folder and how to lay the team dir out.
 */
import { chmod, chown, mkdir, readdir, symlink } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
const ROOT = process.getuid?.() === 0;

describe.concurrent("the leader's ground", () => {
  it("a hook-state/ that is a link to a folder the agents write: watch does not start, and says why", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", status: "in_progress" })] });
    await rig.hook(team, "on_task_completed.sh", "exit 1");
    const elsewhere = path.join(team.teamsRoot, "agents-state");
    await mkdir(elsewhere);
    await symlink(elsewhere, path.join(team.teamDir, "hook-state"));
    const leader = await rig.leader(team, [], { waitForWatching: false });
    const exit = await leader.exited;
    expect(exit.code).toBe(2);
    expect(leader.stderr).toContain(`${path.join(team.teamDir, "hook-state")} is a symbolic link`);
    expect(leader.stderr).toContain("examples/leader-user/setup.sh team");
  });

  it("a hook-logs/ everyone can write, or (as root) a hook-state/ of another user: watch does not start", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", status: "in_progress" })] });
    await mkdir(path.join(team.teamDir, "hook-logs"));
    await chmod(path.join(team.teamDir, "hook-logs"), 0o777);
    if (ROOT) {
      await mkdir(path.join(team.teamDir, "hook-state"));
      await chown(path.join(team.teamDir, "hook-state"), 65534, 65534);
    }
    const leader = await rig.leader(team, [], { waitForWatching: false });
    const exit = await leader.exited;
    expect(exit.code).toBe(2);
    expect(leader.stderr).toContain(
      `${path.join(team.teamDir, "hook-logs")} can be written by another user (everyone can write it)`,
    );
    if (ROOT)
      expect(leader.stderr).toContain(
        `${path.join(team.teamDir, "hook-state")} can be written by another user (it belongs to uid 65534)`,
      );
  });

  it("an inbox folder replaced by a link to the hooks dir: the leader writes nothing through it, and says so", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "package", status: "in_progress" })] });
    const gate = await rig.hook(team, "on_task_completed.sh", "exit 1");
    const hooksDir = path.dirname(gate);
    const inboxes = path.dirname(team.inboxFile(team.taskListId, "package"));
    await mkdir(path.dirname(inboxes), { recursive: true });
    await symlink(hooksDir, inboxes);
    const leader = await rig.leader(team, ["--failure-action", "reopen"]);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    await leader.waitFor("the refused write said", () =>
      leader
        .warnings()
        .some((w) => w.includes(`${inboxes} is a symbolic link, and the leader writes in the team's own folders only`)),
    );
    expect(await readdir(hooksDir)).toEqual(["on_task_completed.sh"]);
    await leader.stop();
  });
});
