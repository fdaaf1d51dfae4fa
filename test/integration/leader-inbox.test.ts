/**
 * `--inbox consume` across a crash: an idle notification whose event was handled (ledger `done`) but
 * not yet marked read when the leader died is marked read by the next leader, without running its
 * hook again.
 */
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readInboxFile, readLedger, useLeaderRig } from "../helpers/leader-rig.js";

const rig = useLeaderRig();

describe("--inbox consume", () => {
  it("a notification handled just before a crash is marked read by the next leader, and not run again", async () => {
    const team = await rig.team();
    const lockFile = `${team.inboxFile("team", team.leadName)}.lock`;
    // Runs until the test holds the inbox's lock (below), however long that takes on a busy machine.
    const untilLocked = `while [ ! -e '${lockFile}' ]; do sleep 0.02; done`;
    const mark = `echo "idle $PI_TEAMS_MEMBER" >> "$PI_TEAMS_TEAM_DIR/marks.txt"`;
    await rig.hook(team, "on_idle.sh", `${mark}\n${untilLocked}`);
    const marks = async (): Promise<string[]> =>
      (await readFile(path.join(team.teamDir, "marks.txt"), "utf8").catch(() => "")).split("\n").filter(Boolean);
    const leader = await rig.leader(team, ["--inbox", "consume", "--reconcile-ms", "200"]);
    const { timestamp } = await rig.worker<{ timestamp: string }>("idle", {
      inboxFile: team.inboxFile("team", team.leadName),
      from: "bob",
    });
    const key = `idle:bob:${timestamp}`;

    // While the hook runs, a live process (this test) takes the inbox's lock: marking the notification
    // read must wait for it, after the event was recorded done.
    await leader.waitFor("the idle hook to start", async () => (await marks()).length === 1);
    await writeFile(
      lockFile,
      JSON.stringify({ pid: process.pid, createdAt: new Date().toISOString(), label: "test" }),
      { flag: "wx" },
    );
    await leader.waitFor("the event to be done", async () =>
      (await readLedger(team.teamDir)).some((r) => r.op === "done" && r.key === key),
    );
    await leader.kill();
    await rm(lockFile);
    expect((await readInboxFile(team, "team", team.leadName)).map((m) => m.read)).toEqual([false]);

    const next = await rig.leader(team, ["--inbox", "consume", "--reconcile-ms", "200"]);
    await next.waitFor(
      "the notification to be marked read",
      async () => (await readInboxFile(team, "team", team.leadName))[0]?.read === true,
      { timeoutMs: 5000 },
    );
    expect(await marks()).toEqual(["idle bob"]);
    expect(next.events()).toEqual([]);
    expect(await next.stop()).toMatchObject({ code: 0 });
  });
});
