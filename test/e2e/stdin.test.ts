/**
 * A hook's stdin is its context document as a file opened read-only for it, the same under `run` and
 * under `watch`: a gate that opens `/dev/stdin` (`cat /dev/stdin`, `jq . /dev/stdin`), seeks in it or
 * reads it twice gets the whole document each time.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();

/** Passes only if /dev/stdin opens, is the context file byte for byte, can be read again, and seeks. */
const READS_DEV_STDIN = [
  `first=$(cat /dev/stdin) || { echo "cannot open /dev/stdin" >&2; exit 1; }`,
  `again=$(cat /dev/stdin)`,
  `[ "$first" = "$(cat "$PI_TEAMS_HOOK_CONTEXT_FILE")" ] || { echo "not the context document" >&2; exit 1; }`,
  `[ "$again" = "$first" ] || { echo "read once only" >&2; exit 1; }`,
  `[ "$(tail -c 1 /dev/stdin)" = "}" ] || { echo "cannot seek" >&2; exit 1; }`,
  `echo "$PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/read.txt"`,
].join("\n");

describe.concurrent("a gate that reads /dev/stdin", () => {
  it("passes under run", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "completed" })] });
    await rig.hook(team, "on_task_completed.sh", READS_DEV_STDIN);
    // The gate notes itself in the team dir: writable to a sandboxed gate as part of its working
    // directory, the teams root, as under watch (whose leader runs there).
    const out = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"], {
      cwd: team.teamsRoot,
    });
    expect(out.code, out.stdout + out.stderr).toBe(0);
    expect(await readFile(path.join(team.teamDir, "read.txt"), "utf8")).toBe("1\n");
  });

  it("passes under watch", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
    await rig.hook(team, "on_task_completed.sh", READS_DEV_STDIN);
    const leader = await rig.leader(team);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1);
    expect(event).toMatchObject({ outcome: "passed" });
    expect(await readFile(path.join(team.teamDir, "read.txt"), "utf8")).toBe("1\n");
  });
});
