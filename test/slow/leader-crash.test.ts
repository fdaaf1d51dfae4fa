/**
 * Crash safety: the leader is SIGKILLed at five different points of a 100-event run and started again
 * each time, while a worker keeps completing tasks. The gate fails under `reopen_followup`, so every
 * event also reopens its task, creates a follow-up and sends three messages: the places where a retry
 * could do something twice. At the end every key has exactly one hook log, every task was reopened
 * exactly once, there is exactly one follow-up per key, and no hook process is left.
 *
 * Kill points:
 *   1. mid-hook: task 17's first attempt sleeps, and the leader dies under it (the orphaned hook must
 *      be ended by the next leader, and the event retried; it sleeps longer than any restart takes on
 *      a busy machine, so that it is surely still running when the next leader starts);
 *   2. in the middle of the stream, after a few events, with the worker still writing;
 *   3. between hook end and policy write: one hook, as its last act, takes its own task's lock in the
 *      name of a live process (the test's), so the leader's policy write cannot happen; the leader is
 *      killed once that hook has exited, then the lock is removed;
 *   4. right after the restart's `ready` line, while it re-runs what was cut off;
 *   5. right after an `event` line, between events.
 */
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  type LeaderProcess,
  countLogs,
  hookProcesses,
  readAllTaskFiles,
  readHighWatermark,
  readInboxFile,
  readLedger,
  readLogs,
  seedTasks,
  useLeaderRig,
  waitUntil,
  elapse,
} from "../helpers/leader-rig.js";

const rig = useLeaderRig();

const N = 100;
const SLOW_TASK = "17";
// HOLDER_PID is the test's own variable, given to the leader: a sandboxed gate gets it only by name.
const HOOK = `# pi-teams-hooks: env=HOLDER_PID
D="$PI_TEAMS_TEAM_DIR"; ID="$PI_TEAMS_TASK_ID"
echo "start $ID $$" >> "$D/starts.txt"
if [ "$ID" = "${SLOW_TASK}" ] && mkdir "$D/slow-once" 2>/dev/null; then sleep 120; fi
sleep 0.02
echo "end $ID $$" >> "$D/ends.txt"
if [ -e "$D/trap-armed" ] && mkdir "$D/trap-sprung" 2>/dev/null; then
  # O_EXCL (noclobber). If the lock is taken (the worker has not released it yet, or a killed leader
  # left it), this task is not the one: disarm for the next hook.
  LOCK='{"pid":%s,"createdAt":"%s","label":"test: between hook end and policy write"}'
  LOCK_FILE="$D/tasks/$PI_TEAMS_TASK_LIST_ID/$ID.json.lock"
  if (set -C; printf "$LOCK" "$HOLDER_PID" "$(date -u +%FT%TZ)" > "$LOCK_FILE") 2>/dev/null; then
    echo "$ID $$" > "$D/trap-task"
  else
    rmdir "$D/trap-sprung"
  fi
fi
echo "gate failed for $ID" >&2
exit 1`;

async function lines(file: string): Promise<string[]> {
  return (await readFile(file, "utf8").catch(() => "")).split("\n").filter(Boolean);
}

describe("SIGKILL at five points of a 100-event run", () => {
  it("every key ends with exactly one log, one reopen and one follow-up; no hook process survives", async () => {
    const team = await rig.team({ highWatermark: N });
    // Ten workers own the tasks (one inbox each, as in a real team: a single inbox of 300 messages
    // would make every append slower).
    await seedTasks(team, 1, N, (id) => ({ status: "in_progress", owner: `worker-${Number(id) % 10}` }));
    await rig.hook(team, "on_task_completed.sh", HOOK);
    const starts = path.join(team.teamDir, "starts.txt");
    const ends = path.join(team.teamDir, "ends.txt");
    const args = [
      "--failure-action",
      "reopen_followup",
      "--max-reopens",
      "3",
      "--concurrency",
      "2",
      "--reconcile-ms",
      "300",
    ];
    const start = async (): Promise<LeaderProcess> => {
      const leader = await rig.leader(team, args, { env: { HOLDER_PID: String(process.pid) } });
      all.push(leader);
      return leader;
    };
    const kills: string[] = [];
    const all: LeaderProcess[] = [];
    const crash = async (leader: LeaderProcess, point: string): Promise<void> => {
      await leader.kill();
      kills.push(`${point} (after ${leader.events().length} event(s))`);
    };

    const leader1 = await start();
    const ids = Array.from({ length: N }, (_, i) => String(i + 1));
    // A worker completes all 100 tasks in order, one every few tens of milliseconds, across the crashes.
    const worker = rig.backgroundWorker("complete", { tasksDir: team.tasksDir, ids, pauseMs: 30 });

    // 1. Mid-hook: task 17's first attempt sleeps (until the next leader ends it).
    await leader1.waitFor("task 17's hook to start", async () =>
      (await lines(starts)).some((l) => l.startsWith(`start ${SLOW_TASK} `)),
    );
    const orphanPid = Number((await lines(starts)).find((l) => l.startsWith(`start ${SLOW_TASK} `))?.split(" ")[2]);
    await crash(leader1, "mid-hook");
    // Process ids are judged by environment, not number: with pid_max 32,768 and thousands of hooks,
    // a number can be reused within the test.
    const isHook = async (pid: number): Promise<boolean> =>
      (await hookProcesses(team.teamDir)).some((p) => p.pid === pid);
    expect(await isHook(orphanPid)).toBe(true); // the hook outlived its leader (its own process group)

    // 2. A few events into the next run, the worker still writing.
    const leader2 = await start();
    expect(await isHook(orphanPid)).toBe(false); // ended by the new leader before it took events
    expect(leader2.linesOf("recovered")).toContainEqual(
      expect.objectContaining({ how: "retry", key: expect.stringMatching(/^task_completed:17:/) }),
    );
    await leader2.waitForEvents(5);
    await crash(leader2, "after a few events");

    // 3. Between hook end and policy write.
    const leader3 = await start();
    await writeFile(path.join(team.teamDir, "trap-armed"), "");
    const [trappedTask = "", trappedPidText = ""] = await leader3.waitFor(
      "a hook to take its task's lock",
      async () => {
        const words = (await readFile(path.join(team.teamDir, "trap-task"), "utf8")).trim().split(" ");
        return words.length === 2 ? words : false; // (empty while the hook is writing it)
      },
    );
    await waitUntil("the trapping hook to exit", async () => !(await isHook(Number(trappedPidText))));
    // The lock names a live process (the test's), so the policy write waits for it, not for it to go stale.
    expect(await readFile(`${team.taskFile(trappedTask)}.lock`, "utf8")).toContain(`{"pid":${process.pid},`);
    await crash(leader3, `between hook end and policy write (task ${trappedTask})`);
    await rm(team.taskFile(trappedTask) + ".lock");
    const logsBefore = await readLogs(team.teamDir);
    // no policy, no log yet
    expect(logsBefore.filter((l) => l.invocation.completedTask?.id === trappedTask)).toEqual([]);

    // 4. Right after the restart is ready (re-running what was cut off).
    const leader4 = await start();
    expect(leader4.linesOf("recovered")).toContainEqual(
      expect.objectContaining({
        how: "retry",
        key: expect.stringMatching(new RegExp(`^task_completed:${trappedTask}:`)),
      }),
    );
    await crash(leader4, "right after ready");

    // 5. Right after an event line.
    const leader5 = await start();
    await leader5.waitForEvents(1);
    await crash(leader5, "right after an event");

    // The last leader runs to the end.
    const leader6 = await start();
    const { final } = (await worker.result) as { final: Record<string, string> };
    const keys = ids.map((id) => `task_completed:${id}:${final[id]}`);
    // (the logs are counted first, a directory listing: reading each of them at every poll costs seconds)
    await leader6.waitFor(
      "a log for each of the 100 keys",
      async () =>
        (await countLogs(team.teamDir)) >= N && new Set((await readLogs(team.teamDir)).map((l) => l.key)).size >= N,
      { timeoutMs: 120_000 },
    );
    await elapse(300 * 3); // a negative check: only time can show it
    expect(await leader6.stop()).toMatchObject({ code: 0 });
    expect(kills).toHaveLength(5);

    // Exactly one log per key, a retry marked as such.
    const logs = await readLogs(team.teamDir);
    const perKey = new Map<string, number>();
    for (const log of logs) perKey.set(log.key ?? "(none)", (perKey.get(log.key ?? "(none)") ?? 0) + 1);
    expect([...perKey.keys()].sort()).toEqual([...keys].sort());
    expect([...perKey.entries()].filter(([, n]) => n !== 1)).toEqual([]);
    const retried = logs.filter((l) => l.retry === true).map((l) => l.invocation.completedTask?.id);
    expect(retried).toEqual(expect.arrayContaining([SLOW_TASK, trappedTask]));
    // The orphaned first attempt of task 17 never got to its end.
    expect((await lines(ends)).filter((l) => l === `end ${SLOW_TASK} ${orphanPid}`)).toEqual([]);

    // The ledger agrees: every key done.
    const lastOp = new Map<string, string>();
    const ledgerRecords = await readLedger(team.teamDir);
    for (const record of ledgerRecords) lastOp.set(record.key, record.op);
    for (const key of keys) expect(lastOp.get(key)).toBe("done");

    // A leader SIGKILLed between creating a lock file (O_EXCL) and writing its { pid, createdAt } into
    // it leaves an empty lock. The next leader's policy step then waits for it to turn stale (a few
    // seconds without a pid) and tries the step again: nothing is lost, nothing done twice.
    // Each task reopened once, its failure counted once; one follow-up per key.
    const tasks = await readAllTaskFiles(team);
    for (const id of ids) {
      const task = tasks.get(id);
      const gate = {
        id,
        status: task?.status,
        reopens: task?.metadata?.reopenedByQualityGateCount,
        failures: task?.metadata?.qualityGateFailureCount,
      };
      expect(gate).toEqual({ id, status: "pending", reopens: 1, failures: 1 });
    }
    const followupFor = [...tasks.values()]
      .map((t) => t.metadata?.qualityGateFollowupFor)
      .filter((v): v is string => typeof v === "string");
    expect(followupFor).toHaveLength(new Set(followupFor).size); // never two for one key
    expect(keys.filter((key) => !followupFor.includes(key))).toEqual([]);
    expect(await readHighWatermark(team)).toBe(N + followupFor.length);

    // Messages: per key, the follow-up's assignment, the reopened task's assignment back to its
    // owner and one nudge, none twice.
    const byKey = new Map<string, string[]>();
    for (let w = 0; w < 10; w++) {
      for (const message of await readInboxFile(team, team.taskListId, `worker-${w}`)) {
        const key = String((message as { qualityGateEventKey?: unknown }).qualityGateEventKey);
        const assigned = message.text.includes('"task_assignment"')
          ? (JSON.parse(message.text) as { taskId?: unknown }).taskId
          : undefined;
        const kind =
          assigned === undefined
            ? "nudge"
            : key.startsWith(`task_completed:${String(assigned)}:`)
              ? "reassign"
              : "followup";
        byKey.set(key, [...(byKey.get(key) ?? []), kind]);
      }
    }
    const wrong = keys.filter((key) => {
      const kinds = (byKey.get(key) ?? []).sort().join();
      return kinds !== "followup,nudge,reassign";
    });
    // (on failure: what the logs, the ledger and the leaders said about those keys)
    const about = (key: string) => ({
      key,
      messages: byKey.get(key),
      policy: logs.find((l) => l.key === key)?.policy,
      said: all.flatMap((l, i) =>
        l.stderr
          .split("\n")
          .filter((line) => line.includes(key))
          .map((line) => `leader ${i + 1}: ${line}`),
      ),
      ledger: ledgerRecords.filter((r) => r.key === key),
    });
    expect(wrong.map(about)).toEqual([]);

    // No hook process outlived any of the six leaders (the rig checks again after the test).
    expect(await hookProcesses(team.teamDir)).toEqual([]);
  }, 180_000);
});
