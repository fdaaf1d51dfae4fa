/**
 * Runs one hook and turns whatever it does into a RunResult. Never rejects for anything a hook does.
 *
 * Life of a run: write the context file → write the private copy of the gate's checked bytes
 * (runCopyPath) → spawn that copy (runner/process.ts: no shell, own process group, the context file
 * as its stdin) → our own timer races the exit → on timeout, terminate the group
 * (terminate.ts); on exit, give the pipes a drain window, because a background child may still hold
 * them (exit is not close: docs/architecture.md, "Facts this design rests on") → kill leftovers →
 * check the copy is as it was written (else the run counts for nothing: untrusted_hook) → remove
 * the files.
 *
 * A child in its own group is not ended when the leader exits, so live runs are kept in a registry
 * here and `terminateAllRuns()` is what the leader calls on shutdown.
 */
import { randomUUID } from "node:crypto";
import {
  closeSync,
  constants as fsConstants,
  existsSync,
  fstatSync,
  lstatSync,
  mkdtempSync,
  openSync,
  rmdirSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { StringDecoder } from "node:string_decoder";
import { startProcess, type ExitStatus, type OutputSource } from "./process.js";
import { headCapture, type CaptureResult } from "./capture.js";
import { HOOK_CONTRACT_VERSION, canDefer, type HookInvocation } from "../contract/contract.js";
import {
  OUTPUT_LIMIT_CHARS,
  buildHookEnvironment,
  type HookCommand,
  type PreparedContext,
  type RunErrorKind,
  type RunResult,
} from "../contract/hook-run.js";
import { describeError, errnoCode } from "../contract/errors.js";
import { applyVerdict, readResultFile, runCopyPath, runFiles } from "./run-files.js";
import { lastLineOf, lastLineTracker, type LastLine } from "../contract/verdict.js";
import type { ExitCodeMode } from "../settings/hooks-config.js";
import { redactRunResult, type Redactor } from "./redact.js";
import { claudeInput, claudeResult } from "../contract/claude.js";
import { missingImportMessage, missingImports, missingImportsOfFile, moduleNotFound } from "./imports.js";
import { sanitizeName } from "../team/paths.js";
import type { HookFormat } from "../settings/hook-line.js";
import { groupMembers, terminateGroup } from "./terminate.js";

export interface RunHookOptions {
  cwd: string;
  /** Our own timer; at the end SIGTERM goes to the group, SIGKILL `graceMs` later. */
  timeoutMs: number;
  /** The leader's environment the contract variables are added to (default `process.env`). */
  baseEnv?: Readonly<Record<string, string | undefined>>;
  graceMs?: number;
  /** How long pipes may stay open after the hook exited by itself (never past the timeout). */
  drainMs?: number;
  runId?: string;
  /** `PI_TEAMS_HOOK_EVENT_KEY` and `PI_TEAMS_HOOK_ATTEMPT` (see buildHookEnvironment). */
  eventKey?: string;
  attempt?: number;
  maxEnvValueBytes?: number;
  /** The invocation's context document and JSON, when the caller built them already (a chain does once). */
  context?: PreparedContext;
  /** Called once the hook is running: the ledger records its group and run id. */
  onSpawn?: (info: { pid: number; runId: string }) => void;
  /**
   * Awaited just before the spawn, after everything else is ready: the leader's ledger record of the
   * event reaches the disk meanwhile (it must be there before the hook starts). If it rejects, the
   * hook does not start.
   */
  notBefore?: Promise<unknown>;
  /**
   * `auto` (default) looks for run-id escapees in /proc only when something is suspect: a timeout,
   * pipes still open after exit, or members left in the group. `always` also scans after a clean
   * exit (about 2–10 ms), which also catches a setsid'd child with its output redirected elsewhere.
   */
  escapeeScan?: "auto" | "always";
  /** What the exit code means without a verdict (`hooks.exitCodes`); default `v1`. */
  exitCodes?: ExitCodeMode;
  /**
   * The team's redaction (runner/redact.ts teamRedactor), applied to what the hook said (its output,
   * its verdict) before the result leaves here; the result's `redactions` counts it. Without it,
   * nothing is redacted and `redactions` is absent.
   */
  redact?: Redactor;
  /**
   * The gate's bytes as they were checked (trust/trust.ts snapshotChain). What runs is a private
   * copy of them made for this run (runCopyPath: beside the gate, so that its folder, its imports and
   * node_modules resolve as the gate's own; in a private temp folder when the gate's folder cannot be
   * written), not the gate's path: a rename, a symlink flipped or an edit after the check changes
   * nothing. The copy is checked after the run: one that changed meanwhile makes the run an
   * `untrusted_hook` error. Absent (no snapshot): the gate runs by its path.
   */
  snapshot?: { content: Buffer; sha256: string };
  /**
   * `claude` (the gate's `format=claude`): stdin carries Claude Code's input shape, built from the
   * same document, `CLAUDE_PROJECT_DIR` is the working directory, and the exit code and output are
   * judged as Claude Code judges them (contract/claude.ts). Default `v1`.
   */
  format?: HookFormat;
}

/** After the hook's processes are dead, how long the pipes may take to report close. */
const CLOSE_SETTLE_MS = 500;

interface LiveRun {
  runId: string;
  pid: number;
  stop: () => void;
  done: Promise<unknown>;
}
const live = new Map<string, LiveRun>();

/** Runs whose process group may still be alive: for the leader's shutdown and its ledger. */
export function liveRuns(): Array<{ runId: string; pid: number }> {
  return [...live.values()].map(({ runId, pid }) => ({ runId, pid }));
}

/**
 * Live HTTP handler requests (runner/http.ts), by run id. Kept here rather than there so that the
 * shutdown path does not load the HTTP runner (and node:http) into a leader that never used it.
 */
const liveRequests = new Map<string, { stop: () => void; done: Promise<unknown> }>();

/** Registers a live request, so that terminateAllRuns aborts it; returns what unregisters it. */
export function trackRequest(runId: string, stop: () => void, done: Promise<unknown>): () => void {
  const entry = { stop, done };
  liveRequests.set(runId, entry);
  return () => {
    if (liveRequests.get(runId) === entry) liveRequests.delete(runId);
  };
}

/**
 * Ends every live run (as a timeout would) and every live handler request (its result: `stopped`),
 * and waits until each has settled and reaped its group.
 */
export async function terminateAllRuns(): Promise<void> {
  const runs = [...live.values(), ...liveRequests.values()];
  for (const run of runs) run.stop();
  await Promise.allSettled(runs.map((run) => run.done));
}

export async function runHook(hook: HookCommand, invocation: HookInvocation, opts: RunHookOptions): Promise<RunResult> {
  const result = await runUnredacted(hook, invocation, opts);
  return opts.redact ? redactRunResult(result, opts.redact) : result;
}

async function runUnredacted(hook: HookCommand, invocation: HookInvocation, opts: RunHookOptions): Promise<RunResult> {
  const runId = opts.runId ?? randomUUID();
  const startedAt = performance.now();
  const base = baseResult(hook, runId);
  // The result file is offered, not created: a hook that wants to give a verdict writes it (verdict.ts).
  const { contextFile, resultFile, stdinFile } = runFiles(runId);
  let contextWritten = false;
  let stdinWritten = false;
  let copy: RunCopy | null = null;
  try {
    const { env, contextJson, doc, truncated } = buildHookEnvironment(invocation, {
      runId,
      contextFile,
      resultFile,
      ...(opts.eventKey === undefined ? {} : { eventKey: opts.eventKey }),
      ...(opts.attempt === undefined ? {} : { attempt: opts.attempt }),
      base: opts.baseEnv ?? process.env,
      maxValueBytes: opts.maxEnvValueBytes,
      ...(opts.context ? { context: opts.context } : {}),
    });
    try {
      // `wx`: never write through a file (or link) someone else planted under our name. Synchronous
      // on purpose: the async open/write/close/unlink hops cost ~2.5 ms a run here (bench/runner.mjs),
      // while spawn itself already blocks the event loop for longer than this small write does.
      writeFileSync(contextFile, contextJson, { mode: 0o600, flag: "wx" });
      contextWritten = true;
    } catch (error) {
      return {
        ...base,
        contextTruncated: truncated,
        ...startFailure(
          `cannot write context file ${contextFile}: ${describeError(error)}`,
          errnoCode(error),
          startedAt,
        ),
      };
    }
    const claude = opts.format === "claude";
    if (claude) {
      env.CLAUDE_PROJECT_DIR = opts.cwd;
      // A Claude Code gate reads Claude Code's input on stdin: a file of its own, beside the context file.
      try {
        writeFileSync(stdinFile, JSON.stringify(claudeInput(doc, opts.cwd)), { mode: 0o600, flag: "wx" });
        stdinWritten = true;
      } catch (error) {
        return {
          ...base,
          contextTruncated: truncated,
          ...startFailure(
            `cannot write the gate's input file ${stdinFile}: ${describeError(error)}`,
            errnoCode(error),
            startedAt,
          ),
        };
      }
    }
    // The gate's own path, whatever file runs (its private copy: `$0` names the copy).
    env.PI_TEAMS_HOOK_PATH = hook.hookPath;
    // A node gate whose packages are not installed beside it would die before its first line: not started.
    if (hook.command === process.execPath) {
      const missing = opts.snapshot
        ? missingImports(opts.snapshot.content.toString("utf8"), hook.hookPath)
        : missingImportsOfFile(hook.hookPath);
      if (missing.length > 0) {
        const message = missingImportMessage(hook.hookPath, missing);
        return {
          ...base,
          ran: false,
          contextTruncated: truncated,
          ...startFailure(message, MODULE_NOT_FOUND, startedAt),
        };
      }
    }
    let started = hook;
    if (opts.snapshot) {
      const made = writeRunCopy(hook.hookPath, runId, opts.snapshot.content);
      if ("error" in made)
        return { ...base, contextTruncated: truncated, ...startFailure(made.error, made.code, startedAt) };
      copy = made;
      started = {
        ...hook,
        command: hook.command === hook.hookPath ? copy.file : hook.command,
        args: hook.args.map((arg) => (arg === hook.hookPath ? (copy?.file ?? arg) : arg)),
      };
    }
    const ran = await execute(started, opts, {
      runId,
      env,
      stdinFile: claude ? stdinFile : contextFile,
      truncated,
      startedAt,
      base,
    });
    const { lastLine } = ran;
    // The log names the gate, not its private copy.
    const result: RunResult = { ...ran.result, hookPath: hook.hookPath, command: [hook.command, ...hook.args] };
    const tampered = copy ? copyChanged(copy) : null;
    if (tampered) {
      return {
        ...result,
        outcome: "error",
        errorKind: "untrusted_hook",
        error:
          `${hook.hookPath}: the copy of the checked gate that ran (${copy?.file}) ${tampered} while it ran: ` +
          `the run counts for nothing; the team lead looks at who wrote it`,
      };
    }
    if (claude) return claudeResult(result);
    const rules = { canDefer: canDefer(invocation.event), ...(opts.exitCodes ? { exitCodes: opts.exitCodes } : {}) };
    const judged = applyVerdict(result, readResultFile(resultFile), lastLine, rules);
    // Node could not find a module the gate imports (one a look at its text cannot see): the gate
    // judged nothing, so it is a gate that cannot start, not a denial.
    const notFound =
      hook.command === process.execPath && judged.outcome !== "passed" && !judged.verdict && judged.exitCode !== 0
        ? moduleNotFound(judged.stderr, copy?.file ?? hook.hookPath, hook.hookPath)
        : null;
    if (notFound)
      return { ...judged, outcome: "error", errorKind: "spawn", errorCode: MODULE_NOT_FOUND, error: notFound };
    return judged;
  } catch (error) {
    // A bug of ours, not the hook's: still reported as data, so one bad run never stops the leader.
    return { ...base, ...startFailure(`internal error: ${describeError(error)}`, "E_INTERNAL", startedAt, "internal") };
  } finally {
    if (contextWritten) removeQuietly(contextFile);
    if (stdinWritten) removeQuietly(stdinFile);
    if (copy) removeQuietly(copy.file);
    if (copy?.dir) removeDirQuietly(copy.dir);
    removeQuietly(resultFile);
  }
}

/** The error code of a gate whose imports cannot be found (Node's own). */
const MODULE_NOT_FOUND = "ERR_MODULE_NOT_FOUND";

/** A run's private copy of its gate: where, and what it was when written (to tell a change after). */
interface RunCopy {
  file: string;
  /** The private temp folder it is in, when the gate's folder could not be written. */
  dir?: string;
  ino: number;
  dev: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

/**
 * Writes the private copy of the gate's checked bytes (`wx`: never through a file someone planted;
 * 0700: a bare gate is run directly). Beside the gate when its folder can be written, else in a
 * private temp folder of this run.
 */
function writeRunCopy(
  gate: string,
  runId: string,
  content: Buffer,
): RunCopy | { error: string; code: string | undefined } {
  const write = (file: string): RunCopy => {
    const fd = openSync(
      file,
      fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW,
      0o700,
    );
    try {
      writeSync(fd, content, 0, content.length, 0);
      const st = fstatSync(fd);
      return { file, ino: st.ino, dev: st.dev, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs };
    } finally {
      closeSync(fd);
    }
  };
  try {
    return write(runCopyPath(gate, runId));
  } catch (error) {
    const code = errnoCode(error);
    if (code !== "EACCES" && code !== "EROFS" && code !== "EPERM")
      return { error: `cannot write the copy of the gate to run: ${describeError(error)}`, code };
  }
  try {
    const dir = mkdtempSync(path.join(os.tmpdir(), "pi-teams-gate-"));
    return { ...write(path.join(dir, path.basename(runCopyPath(gate, runId)))), dir };
  } catch (error) {
    return { error: `cannot write the copy of the gate to run: ${describeError(error)}`, code: errnoCode(error) };
  }
}

/** How the run's copy changed since it was written (replaced, moved, written, its mode changed), or null. */
function copyChanged(copy: RunCopy): string | null {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(copy.file);
  } catch {
    return "was removed";
  }
  if (st.ino !== copy.ino || st.dev !== copy.dev) return "was replaced";
  if (st.size !== copy.size || st.mtimeMs !== copy.mtimeMs) return "was written";
  // A rename away and back, a chmod, a new link: each moves the ctime, which no one but root can set back.
  if (st.ctimeMs !== copy.ctimeMs) return "was moved or changed";
  return null;
}

/** The result of a run that never started because something refused it (a limit): an error of `kind`. */
export function notRunResult(hook: HookCommand, runId: string, kind: RunErrorKind, message: string): RunResult {
  return { ...baseResult(hook, runId), ran: false, ...startFailure(message, undefined, performance.now(), kind) };
}

type BaseResult = Pick<RunResult, "ran" | "hookPath" | "command" | "runId" | "contractVersion" | "contextTruncated">;

function baseResult(hook: HookCommand, runId: string): BaseResult {
  return {
    ran: true,
    hookPath: hook.hookPath,
    command: [hook.command, ...hook.args],
    runId,
    contractVersion: HOOK_CONTRACT_VERSION,
    contextTruncated: false,
  };
}

type Outcome = Omit<RunResult, keyof BaseResult>;

function startFailure(
  message: string,
  code: string | undefined,
  startedAt: number,
  kind: RunErrorKind = "spawn",
): Outcome {
  return {
    outcome: "error",
    errorKind: kind,
    exitCode: null,
    signal: null,
    timedOut: false,
    durationMs: elapsed(startedAt),
    stdout: "",
    stderr: "",
    stdoutDroppedBytes: 0,
    stderrDroppedBytes: 0,
    error: firstLine(message),
    ...(code ? { errorCode: code } : {}),
    leftoverProcesses: 0,
  };
}

interface Prepared {
  runId: string;
  env: Record<string, string>;
  /** The file the hook reads on stdin: the context document's, or its Claude Code shape's. */
  stdinFile: string;
  truncated: boolean;
  startedAt: number;
  base: BaseResult;
}

type Executed = { result: RunResult; lastLine: LastLine };

async function execute(hook: HookCommand, opts: RunHookOptions, run: Prepared): Promise<Executed> {
  const { runId, startedAt } = run;
  const base = { ...run.base, contextTruncated: run.truncated };
  const notStarted = (error: unknown): Executed => {
    const failure = startFailure(spawnMessage(error, opts.cwd), errnoCode(error), startedAt);
    return { result: { ...base, ...failure }, lastLine: lastLineOf("") };
  };
  await opts.notBefore;
  await pauseForTests(runId, hook.hookPath, startedAt + opts.timeoutMs);
  const started = await startProcess({
    command: hook.command,
    args: hook.args,
    cwd: opts.cwd,
    env: run.env,
    stdinFile: run.stdinFile,
  });
  if (!started.ok) return notStarted(started.error);
  const subprocess = started.process;
  const hookPid = subprocess.pid;
  let requestStop = (): void => undefined;
  const stopped = new Promise<"stopped">((resolve) => (requestStop = () => resolve("stopped")));
  const timers = new AbortController();
  const finished = supervise();
  live.set(runId, { runId, pid: hookPid, stop: requestStop, done: finished });
  try {
    opts.onSpawn?.({ pid: hookPid, runId });
  } catch {
    // The caller's bookkeeping failed; the hook is running and must still be supervised and reaped.
  }
  try {
    return await finished;
  } finally {
    // With a reason: a bare abort() builds an AbortError with a stack trace on every run.
    timers.abort(null);
    live.delete(runId);
  }

  async function supervise(): Promise<Executed> {
    const graceMs = opts.graceMs ?? 1_000;
    const deadline = startedAt + opts.timeoutMs;
    const out = captureStream(subprocess.stdout);
    const err = captureStream(subprocess.stderr);
    const pipesClosed = Promise.all([out.closed, err.closed]).then(() => "closed" as const);
    const exited = subprocess.exited;

    const first = await Promise.race([exited, stopped, wait(deadline - performance.now(), "timeout" as const)]);
    let exit: ExitStatus | undefined;
    let durationMs: number;
    let leftovers: number[];
    const timedOut = first === "timeout";
    if (typeof first === "string") {
      // Only a leader not yet reaped may seed the walk of parent links: a reaped pid could be someone else's.
      const leaderRunning = subprocess.running();
      leftovers = (await terminateGroup(hookPid, { graceMs, runId, leaderRunning })).filter((p) => p !== hookPid);
      exit = await Promise.race([exited, wait(CLOSE_SETTLE_MS, undefined)]);
      durationMs = elapsed(startedAt);
      await Promise.race([pipesClosed, wait(CLOSE_SETTLE_MS, "late" as const)]);
    } else {
      exit = first;
      durationMs = elapsed(startedAt);
      const drainMs = Math.min(opts.drainMs ?? 1_000, Math.max(0, deadline - performance.now()));
      const drained = (await Promise.race([pipesClosed, stopped, wait(drainMs, "open" as const)])) === "closed";
      // The common path stays cheap: pipes closed and an empty group need no /proc scan for escapees.
      const suspect = !drained || opts.escapeeScan === "always" || (await groupMembers(hookPid)).length > 0;
      leftovers = suspect ? await terminateGroup(hookPid, { graceMs, runId }) : [];
      if (!drained) await Promise.race([pipesClosed, wait(CLOSE_SETTLE_MS, "late" as const)]);
    }
    // A holder we could not find (its environment replaced, out of the group) must not keep us here.
    subprocess.release();

    const stopReason = first === "stopped" ? "stopped: the leader is shutting down" : undefined;
    const errorKind: RunErrorKind | undefined = timedOut
      ? "timeout"
      : stopReason
        ? "stopped"
        : !exit
          ? "internal"
          : exit.signal !== null
            ? "signal"
            : undefined;
    const outcome = errorKind ? "error" : exit?.code === 0 ? "passed" : "failed";
    const result: RunResult = {
      ...base,
      outcome,
      ...(errorKind ? { errorKind } : {}),
      exitCode: exit?.code ?? null,
      signal: exit?.signal ?? null,
      timedOut,
      durationMs,
      ...outputFields(out.result(), err.result()),
      ...(stopReason
        ? { error: stopReason }
        : !exit
          ? { error: "internal error: the hook's exit status was never reported" }
          : {}),
      leftoverProcesses: leftovers.length,
    };
    return { result, lastLine: out.lastLine() };
  }

  /** A timer that resolves to `value`, cleared when the run ends so no timer outlives it. */
  function wait<T>(ms: number, value: T): Promise<T> {
    return new Promise<T>((resolve) => {
      const timer = setTimeout(() => resolve(value), Math.max(0, ms));
      timers.signal.addEventListener("abort", () => clearTimeout(timer), { once: true });
    });
  }
}

/**
 * Reads every chunk (so the hook never blocks on a full pipe) into a head capture, and follows the
 * last line that holds more than blanks over the whole output, for a verdict there (contract/verdict.ts).
 */
function captureStream(stream: OutputSource): {
  closed: Promise<void>;
  result: () => CaptureResult;
  lastLine: () => LastLine;
} {
  const capture = headCapture(OUTPUT_LIMIT_CHARS);
  const decoder = new StringDecoder("utf8");
  const lines = lastLineTracker();
  stream.onData((bytes) => {
    capture.push(bytes);
    lines.push(decoder.write(bytes));
  });
  return {
    closed: stream.closed,
    result: () => capture.result(),
    lastLine: () => {
      lines.push(decoder.end());
      return lines.result();
    },
  };
}

function outputFields(
  out: CaptureResult,
  err: CaptureResult,
): Pick<RunResult, "stdout" | "stderr" | "stdoutDroppedBytes" | "stderrDroppedBytes"> {
  return {
    stdout: withNote(out),
    stderr: withNote(err),
    stdoutDroppedBytes: out.droppedBytes,
    stderrDroppedBytes: err.droppedBytes,
  };
}

/** The head, plus a line saying how much was left out, so a reader never mistakes it for everything. */
function withNote(captured: CaptureResult): string {
  return captured.droppedBytes > 0
    ? `${captured.text}\n… (truncated, ${captured.droppedBytes} bytes omitted)`
    : captured.text;
}

/**
 * Why a spawn failed, in one line. Node words a missing working directory as the command's ENOENT
 * (`spawn /bin/bash ENOENT`), which would send a reader looking for the wrong file: name the
 * directory when it is the one missing.
 */
function spawnMessage(error: unknown, cwd: string): string {
  const message = describeError(error);
  if (errnoCode(error) !== "ENOENT" && errnoCode(error) !== "ENOTDIR") return message;
  try {
    if (statSync(cwd).isDirectory()) return message;
    return `the working directory (cwd) is not a directory: ${cwd} (${message})`;
  } catch {
    return `the working directory (cwd) does not exist: ${cwd} (${message})`;
  }
}

function firstLine(text: string): string {
  return (
    text
      .split("\n")
      .find((line) => line.trim().length > 0)
      ?.trim() ?? text.trim()
  );
}

function removeDirQuietly(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // not empty (the hook left something) or gone: a folder in tmpdir, not a failure
  }
}

/**
 * A hook for tests, never set in use: with `PI_TEAMS_HOOKS_TEST_PAUSE_DIR` in the leader's own
 * environment, a run writes `<dir>/<run id>.paused` once its gate is checked and copied, and starts
 * only once `<dir>/<run id>.go` exists (or its timeout passes): a test swaps the gate in between, the
 * race made deterministic (test/e2e/gate-swap.test.ts).
 */
async function pauseForTests(runId: string, gate: string, until: number): Promise<void> {
  const dir = process.env.PI_TEAMS_HOOKS_TEST_PAUSE_DIR;
  if (!dir) return;
  const stem = path.join(dir, sanitizeName(runId));
  writeFileSync(`${stem}.paused`, gate);
  while (!existsSync(`${stem}.go`) && performance.now() < until)
    await new Promise((resolve) => setTimeout(resolve, 10));
}

function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // The hook may have removed it itself; anything else leaves a 0600 file in tmpdir, not a failure.
  }
}

function elapsed(startedAt: number): number {
  return Math.round(performance.now() - startedAt);
}
