/**
 * The first start on a team dir with history, when it is not quiet: workers keep editing old tasks
 * while the leader scans, complete tasks while its start-up scan still runs (it takes events from the
 * `watching` line on), or the leader dies in the middle of its first scan. Either way what existed
 * before the first start is a baseline: no hook runs for it (only --catch-up runs history), and what
 * came after it runs once.
 */
import { access, link, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { type TempTeam, runs } from "../helpers/temp-team.js";
import {
  once,
  readLedger,
  readLogs,
  seedTasks,
  taskJson,
  useLeaderRig,
  waitUntil,
  elapse,
} from "../helpers/leader-rig.js";

const rig = useLeaderRig();

const T0 = "2025-01-01T00:00:00.000Z";
const RECORD = `echo "$PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/runs.txt"`;
const HISTORY = 4000;

/**
 * 4,000 tasks completed long ago, written once for the file. Each test's team gets them as hard links
 * (a new name for the same file: what the leader reads is the same as a copy), because creating a file
 * costs far more than linking one (a new inode each). Nothing writes into these files: a worker's edit
 * renames a new file over its name, which leaves the shared one as it was.
 */
const history = once(async () => {
  const source = await rig.shared.team();
  await seedTasks(source, 1, HISTORY, () => ({ status: "completed", metadata: { completedAt: T0 } }));
  return source;
});

/** Tasks 1..`count` of the shared history in `team`'s task list; their ids. */
async function seedHistory(team: TempTeam, count = HISTORY): Promise<string[]> {
  const source = await history();
  const ids = Array.from({ length: count }, (_, n) => String(n + 1));
  for (const id of ids) await link(source.taskFile(id), team.taskFile(id));
  return ids;
}

describe("the first start's baseline", () => {
  it("old completions edited by workers during the first scan are still a baseline, not run", async () => {
    const team = await rig.team();
    const ids = await seedHistory(team, 3000);
    await rig.hook(team, "on_task_completed.sh", RECORD);
    // Another member edits other fields of the old tasks (completedAt untouched: no new completion).
    const stopFile = path.join(team.teamsRoot, "stop-touch");
    const toucher = rig.backgroundWorker("touch", { tasksDir: team.tasksDir, ids, field: "comment", stopFile });
    await waitUntil("the first edits", async () => (await commentEdits(team.taskFile("1"))) > 0);

    const leader = await rig.leader(team, ["--reconcile-ms", "200"]);
    await writeFile(stopFile, "");
    const { final } = (await toucher.result) as { final: Record<string, number> };
    expect(Object.keys(final).length).toBeGreaterThan(0);
    expect(leader.linesOf("ready")[0]).toMatchObject({ tasks: 3000 });

    // Everything the edits changed has been looked at again (reconcile), and nothing ran.
    await elapse(200 * 4); // a negative check: only time can show it
    expect(leader.events()).toEqual([]);
    // Edits the scan met after the first-start mark were judged by their stamps, and said so once.
    const said = leader.warnings().filter((w) => w.includes("changed while the first start scanned"));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/^warning: \d+ task\(s\) changed while .* \(#\d+.*recorded as history.*--apply-policy$/);
    expect(await readLogs(team.teamDir)).toEqual([]);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  }, 60_000);

  it("a leader killed during its first scan leaves no half baseline: the next start still records history as a baseline", async () => {
    const team = await rig.team();
    await seedHistory(team);
    await rig.hook(team, "on_task_completed.sh", RECORD);
    const ledger = path.join(team.teamDir, "hook-state", "ledger.jsonl");

    // Killed as soon as its ledger exists: before the scan of 4,000 files can have finished.
    const first = await rig.leader(team, [], { waitForWatching: false });
    await waitUntil("the ledger file", () => access(ledger).then(() => true), { intervalMs: 1, timeoutMs: 20_000 });
    await first.kill();
    const written = await readLedger(team.teamDir);
    // (else the kill came too late to matter)
    expect(written.filter((r) => r.op === "baseline").length).toBeLessThan(4000);
    expect(first.linesOf("watching")).toEqual([]);

    const second = await rig.leader(team, ["--reconcile-ms", "200"]);
    expect(second.linesOf("ready")[0]).toMatchObject({ tasks: 4000, queued: 0 });
    await elapse(200 * 3); // a negative check: only time can show it
    expect(second.events()).toEqual([]);
    expect(await second.stop()).toMatchObject({ code: 0 });
  }, 60_000);
});

describe("the first start takes events while its scan runs", () => {
  it("a completion that lands during the start-up scan runs once; the history around it does not", async () => {
    const team = await rig.team();
    await seedHistory(team);
    await seedTasks(team, 4001, 4001);
    await rig.hook(team, "on_task_completed.sh", RECORD);

    const leader = await rig.leader(team, ["--reconcile-ms", "200"], { waitForWatching: false });
    await leader.waitFor("the watching line", () => leader.linesOf("watching").length > 0, { timeoutMs: 20_000 });
    await complete(team.taskFile("4001"), "4001");
    // The write landed before the scan of 4,000 files was done (else this test did not test it).
    expect(leader.linesOf("ready")).toEqual([]);

    const [event] = await leader.waitForEvents(1);
    await leader.waitFor("the ready line", () => leader.linesOf("ready").length > 0);
    expect(event).toMatchObject({ taskId: "4001", outcome: "passed" });
    expect(leader.linesOf("ready")[0]).toMatchObject({ tasks: 4001, baseline: 4000, queued: 1 });
    await elapse(200 * 3); // a negative check: only time can show it
    expect(await runs(team)).toEqual(["4001"]);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  }, 60_000);

  it("a first start killed before its baseline is recorded: what came after it still runs at the next start", async () => {
    const team = await rig.team();
    await seedHistory(team);
    await seedTasks(team, 4001, 4002);
    // 4002's gate holds the queue (concurrency 1) until the second start, so 4001 waits, unrun.
    await rig.hook(
      team,
      "on_task_completed.sh",
      `if [ "$PI_TEAMS_TASK_ID" = 4002 ] && [ ! -e "$PI_TEAMS_TEAM_DIR/go" ]; then sleep 30; fi\n${RECORD}`,
    );

    const first = await rig.leader(team, [], { waitForWatching: false });
    await first.waitFor("the watching line", () => first.linesOf("watching").length > 0, { timeoutMs: 20_000 });
    await complete(team.taskFile("4002"), "4002");
    await complete(team.taskFile("4001"), "4001");
    await first.waitFor("4002's gate", async () =>
      (await readLedger(team.teamDir)).some((r) => r.op === "begin" && r.key.startsWith("task_completed:4002:")),
    );
    await first.kill();
    expect(first.linesOf("ready")).toEqual([]); // killed during its first scan: no baseline recorded
    expect((await readLedger(team.teamDir)).some((r) => r.key === "leader:baseline-complete")).toBe(false);

    // Later than the first start: a start that took "now" as the line between history and new
    // would record 4001 as history.
    await elapse(300); // not a wait for an event: the clock itself must move past the first start
    await writeFile(path.join(team.teamDir, "go"), "");
    const second = await rig.leader(team, ["--reconcile-ms", "200"]);
    await second.waitForEvents(2);
    expect(second.linesOf("ready")[0]).toMatchObject({ tasks: 4002, baseline: 4000 });
    await elapse(200 * 3); // a negative check: only time can show it
    expect((await runs(team)).sort()).toEqual(["4001", "4002"]);
    const logs = await readLogs(team.teamDir);
    // one log each: 4002's first run was cut short
    expect(logs.map((l) => l.key?.split(":")[1]).sort()).toEqual(["4001", "4002"]);
    expect(await second.stop()).toMatchObject({ code: 0 });
  }, 60_000);
});

/** Completes task `id` now, as a worker does: the whole file to a temporary name, renamed into place. */
async function complete(file: string, id: string): Promise<void> {
  await writeFile(
    `${file}.tmp.${process.pid}`,
    taskJson({ id, owner: "alice", status: "completed", metadata: { completedAt: new Date().toISOString() } }),
  );
  await rename(`${file}.tmp.${process.pid}`, file);
}

/** The task ids the recording hook ran for, in order. */
/** How many `comment` edits a task has had (0 before the first). */
async function commentEdits(file: string): Promise<number> {
  const task = JSON.parse(await readFile(file, "utf8")) as { metadata?: { comment?: number } };
  return task.metadata?.comment ?? 0;
}
