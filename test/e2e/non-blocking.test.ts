/**
 * A non-blocking error is visible wherever a pass is shown, through the built bin: a Claude Code gate
 * (`format=claude`) that crashed allows, as Claude Code lets it, and the watch line (human and
 * `--json`), the `run` line, the `logs` table and `logs stats` say it; an error under failure mode
 * `open` that a later pass of its chain would hide is said by the event's line too.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
/** A Claude Code gate: task 1's check crashes (exit 1: non-blocking), the others pass. */
const CLAUDE_GATE = `# pi-teams-hooks: format=claude
if [ "$PI_TEAMS_TASK_ID" = 1 ]; then echo "linter crashed" >&2; exit 1; fi`;
const SAID = "passed (non-blocking error: exit code 1 • linter crashed)";
const T0 = "2026-03-01T09:00:00.000Z";

describe("a non-blocking error", () => {
  it("of a Claude Code gate: the watch and run lines, the logs table and logs stats say it", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const done = (id: string) => makeTask({ id, owner: "ada", status: "completed", metadata: { completedAt: T0 } });
    const team = await rig.team({ tasks: [done("1"), done("2")] });
    await rig.hook(team, "on_task_completed.sh", CLAUDE_GATE);

    const watched = await runBin(["watch", "--team-dir", team.teamDir, "--once", "--catch-up"]);
    expect(watched.code, watched.stderr).toBe(0);
    const line = (prefix: string, after: string): RegExp =>
      new RegExp(`${prefix} on_task_completed\\.sh ${escapeRegExp(SAID)} ${after}`, "m");
    expect(watched.stdout).toMatch(line("task_completed #1 ada", "\\d+ms \\(run \\w+\\)"));
    expect(watched.stdout).toMatch(/task_completed #2 ada on_task_completed\.sh passed \d+ms \(run \w+\)/);

    const ran = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"]);
    expect(ran.code).toBe(0);
    expect(ran.stdout).toMatch(line("^task_completed #1", "in \\d+ms \\(run \\w+\\)$"));

    // The outcome column is never cut: at 80 columns too, the pass says its error, beside the stderr line.
    const table = await runBin(["logs", "--team-dir", team.teamDir], { env: { COLUMNS: "80" } });
    const narrow = table.stdout.trimEnd().split("\n");
    expect(narrow.filter((row) => / #1 +passed \(error\) +(-|by hand) +linter crashed$/.test(row))).toHaveLength(2);
    expect(narrow.filter((row) => / #2 +passed +- *$/.test(row))).toHaveLength(1);
    for (const row of narrow) expect(row.length).toBeLessThanOrEqual(80);
    const wide = await runBin(["logs", "--team-dir", team.teamDir], { env: { COLUMNS: "200" } });
    expect(wide.stdout).toMatch(/ #1 +ada +on_task_completed\.sh +passed \(error\) +\d+ms +- +linter crashed\n/);

    const stats = await runBin(["logs", "stats", "--team-dir", team.teamDir]);
    const figure = "on_task_completed.sh (task_completed) passed 1 of its 2 run(s) with a non-blocking error";
    expect(stats.stdout).toContain(`non-blocking: ${figure}`);
    const json = await runBin(["logs", "stats", "--team-dir", team.teamDir, "--json", "--include-hand-runs"]);
    expect(JSON.parse(json.stdout)).toMatchObject({ runs: 3, passed: 3, passRate: 1, nonBlocking: 2 });
  });

  it("under failure mode open, behind a later pass of its chain: the event's line says it", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [] });
    const chain = path.join(team.teamsRoot, "_hooks", "on_idle.d");
    await mkdir(chain, { recursive: true });
    // An interpreter that is not there: the hook cannot start, an error; idle's failure mode is open.
    await writeFile(path.join(chain, "10-broken"), "#!/no/such/interpreter\n", { mode: 0o755 });
    await writeFile(path.join(chain, "20-ok.sh"), "exit 0\n", { mode: 0o755 });

    const leader = await rig.leader(team);
    await rig.worker("idle", { inboxFile: team.inboxFile("team", team.leadName), from: "ada" });
    const [event] = await leader.waitForEvents(1, (e) => e.event === "idle");
    expect(event).toMatchObject({ outcome: "passed", hook: "20-ok.sh" });
    expect(event?.nonBlocking).toMatch(/^on_idle\.d\/10-broken: .*ENOENT/);
    expect(await leader.stop()).toMatchObject({ code: 0 });

    const ran = await runBin(["run", "idle", "--team-dir", team.teamDir, "--member", "ada"]);
    expect(ran.code, ran.stderr).toBe(0);
    const said = /^idle 20-ok\.sh \(2 hooks\) passed \(non-blocking error: on_idle\.d\/10-broken: .*ENOENT\) in /m;
    expect(ran.stdout).toMatch(said);
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
