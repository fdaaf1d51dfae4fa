/**
 * Real pi (the dev dependency `@mariozechner/pi-coding-agent`) in RPC mode, for end-to-end tests of
 * the extension: `pi --mode rpc --no-session --no-extensions --offline -e <this package> …`, commands
 * sent as JSON lines on stdin, replies and events read from stdout (split on `\n` only, as pi's RPC
 * framing asks). No model and no network: a test that needs a tool call loads
 * test/fixtures/pi/scripted-model.ts as a second extension. `startPiWorker` starts a teammate: pi
 * with test/fixtures/pi/team-worker.ts and the scripted model. Every pi started here is tracked, and
 * `stopAllPi()` (in an afterAll) ends whatever still runs.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { REPO_ROOT, waitUntil } from "./leader-rig.js";

export const PI_CLI = path.join(REPO_ROOT, "node_modules", "@mariozechner", "pi-coding-agent", "dist", "cli.js");
export const SCRIPTED_MODEL = path.join(REPO_ROOT, "test", "fixtures", "pi", "scripted-model.ts");
/** A teammate as pi-agent-teams' worker behaves (loaded with the scripted model): see startPiWorker. */
export const TEAM_WORKER = path.join(REPO_ROOT, "test", "fixtures", "pi", "team-worker.ts");
/** pi-agent-teams' removal of a session's empty team at `session_shutdown` (load it `first`). */
export const TEAM_CLEANUP = path.join(REPO_ROOT, "test", "fixtures", "pi", "team-cleanup.ts");

/**
 * The bound of every wait on pi (its start, a command's answer, a notice, its exit): a wait ends as soon
 * as its condition holds, and fails only past this, which holds on a loaded machine (at a load of 15 on
 * two CPUs, a pi start of 2 s takes 15 s). Never a fixed sleep.
 */
export const PI_WAIT_MS = 90_000;
/** A pi test's own timeout: room for several waits at their bound. */
export const PI_TEST_MS = 300_000;

/** Why pi cannot run here, or null when it can (it is a dev dependency: `npm ci` installs it). */
export function piMissing(): string | null {
  return existsSync(PI_CLI) ? null : `pi is not installed (${PI_CLI} is missing: run npm ci)`;
}

export type RpcLine = Record<string, unknown> & { type: string };

export interface Notice {
  message: string;
  level: string;
}

export interface PiRpcOptions {
  env: Record<string, string>;
  cwd: string;
  /** Extensions loaded before this package: pi runs an event's handlers in load order, theirs first. */
  first?: string[];
  /** Extensions loaded after this package. */
  extensions?: string[];
  /** More of pi's arguments. */
  args?: string[];
}

/** Every pi started by PiRpc that has not exited yet. */
const live = new Set<PiRpc>();

export class PiRpc {
  readonly child: ChildProcess;
  readonly lines: RpcLine[] = [];
  stderr = "";
  #buffer = "";
  #seq = 0;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(opts: PiRpcOptions) {
    const args = [PI_CLI, "--mode", "rpc", "--no-session", "--no-extensions", "--offline"];
    for (const ext of [...(opts.first ?? []), REPO_ROOT, ...(opts.extensions ?? [])]) args.push("-e", ext);
    args.push(...(opts.args ?? []));
    this.child = spawn(process.execPath, args, { cwd: opts.cwd, env: opts.env, stdio: ["pipe", "pipe", "pipe"] });
    this.child.stdout?.setEncoding("utf8").on("data", (chunk: string) => this.#take(chunk));
    this.child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => this.child.on("close", (code, signal) => resolve({ code, signal })));
    live.add(this);
    void this.exited.then(() => live.delete(this));
  }

  #take(chunk: string): void {
    this.#buffer += chunk;
    for (let end = this.#buffer.indexOf("\n"); end >= 0; end = this.#buffer.indexOf("\n")) {
      const line = this.#buffer.slice(0, end).replace(/\r$/, "");
      this.#buffer = this.#buffer.slice(end + 1);
      if (!line.trim()) continue;
      try {
        this.lines.push(JSON.parse(line) as RpcLine);
      } catch {
        this.lines.push({ type: "unparsed", text: line });
      }
    }
  }

  /** The notifications extensions sent (`ctx.ui.notify`), oldest first. */
  notices(): Notice[] {
    return this.lines
      .filter((l) => l.type === "extension_ui_request" && l.method === "notify")
      .map((l) => ({ message: String(l.message), level: String(l.notifyType ?? "info") }));
  }

  /** Sends one command and resolves with its response. */
  async request(command: Record<string, unknown>, timeoutMs = PI_WAIT_MS): Promise<RpcLine> {
    const id = `req-${++this.#seq}`;
    this.child.stdin?.write(`${JSON.stringify({ ...command, id })}\n`);
    return waitUntil(
      `pi's response to ${JSON.stringify(command)}`,
      () => this.lines.find((l) => l.type === "response" && l.id === id),
      { timeoutMs, context: () => this.context() },
    );
  }

  /** Runs an extension command (`/gates status`) and resolves with the notification it sent. */
  async command(text: string, match: RegExp = /./, timeoutMs = PI_WAIT_MS): Promise<Notice> {
    const before = this.notices().length;
    const response = await this.request({ type: "prompt", message: text }, timeoutMs);
    if (response.success !== true) throw new Error(`pi refused ${text}: ${JSON.stringify(response)}`);
    return waitUntil(
      `the notification of ${text}`,
      () =>
        this.notices()
          .slice(before)
          .find((n) => match.test(n.message)),
      { timeoutMs, context: () => this.context() },
    );
  }

  async waitForNotice(match: RegExp, timeoutMs = PI_WAIT_MS): Promise<Notice> {
    return waitUntil(`a notification matching ${match}`, () => this.notices().find((n) => match.test(n.message)), {
      timeoutMs,
      context: () => this.context(),
    });
  }

  /** Ends stdin (pi shuts down as on Ctrl+D) and waits for the exit; kills it after `timeoutMs`. */
  async close(timeoutMs = PI_WAIT_MS): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.child.stdin?.end();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  context(): string {
    const notices = this.notices().map((n) => `  [${n.level}] ${n.message.split("\n").join("\n    ")}`);
    return `pi notifications:\n${notices.join("\n") || "  (none)"}\npi stderr:\n${this.stderr.slice(-2000) || "  (none)"}`;
  }
}

/** pi's environment for a test: nothing of the caller's pi or team settings, a home of its own. */
export function piEnv(home: string, extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || name.startsWith("PI_") || name.startsWith("TEAMS_HOOKS")) continue;
    env[name] = value;
  }
  return { ...env, HOME: home, PI_OFFLINE: "1", NO_COLOR: "1", ...extra };
}

// ---------------------------------------------------------------------------------------------
// A teams root, and a team as pi-agent-teams' leader creates it

/** A gate that fails a task whose subject says "broken" and records each run in `<teams root>/gate-runs.txt`. */
export const GATE = `#!/bin/sh
# Fails a task whose subject says "broken"; records every run.
echo "$PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/../gate-runs.txt"
case "$PI_TEAMS_TASK_SUBJECT" in
  *broken*) echo "FAIL: build of task $PI_TEAMS_TASK_ID is red" >&2; exit 1 ;;
esac
echo "ok $PI_TEAMS_TASK_ID"
`;

export interface PiWorld {
  root: string;
  teamsRoot: string;
  home: string;
}

/** A temp dir with a teams root whose global hooks dir holds GATE, and a home for pi. */
export async function piWorld(): Promise<PiWorld> {
  const root = await mkdtemp(path.join(os.tmpdir(), "pi-gates-"));
  const teamsRoot = path.join(root, "teams");
  const home = path.join(root, "home");
  await mkdir(path.join(teamsRoot, "_hooks"), { recursive: true });
  await mkdir(home, { recursive: true });
  await writeFile(path.join(teamsRoot, "_hooks", "on_task_completed.sh"), GATE);
  await chmod(path.join(teamsRoot, "_hooks", "on_task_completed.sh"), 0o755);
  return { root, teamsRoot, home };
}

/**
 * The team dir as pi-agent-teams' leader creates it at session start: config.json, and two claimed
 * tasks (none with `empty`: a team nothing was done in yet).
 */
export async function createTeam(teamDir: string, teamId: string, opts: { empty?: boolean } = {}): Promise<string> {
  const tasksDir = path.join(teamDir, "tasks", teamId);
  await mkdir(tasksDir, { recursive: true });
  const now = new Date().toISOString();
  const config = {
    version: 1,
    teamId,
    taskListId: teamId,
    leadName: "team-lead",
    style: "normal",
    createdAt: now,
    updatedAt: now,
    members: [{ name: "team-lead", role: "lead", status: "online" }],
  };
  await writeFile(path.join(teamDir, "config.json"), `${JSON.stringify(config, null, 2)}\n`);
  if (opts.empty) return tasksDir;
  const task = (id: string, subject: string, owner: string) => ({
    id,
    subject,
    description: subject,
    owner,
    status: "in_progress",
    blocks: [],
    blockedBy: [],
    metadata: {},
    createdAt: now,
    updatedAt: now,
  });
  await writeFile(path.join(tasksDir, "1.json"), `${JSON.stringify(task("1", "Write the parser", "ada"), null, 2)}\n`);
  await writeFile(
    path.join(tasksDir, "2.json"),
    `${JSON.stringify(task("2", "Fix the broken build", "brian"), null, 2)}\n`,
  );
  await writeFile(path.join(tasksDir, ".highwatermark"), "2\n");
  return tasksDir;
}

/**
 * Ends every pi still running (for an afterAll): stdin closed as on Ctrl+D, SIGKILL for one that has
 * not exited after `timeoutMs`.
 */
export async function stopAllPi(timeoutMs = 10_000): Promise<void> {
  await Promise.all([...live].map((pi) => pi.close(timeoutMs)));
}

// ---------------------------------------------------------------------------------------------
// A teammate: real pi as pi-agent-teams' worker, with a scripted model

export interface PiWorkerOptions {
  /** The teams root (`PI_TEAMS_ROOT_DIR`); the team dir is `<teamsRoot>/<teamId>`. */
  teamsRoot: string;
  teamId: string;
  /** Default: the team id. */
  taskListId?: string;
  /** Its member name (`PI_TEAMS_AGENT_NAME`). */
  name: string;
  /** Default `team-lead`. */
  leadName?: string;
  /** Claims unowned pending tasks by itself (`PI_TEAMS_AUTO_CLAIM`); default true. */
  autoClaim?: boolean;
  /** The model's answers to its prompts, in order (`""`: an empty answer); "done" once they are used up. */
  answers?: string[];
  /** Where the model writes each prompt it is given (a JSON string a line, in order): `PI_TEST_PROMPTS_FILE`. */
  promptsFile?: string;
  home: string;
  cwd: string;
}

/** Starts a worker: pi in RPC mode with the worker fixture and the scripted model, `PI_TEAMS_WORKER=1`. */
export function startPiWorker(opts: PiWorkerOptions): PiRpc {
  const env = piEnv(opts.home, {
    PI_TEAMS_WORKER: "1",
    PI_TEAMS_ROOT_DIR: opts.teamsRoot,
    PI_TEAMS_TEAM_ID: opts.teamId,
    PI_TEAMS_TASK_LIST_ID: opts.taskListId ?? opts.teamId,
    PI_TEAMS_AGENT_NAME: opts.name,
    PI_TEAMS_LEAD_NAME: opts.leadName ?? "team-lead",
    PI_TEAMS_AUTO_CLAIM: opts.autoClaim === false ? "0" : "1",
    PI_TEST_ANSWERS: JSON.stringify(opts.answers ?? []),
    ...(opts.promptsFile ? { PI_TEST_PROMPTS_FILE: opts.promptsFile } : {}),
  });
  const args = ["--provider", "scripted", "--model", "caller"];
  return new PiRpc({ env, cwd: opts.cwd, extensions: [TEAM_WORKER, SCRIPTED_MODEL], args });
}
