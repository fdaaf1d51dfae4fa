/**
 * The held events (holds/held-events.ts `Holds`) of a leader's context over a real temp team: its ledger, its
 * `hook-state/holds.json`, the lead's inbox and real gate files for the trust check. What a team lead checks: the
 * list `/gates` and the dashboard read, the one note per gate and reason, the fault tried again by itself on its
 * schedule (a fake clock: vitest's timers, so that 60 s take no time), and which holds run again when.
 */
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { leaderOptions } from "../helpers/leader-here.js";
import type { HookEvent } from "../../extensions/teams-hooks/contract/events.js";
import { type HeldEvent, readHolds } from "../../extensions/teams-hooks/holds/holds-view.js";
import { Holds } from "../../extensions/teams-hooks/holds/held-events.js";
import { LeaderContext } from "../../extensions/teams-hooks/leader/context.js";
import { Ledger } from "../../extensions/teams-hooks/leader/ledger.js";
import type { LeaderNotice } from "../../extensions/teams-hooks/leader/notices.js";
import { resolveTeamSetup } from "../../extensions/teams-hooks/team/setup.js";
import { entryFor, fingerprint } from "../../extensions/teams-hooks/trust/trust.js";
import { readInboxFile, readLedger } from "../helpers/leader-rig.js";
import { makeTask, tempTeams, type TempTeam } from "../helpers/temp-team.js";
import { createRuntime } from "../../extensions/teams-hooks/runner/runtime.js";

const team = tempTeams({ teamId: "holds-unit" });
const AT = "2026-12-02T10:00:00.000Z";

afterEach(() => {
  vi.useRealTimers();
});

interface Rig {
  team: TempTeam;
  ctx: LeaderContext;
  ledger: Ledger;
  holds: Holds;
  /** The events the holds ran again, in order. */
  ran: HookEvent[];
  notices: LeaderNotice[];
  gate: string;
  /** The holds.json the leader wrote, once its writes and notes are done. */
  listed(): Promise<HeldEvent[]>;
}

/** A watching leader's context on a fresh team (its ledger open), with the holds under test. */
async function rig(): Promise<Rig> {
  const made = await team({ tasks: [makeTask({ id: "1", status: "completed" }), makeTask({ id: "2" })] });
  const hooksDir = path.join(made.teamsRoot, "_hooks");
  const gate = path.join(hooksDir, "on_task_completed.sh");
  await mkdir(hooksDir, { recursive: true });
  await writeFile(gate, "#!/usr/bin/env bash\nexit 0\n");
  const env = { PATH: process.env.PATH, HOME: made.teamsRoot, PI_TEAMS_HOOKS_DIR: hooksDir };
  const setup = await resolveTeamSetup({ teamDir: made.teamDir, env, processCwd: made.teamsRoot });
  await chmod(gate, 0o755);
  const notices: LeaderNotice[] = [];
  const ctx = new LeaderContext(leaderOptions(setup, env, notices), createRuntime({ now: () => new Date(AT) }));
  const ledger = await Ledger.open(made.teamDir);
  ctx.state = "watching";
  const ran: HookEvent[] = [];
  const holds = new Holds(ctx, ledger, (event) => ran.push(event));
  const listed = async (): Promise<HeldEvent[]> => {
    await holds.settled();
    await ctx.notes;
    return (await readHolds(made.teamDir)).holds;
  };
  return { team: made, ctx, ledger, holds, ran, notices, gate, listed };
}

function completion(taskId: string, stamp = AT): HookEvent {
  const key = `task_completed:${taskId}:${stamp}`;
  return { key, event: "task_completed", taskId, member: "alice", timestamp: stamp, source: "task" };
}

function info(event: HookEvent, over: Partial<HeldEvent> = {}): HeldEvent {
  return {
    key: event.key,
    event: event.event,
    taskId: event.taskId,
    member: event.member,
    cause: "approval",
    kind: "spawn",
    hook: "on_task_completed.sh",
    reason: "the gate cannot start: bad interpreter",
    since: AT,
    runId: null,
    log: null,
    ...over,
  };
}

/** A few turns of the event loop (setImmediate is not faked): the queue's steps and the promises after them run. */
async function turns(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

const warnings = (r: Rig): string[] => r.notices.flatMap((n) => (n.kind === "warning" ? [n.message] : []));

describe("held events: the list and the lead", () => {
  it("lists each held event in hook-state/holds.json, and tells the lead once per gate and reason", async () => {
    const r = await rig();
    const one = completion("1");
    const two = completion("2");
    r.holds.held(one, info(one), 1);
    r.holds.held(two, info(two), 1);
    expect((await r.listed()).map((h) => [h.key, h.cause, h.hook])).toEqual([
      [one.key, "approval", "on_task_completed.sh"],
      [two.key, "approval", "on_task_completed.sh"],
    ]);
    const told = await readInboxFile(r.team, "team", r.team.leadName);
    expect(told).toHaveLength(1);
    expect(told[0]?.text).toContain("the gate cannot start: bad interpreter");
    expect(r.ran).toEqual([]);
  });

  it("supersedes an earlier held completion of the same task: closed in the ledger, only the latest listed", async () => {
    const r = await rig();
    const first = completion("1", "2026-12-02T10:00:00.000Z");
    const again = completion("1", "2026-12-02T11:00:00.000Z");
    const ledger = r.ledger;
    const eventInfo = { event: first.event, taskId: "1", member: "alice", timestamp: first.timestamp };
    await ledger.hold(first.key, AT, { runId: "r1", cause: "approval", log: null, event: eventInfo });
    r.holds.held(first, info(first), 1);
    r.holds.held(again, info(again), 1);
    expect((await r.listed()).map((h) => h.key)).toEqual([again.key]);
    await vi.waitFor(async () => {
      const done = (await readLedger(r.team.teamDir)).filter((rec) => rec.op === "done" && rec.key === first.key);
      expect(done).toMatchObject([{ outcome: "superseded", runId: null }]);
    });
  });

  it("runs again, at start, every event the ledger holds; one without its details is said and not run", async () => {
    const r = await rig();
    const held = completion("1");
    const ledger = r.ledger;
    const eventInfo = { event: held.event, taskId: "1", member: "alice", timestamp: held.timestamp };
    await ledger.hold(held.key, AT, { runId: "r1", cause: "fault", log: null, event: eventInfo });
    await ledger.hold("task_completed:2:x", AT, { runId: "r2", cause: "approval", log: null } as never);
    r.holds.start();
    expect(r.ran).toEqual([{ ...held }]);
    expect(warnings(r)).toEqual([`${ledger.file}: held task_completed:2:x has no event details; it is not run again`]);
  });
});

describe("held events: the list people read", () => {
  it("keeps a hold whose task shows its gate judged since listed, saying what the task's file claims", async () => {
    const r = await rig();
    const one = completion("1");
    const two = completion("2");
    const record = (key: string, status: string) => ({
      completedAt: AT,
      qualityGateEventKey: key,
      qualityGateStatus: status,
      ...(status === "held" ? { qualityGateHeld: "approval" } : {}),
    });
    const write = (id: string, metadata: Record<string, unknown>) =>
      writeFile(r.team.taskFile(id), JSON.stringify(makeTask({ id, status: "completed", metadata })));
    await write("1", record(one.key, "held"));
    await write("2", record(two.key, "held"));
    r.holds.held(one, info(one), 1);
    r.holds.held(two, info(two), 1);
    expect((await r.listed()).map((h) => h.key)).toEqual([one.key, two.key]);
    // Task 1's gate judged by hand (`run --apply-policy`) while no leader ran to rewrite the list, or its
    // record written by a worker: a field any worker can write never hides what the leader holds.
    await write("1", record(one.key, "passed"));
    const listed = await r.listed();
    expect(listed.map((h) => h.key)).toEqual([one.key, two.key]);
    expect(listed[0]?.reason).toContain(
      "its task's file says its gate is passed since; the leader has not confirmed it",
    );
    expect(listed[1]?.reason).not.toContain("task's file says");
    // Its record edited away says nothing: the hold stays listed.
    await write("1", { completedAt: AT });
    expect((await r.listed()).map((h) => h.key)).toEqual([one.key, two.key]);
    // A list written before it named its task list is read as it is.
    await write("1", record(one.key, "passed"));
    const file = path.join(r.team.teamDir, "hook-state", "holds.json");
    const { taskListId: _, ...older } = JSON.parse(await readFile(file, "utf8")) as Record<string, unknown>;
    await writeFile(file, JSON.stringify(older));
    expect((await readHolds(r.team.teamDir)).holds.map((h) => h.key)).toEqual([one.key, two.key]);
  });
});

describe("held events: when a hold ends", () => {
  it("tries a fault again by itself after 2 s, 10 s, then every 60 s (a fake clock), and unlists it when it runs", async () => {
    const r = await rig();
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const event = completion("1");
    const waits: number[] = [];
    for (const [tries, wait] of [
      [1, 2_000],
      [2, 10_000],
      [3, 60_000],
      [4, 60_000],
    ] as const) {
      r.holds.held(event, info(event, { cause: "fault", kind: "internal" }), tries);
      await vi.advanceTimersByTimeAsync(wait - 1);
      await turns();
      expect(r.ran).toHaveLength(waits.length);
      await vi.advanceTimersByTimeAsync(1);
      await turns(); // the queue runs the retry: no clock involved
      expect(r.ran).toHaveLength(waits.length + 1);
      waits.push(wait);
      expect(r.holds.list()).toEqual([]);
    }
    expect(r.ran.map((e) => e.key)).toEqual([event.key, event.key, event.key, event.key]);
    expect(warnings(r)).toEqual([
      `${event.key}: held after 4 tries (the gate cannot start: bad interpreter); tried again every 60 s`,
    ]);
    vi.useRealTimers();
    expect(await r.listed()).toEqual([]);
  });

  it("releases an approval hold once its chain is trusted as it is, not before, and once only", async () => {
    const r = await rig();
    const event = completion("1");
    r.ctx.trust.set({ version: 1, gates: {} }); // a record that does not name the gate: untrusted
    r.holds.held(event, info(event, { kind: "untrusted_hook", reason: "not trusted yet" }), 1);
    await r.holds.reconsider();
    expect(r.ran).toEqual([]);
    const fp = fingerprint(r.gate);
    if ("problem" in fp) throw new Error(fp.problem);
    r.ctx.trust.set({ version: 1, gates: { [r.gate]: entryFor(fp, AT, "test") } });
    await r.holds.reconsider();
    await r.holds.reconsider();
    expect(r.ran.map((e) => e.key)).toEqual([event.key]);
    expect(await r.listed()).toEqual([]);
  });

  it("the reconcile scan's look releases a fault whose cause is seen cleared, and keeps one it cannot look at", async () => {
    const r = await rig();
    const files = completion("1");
    const other = completion("2");
    // EMFILE: this process has files to spare now; an internal error cannot be seen cleared.
    r.holds.held(files, info(files, { cause: "fault", kind: "spawn" }), 1, "EMFILE");
    r.holds.held(other, info(other, { cause: "fault", kind: "internal" }), 1, null);
    r.holds.releaseCleared();
    expect(r.ran.map((e) => e.key)).toEqual([files.key]);
    expect((await r.listed()).map((h) => h.key)).toEqual([other.key]);
  });

  it("runs nothing again while the leader is not watching", async () => {
    const r = await rig();
    const event = completion("1");
    r.holds.held(event, info(event, { cause: "fault", kind: "spawn" }), 1, "EMFILE");
    r.ctx.state = "stopping";
    r.holds.releaseCleared();
    expect(r.ran).toEqual([]);
    expect((await r.listed()).map((h) => h.key)).toEqual([event.key]);
  });
});
