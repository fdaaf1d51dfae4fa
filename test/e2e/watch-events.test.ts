/**
 * Which changes in a team dir are events, end to end through `pi-teams-hooks watch` as a child process:
 * completions, failures and idle notifications; one run for a change seen twice (task file and
 * notification); the three inbox modes; the first start's baseline and --catch-up; --once; malformed
 * task files; and a hook that hangs. The tests are independent (a team dir and a leader each) and
 * mostly wait, so they run concurrently.
 */
import { rename, writeFile } from "node:fs/promises";
import { type ExpectStatic, describe, it } from "vitest";
import {
  type LeaderProcess,
  type LeaderRig,
  readInboxFile,
  readLogs,
  useLeaderRig,
  elapse,
} from "../helpers/leader-rig.js";
import { makeMessage, makeTask, type TempTeam, runs } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();

const RECONCILE_MS = 200;
const T0 = "2025-01-01T00:00:00.000Z";
/** Every hook appends `event|task|member|timestamp` to runs.txt in the team dir (O_APPEND). */
const RECORD = `printf '%s|%s|%s|%s\\n' "$PI_TEAMS_HOOK_EVENT" "\${PI_TEAMS_TASK_ID-}" "\${PI_TEAMS_MEMBER-}" "\${PI_TEAMS_EVENT_TIMESTAMP-}" >> "$PI_TEAMS_TEAM_DIR/runs.txt"`;

async function recordingHooks(team: TempTeam): Promise<void> {
  for (const name of ["on_task_completed.sh", "on_task_failed.sh", "on_idle.sh"])
    await outerRig.hook(team, name, RECORD);
}

async function settle(leader: LeaderProcess, events: number, expect: ExpectStatic): Promise<void> {
  await elapse(RECONCILE_MS * 3); // a negative check: only time can show it
  expect(leader.events()).toHaveLength(events);
}

function idleArgs(team: TempTeam, from: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { inboxFile: team.inboxFile("team", team.leadName), from, ...extra };
}

const working = (id: string, owner = "alice") => makeTask({ id, owner, status: "in_progress" });

describe.concurrent("events", () => {
  it("a completion, failures (from in_progress and from completed) and an idle notification each run their hook", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: [
        working("1"),
        working("2"),
        makeTask({ id: "3", owner: "carol", status: "completed", metadata: { completedAt: T0 } }),
      ],
    });
    await recordingHooks(team);
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    expect(leader.linesOf("ready")[0]).toMatchObject({ tasks: 3, baseline: 1, queued: 0 });

    const done = await rig.worker<{ final: Record<string, string> }>("complete", {
      tasksDir: team.tasksDir,
      ids: ["1"],
    });
    const failed = await rig.worker<{ final: Record<string, string> }>("abort", {
      tasksDir: team.tasksDir,
      ids: ["2"],
      by: "alice",
    });
    const failedDone = await rig.worker<{ final: Record<string, string> }>("abort", {
      tasksDir: team.tasksDir,
      ids: ["3"],
      by: "carol",
    });
    const idle = await rig.worker<{ timestamp: string }>("idle", idleArgs(team, "bob"));
    await leader.waitForEvents(4);
    await settle(leader, 4, expect);

    const expected = [
      `task_completed:1:${done.final["1"]}`,
      `task_failed:2:${failed.final["2"]}`,
      `task_failed:3:${failedDone.final["3"]}`,
      `idle:bob:${idle.timestamp}`,
    ];
    expect(leader.events().map((e) => e.key)).toEqual(expected);
    expect((await readLogs(team.teamDir)).map((l) => l.key).sort()).toEqual([...expected].sort());
    expect((await runs(team)).sort()).toEqual(
      [
        `task_completed|1|alice|${done.final["1"]}`,
        `task_failed|2|alice|${failed.final["2"]}`,
        `task_failed|3|carol|${failedDone.final["3"]}`,
        `idle||bob|${idle.timestamp}`,
      ].sort(),
    );
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it.for([
    ["the task file first, then the notification", "file-first"],
    ["the notification first, then the task file", "note-first"],
    ["both at once", "together"],
  ] as const)("one completion reported twice (%s) runs on_task_completed once", async ([, order], context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [working("1")] });
    await recordingHooks(team);
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    const note = idleArgs(team, "alice", { completedTaskId: "1", completedStatus: "completed" });
    let completedAt: string | undefined;
    if (order === "file-first") {
      completedAt = (
        await rig.worker<{ final: Record<string, string> }>("complete", { tasksDir: team.tasksDir, ids: ["1"] })
      ).final["1"];
      await leader.waitForEvents(1);
      await rig.worker("idle", note);
    } else if (order === "note-first") {
      await rig.worker("idle", note);
      await leader.waitForEvents(1); // the idle event itself
      completedAt = (
        await rig.worker<{ final: Record<string, string> }>("complete", { tasksDir: team.tasksDir, ids: ["1"] })
      ).final["1"];
    } else {
      const [completed] = await Promise.all([
        rig.worker<{ final: Record<string, string> }>("complete", { tasksDir: team.tasksDir, ids: ["1"] }),
        rig.worker("idle", note),
      ]);
      completedAt = completed.final["1"];
    }
    await leader.waitForEvents(2);
    await settle(leader, 2, expect);
    const logs = await readLogs(team.teamDir);
    expect(logs.filter((l) => l.invocation.event === "task_completed").map((l) => l.key)).toEqual([
      `task_completed:1:${completedAt}`,
    ]);
    expect(logs.filter((l) => l.invocation.event === "idle")).toHaveLength(1);
    expect((await runs(team)).filter((r) => r.startsWith("task_completed|"))).toHaveLength(1);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("one failure reported twice (task file and notification) runs on_task_failed once", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [working("1")] });
    await recordingHooks(team);
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    const aborted = await rig.worker<{ final: Record<string, string> }>("abort", {
      tasksDir: team.tasksDir,
      ids: ["1"],
    });
    await leader.waitForEvents(1);
    await rig.worker(
      "idle",
      idleArgs(team, "alice", { completedTaskId: "1", completedStatus: "failed", failureReason: "gave up" }),
    );
    await leader.waitForEvents(2);
    await settle(leader, 2, expect);
    expect(leader.events().map((e) => e.event)).toEqual(["task_failed", "idle"]);
    expect(leader.events()[0]?.key).toBe(`task_failed:1:${aborted.final["1"]}`);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});

describe.concurrent("--inbox", () => {
  it.for(["observe", "consume", "off"] as const)("--inbox %s", async (mode, context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const chat = makeMessage({ from: "carol", text: "lunch?", timestamp: "2025-01-01T00:00:01.000Z" });
    const team = await rig.team({ tasks: [working("1")], inbox: [chat] });
    await recordingHooks(team);
    const leader = await rig.leader(team, ["--inbox", mode, "--reconcile-ms", String(RECONCILE_MS)]);
    const first = await rig.worker<{ timestamp: string }>("idle", idleArgs(team, "alice"));
    const second = await rig.worker<{ timestamp: string }>("idle", idleArgs(team, "bob"));
    // A completion as a marker that the leader is taking events, whatever the mode.
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });

    if (mode === "off") {
      await leader.waitForEvents(1);
      await settle(leader, 1, expect);
      expect(leader.events((e) => e.event === "idle")).toEqual([]);
    } else {
      await leader.waitForEvents(3);
      await settle(leader, 3, expect);
      expect(
        leader
          .events((e) => e.event === "idle")
          .map((e) => e.key)
          .sort(),
      ).toEqual([`idle:alice:${first.timestamp}`, `idle:bob:${second.timestamp}`].sort());
    }
    const wantRead = mode === "consume";
    const inbox = await leader.waitFor("the inbox in its final state", async () => {
      const messages = await readInboxFile(team, "team", team.leadName);
      return messages.slice(1).every((m) => m.read === wantRead) ? messages : false;
    });
    expect(inbox).toHaveLength(3);
    expect(inbox[0]).toEqual(chat); // not an idle notification: never marked, never rewritten
    expect(inbox.slice(1).map((m) => m.read)).toEqual([wantRead, wantRead]);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });
});

describe.concurrent("first start, --catch-up, --once", () => {
  async function historyTeam(rig: LeaderRig): Promise<TempTeam> {
    const note = JSON.stringify({ type: "idle_notification", from: "bob", timestamp: T0 });
    return rig.team({
      tasks: [
        makeTask({ id: "1", owner: "alice", status: "completed", metadata: { completedAt: T0 } }),
        makeTask({ id: "2", owner: "alice", status: "completed", metadata: { completedAt: T0 } }),
        makeTask({ id: "3", owner: "alice", status: "pending", metadata: { abortedAt: T0 } }),
        working("4"),
      ],
      inbox: [makeMessage({ from: "bob", text: note, timestamp: T0 })],
    });
  }

  it("the first start records what exists as a baseline and runs only what happens next", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await historyTeam(rig);
    await recordingHooks(team);
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    expect(leader.linesOf("ready")[0]).toMatchObject({ tasks: 4, baseline: 4, queued: 0 });
    await settle(leader, 0, expect);
    const done = await rig.worker<{ final: Record<string, string> }>("complete", {
      tasksDir: team.tasksDir,
      ids: ["4"],
    });
    await leader.waitForEvents(1);
    await settle(leader, 1, expect);
    expect(leader.events()[0]?.key).toBe(`task_completed:4:${done.final["4"]}`);
    expect(await runs(team)).toHaveLength(1);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("--catch-up runs what exists on the first start", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await historyTeam(rig);
    await recordingHooks(team);
    const leader = await rig.leader(team, ["--catch-up", "--reconcile-ms", String(RECONCILE_MS)]);
    expect(leader.linesOf("ready")[0]).toMatchObject({ baseline: 0, queued: 4 });
    await leader.waitForEvents(4);
    await settle(leader, 4, expect);
    expect(
      leader
        .events()
        .map((e) => e.key)
        .sort(),
    ).toEqual([`idle:bob:${T0}`, `task_completed:1:${T0}`, `task_completed:2:${T0}`, `task_failed:3:${T0}`]);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("--once handles what is pending and exits 0; the next --once finds nothing new", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await historyTeam(rig);
    await recordingHooks(team);
    const once = async (...args: string[]): Promise<LeaderProcess> => {
      const leader = await rig.leader(team, ["--once", ...args], { waitForWatching: false });
      expect(await leader.exited).toEqual({ code: 0, signal: null });
      expect(leader.linesOf("watching")).toHaveLength(1);
      expect(leader.linesOf("stopped")).toEqual([{ type: "stopped", dropped: 0 }]);
      return leader;
    };
    expect((await once()).events()).toEqual([]); // first start: the baseline
    // Events while no leader runs.
    const done = await rig.worker<{ final: Record<string, string> }>("complete", {
      tasksDir: team.tasksDir,
      ids: ["4", "1"],
    });
    const idle = await rig.worker<{ timestamp: string }>("idle", idleArgs(team, "alice"));
    const second = await once();
    expect(
      second
        .events()
        .map((e) => e.key)
        .sort(),
    ).toEqual(
      [
        `task_completed:4:${done.final["4"]}`,
        `task_completed:1:${done.final["1"]}`,
        `idle:alice:${idle.timestamp}`,
      ].sort(),
    );
    expect((await once()).events()).toEqual([]);
    expect(await runs(team)).toHaveLength(3);
  });

  it("--once --catch-up runs the history of a team dir seen for the first time", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await historyTeam(rig);
    await recordingHooks(team);
    const leader = await rig.leader(team, ["--once", "--catch-up"], { waitForWatching: false });
    expect(await leader.exited).toEqual({ code: 0, signal: null });
    expect(leader.events()).toHaveLength(4);
  });
});

describe.concurrent("robustness", () => {
  it("a malformed task file is a warning naming the file and the field, once per version, and the leader carries on", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: [working("1"), { id: "7", raw: '{"id": "7", "subject": ' }, { ...makeTask({ id: "8" }), status: 42 }],
    });
    await recordingHooks(team);
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    await leader.waitFor("warnings for 7.json and 8.json", () => {
      const warnings = leader.warnings();
      return (
        warnings.some((w) => w.includes(team.taskFile("7")) && /invalid JSON/.test(w)) &&
        warnings.some((w) => w.includes(team.taskFile("8")) && w.includes("status"))
      );
    });
    // Broken after the start, through the watcher: a required field missing, and an array.
    const nine = { ...makeTask({ id: "9" }) } as Record<string, unknown>;
    delete nine.subject;
    await writeFile(`${team.taskFile("9")}.tmp.test`, JSON.stringify(nine));
    await rename(`${team.taskFile("9")}.tmp.test`, team.taskFile("9"));
    await writeFile(`${team.taskFile("10")}.tmp.test`, "[]\n");
    await rename(`${team.taskFile("10")}.tmp.test`, team.taskFile("10"));
    await leader.waitFor("warnings for 9.json and 10.json", () => {
      const warnings = leader.warnings();
      return (
        warnings.some((w) => w.includes(team.taskFile("9")) && w.includes("subject")) &&
        warnings.some((w) => w.includes(team.taskFile("10")))
      );
    });

    const done = await rig.worker<{ final: Record<string, string> }>("complete", {
      tasksDir: team.tasksDir,
      ids: ["1"],
    });
    await leader.waitForEvents(1);
    await settle(leader, 1, expect);
    expect(leader.events()[0]?.key).toBe(`task_completed:1:${done.final["1"]}`);
    expect(leader.running).toBe(true);
    // Reconcile passes went by: each broken file was reported once, not at every scan.
    for (const id of ["7", "8", "9", "10"]) {
      expect(leader.warnings().filter((w) => w.includes(team.taskFile(id)))).toHaveLength(1);
    }
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it("--poll notices completions and notifications by polling (the reconcile scan is far away)", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [working("1")] });
    await recordingHooks(team);
    const leader = await rig.leader(team, ["--poll", "--poll-interval-ms", "50", "--reconcile-ms", "600000"]);
    const done = await rig.worker<{ final: Record<string, string> }>("complete", {
      tasksDir: team.tasksDir,
      ids: ["1"],
    });
    const idle = await rig.worker<{ timestamp: string }>("idle", idleArgs(team, "bob"));
    await leader.waitForEvents(2);
    expect(
      leader
        .events()
        .map((e) => e.key)
        .sort(),
    ).toEqual([`idle:bob:${idle.timestamp}`, `task_completed:1:${done.final["1"]}`]);
    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  it.for([1, 2])(
    "a hook that hangs is ended at --timeout-ms and does not hold up other events (--concurrency %i)",
    async (concurrency, context) => {
      const { expect } = context;
      const rig = outerRig.scoped(context);
      // In parallel, the other event must be done before the hung hook's timeout: 4 s leaves room for a
      // loaded machine (at 1 s, two busy CPUs were enough to lose that race now and then).
      const TIMEOUT_MS = concurrency === 2 ? 4000 : 1000;
      const team = await rig.team({ tasks: [working("1"), working("2")] });
      await rig.hook(
        team,
        "on_task_completed.sh",
        `${RECORD}\nif [ "$PI_TEAMS_TASK_ID" = 1 ]; then sleep 30; fi\nexit 0`,
      );
      const leader = await rig.leader(team, [
        "--timeout-ms",
        String(TIMEOUT_MS),
        "--concurrency",
        String(concurrency),
        "--reconcile-ms",
        String(RECONCILE_MS),
      ]);
      const began = performance.now();
      await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
      await leader.waitFor("the hanging hook to start", async () => (await runs(team)).length === 1);
      await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["2"] });
      const events = await leader.waitForEvents(2);
      const elapsed = performance.now() - began;

      const hung = events.find((e) => e.taskId === "1");
      const other = events.find((e) => e.taskId === "2");
      expect(hung).toMatchObject({
        outcome: "error",
        timedOut: true,
        summary: expect.stringContaining(`timeout after ${TIMEOUT_MS}ms`),
      });
      expect(hung?.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS);
      expect(hung?.durationMs).toBeLessThan(TIMEOUT_MS + 3000);
      expect(other).toMatchObject({ outcome: "passed" });
      expect(elapsed).toBeLessThan(TIMEOUT_MS + 8000);
      // In parallel, the other task's hook does not wait for the hung one at all.
      if (concurrency === 2) expect(events.map((e) => e.taskId)).toEqual(["2", "1"]);
      const logs = await readLogs(team.teamDir);
      expect(logs.find((l) => l.invocation.completedTask?.id === "1")?.result).toMatchObject({
        timedOut: true,
        outcome: "error",
      });
      expect(await leader.stop()).toMatchObject({ code: 0 });
    },
  );
});
