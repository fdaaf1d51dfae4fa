/**
 * The reopened task's assignment and its nudge, sent to its owner in one write of the inbox
 * (event/remediate.ts reassignStep, sendAllOnce): a remediation tried again after a crash at any point
 * of the send, or after an inbox that could not be written, sends each once, never one without the other,
 * and says in its actions what the separate steps said.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { blankResult, type RunResult } from "../../extensions/teams-hooks/contract/hook-run.js";
import { taskEvent } from "../../extensions/teams-hooks/contract/events.js";
import type { Task } from "../../extensions/teams-hooks/contract/team-files.js";
import { decide } from "../../extensions/teams-hooks/policy/decide.js";
import { remediate } from "../../extensions/teams-hooks/event/remediate.js";
import { appendMessages, readInbox } from "../../extensions/teams-hooks/team/mailbox.js";
import { SentLog, sentId } from "../../extensions/teams-hooks/team/sent-log.js";
import { readTask } from "../../extensions/teams-hooks/team/tasks.js";
import { actionsText } from "../../extensions/teams-hooks/text/actions.js";
import { makeTask, makeTempTeam, type TempTeam } from "../helpers/temp-team.js";

let team: TempTeam | undefined;
let holder: ChildProcess | undefined;
afterEach(async () => {
  holder?.kill();
  holder = undefined;
  await team?.cleanup();
  team = undefined;
});

const NOW = "2026-12-07T08:00:00.000Z";

function denial(): RunResult {
  const base = blankResult({ ran: true, hookPath: "/hooks/on_task_completed", command: ["x"], runId: "run" });
  return {
    ...base,
    outcome: "failed",
    exitCode: 0,
    verdict: { decision: "deny", reason: "tests fail", source: "stdout" },
  };
}

async function freshTeam(): Promise<{ t: TempTeam; key: string }> {
  const t = await makeTempTeam({
    teamId: "together",
    tasks: [
      makeTask({ id: "1", owner: "alice", status: "completed", metadata: { completedAt: "2026-12-07T07:59:00.000Z" } }),
    ],
  });
  team = t;
  const read = await readTask(t.taskFile("1"));
  if (!read.ok) throw new Error(read.problem.message);
  return { t, key: taskEvent(read.value)?.key ?? "" };
}

type Kind = "reassign-1" | "nudge";

/**
 * A first attempt stopped after both messages were claimed (its inbox was a folder), then what a crash
 * left: `written` in the inbox (what the attempt wrote, in order), `confirmed` in the sent-log.
 */
async function crashedWithBothClaimed(t: TempTeam, key: string, written: Kind[], confirmed: Kind[]): Promise<void> {
  const inbox = t.inboxFile(t.taskListId, "alice");
  fs.mkdirSync(inbox, { recursive: true });
  await attempt(t, key);
  fs.rmSync(inbox, { recursive: true });
  const log = new SentLog(t.teamDir);
  for (const kind of ["reassign-1", "nudge"] as const) log.claim(sentId(kind, key, "alice"), NOW);
  const base = { from: t.leadName, timestamp: NOW, read: false, qualityGateEventKey: key };
  const text: Record<Kind, string> = { "reassign-1": "{}", nudge: "n" };
  await appendMessages(
    t.teamDir,
    t.taskListId,
    "alice",
    written.map((kind) => ({ message: { ...base, text: text[kind], qualityGateMessage: kind } })),
  );
  for (const kind of confirmed) log.confirm(sentId(kind, key, "alice"), NOW);
}

/** One attempt at the remediation of the event `key` of task 1 under the `reopen` policy. */
function attempt(
  t: TempTeam,
  key: string,
  opts: { sent?: SentLog; lockTimeoutMs?: number; now?: string; failureAction?: "reopen" | "reopen_followup" } = {},
) {
  const now = opts.now ?? NOW;
  return remediate(
    {
      teamDir: t.teamDir,
      taskListId: t.taskListId,
      taskId: "1",
      key,
      leadName: t.leadName,
      now,
      sent: opts.sent ?? new SentLog(t.teamDir),
      ...(opts.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: opts.lockTimeoutMs }),
    },
    (task: Task | null) =>
      decide({
        event: "task_completed",
        key,
        taskId: "1",
        result: denial(),
        task,
        policy: { failureAction: opts.failureAction ?? "reopen", followupOwner: "member", maxReopensPerTask: 3 },
        hookName: "on_task_completed",
        member: "alice",
        leadName: t.leadName,
        now,
        timeoutMs: 60_000,
        budget: null,
      }),
  );
}

async function kinds(t: TempTeam): Promise<string[]> {
  const inbox = await readInbox(t.teamDir, t.taskListId, "alice");
  if (!inbox.ok) throw new Error(inbox.problem.message);
  return inbox.messages.map((m) => String(m.message.qualityGateMessage ?? ""));
}

const LATER = "2026-12-07T08:01:00.000Z";
/** What a second attempt says when both messages go now, and when both went before. */
const BOTH_NOW = ["already applied", "was reopened (1/3)", "reassigned to alice", "nudge alice"];
const BOTH_BEFORE = [
  "already applied",
  "was reopened (1/3)",
  "reassigned to alice (sent before)",
  "nudge alice (sent before)",
];

/** The actions of the remediation tried again a minute later. */
async function retriedActions(t: TempTeam, key: string): Promise<string[]> {
  return actionsText((await attempt(t, key, { now: LATER })).actions);
}

describe("the reassignment and the nudge in one write", () => {
  it("sent together once; the same event again sends neither", async () => {
    const { t, key } = await freshTeam();
    const done = await attempt(t, key);
    expect(actionsText(done.actions)).toEqual(["reopened (1/3)", "reassigned to alice", "nudge alice"]);
    expect(await kinds(t)).toEqual(["reassign-1", "nudge"]);
    expect(await retriedActions(t, key)).toEqual(BOTH_BEFORE);
    expect(await kinds(t)).toEqual(["reassign-1", "nudge"]);
  });

  it("with a follow-up between them: the assignment, the follow-up's, then the nudge quoting it, each in its own write", async () => {
    const { t, key } = await freshTeam();
    const done = await attempt(t, key, { failureAction: "reopen_followup" });
    expect(actionsText(done.actions)).toEqual([
      "reopened (1/3)",
      "reassigned to alice",
      "follow-up #2 for alice",
      "nudge alice",
    ]);
    const inbox = await readInbox(t.teamDir, t.taskListId, "alice");
    if (!inbox.ok) throw new Error(inbox.problem.message);
    expect(inbox.messages.map((m) => m.message.qualityGateMessage)).toEqual(["reassign-1", "assignment-2", "nudge"]);
    expect(inbox.messages[2]?.message.text).toContain("#2");
  });

  it("a crash after both claims, before the write: both sent once by the next attempt", async () => {
    const { t, key } = await freshTeam();
    fs.mkdirSync(t.inboxFile(t.taskListId, "alice"), { recursive: true }); // the first attempt's append fails
    const first = await attempt(t, key);
    expect(first.complete).toBe(false);
    fs.rmSync(t.inboxFile(t.taskListId, "alice"), { recursive: true });
    const log = new SentLog(t.teamDir);
    log.claim(sentId("reassign-1", key, "alice"), NOW);
    log.claim(sentId("nudge", key, "alice"), NOW);
    const again = await attempt(t, key, { now: LATER });
    expect(again.errors).toEqual([]);
    expect(actionsText(again.actions)).toEqual(BOTH_NOW);
    expect(await kinds(t)).toEqual(["reassign-1", "nudge"]);
  });

  it.each([
    {
      what: "a crash after the write, before the sent-log says so: found there, neither sent again",
      written: ["reassign-1", "nudge"],
      confirmed: [],
      reassign: "reassigned to alice (sent before)",
      nudge: "nudge alice (sent before)",
      inbox: ["reassign-1", "nudge"],
    },
    {
      what: "the assignment sent, the nudge claimed and not in the inbox: the nudge alone, once",
      written: ["reassign-1"],
      confirmed: ["reassign-1"],
      reassign: "reassigned to alice (sent before)",
      nudge: "nudge alice",
      inbox: ["reassign-1", "nudge"],
    },
    {
      what: "the nudge sent, the assignment claimed and not in the inbox: the assignment alone, once",
      written: ["nudge"],
      confirmed: ["nudge"],
      reassign: "reassigned to alice",
      nudge: "nudge alice (sent before)",
      inbox: ["nudge", "reassign-1"],
    },
  ] satisfies Array<{
    what: string;
    written: Kind[];
    confirmed: Kind[];
    reassign: string;
    nudge: string;
    inbox: Kind[];
  }>)("$what", async ({ written, confirmed, reassign, nudge, inbox }) => {
    const { t, key } = await freshTeam();
    await crashedWithBothClaimed(t, key, written, confirmed);
    expect(await retriedActions(t, key)).toEqual(["already applied", "was reopened (1/3)", reassign, nudge]);
    expect(await kinds(t)).toEqual(inbox);
  });

  it("an inbox that is not a JSON array: neither sent, nothing written, tried again", async () => {
    const { t, key } = await freshTeam();
    const inbox = t.inboxFile(t.taskListId, "alice");
    fs.mkdirSync(path.dirname(inbox), { recursive: true });
    fs.writeFileSync(inbox, '{"not":"an array"}\n');
    const first = await attempt(t, key);
    expect(first.complete).toBe(false);
    expect(first.errors).toEqual([expect.stringContaining("not a JSON array of messages")]);
    expect(actionsText(first.actions)).toEqual(["reopened (1/3)"]);
    expect(fs.readFileSync(inbox, "utf8")).toBe('{"not":"an array"}\n');
    const log = new SentLog(t.teamDir);
    expect(log.state(sentId("reassign-1", key, "alice"))).toBe(null);
    expect(log.state(sentId("nudge", key, "alice"))).toBe(null);
    fs.writeFileSync(inbox, "[]\n");
    expect(await retriedActions(t, key)).toEqual(BOTH_NOW);
    expect(await kinds(t)).toEqual(["reassign-1", "nudge"]);
  });

  it("the inbox lock held by another process: neither sent, nothing written, tried again", async () => {
    const { t, key } = await freshTeam();
    const inbox = t.inboxFile(t.taskListId, "alice");
    fs.mkdirSync(path.dirname(inbox), { recursive: true });
    holder = spawn("sleep", ["60"], { stdio: "ignore" });
    fs.writeFileSync(
      `${inbox}.lock`,
      JSON.stringify({ pid: holder.pid, createdAt: new Date().toISOString(), label: "x" }),
    );
    const first = await attempt(t, key, { lockTimeoutMs: 300 });
    expect(first.complete).toBe(false);
    expect(first.errors).toEqual([expect.stringContaining(`held by pid ${holder.pid}`)]);
    expect(actionsText(first.actions)).toEqual(["reopened (1/3)"]);
    expect(fs.existsSync(inbox)).toBe(false);
    const log = new SentLog(t.teamDir);
    expect(log.state(sentId("reassign-1", key, "alice"))).toBe(null);
    expect(log.state(sentId("nudge", key, "alice"))).toBe(null);
    fs.rmSync(`${inbox}.lock`);
    expect(await retriedActions(t, key)).toEqual(BOTH_NOW);
    expect(await kinds(t)).toEqual(["reassign-1", "nudge"]);
  });
});

/** A sent-log whose claim of one message cannot be written (as a full disk or a file-table limit would). */
class ClaimFails extends SentLog {
  constructor(
    teamDir: string,
    readonly failing: string,
  ) {
    super(teamDir);
  }
  override claim(id: string, at: string): void {
    if (id.startsWith(this.failing)) throw new Error("ENOSPC: no space left on device");
    super.claim(id, at);
  }
}

describe("a claim that cannot be written", () => {
  for (const failing of ["reassign-1:", "nudge:"]) {
    it(`the claim of ${failing.slice(0, -1)} fails: neither is sent, both go together when tried again`, async () => {
      const { t, key } = await freshTeam();
      const first = await attempt(t, key, { sent: new ClaimFails(t.teamDir, failing) });
      expect(first.complete).toBe(false);
      expect(first.errors).toEqual([
        "message to alice not sent (the sent-log cannot be written): ENOSPC: no space left on device",
      ]);
      expect(actionsText(first.actions)).toEqual(["reopened (1/3)"]);
      expect(fs.existsSync(t.inboxFile(t.taskListId, "alice"))).toBe(false);
      expect(await retriedActions(t, key)).toEqual(BOTH_NOW);
      expect(await kinds(t)).toEqual(["reassign-1", "nudge"]);
    });
  }

  it("a sent-log that is a FIFO: no message sent, nothing thrown, both sent once it is a file again", async () => {
    const { t, key } = await freshTeam();
    const log = new SentLog(t.teamDir);
    fs.mkdirSync(path.dirname(log.file), { recursive: true });
    execFileSync("mkfifo", [log.file]);
    const first = await attempt(t, key);
    expect(first.complete).toBe(false);
    expect(first.errors).toEqual([
      expect.stringContaining("message to alice not sent (the sent-log cannot be written)"),
    ]);
    expect(fs.existsSync(t.inboxFile(t.taskListId, "alice"))).toBe(false);
    fs.rmSync(log.file);
    expect(await retriedActions(t, key)).toEqual(BOTH_NOW);
    expect(await kinds(t)).toEqual(["reassign-1", "nudge"]);
  });
});
