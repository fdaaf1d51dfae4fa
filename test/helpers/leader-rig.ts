/**
 * A rig for tests of `pi-teams-hooks watch` as a real child process (the built `dist/teams-hooks/bin.js`):
 * it starts the leader with `--json`, collects its NDJSON lines and stderr, waits for conditions
 * (never for time), and after each test stops whatever still runs (SIGTERM, then SIGKILL) and fails
 * the test when a hook process outlived its leader.
 *
 *   const rig = useLeaderRig();                       // registers afterEach cleanup in this file
 *   const team = await rig.team({ tasks: [...] });    // a real temp team dir (temp-team.ts)
 *   await rig.hook(team, "on_task_completed.sh", "exit 1");
 *   const leader = await rig.leader(team, ["--failure-action", "reopen"]);   // resolves at `watching`
 *   await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
 *   await leader.waitFor("one event", () => leader.events().length === 1);
 *   expect(await leader.stop()).toMatchObject({ code: 0 });
 *
 * Hook processes are found through `/proc/<pid>/environ`: every process a hook starts inherits
 * `PI_TEAMS_TEAM_DIR=<team dir>`, and nothing else in a test carries it.
 *
 * The leader under test is `dist/`, built once per run before any test file starts (the global set-up,
 * global-setup.ts, with `npm run build` when the sources changed since it was built; CI's `npm ci` has
 * built it already, `postprepare`).
 */
import type { EventReport } from "../../extensions/teams-hooks/leader/notices.js";
import { type ChildProcess, type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { mkdir, readFile, readdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { type TestContext, afterAll, afterEach, beforeAll, inject } from "vitest";
import type { MailboxMessage, Task } from "../../extensions/teams-hooks/contract/team-files.js";
import { type HookLogRecord, listHookLogs, readHookLog } from "../../extensions/teams-hooks/logs/hook-log.js";
import { completeTaskFile } from "../fixtures/workers/protocol.mjs";
import { buildIfStale } from "./build.js";
import { type TempTeam, type TempTeamOptions, makeTempTeam } from "./temp-team.js";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const BIN = path.join(REPO_ROOT, "dist", "teams-hooks", "bin.js");
const WORKER = path.join(REPO_ROOT, "test", "fixtures", "workers", "team-worker.mjs");

// ---------------------------------------------------------------------------------------------
// Output of `watch --json`

/** One NDJSON line of `watch --json` (a line that is not JSON is kept as `{ type: "text" }`). */
export interface LeaderLine {
  type: string;
  [field: string]: unknown;
}

/** `{ type: "event" }`: one handled event (leader.ts `EventReport`). */
export interface EventLine extends LeaderLine, EventReport {
  type: "event";
}

function isEventLine(line: LeaderLine): line is EventLine {
  return line.type === "event" && typeof line.key === "string";
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface LeaderStart {
  /** Flags after `watch --team-dir <dir> --json`. */
  args?: string[];
  /** Added to the leader's environment (which has no PI_TEAMS_* variable of the test's own). */
  env?: Record<string, string>;
  /**
   * Resolve once the `watching` line (events are taken) and the `ready` line (the start-up scan is
   * done: a first start's baseline is recorded) are out (default), or at once.
   */
  waitForWatching?: boolean;
  /** Default 20 s: a cold start with thousands of tasks on a loaded machine. */
  startTimeoutMs?: number;
  /**
   * A command that runs the leader (e.g. `["prlimit", "--fsize=8192:unlimited", "--"]`): it must exec it, so the pid
   * stays the leader's.
   */
  wrap?: string[];
  /** The bin to run (default `BIN`): a copy of the build, e.g. where another user can read it. */
  bin?: string;
}

/** A running `pi-teams-hooks watch`. */
export class LeaderProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly teamDir: string;
  readonly lines: LeaderLine[] = [];
  stdout = "";
  stderr = "";
  exit: Exit | null = null;
  readonly exited: Promise<Exit>;
  readonly startedAt = performance.now();
  #partial = "";

  constructor(child: ChildProcess, teamDir: string) {
    if (child.pid === undefined) throw new Error(`cannot start ${BIN}`);
    this.child = child;
    this.pid = child.pid;
    this.teamDir = teamDir;
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => this.#onStdout(chunk));
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => {
      child.on("close", (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      });
    });
  }

  #onStdout(chunk: string): void {
    this.stdout += chunk;
    this.#partial += chunk;
    for (let end = this.#partial.indexOf("\n"); end >= 0; end = this.#partial.indexOf("\n")) {
      const text = this.#partial.slice(0, end);
      this.#partial = this.#partial.slice(end + 1);
      if (text.trim() === "") continue;
      try {
        this.lines.push(JSON.parse(text) as LeaderLine);
      } catch {
        this.lines.push({ type: "text", text });
      }
    }
  }

  get running(): boolean {
    return this.exit === null;
  }

  /** Every `event` line so far, optionally only those for which `filter` holds. */
  events(filter: (event: EventLine) => boolean = () => true): EventLine[] {
    return this.lines.filter(isEventLine).filter(filter);
  }

  linesOf(type: string): LeaderLine[] {
    return this.lines.filter((line) => line.type === type);
  }

  /** The stderr lines that start with `warning:`. */
  warnings(): string[] {
    return this.stderr.split("\n").filter((line) => line.startsWith("warning:"));
  }

  /** What a failed wait shows: the end of both streams. */
  describe(): string {
    const tail = (text: string): string => (text.length > 3000 ? `…${text.slice(-3000)}` : text);
    return `leader pid ${this.pid} ${this.exit ? `exited ${JSON.stringify(this.exit)}` : "running"}\n--- stdout ---\n${tail(this.stdout)}\n--- stderr ---\n${tail(this.stderr)}`;
  }

  /**
   * Waits until `check` returns a value other than false/undefined/null (or stops throwing), and
   * returns it. Fails at once if the leader exits meanwhile (unless `allowExit`).
   */
  async waitFor<T>(
    what: string,
    check: () => T | false | undefined | null | Promise<T | false | undefined | null>,
    opts: { timeoutMs?: number; allowExit?: boolean } = {},
  ): Promise<T> {
    return waitUntil(what, check, {
      timeoutMs: opts.timeoutMs ?? 15_000,
      context: () => this.describe(),
      abort: () => (!opts.allowExit && this.exit !== null ? `the leader exited (${JSON.stringify(this.exit)})` : null),
    });
  }

  /** Waits until `n` event lines (matching `filter`) are out. */
  waitForEvents(
    n: number,
    filter: (event: EventLine) => boolean = () => true,
    timeoutMs = 15_000,
  ): Promise<EventLine[]> {
    return this.waitFor(
      `${n} event line(s)`,
      () => {
        const found = this.events(filter);
        return found.length >= n ? found : false;
      },
      { timeoutMs },
    );
  }

  signal(signal: NodeJS.Signals): void {
    if (this.running) this.child.kill(signal);
  }

  /** Sends `signal` (default SIGINT) and waits for the exit; SIGKILL after `timeoutMs` as a last resort. */
  async stop(signal: NodeJS.Signals = "SIGINT", timeoutMs = 20_000): Promise<Exit & { ms: number }> {
    const began = performance.now();
    this.signal(signal);
    const timer = setTimeout(() => this.signal("SIGKILL"), timeoutMs);
    try {
      const exit = await this.exited;
      return { ...exit, ms: performance.now() - began };
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGKILL, as a crash: nothing of the leader's own shutdown runs. */
  async kill(): Promise<Exit> {
    this.signal("SIGKILL");
    return this.exited;
  }
}

/**
 * A line for a bash hook that must still be running at a moment the test chooses: it waits until
 * `releaseHooks` (or `stopThenRelease`) is called for its team, instead of sleeping for a time that a
 * loaded machine can overrun.
 */
export const UNTIL_RELEASED = 'while [ ! -e "$PI_TEAMS_TEAM_DIR/release" ]; do sleep 0.02; done';

/** Lets every hook of the team waiting on `UNTIL_RELEASED` go on. */
export function releaseHooks(teamDir: string): Promise<void> {
  return writeFile(path.join(teamDir, "release"), "");
}

/**
 * `leader.stop(signal)`, releasing the team's held hooks once the signal is sent: a held hook is
 * surely still running when the leader takes the signal.
 */
export async function stopThenRelease(
  leader: LeaderProcess,
  signal: NodeJS.Signals,
): ReturnType<LeaderProcess["stop"]> {
  const stopping = leader.stop(signal);
  await releaseHooks(leader.teamDir);
  return stopping;
}

// ---------------------------------------------------------------------------------------------
// Waiting

/** Polls `check` until it yields a value (not false/undefined/null) without throwing. */
export async function waitUntil<T>(
  what: string,
  check: () => T | false | undefined | null | Promise<T | false | undefined | null>,
  opts: { timeoutMs?: number; intervalMs?: number; context?: () => string; abort?: () => string | null } = {},
): Promise<T> {
  const deadline = performance.now() + (opts.timeoutMs ?? 15_000);
  let lastError: unknown = null;
  for (;;) {
    try {
      const value = await check();
      if (value !== false && value !== undefined && value !== null) return value;
      lastError = null;
    } catch (error) {
      lastError = error;
    }
    const aborted = opts.abort?.() ?? null;
    const timedOut = performance.now() > deadline;
    if (aborted !== null || timedOut) {
      const why = aborted ?? `timed out after ${opts.timeoutMs ?? 15_000} ms`;
      const last = lastError instanceof Error ? `\nlast check: ${lastError.message}` : "";
      throw new Error(`waiting for ${what}: ${why}${last}${opts.context ? `\n${opts.context()}` : ""}`);
    }
    await new Promise((resolve) => setTimeout(resolve, opts.intervalMs ?? 20));
  }
}

/**
 * Lets `ms` go by: the window of a negative check, where only time can show that something does NOT happen (a second
 * run, a second warning, a start before its turn). Never a wait for something to happen: wait on its condition
 * (`waitUntil`, `LeaderProcess.waitFor`).
 */
export function elapse(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---------------------------------------------------------------------------------------------
// The built binary

/**
 * Resolves once `dist/` is built from the current sources: at once in a vitest run, whose global
 * set-up (global-setup.ts) built it before any test file started; otherwise (a file run outside that
 * set-up) it builds here, once per process (build.ts).
 */
export async function ensureBuilt(): Promise<void> {
  if (inject("distBuiltFrom") !== undefined) return;
  await buildIfStale();
}

// ---------------------------------------------------------------------------------------------
// One command of the built binary

/** What a gate said as `name=value` lines on its output, by name (a line without `=` is left out). */
export function saidLines(stdout: string): Map<string, string> {
  return new Map(
    stdout
      .split("\n")
      .filter((l) => l.includes("="))
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
  );
}

/**
 * Runs `pi-teams-hooks <args>` to its end, with the test's environment minus every PI_TEAMS_* variable
 * (plus `env`; a variable given as undefined is removed), and returns its exit code and output. Never
 * rejects for a non-zero exit.
 */
export function runBin(
  args: string[],
  opts: { env?: Record<string, string | undefined>; cwd?: string } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: Record<string, string> = { NO_COLOR: "1" };
  for (const [key, value] of Object.entries(process.env))
    if (value !== undefined && !key.startsWith("PI_TEAMS_")) env[key] = value;
  for (const [key, value] of Object.entries(opts.env ?? {})) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env, cwd: opts.cwd, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

// ---------------------------------------------------------------------------------------------
// Workers

export interface WorkerProcess {
  child: ChildProcess;
  /** Resolves with the worker's result line; rejects when it fails. */
  result: Promise<unknown>;
}

/**
 * Runs one op of the plain-JS team member in the test process's served team member
 * (`team-worker.mjs --serve`): another real process, speaking the lock protocol with its own pid, but
 * one per test process rather than one per op (a spawn cost ~120 ms of CPU, most of such an op).
 * For a test that needs the op in a process of its own (several racing, one killed, one holding a lock
 * until killed, a start barrier), `startWorker`. Rejects with the op's error, or when the process dies.
 */
export function workerOp<T = unknown>(op: string, args: Record<string, unknown>): Promise<T> {
  return servedWorker().request(op, args).result as Promise<T>;
}

interface Waiting {
  op: string;
  resolve: (result: unknown) => void;
  reject: (error: Error) => void;
  abandoned: boolean;
}

/** An op sent to the served team member; `abandon()` when its test ends before the op does. */
interface ServedRequest {
  result: Promise<unknown>;
  settled: boolean;
  /** Resolves once the process is gone when it was ended for this, at once when others still use it. */
  abandon(): Promise<void>;
}

let served: ServedWorker | undefined;

function servedWorker(): ServedWorker {
  served ??= new ServedWorker();
  return served;
}

// Ended with the test process: stdin's end does it too, but a kill is at once.
process.once("exit", () => served?.child.kill("SIGKILL"));

class ServedWorker {
  readonly child: ChildProcessWithoutNullStreams;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 1;
  private stderr = "";
  private readonly closed: Promise<void>;

  constructor() {
    this.child = spawn(process.execPath, [WORKER, "--serve"], { stdio: ["pipe", "pipe", "pipe"] });
    createInterface({ input: this.child.stdout }).on("line", (line) => this.answer(line));
    this.child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-20_000);
    });
    this.child.stdin.on("error", () => undefined); // EPIPE once it died: "close" reports that
    this.child.on("error", (error) => this.end(`could not start: ${error.message}`));
    this.closed = new Promise((resolve) => {
      this.child.on("close", (code, signal) => {
        this.end(`exited with ${code ?? signal}`);
        resolve();
      });
    });
    this.hold(false);
  }

  request(op: string, args: Record<string, unknown>): ServedRequest {
    const id = this.nextId++;
    const request: ServedRequest = {
      settled: false,
      result: new Promise<unknown>((resolve, reject) => {
        this.waiting.set(id, { op, resolve, reject, abandoned: false });
      }),
      abandon: () => this.abandon(id),
    };
    request.result.then(
      () => (request.settled = true),
      () => (request.settled = true),
    );
    if (this.waiting.size === 1) this.hold(true);
    this.child.stdin.write(`${JSON.stringify({ id, op, args })}\n`);
    return request;
  }

  /** Keeps the test process alive while an op is out, and only then. */
  private hold(busy: boolean): void {
    for (const handle of [this.child, this.child.stdin, this.child.stdout, this.child.stderr] as Array<{
      ref(): void;
      unref(): void;
    }>) {
      if (busy) handle.ref();
      else handle.unref();
    }
  }

  private answer(line: string): void {
    let reply: { id?: number; result?: unknown; error?: string };
    try {
      reply = JSON.parse(line) as typeof reply;
    } catch {
      return; // not an answer (an op that prints, like hold-lock)
    }
    const waiting = reply.id === undefined ? undefined : this.waiting.get(reply.id);
    if (!waiting || reply.id === undefined) return;
    this.waiting.delete(reply.id);
    if (reply.error !== undefined) waiting.reject(new Error(`worker ${waiting.op} failed: ${reply.error}`));
    else waiting.resolve(reply.result);
    if (this.waiting.size === 0) this.hold(false);
    void this.endIfOnlyAbandoned();
  }

  /**
   * Its test ended with the op still out (it failed or timed out): the op must not go on writing into
   * the next test's files. New ops go to a new process; this one is killed once no other test waits on it.
   */
  private abandon(id: number): Promise<void> {
    const waiting = this.waiting.get(id);
    if (!waiting || waiting.abandoned) return Promise.resolve();
    waiting.abandoned = true;
    waiting.reject(new Error(`worker ${waiting.op} was still running when its test ended`));
    if (served === this) served = undefined;
    return this.endIfOnlyAbandoned();
  }

  private endIfOnlyAbandoned(): Promise<void> {
    if (served === this || this.waiting.size === 0) return Promise.resolve();
    if (![...this.waiting.values()].every((w) => w.abandoned)) return Promise.resolve();
    this.child.kill("SIGKILL");
    return this.closed;
  }

  private end(why: string): void {
    if (served === this) served = undefined;
    for (const waiting of this.waiting.values()) {
      waiting.reject(new Error(`worker ${waiting.op}: the team-worker process ${why}: ${this.stderr}`));
    }
    this.waiting.clear();
  }
}

/** Starts `team-worker.mjs <op>` (the plain-JS team member) in the background. */
export function startWorker(op: string, args: Record<string, unknown>): WorkerProcess {
  const child = spawn(process.execPath, [WORKER, op, JSON.stringify(args)], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const result = new Promise<unknown>((resolve, reject) => {
    child.on("close", (code, signal) => {
      if (code !== 0) return reject(new Error(`worker ${op} exited with ${code ?? signal}: ${stderr}`));
      const last = stdout.trim().split("\n").pop() ?? "null";
      try {
        resolve(JSON.parse(last) as unknown);
      } catch {
        reject(new Error(`worker ${op} printed no result: ${stdout}`));
      }
    });
  });
  result.catch(() => undefined); // awaited by the caller; never an unhandled rejection meanwhile
  return { child, result };
}

/**
 * Completes `ids` in order from the test process, as the worker op `complete` does (status completed, a
 * fresh metadata.completedAt, a result; under the task's lock, renamed into place, with the same plain-JS
 * protocol.mjs): for a test that times a completion, or makes many, without a worker process's start
 * (~0.1 s of CPU) each time. Returns the completedAt written to each task.
 */
export async function completeTasks(team: TempTeam, ids: string[]): Promise<Record<string, string>> {
  const final: Record<string, string> = {};
  for (const id of ids) final[id] = await completeTaskFile(team.taskFile(id), "done (1)");
  return final;
}

/**
 * A worker completes task `id` (default `1`) and the running `leader` holds it (its gate defers): the held run's id,
 * which a decision names.
 */
export async function holdTask(
  rig: Pick<LeaderRig, "worker">,
  team: TempTeam,
  leader: LeaderProcess,
  id = "1",
): Promise<string> {
  await rig.worker("complete", { tasksDir: team.tasksDir, ids: [id] });
  const [event] = await leader.waitForEvents(1, (e) => e.outcome === "deferred" && e.taskId === id);
  const runId = event?.deferral?.runId ?? "";
  if (!runId) throw new Error(`no held run in ${JSON.stringify(event)}\n${leader.describe()}`);
  return runId;
}

// ---------------------------------------------------------------------------------------------
// Processes

/** Pids of live processes that carry `PI_TEAMS_TEAM_DIR=<teamDir>` (hooks and their children). */
export function hookProcesses(teamDir: string): Promise<Array<{ pid: number; cmdline: string }>> {
  return processesWithEnv(`PI_TEAMS_TEAM_DIR=${teamDir}`);
}

/**
 * Pids of live processes whose environment holds `needle` (`NAME=value`), e.g. a run's `PI_TEAMS_HOOK_RUN_ID`.
 * Read synchronously: a scan of /proc runs after every test that made a team, and one file read per
 * process through the thread pool costs several times the CPU and wall time of a blocking read of a
 * small /proc file.
 */
export async function processesWithEnv(needle: string): Promise<Array<{ pid: number; cmdline: string }>> {
  const found: Array<{ pid: number; cmdline: string }> = [];
  const entry = Buffer.from(`\0${needle}\0`, "latin1");
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // NUL-separated NAME=value entries; a NUL in front makes the first entry match like the others.
      const environ = readFileSync(`/proc/${name}/environ`);
      if (!Buffer.concat([NUL, environ]).includes(entry)) continue;
      const cmdline = readFileSync(`/proc/${name}/cmdline`, "latin1").split("\0").join(" ").trim();
      found.push({ pid: Number(name), cmdline });
    } catch {
      // gone meanwhile, or not ours to read: not a hook of this test
    }
  }
  return found;
}

const NUL = Buffer.from([0]);

// ---------------------------------------------------------------------------------------------
// Reading the team dir

/** Every hook log of the team, validated (an invalid one throws: the leader wrote it). */
export async function readLogs(teamDir: string): Promise<Array<HookLogRecord & { file: string }>> {
  const out: Array<HookLogRecord & { file: string }> = [];
  for (const entry of await listHookLogs(teamDir)) {
    const read = await readHookLog(entry.file);
    if (!read.ok) throw new Error(`invalid hook log: ${read.problem.message}`);
    out.push({ ...read.record, file: entry.file });
  }
  return out;
}

/** Count of hook-log files (names only: cheap enough to poll). */
export async function countLogs(teamDir: string): Promise<number> {
  return (await listHookLogs(teamDir)).length;
}

export async function readTaskFile(team: TempTeam, id: string): Promise<Task> {
  return JSON.parse(await readFile(team.taskFile(id), "utf8")) as Task;
}

/** Every task file of the team's list, by id. */
export async function readAllTaskFiles(team: TempTeam): Promise<Map<string, Task>> {
  const tasks = new Map<string, Task>();
  for (const name of await readdir(team.tasksDir)) {
    if (!/^[A-Za-z0-9_-]+\.json$/.test(name)) continue;
    const task = JSON.parse(await readFile(path.join(team.tasksDir, name), "utf8")) as Task;
    tasks.set(task.id, task);
  }
  return tasks;
}

/** An inbox as raw messages; a missing file is an empty inbox. */
export async function readInboxFile(team: TempTeam, namespace: string, member: string): Promise<MailboxMessage[]> {
  try {
    return JSON.parse(await readFile(team.inboxFile(namespace, member), "utf8")) as MailboxMessage[];
  } catch (error) {
    if (error instanceof Error && "code" in error && error.code === "ENOENT") return [];
    throw error;
  }
}

export async function readHighWatermark(team: TempTeam): Promise<number> {
  return Number((await readFile(path.join(team.tasksDir, ".highwatermark"), "utf8")).trim());
}

/** The ledger's records, parsed (a torn last line is skipped, as the leader does). */
export async function readLedger(
  teamDir: string,
): Promise<Array<{ op: string; key: string; [field: string]: unknown }>> {
  const text = await readFile(path.join(teamDir, "hook-state", "ledger.jsonl"), "utf8").catch(() => "");
  const records: Array<{ op: string; key: string }> = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      records.push(JSON.parse(line) as { op: string; key: string });
    } catch {
      // a torn line
    }
  }
  return records;
}

/** A task file as a worker writes it (tests that seed thousands of tasks skip temp-team's per-file mkdir). */
export function taskJson(task: Partial<Task> & { id: string } & Record<string, unknown>): string {
  const at = "2025-01-01T00:00:00.000Z";
  const full = {
    subject: `Task ${task.id}`,
    description: `Do ${task.id}`,
    status: "pending",
    blocks: [],
    blockedBy: [],
    createdAt: at,
    updatedAt: at,
    ...task,
  };
  return `${JSON.stringify(full, null, 2)}\n`;
}

/** Writes task files for ids `from`..`to` straight into the list folder. */
export async function seedTasks(
  team: TempTeam,
  from: number,
  to: number,
  fields: (id: string) => Partial<Task> & Record<string, unknown> = () => ({}),
): Promise<string[]> {
  await mkdir(team.tasksDir, { recursive: true });
  const ids: string[] = [];
  for (let n = from; n <= to; n++) {
    const id = String(n);
    ids.push(id);
    await writeFile(team.taskFile(id), taskJson({ id, owner: "alice", ...fields(id) }));
  }
  return ids;
}

// ---------------------------------------------------------------------------------------------
// The rig

export interface LeaderRig {
  team(options?: TempTeamOptions): Promise<TempTeam>;
  /** Writes an executable hook into the team's default hooks dir (`<teams root>/_hooks`). */
  hook(team: TempTeam, name: string, body: string): Promise<string>;
  leader(team: TempTeam, args?: string[], opts?: Omit<LeaderStart, "args">): Promise<LeaderProcess>;
  /** Runs a worker op to its end, in the served team member (`workerOp`), and returns its result. */
  worker<T = unknown>(op: string, args: Record<string, unknown>): Promise<T>;
  /** Starts a worker op in the background; the rig kills it after the test if still running. */
  backgroundWorker(op: string, args: Record<string, unknown>): WorkerProcess;
  /**
   * The rig for one test of a `describe.concurrent` block: what it starts is cleaned up when that
   * test finishes (`onTestFinished` of its context), not by the file's afterEach, which would reach
   * into tests still running.
   */
  scoped(context: Pick<TestContext, "onTestFinished">): LeaderRig;
}

/** The rig of a test file (`useLeaderRig`). */
export interface FileRig extends LeaderRig {
  /**
   * The rig for what several tests of the file share and only read (a team with its runs, a leader
   * they all watch): what it starts is stopped and removed after the file's last test (afterAll),
   * not after each. Made once, by the first test that asks: `const runs = once(() => …(rig.shared))`.
   */
  shared: LeaderRig;
}

/**
 * `make()`, run when first asked for; every later call (a later test, a concurrent one) gets the same
 * promise. A set-up that failed fails each test that asks for it, with the same error.
 */
export function once<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | null = null;
  return () => {
    made ??= make();
    return made;
  };
}

/** What one test started, to be stopped and removed after it. */
interface Resources {
  teams: TempTeam[];
  leaders: LeaderProcess[];
  workers: WorkerProcess[];
  /** Ops of the served team member (`workerOp`) that this test asked for. */
  ops: ServedRequest[];
}

/** Registers the cleanup (afterEach; afterAll for `shared`) and the build check (beforeAll) in the calling file. */
export function useLeaderRig(): FileRig {
  const perTest: Resources = { teams: [], leaders: [], workers: [], ops: [] };
  const perFile: Resources = { teams: [], leaders: [], workers: [], ops: [] };
  beforeAll(() => ensureBuilt(), 240_000);
  afterEach(() => cleanUp(perTest));
  afterAll(() => cleanUp(perFile), 60_000);
  return { ...rigOver(perTest), shared: rigOver(perFile) };
}

function rigOver(res: Resources): LeaderRig {
  return {
    async team(options = {}) {
      const team = await makeTempTeam(options);
      res.teams.push(team);
      return team;
    },
    async hook(team, name, body) {
      const dir = path.join(team.teamsRoot, "_hooks");
      await mkdir(dir, { recursive: true });
      const file = path.join(dir, name);
      const shebang = name.endsWith(".mjs") || name.endsWith(".js") ? "" : "#!/usr/bin/env bash\n";
      await rm(file, { force: true });
      await writeFile(file, `${shebang}${body}\n`, { mode: 0o755 });
      return file;
    },
    async leader(team, args = [], opts = {}) {
      const env: Record<string, string> = {};
      for (const [key, value] of Object.entries(process.env)) {
        if (value !== undefined && !key.startsWith("PI_TEAMS_")) env[key] = value;
      }
      const argv = [process.execPath, opts.bin ?? BIN, "watch", "--team-dir", team.teamDir, "--json", ...args];
      const [command = process.execPath, ...rest] = [...(opts.wrap ?? []), ...argv];
      const child = spawn(command, rest, {
        cwd: team.teamsRoot,
        env: { ...env, ...opts.env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      const leader = new LeaderProcess(child, team.teamDir);
      res.leaders.push(leader);
      if (opts.waitForWatching !== false) {
        const timeoutMs = opts.startTimeoutMs ?? 20_000;
        await leader.waitFor("the watching line", () => leader.linesOf("watching").length > 0, { timeoutMs });
        await leader.waitFor("the ready line", () => leader.linesOf("ready").length > 0, { timeoutMs });
      }
      return leader;
    },
    async worker<T = unknown>(op: string, args: Record<string, unknown>): Promise<T> {
      const request = servedWorker().request(op, args);
      res.ops.push(request);
      return (await request.result) as T;
    },
    backgroundWorker(op, args) {
      const worker = startWorker(op, args);
      res.workers.push(worker);
      return worker;
    },
    scoped(context) {
      const own: Resources = { teams: [], leaders: [], workers: [], ops: [] };
      context.onTestFinished(() => cleanUp(own), 30_000);
      return rigOver(own);
    },
  };
}

/** Kills workers, stops leaders, fails on hook processes left behind, removes the team dirs. */
async function cleanUp(res: Resources): Promise<void> {
  const problems: string[] = [];
  // Before the team dirs go: an op given up must not write into them (or create them again) afterwards.
  for (const request of res.ops.splice(0)) if (!request.settled) await request.abandon();
  for (const worker of res.workers.splice(0)) {
    if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill("SIGKILL");
    await worker.result.catch(() => undefined);
  }
  for (const leader of res.leaders.splice(0)) {
    // Left running by a test that failed early (or stopped it on purpose): SIGTERM, as a user would,
    // so that its hooks are ended too; SIGKILL only if it does not go.
    if (leader.running) await leader.stop("SIGTERM", 10_000);
  }
  for (const team of res.teams.splice(0)) {
    // A hook outliving its leader is a bug; give the kernel a moment to finish killed processes.
    let left = await hookProcesses(team.teamDir);
    if (left.length > 0) {
      left = await waitUntil(
        "hook processes to end",
        async () => {
          const now = await hookProcesses(team.teamDir);
          return now.length === 0 ? [] : false;
        },
        { timeoutMs: 1500 },
      ).catch(() => left);
    }
    if (left.length > 0) {
      problems.push(`hook processes left for ${team.teamDir}: ${left.map((p) => `${p.pid} ${p.cmdline}`).join("; ")}`);
      for (const { pid } of left) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // gone meanwhile
        }
      }
    }
    await team.cleanup();
  }
  if (problems.length > 0) throw new Error(problems.join("\n"));
}
