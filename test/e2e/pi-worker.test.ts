/**
 * A teammate in real pi (RPC mode, the worker fixture test/fixtures/pi/team-worker.ts, a scripted
 * model, no network), first on its own, to show it does what pi-agent-teams' worker does with the
 * team dir; then beside a real pi leader running our gates: a task the gate reopens goes back to its
 * owner and is done again, with no action by the lead.
 */
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, waitUntil } from "../helpers/leader-rig.js";
import {
  PI_TEST_MS,
  PI_WAIT_MS,
  PiRpc,
  type PiWorld,
  piEnv,
  piMissing,
  startPiWorker,
  stopAllPi,
} from "../helpers/pi-rig.js";

/** Each test's timeout: room for several waits at their bound (pi-rig.ts). */
const ROOM = { timeout: PI_TEST_MS };
import { exists, withLock, writeAtomic } from "../fixtures/workers/protocol.mjs";
import { GATE_NOTE_START } from "../../extensions/teams-hooks/contract/gate-note.js";

const missing = piMissing();
if (missing) console.warn(`skipping the real-pi worker tests: ${missing}`);

type Fields = Record<string, unknown>;
type Task = Fields & { id: string; status: string; owner?: string; metadata?: Fields };
type Seed = Partial<Task> & { id: string };
interface Message {
  from: string;
  text: string;
  timestamp: string;
  read: boolean;
}

const LEAD = "team-lead";

/** A teams root with a home for pi and nothing else (each test makes its own team). */
async function newWorld(): Promise<PiWorld> {
  const root = await mkdtemp(path.join(os.tmpdir(), "pi-worker-"));
  const w = { root, teamsRoot: path.join(root, "teams"), home: path.join(root, "home") };
  await mkdir(w.teamsRoot, { recursive: true });
  await mkdir(w.home, { recursive: true });
  return w;
}

interface Team {
  teamId: string;
  teamDir: string;
  task(id: string): Promise<Task>;
  inbox(ns: string, member: string): Promise<Message[]>;
  /** The idle notifications in the lead's inbox, parsed. */
  idles(): Promise<Array<Record<string, unknown>>>;
  /** Appends a message to `member`'s inbox as the lead does (under the inbox's lock, atomically). */
  send(ns: string, member: string, text: string): Promise<void>;
}

/** A team dir as pi-agent-teams' leader makes it, with `tasks` (pending, without an owner unless given). */
async function makeTeam(teamsRoot: string, teamId: string, tasks: Seed[], hooks?: object): Promise<Team> {
  const teamDir = path.join(teamsRoot, teamId);
  const tasksDir = path.join(teamDir, "tasks", teamId);
  await mkdir(tasksDir, { recursive: true });
  const now = new Date().toISOString();
  const members = [{ name: LEAD, role: "lead", status: "online" }];
  const config = { version: 1, teamId, taskListId: teamId, leadName: LEAD, members, hooks, createdAt: now };
  await writeFile(path.join(teamDir, "config.json"), `${JSON.stringify(config, null, 2)}\n`);
  for (const seed of tasks) {
    const { id } = seed;
    const task = { subject: `Task ${id}`, description: `Do task ${id}.`, status: "pending", blocks: [], blockedBy: [] };
    const text = JSON.stringify({ ...task, metadata: {}, createdAt: now, updatedAt: now, ...seed }, null, 2);
    await writeFile(path.join(tasksDir, `${id}.json`), `${text}\n`);
  }
  await writeFile(path.join(tasksDir, ".highwatermark"), `${tasks.length}\n`);
  const inboxFile = (ns: string, member: string): string =>
    path.join(teamDir, "mailboxes", ns, "inboxes", `${member}.json`);
  const inbox = async (ns: string, member: string): Promise<Message[]> => {
    const file = inboxFile(ns, member);
    return (await exists(file)) ? (JSON.parse(await readFile(file, "utf8")) as Message[]) : [];
  };
  return {
    teamId,
    teamDir,
    task: async (id) => JSON.parse(await readFile(path.join(tasksDir, `${id}.json`), "utf8")) as Task,
    inbox,
    idles: async () =>
      (await inbox("team", LEAD)).flatMap((m) => {
        const value = JSON.parse(m.text) as Record<string, unknown>;
        return value.type === "idle_notification" ? [value] : [];
      }),
    send: async (ns, member, text) => {
      const file = inboxFile(ns, member);
      await mkdir(path.dirname(file), { recursive: true });
      const append = async (): Promise<void> => {
        const all = (await exists(file)) ? (JSON.parse(await readFile(file, "utf8")) as Message[]) : [];
        all.push({ from: LEAD, text, timestamp: new Date().toISOString(), read: false });
        await writeAtomic(file, `${JSON.stringify(all, null, 2)}\n`);
      };
      await withLock(file, append, "test lead");
    },
  };
}

/** The `task_assignment` a lead sends a task's owner (docs/team-dir.md). */
function assignment(task: Task): string {
  const { id: taskId, subject, description } = task;
  const timestamp = new Date().toISOString();
  return JSON.stringify({ type: "task_assignment", taskId, subject, description, assignedBy: LEAD, timestamp });
}

describe.skipIf(missing !== null)("a pi worker (pi-agent-teams' behaviour, scripted model)", ROOM, () => {
  const worlds: PiWorld[] = [];
  const world = async (): Promise<PiWorld> => {
    const made = await newWorld();
    worlds.push(made);
    return made;
  };
  beforeAll(async () => {
    await ensureBuilt(); // the leader's test loads the extension from the build
  });
  afterEach(async () => {
    await stopAllPi();
    for (const made of worlds.splice(0)) await rm(made.root, { recursive: true, force: true });
  });
  afterAll(async () => {
    await stopAllPi();
  });

  /** A worker `name` in team `teamId` of this test's world, whose model answers `answers` in order. */
  const worker = (w: PiWorld, teamId: string, name: string, answers: string[], promptsFile?: string): PiRpc =>
    startPiWorker({
      teamsRoot: w.teamsRoot,
      teamId,
      name,
      answers,
      home: w.home,
      cwd: w.root,
      ...(promptsFile ? { promptsFile } : {}),
    });
  /** Waits (PI_WAIT_MS at most) for `check`, showing the worker's pi when it times out. */
  const until = <T>(what: string, pi: PiRpc, check: () => Promise<T | false | null | undefined>): Promise<T> =>
    waitUntil(what, check, { timeoutMs: PI_WAIT_MS, intervalMs: 100, context: () => pi.context() });
  const taskIn = (team: Team, id: string, status: string) => async (): Promise<Task | null> => {
    const task = await team.task(id);
    return task.status === status ? task : null;
  };

  it("claims the lowest unowned pending task, completes it with the model's answer, and tells the lead", async () => {
    const w = await world();
    const team = await makeTeam(w.teamsRoot, "solo", [{ id: "2" }, { id: "1" }, { id: "3", owner: "brian" }]);
    const ada = worker(w, "solo", "ada", ["parser written"]);
    const one = await until("task 1 completed", ada, taskIn(team, "1", "completed"));
    expect(one.owner).toBe("ada");
    expect(one.metadata).toMatchObject({ result: "parser written" });
    expect(Date.parse(String(one.metadata?.completedAt))).toBeGreaterThanOrEqual(Date.parse(String(one.createdAt)));
    // Then the next one (2), never brian's (3); the lead hears once it has nothing left to start.
    const two = await until("task 2 completed", ada, taskIn(team, "2", "completed"));
    expect(two.metadata).toMatchObject({ result: "done" });
    const idles = await until("the idle notification after task 2", ada, async () => {
      const all = await team.idles();
      return all.some((n) => n.completedTaskId === "2") ? all : null;
    });
    const completions = idles.filter((n) => n.completedTaskId !== undefined);
    expect(completions.map((n) => [n.from, n.completedTaskId, n.completedStatus])).toEqual([["ada", "2", "completed"]]);
    expect(await team.task("3")).toMatchObject({ status: "pending", owner: "brian" });
  });

  it("starts a task it owns only on an assignment: a plain message is one turn and no start", async () => {
    const w = await world();
    const team = await makeTeam(w.teamsRoot, "owned", [{ id: "1", owner: "ada" }]);
    const ada = worker(w, "owned", "ada", ["ok, noted", "tests fixed"]);
    // Its first look is done when it says it is idle (its own task waits for an assignment).
    await until("the worker's first idle notification", ada, async () => (await team.idles()).length === 1);
    // A nudge in plain text, as a leader sends it: read, answered in one turn, and the task stays put.
    await team.send("owned", "ada", "The gate failed on task #1: please look at it again.");
    await until("the turn on the nudge to end", ada, async () => (await team.idles()).length === 2);
    expect((await team.inbox("owned", "ada")).map((m) => m.read)).toEqual([true]);
    expect(await team.task("1")).toMatchObject({ status: "pending", owner: "ada" });
    expect((await team.idles()).every((n) => n.completedTaskId === undefined)).toBe(true);

    await team.send("owned", "ada", assignment(await team.task("1")));
    const done = await until("task 1 completed", ada, taskIn(team, "1", "completed"));
    expect(done).toMatchObject({ owner: "ada", metadata: { result: "tests fixed" } });
    await until("the idle notification for task 1", ada, async () =>
      (await team.idles()).some((n) => n.completedTaskId === "1" && n.completedStatus === "completed"),
    );
  });

  it("puts a task back when the model gives no answer (pending, owner kept, why in the metadata)", async () => {
    const w = await world();
    const team = await makeTeam(w.teamsRoot, "empty", [{ id: "1" }]);
    const ada = worker(w, "empty", "ada", [""]);
    const failed = await until("the failed idle notification", ada, async () =>
      (await team.idles()).find((n) => n.completedTaskId === "1"),
    );
    expect(failed).toMatchObject({ from: "ada", completedStatus: "failed" });
    const back = await team.task("1");
    const metadata = { abortedBy: "ada", abortReason: "no assistant result" };
    expect(back).toMatchObject({ status: "pending", owner: "ada", metadata });
    expect(typeof back.metadata?.abortedAt).toBe("string");
  });

  it("a task the gate reopens is picked up and completed again by its owner, with no action by the lead", async () => {
    const w = await world();
    // A global gate that fails the first time it sees a task and passes the second.
    const counts = path.join(w.root, "gate-counts");
    await mkdir(counts, { recursive: true });
    const hooksDir = path.join(w.teamsRoot, "_hooks");
    await mkdir(hooksDir, { recursive: true });
    const gate = `#!/bin/sh
# Fails a task the first time, passes it after.
f="${counts}/task-$PI_TEAMS_TASK_ID"
n=$(cat "$f" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$f"
if [ "$n" -eq 1 ]; then echo "FAIL: first look at task $PI_TEAMS_TASK_ID" >&2; exit 1; fi
echo "ok $PI_TEAMS_TASK_ID"
`;
    await writeFile(path.join(hooksDir, "on_task_completed.sh"), gate);
    await chmod(path.join(hooksDir, "on_task_completed.sh"), 0o755);

    // The leader: our extension in real pi, as pi-session.test.ts starts it; its team is the session's.
    const env = piEnv(w.home, { PI_TEAMS_ROOT_DIR: w.teamsRoot, PI_TEAMS_GATES: "1" });
    const lead = new PiRpc({ env, cwd: w.root });
    const state = await lead.request({ type: "get_state" });
    const sessionId = String((state.data as { sessionId?: unknown } | undefined)?.sessionId);
    const hooks = { failureAction: "reopen" };
    const team = await makeTeam(w.teamsRoot, sessionId, [{ id: "1", subject: "Write the parser" }], hooks);
    const status = async (): Promise<string> => (await lead.command("/gates status", /quality gates:/)).message;
    const watching = async (): Promise<boolean> => /quality gates: watching/.test(await status());
    const context = (): string => lead.context();
    await waitUntil("the leader to watch the team", watching, { timeoutMs: PI_WAIT_MS, intervalMs: 300, context });

    // Its first answer is the first completion; any later turn (the task again, a nudge) answers "done".
    const promptsFile = path.join(w.root, "ada-prompts.jsonl");
    const ada = worker(w, sessionId, "ada", ["parser written"], promptsFile);
    // What a failed wait shows: the task, the owner's inbox, what the gates said, both pi's stderr.
    const story = async (): Promise<string> => {
      const said = lead.notices().filter((n) => !/^quality gates: (watching|waiting)/.test(n.message));
      return [
        `task 1: ${JSON.stringify(await team.task("1"))}`,
        `ada's inbox: ${JSON.stringify(await team.inbox(sessionId, "ada"))}`,
        `lead's notifications:\n${said.map((n) => `  [${n.level}] ${n.message}`).join("\n")}`,
        `lead's stderr: ${lead.stderr.slice(-2000) || "(none)"}`,
        `worker's stderr: ${ada.stderr.slice(-2000) || "(none)"}`,
      ].join("\n");
    };
    // The first completion fails its gate: reopened, its owner kept.
    const failed = /^Gate on_task_completed\.sh failed for task #1: .*FAIL: first look at task 1 → reopened/;
    await lead.waitForNotice(failed);
    // The owner is sent the task again (a task_assignment, once for this reopen), does it, and the gate passes.
    let seen = "";
    const passed = async (): Promise<boolean> => {
      seen = await story();
      const task = await team.task("1");
      return task.status === "completed" && task.metadata?.qualityGateStatus === "passed";
    };
    const what = "task 1 completed again and passed by its gate";
    await waitUntil(what, passed, { timeoutMs: PI_WAIT_MS, intervalMs: 250, context: () => seen });
    expect(await lead.waitForNotice(/^Gate on_task_completed\.sh passed for task #1/)).toMatchObject({ level: "info" });
    expect(await team.task("1")).toMatchObject({
      status: "completed",
      owner: "ada",
      metadata: { result: "done", qualityGateStatus: "passed", reopenedByQualityGateCount: 1 },
    });
    // The lead did nothing: its pi got no prompt, and the one assignment came from the gates' leader.
    expect(lead.lines.filter((l) => l.type === "agent_start")).toEqual([]);
    const assignments = (await team.inbox(sessionId, "ada")).filter((m) => m.text.includes("task_assignment"));
    expect(assignments.map((m) => [m.from, (JSON.parse(m.text) as { taskId: string }).taskId])).toEqual([[LEAD, "1"]]);
    // The first redo knew why: its prompt, built from the task file when the assigned task started, carries
    // the gate's reason in the marked section; the nudge (a message) reached the model only after it.
    const prompts = (await readFile(promptsFile, "utf8"))
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as string);
    const redo = prompts.findIndex((p, i) => i > 0 && p.includes("assigned task #1"));
    expect(redo, prompts.join("\n=====\n")).toBeGreaterThan(0);
    expect(prompts[redo]).toContain(GATE_NOTE_START);
    expect(prompts[redo]).toContain("FAIL: first look at task 1");
    const nudge = prompts.findIndex((p) => p.startsWith("You have received message(s)"));
    if (nudge >= 0) expect(nudge).toBeGreaterThan(redo);
  });
});
