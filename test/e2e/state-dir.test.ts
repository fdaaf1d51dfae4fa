/**
 * The leader's own state while it runs, end to end (the built CLI): `hook-state/` deleted by another
 * process is written again from memory at once — the leader lock (so that no second leader starts
 * beside it), the ledger (so that a restart neither loses nor repeats an event), the trust record —
 * and the lead is told.
 */
import { readFile, rm } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { readInboxFile, readLedger, useLeaderRig, elapse } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();

describe("hook-state/ deleted while the leader runs", () => {
  it("is written again from memory at once: a second leader is refused, the next event runs once, the ledger and the record are back, the lead is told", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: ["1", "2"].map((id) => makeTask({ id, owner: "alice", status: "in_progress" })),
    });
    await rig.hook(team, "on_task_completed.sh", `echo "$PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/runs.txt"`);
    const leader = await rig.leader(team, ["--reconcile-ms", "200"]);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [first] = await leader.waitForEvents(1);
    const state = path.join(team.teamDir, "hook-state");
    const trusted = await readFile(path.join(state, "trust.json"), "utf8");

    // (The leader may make a file in it meanwhile: rm goes again at ENOTEMPTY, as `rm -rf` run twice would.)
    await rm(state, { recursive: true, force: true, maxRetries: 10 });
    await leader.waitFor("hook-state/ written again", () =>
      leader.warnings().some((w) => w.includes("written again from memory")),
    );
    expect(JSON.parse(await readFile(path.join(state, "trust.json"), "utf8"))).toEqual(JSON.parse(trusted));
    expect((await readLedger(team.teamDir)).some((r) => r.key === first?.key && r.op === "done")).toBe(true);
    expect(
      leader
        .warnings()
        .some((w) => w.includes("hook-state was deleted while the leader ran: written again from memory")),
    ).toBe(true);

    // A second leader finds the lock and is refused, as with any running leader.
    const second = await rig.leader(team, [], { waitForWatching: false });
    const exit = await second.exited;
    expect(exit.code).toBe(2);
    expect(second.stderr).toContain("another leader");

    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["2"] });
    await leader.waitForEvents(2);
    expect((await readFile(path.join(team.teamDir, "runs.txt"), "utf8")).split("\n").filter(Boolean)).toEqual([
      "1",
      "2",
    ]);
    const told = await leader.waitFor("the lead told", async () =>
      (await readInboxFile(team, "team", team.leadName)).find((m) =>
        m.text.includes("was deleted while the leader watched"),
      ),
    );
    expect(told.text).toContain("pi-teams-hooks trust --team-dir");

    // A restart runs nothing again: the ledger written from memory holds both events.
    expect(await leader.stop()).toMatchObject({ code: 0 });
    const again = await rig.leader(team, ["--reconcile-ms", "200"]);
    await elapse(600); // a negative check: only time can show it
    expect(again.events()).toEqual([]);
    expect(again.warnings().filter((w) => w.includes("untrusted"))).toEqual([]);
  });
});
