/**
 * A teams root for the dashboard's tests, made by real runs of real gates: the leader's
 * (`pi-teams-hooks watch --once` after each change a worker would make, so the logs, the deferral and
 * the trust record are the product's own) and one by hand (`pi-teams-hooks run --apply-policy`):
 *
 *   alpha  on_task_completed.sh  tasks 1–5: 2 and 4 fail (their output holds markup and a script tag);
 *                                task 9 once by hand (a pass the figures leave out)
 *          on_task_failed.sh     task 6 failed: the gate defers, so it is held for a decision
 *          on_idle.sh            passes once, then is edited: untrusted (changed since approved)
 *   beta   no gates, no runs
 *   gamma  on_task_completed.sh  a Claude Code gate whose check crashes: task 1 passes with a
 *                                non-blocking error (its runs are older than alpha's)
 */
import { chmod, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import type { writeHookLog } from "../../extensions/teams-hooks/logs/hook-log.js";
import { runBin } from "./leader-rig.js";
import { makeTeamsRoot } from "./serve-rig.js";

export const HOSTILE_OUTPUT = `<script>alert(1)</script><img src=x onerror=alert(2)>`;

const COMPLETED_GATE = `#!/usr/bin/env bash
if [ "$PI_TEAMS_TASK_ID" = 2 ] || [ "$PI_TEAMS_TASK_ID" = 4 ]; then
  echo "checking task $PI_TEAMS_TASK_ID: <b>not bold</b>"
  echo '${HOSTILE_OUTPUT}' >&2
  exit 1
fi
echo "task $PI_TEAMS_TASK_ID: all checks passed"
`;
const FAILED_GATE = `#!/usr/bin/env bash
echo '{"decision":"defer","reason":"waiting for the nightly run"}'
`;
const IDLE_GATE = `#!/usr/bin/env bash
echo idle ok
`;
const CLAUDE_GATE = `#!/usr/bin/env bash
# pi-teams-hooks: format=claude
echo "linter crashed" >&2
exit 1
`;

type Result = { code: number | null; stdout: string; stderr: string };

export interface DashboardTeams {
  root: string;
  alpha: string;
  cleanup(): Promise<void>;
  /** `run <event> --apply-policy` on alpha: a run by hand; throws when the run could not be made at all. */
  run(event: string, args: string[]): Promise<Result>;
  /** A worker completes alpha's task `id` (again: a new completion), and the leader runs its gate. */
  complete(id: number): Promise<void>;
}

export async function makeDashboardTeams(): Promise<DashboardTeams> {
  const { root, cleanup } = await makeTeamsRoot({ alpha: {}, beta: {}, gamma: {} });
  const env = { PI_TEAMS_ROOT_DIR: root };
  await gammaRuns(path.join(root, "gamma"), env);
  const alpha = path.join(root, "alpha");
  const hooks = path.join(alpha, "hooks");
  await mkdir(hooks, { recursive: true });
  const gate = async (name: string, text: string): Promise<void> => {
    await writeFile(path.join(hooks, name), text);
    await chmod(path.join(hooks, name), 0o755);
  };
  await gate("on_task_completed.sh", COMPLETED_GATE);
  await gate("on_task_failed.sh", FAILED_GATE);
  await gate("on_idle.sh", IDLE_GATE);
  const tasks = path.join(alpha, "tasks", "alpha");
  await mkdir(tasks, { recursive: true });
  const created = new Date().toISOString();
  const task = async (id: number, status: string, metadata: Record<string, unknown> = {}): Promise<void> => {
    const owner = id % 2 ? "ada" : "brian";
    const now = new Date().toISOString();
    const text = { subject: `Task ${id} <i>of alpha</i>`, description: `Do part ${id}.` };
    const links = { blocks: [], blockedBy: [] };
    const file = { id: String(id), ...text, status, owner, ...links, metadata, createdAt: created, updatedAt: now };
    await writeFile(path.join(tasks, `${id}.json`), `${JSON.stringify(file, null, 2)}\n`);
  };
  for (let id = 1; id <= 9; id++) await task(id, "pending");
  const trust = await runBin(["trust", "--team-dir", alpha, "--all", "--yes"], { env });
  if (trust.code !== 0) throw new Error(`trust --all failed (${trust.code}): ${trust.stderr}`);
  /** The leader handles what is pending (one event at a time here, so that the logs come in this order). */
  const lead = async (): Promise<void> => {
    const once = await runBin(["watch", "--team-dir", alpha, "--once"], { env });
    if (once.code !== 0) throw new Error(`watch --once exited ${once.code}: ${once.stderr}`);
  };
  const complete = async (id: number): Promise<void> => {
    await task(id, "completed", { completedAt: new Date().toISOString() });
    await lead();
  };
  const run = async (event: string, args: string[]): Promise<Result> => {
    const result = await runBin(["run", event, "--team-dir", alpha, "--apply-policy", ...args], { env });
    if (result.code === null || result.code === 2 || result.code > 3) {
      throw new Error(`run ${event} ${args.join(" ")} exited ${result.code}: ${result.stderr}`);
    }
    return result;
  };
  await lead(); // the first start: nothing to run yet
  for (let id = 1; id <= 5; id++) await complete(id);
  await task(6, "pending", { abortedAt: new Date().toISOString(), abortedBy: "brian" });
  await lead();
  await run("task_completed", ["--task", "9"]);
  const idle = { type: "idle_notification", from: "ada", timestamp: new Date().toISOString() };
  const inbox = path.join(alpha, "mailboxes", "team", "inboxes");
  await mkdir(inbox, { recursive: true });
  const message = { from: "ada", text: JSON.stringify(idle), timestamp: idle.timestamp, read: false };
  await writeFile(path.join(inbox, "team-lead.json"), `${JSON.stringify([message], null, 2)}\n`);
  await lead();
  await gate("on_idle.sh", `${IDLE_GATE}echo changed after it was approved\n`);
  return { root, alpha, cleanup, run, complete };
}

/** gamma: task 1 completed, then the leader's first start (--catch-up) runs its Claude Code gate, which crashes. */
async function gammaRuns(gamma: string, env: Record<string, string>): Promise<void> {
  await mkdir(path.join(gamma, "hooks"), { recursive: true });
  await writeFile(path.join(gamma, "hooks", "on_task_completed.sh"), CLAUDE_GATE, { mode: 0o755 });
  await mkdir(path.join(gamma, "tasks", "gamma"), { recursive: true });
  const now = new Date().toISOString();
  const task = { id: "1", subject: "Lint", description: "", status: "completed", owner: "ada" };
  const links = { blocks: [], blockedBy: [] };
  const file = { ...task, ...links, metadata: { completedAt: now }, createdAt: now, updatedAt: now };
  await writeFile(path.join(gamma, "tasks", "gamma", "1.json"), `${JSON.stringify(file, null, 2)}\n`);
  const once = await runBin(["watch", "--team-dir", gamma, "--once", "--catch-up"], { env });
  if (once.code !== 0) throw new Error(`watch --once on gamma exited ${once.code}: ${once.stderr}`);
}

type Json = Record<string, unknown>;

/** What a log record written by `hookLogRecord` is about; everything else is a plain run of one gate. */
export interface LogSeed {
  teamDir: string;
  taskId: string;
  startedAt: Date;
  /** Default: the team dir's name (teams made by `makeTeamsRoot` use it as team id and task list id). */
  teamId?: string;
  /** The member who completed the task and owns it; default `ada`. */
  member?: string;
  /** Default `Task <id>`. */
  subject?: string;
  /** Default `<team dir>/hooks/on_task_completed.sh`. */
  hookPath?: string;
  /** Default `run-<team id>-<task id>-<ms>`. */
  runId?: string;
  /** Default `task_completed:<task id>:<started at>`. */
  key?: string;
  /** Fields of the run's result over a gate that passed (exit 0, no output). */
  result?: Json;
  /** The policy's record (required by the format: what the leader made of the run). */
  policy: Json;
  /** `"hand"` for a run made with `pi-teams-hooks run`. */
  trigger?: string;
}

/** A hook-log record as the leader writes one for a `task_completed` gate run, to write with `writeHookLog`. */
export function hookLogRecord(seed: LogSeed): Parameters<typeof writeHookLog>[1] {
  const at = seed.startedAt.toISOString();
  const teamId = seed.teamId ?? path.basename(seed.teamDir);
  const member = seed.member ?? "ada";
  const hook = seed.hookPath ?? path.join(seed.teamDir, "hooks", "on_task_completed.sh");
  return {
    invocation: {
      event: "task_completed",
      teamId,
      teamDir: seed.teamDir,
      taskListId: teamId,
      style: "normal",
      memberName: member,
      timestamp: at,
      completedTask: {
        id: seed.taskId,
        subject: seed.subject ?? `Task ${seed.taskId}`,
        description: "",
        owner: member,
        status: "completed",
        blocks: [],
        blockedBy: [],
        metadata: {},
        createdAt: at,
        updatedAt: at,
      },
    },
    result: {
      ran: true,
      hookPath: hook,
      command: ["bash", hook],
      outcome: "passed",
      exitCode: 0,
      signal: null,
      timedOut: false,
      durationMs: 120,
      stdout: "",
      stderr: "",
      stdoutDroppedBytes: 0,
      stderrDroppedBytes: 0,
      runId: seed.runId ?? `run-${teamId}-${seed.taskId}-${seed.startedAt.getTime()}`,
      contractVersion: 1,
      leftoverProcesses: 0,
      contextTruncated: false,
      ...seed.result,
    },
    key: seed.key ?? `task_completed:${seed.taskId}:${at}`,
    startedAt: at,
    ...(seed.trigger === undefined ? {} : { trigger: seed.trigger }),
    policy: seed.policy,
  } as Parameters<typeof writeHookLog>[1];
}
