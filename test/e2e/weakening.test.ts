/**
 * A change of config.json that can weaken a verdict is trusted content: the leader keeps the approved
 * value, says what changed, tells the lead, and uses the change once the lead approves it with
 * `trust`; a change that can only make a gate stricter applies at once.
 */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { readInboxFile, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();

describe.concurrent("weakening settings", () => {
  it("failureMode open and exitCodes strict written by an agent: held, said, told; applied once the lead approves", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const base = { version: 1, teamId: "test-team", taskListId: "test-team", leadName: "team-lead" };
    const team = await rig.team({
      config: { ...base, hooks: { failureMode: "closed" } },
      tasks: [1, 2, 3].map((n) => makeTask({ id: String(n), owner: "alice", status: "in_progress" })),
    });
    // Exit 1 without a verdict: under strict exit codes a hook error, which failure mode open lets through.
    await rig.hook(team, "on_task_completed.sh", "exit 1");
    const leader = await rig.leader(team);
    const configFile = path.join(team.teamDir, "config.json");
    const configs = leader.linesOf("config").length;
    await writeFile(configFile, JSON.stringify({ ...base, hooks: { failureMode: "open", exitCodes: "strict" } }));
    await leader.waitFor("the reload", () => leader.linesOf("config").length > configs || leader.warnings().length > 0);
    await leader.waitFor("the held changes said", () =>
      leader
        .warnings()
        .some((w) =>
          w.includes('hooks.failureMode changed from "closed" to "open", which can weaken a gate\'s verdict'),
        ),
    );
    // Each change is its own line, read from the leader's output as it comes: waited for, not assumed.
    await leader.waitFor("the exit codes' change said", () =>
      leader.warnings().some((w) => w.includes('hooks.exitCodes changed from (default) to "strict"')),
    );

    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [first] = await leader.waitForEvents(1, (e) => e.taskId === "1");
    expect(first).toMatchObject({ outcome: "failed" });
    const lead = await readInboxFile(team, "team", team.leadName);
    expect(lead.map((m) => m.text).join("\n")).toContain('hooks.failureMode changed from "closed" to "open"');

    // The lead approves: the settings are the file's from now on.
    const trust = await runBin(["trust", "--team-dir", team.teamDir, "settings", "--yes"]);
    expect(trust.code, trust.stderr).toBe(0);
    expect(trust.stdout).toContain('hooks.failureMode: "closed" → "open"');
    await leader.waitFor("the approved settings in force", async () => {
      await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["2"] });
      return leader.events((e) => e.taskId === "2").length > 0;
    });
    const second = leader.events((e) => e.taskId === "2")[0];
    expect(second).toMatchObject({ outcome: "error", actions: ["none"] });
    expect(second?.summary).toMatch(/^allowed \(failure mode open\)/);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("a change that can only make a gate stricter applies at once: sandbox off to required, failure mode closed", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const base = { version: 1, teamId: "test-team", taskListId: "test-team", leadName: "team-lead" };
    const team = await rig.team({ config: { ...base, hooks: { sandbox: "off", failureMode: "open" } } });
    await rig.hook(team, "on_task_completed.sh", "exit 0");
    const first = await runBin(["config", "--team-dir", team.teamDir]);
    expect(first.code).toBe(0);
    const leader = await rig.leader(team, ["--once"], { waitForWatching: false });
    await leader.exited;
    await writeFile(
      path.join(team.teamDir, "config.json"),
      JSON.stringify({ ...base, hooks: { sandbox: "required", failureMode: "closed" } }),
    );
    const shown = await runBin(["policy", "get", "--team-dir", team.teamDir]);
    expect(shown.stderr).not.toContain("waits for the team lead's approval");
    expect(shown.stdout).toMatch(/sandbox\s+required/);
    expect(JSON.parse(await readFile(path.join(team.teamDir, "config.json"), "utf8")).hooks.sandbox).toBe("required");
  });
});
