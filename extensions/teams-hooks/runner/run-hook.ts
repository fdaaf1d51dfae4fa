/**
 * Runs one hook and turns whatever it does into a RunResult. Never rejects for anything a hook does.
 *
 * Life of a run: make its private folder (runner/run-dir.ts: the context file, the result file made
 * empty) → write the copy of the gate's checked bytes there, and read it back → lay out a node gate's
 * modules (gate-modules.ts) → wrap the start in the sandbox (sandbox.ts) and, for `run-as=`, the
 * switch of user (run-as.ts) → spawn (runner/process.ts: no shell, own process group, the context
 * file as its stdin) → our own timer races the exit → on timeout, terminate the group
 * (terminate.ts); on exit, read the result file as it is then, give the pipes a drain window,
 * because a background child may still hold them (exit is not close:
 * docs/decisions/process-facts.md) → kill leftovers (and what is left in the sandbox's view) → check the copy
 * is as it was written (else the run counts for nothing: untrusted_hook) → remove the folder.
 *
 * A child in its own group is not ended when the leader exits, so live runs are kept in a registry
 * here and `terminateAllRuns()` is what the leader calls on shutdown.
 */
import { createHash, randomUUID } from "node:crypto";
import {
  accessSync,
  closeSync,
  constants as fsConstants,
  existsSync,
  fstatSync,
  lstatSync,
  mkdtempSync,
  openSync,
  readSync,
  realpathSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
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
import { applyVerdict, readResultFile, type ResultFileRead } from "./run-files.js";
import {
  makeRunDir,
  ownPackageRoot,
  removeRunDir,
  removeRunDirLater,
  runsRoot,
  stopRemover,
  type RunDir,
} from "./run-dir.js";
import { gateModules, layOutModules, linkSiblings } from "./gate-modules.js";
import { lookUpUser, openRunDirTo, runAs } from "./run-as.js";
import {
  SANDBOX_SETUP_FAILED,
  SANDBOX_SETUP_MARK,
  endRun,
  hiddenInView,
  sandboxSupport,
  sandboxed,
  setupFailedFile,
  setupSaidFailed,
  VIEW_FILES,
  type SandboxPlan,
} from "./sandbox.js";
import {
  endStandbys,
  recycle,
  environmentScript,
  release,
  startStandby,
  takeStandby,
  usualStart,
  type Standby,
} from "./standby.js";
import type { SandboxMode } from "../settings/hook-line.js";
import { lastLineOf, lastLineTracker, type LastLine } from "../contract/verdict.js";
import type { ExitCodeMode } from "../settings/team-settings.js";
import { redactRunResult, type Redactor } from "./redact.js";
import { claudeInput, claudeResult } from "../contract/claude.js";
import { missingImportMessage, missingImports, missingImportsOfFile, moduleNotFound } from "./imports.js";
import { sanitizeName } from "../team/paths.js";
import { pathToFileURL } from "node:url";
import type { HookFormat, VerdictSource } from "../settings/hook-line.js";
import { groupMembers, signalGroup, terminateGroup } from "./terminate.js";
import { GATE_SYNTAX, checkSyntax } from "./syntax.js";
import { gateSyntaxMessage } from "../text/messages.js";
import type { Runtime } from "./runtime.js";
import { withAbsoluteSearchPath } from "./search-path.js";
import { fileId, isForeign, ownerName, resolveWritable } from "./writable-path.js";

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
  /** What the process runs on (runner/runtime.ts): here, only its test pause is read. */
  runtime?: Runtime;
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
   * Whether a defer verdict may hold the event: the event's own rule (contract.ts canDefer) unless the
   * hook point's modes leave `defer` out (`hooks.events.<event>.modes`); a defer then is a denial.
   */
  canDefer?: boolean;
  /**
   * The team's redaction (runner/redact.ts teamRedactor), applied to what the hook said (its output,
   * its verdict) before the result leaves here; the result's `redactions` counts it. Without it,
   * nothing is redacted and `redactions` is absent.
   */
  redact?: Redactor;
  /**
   * The gate's bytes as they were checked (trust/trust.ts snapshotChain). What runs is a private
   * copy of them made for this run, in its own folder under the gate's name (the files beside the
   * gate linked next to it), not the gate's path: a rename, a symlink flipped or an edit after the
   * check changes nothing. The copy is checked after the run: one that changed meanwhile makes the run an
   * `untrusted_hook` error. Absent (no snapshot): the gate runs by its path.
   */
  snapshot?: { content: Buffer; sha256: string };
  /**
   * `claude` (the gate's `format=claude`): stdin carries Claude Code's input shape, built from the
   * same document, `CLAUDE_PROJECT_DIR` is the working directory, and the exit code and output are
   * judged as Claude Code judges them (contract/claude.ts). Default `v1`.
   */
  format?: HookFormat;
  /**
   * The sandbox the gate runs in (runner/sandbox.ts): `auto` (the default of a team) where this
   * machine can give it, `required` held where it cannot, `off` as the leader runs. Absent: off.
   * `write`: more writable paths than the working directory; `env`: the names of the leader's
   * variables the gate gets besides PATH and HOME; `protect`: the leader's own folders, kept
   * read-only even inside a writable path.
   */
  sandbox?: { mode: SandboxMode; write?: readonly string[]; env?: readonly string[]; protect?: readonly string[] };
  /** `run-as=`: the user the gate runs as (runner/run-as.ts); absent: the leader's own. */
  runAs?: string;
  /**
   * `verdict=exit`: the exit status alone judges the run. No result file is offered (the variable is unset) and
   * none is read, nor a verdict on stdout: what the gate's children (the agents' tests) write cannot be its verdict.
   */
  verdict?: VerdictSource;
  /**
   * A leader's run (runner/standby.ts): start from this gate's standby when one waits and still fits,
   * and leave one for its next run. Off by default (`run`, direct callers). `{ ahead }`: the next run's
   * standby is started as soon as this gate has started whenever `ahead()` says so (the leader's: events
   * wait), so that in a burst the next view is built while this run ends and its policy is written;
   * otherwise it is left for the caller to start (startStandbys).
   */
  standby?: boolean | StandbyAhead;
}

/** When the next run's standby starts before this run ends: `ahead()` is asked once the gate has started. */
export interface StandbyAhead {
  ahead: () => boolean;
}

/** What a run judged by its exit status alone reads as its result file: nothing (applyVerdict). */
const NO_VERDICT_FILE = Object.freeze({ text: null, refused: null });

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
  standbysDue.clear();
  startsAhead.clear();
  await Promise.allSettled([...runs.map((run) => run.done), endStandbys()]);
  await Promise.allSettled([...removing]);
  stopRemover();
}

export async function runHook(hook: HookCommand, invocation: HookInvocation, opts: RunHookOptions): Promise<RunResult> {
  const result = await runUnredacted(hook, invocation, opts);
  return opts.redact ? redactRunResult(result, opts.redact) : result;
}

async function runUnredacted(hook: HookCommand, invocation: HookInvocation, opts: RunHookOptions): Promise<RunResult> {
  const runId = opts.runId ?? randomUUID();
  const startedAt = performance.now();
  const base = baseResult(hook, runId);
  const ahead = standbyKey(hook, invocation, opts);
  const standby = ahead ? await takeStandby(ahead, (run) => planOf(run, hook, invocation, opts, null)) : null;
  let run: RunDir;
  try {
    run = standby?.run ?? makeRunDir(runId, opts.baseEnv ?? process.env);
  } catch (error) {
    return {
      ...base,
      ...startFailure(`cannot make the run's folder: ${describeError(error)}`, "E_RUN_DIR", startedAt),
    };
  }
  // The next run's standby: started once this gate has, when the caller says events wait (a burst), else
  // left due until the caller has handled this event (startStandbys).
  const next = ahead
    ? () =>
        startStandby(ahead, opts.cwd, opts.baseEnv ?? process.env, (dir) => standbyLayout(dir, hook, invocation, opts))
    : null;
  const early = typeof opts.standby === "object" ? opts.standby.ahead : null;
  const onStarted =
    ahead && next && early
      ? () => {
          if (early()) void next();
          else startsAhead.set(runId, next); // an event queued while it runs starts it (startStandbysAhead)
        }
      : undefined;
  try {
    return await runIn(run, hook, invocation, opts, { runId, startedAt, base, standby, onStarted });
  } catch (error) {
    // A bug of ours, not the hook's: still reported as data, so one bad run never stops the leader.
    return { ...base, ...startFailure(`internal error: ${describeError(error)}`, "E_INTERNAL", startedAt, "internal") };
  } finally {
    startsAhead.delete(runId);
    // A standby taken by a run that did not start (a refusal before the start, a failed ledger flush) ends here.
    if (standby && !standby.released) await endStandby(standby);
    // A standby's folder (`standby.XXXXXX`) is removed off the event's path (removeRunDirLater): its removal
    // (a dozen metadata writes, each waiting for the file system's journal on a busy disk) overlaps the
    // policy's writes. A leader killed meanwhile leaves it to the next start's sweep (removeOrphanStandbys).
    // One whose run ended clean keeps its view and folder for the gate's next standby (recycle).
    if (standby) {
      if (!recycle(standby)) removeLater(run.dir);
    } else removeRunDir(run.dir);
    // One started ahead already waits (or is starting): startStandby then does nothing.
    if (ahead && next) standbysDue.set(ahead, next);
  }
}

/** The folders of runs that started from a standby, being removed (removeLater). */
const removing = new Set<Promise<void>>();

function removeLater(dir: string): void {
  // A mount still held inside it: the next start's sweep removes it.
  const removed: Promise<void> = removeRunDirLater(dir).finally(() => removing.delete(removed));
  removing.add(removed);
}

/** The next standby of each run under way that did not start one ahead (no event waited as its gate started). */
const startsAhead = new Map<string, () => Promise<void>>();

/**
 * Starts the next standby of every run under way that has not: the leader calls it as it queues an event,
 * so that a burst that builds up while a gate runs has the next view built meanwhile too.
 */
export function startStandbysAhead(): void {
  if (startsAhead.size === 0) return;
  const due = [...startsAhead.values()];
  startsAhead.clear();
  for (const start of due) void start();
}

/** The standbys the runs that ended ask for, started by startStandbys (the leader's, once an event is handled). */
const standbysDue = new Map<string, () => Promise<void>>();

/**
 * Starts the standbys the runs that ended since the last call asked for: the leader calls it once an event
 * is handled, so that a standby's start (a fork of the leader) never comes between a gate's exit and its policy.
 */
export function startStandbys(): void {
  const due = [...standbysDue.values()];
  standbysDue.clear();
  for (const start of due) void start();
}

/**
 * The pool key of a run that may start from a standby (runner/standby.ts), or null when it may not: not a
 * leader's, not sandboxed, or a `run-as=` gate (its folder is opened to its user per run).
 */
function standbyKey(hook: HookCommand, invocation: HookInvocation, opts: RunHookOptions): string | null {
  if (!opts.standby || opts.runAs !== undefined || (opts.sandbox?.mode ?? "off") === "off") return null;
  if (!sandboxSupport().ok) return null;
  return JSON.stringify([
    hook.hookPath,
    hook.command,
    hook.args,
    opts.cwd,
    invocation.teamDir,
    opts.sandbox?.write ?? [],
    opts.sandbox?.protect ?? [],
    opts.format ?? "v1",
    opts.snapshot !== undefined,
    runsRoot(opts.baseEnv ?? process.env),
  ]);
}

/** A standby's folder laid out as its run will find it: the stdin file made empty, the command the run starts. */
function standbyLayout(
  run: RunDir,
  hook: HookCommand,
  invocation: HookInvocation,
  opts: RunHookOptions,
): { stdinFile: string; command: string; args: readonly string[]; plan: SandboxPlan } {
  const stdinFile = opts.format === "claude" ? run.stdinFile : run.contextFile;
  writeFileSync(stdinFile, "", { mode: 0o600, flag: "wx" });
  const started = opts.snapshot ? startedFrom(hook, path.join(run.dir, path.basename(hook.hookPath))) : hook;
  return { stdinFile, command: started.command, args: started.args, plan: planOf(run, hook, invocation, opts, null) };
}

/** The gate's command with its path replaced by the run's copy of it. */
function startedFrom(hook: HookCommand, copy: string): HookCommand {
  return {
    ...hook,
    command: hook.command === hook.hookPath ? copy : hook.command,
    args: hook.args.map((arg) => (arg === hook.hookPath ? copy : arg)),
  };
}

/**
 * The sandbox of a run in `run`: writable and protected paths as they really are (a link among them, the
 * working directory a link to the team dir, a sandbox-write= path an agent turned into a link to
 * hook-state/, is followed here, once, so that what lies inside a writable path is known, and is checked
 * again in the view as built).
 */
function planOf(
  run: RunDir,
  hook: HookCommand,
  invocation: HookInvocation,
  opts: RunHookOptions,
  user: { uid: number; gid: number } | null,
): SandboxPlan {
  const real = (p: string): string => {
    try {
      return realpathSync(p);
    } catch {
      return p; // not there: nothing to bind
    }
  };
  // Writable paths through no link but the leader's own or root's (resolveWritable), each with the file it
  // reached: what the view must show there once built (SandboxPlan.bound).
  const uid = process.getuid?.() ?? 0;
  const bound: { path: string; id: string }[] = [];
  const writable = (p: string, what: string): string => {
    let found: ReturnType<typeof resolveWritable>;
    try {
      found = resolveWritable(p, uid);
    } catch (error) {
      // A loop of links (or one swapped again and again while it was looked at).
      throw new SandboxRefusal(`${hook.hookPath}: ${what}: ${describeError(error)}: the gate did not run`);
    }
    // Not there (or not to be reached): nothing the set-up could bind, and the run would have it writable otherwise.
    if (found === null)
      throw new SandboxRefusal(
        `${hook.hookPath}: ${what} is not there, or the leader cannot reach it: make it before the gate runs; the gate did not run`,
      );
    if (isForeign(found) && found.folderOwner !== undefined)
      throw new SandboxRefusal(
        `${hook.hookPath}: ${what} goes through ${found.link}, a symbolic link in a folder that ${ownerName(found.folderOwner)} owns or that others can write: the gate did not run, since whoever can write that folder can put a link of the leader's there (a gate's tests make them) and have its target bound writable (make it a folder, or put the link in a folder of the leader's own)`,
      );
    if (isForeign(found))
      throw new SandboxRefusal(
        `${hook.hookPath}: ${what} goes through ${found.link}, a symbolic link owned by ${ownerName(found.owner)}, not by the leader's user (uid ${uid}) or root: the gate did not run, since the sandbox would bind the link's target writable (make it a folder, or a link of the leader's own)`,
      );
    // A FIFO would hold the set-up that opens it until the gate's time-out, a device or a socket is nothing to write.
    if (found.kind === "other")
      throw new SandboxRefusal(
        `${hook.hookPath}: ${what} is neither a folder nor a regular file: the gate did not run`,
      );
    // (The set-up reads the paths a line each; a leader's own path never holds a line break.)
    if (found.path.includes("\n"))
      throw new SandboxRefusal(`${hook.hookPath}: ${what} holds a line break: the gate did not run`);
    if (!bound.some((b) => b.path === found.path)) bound.push({ path: found.path, id: fileId(found) });
    return found.path;
  };
  const cwd = writable(opts.cwd, `its working directory ${opts.cwd}`);
  for (const p of opts.sandbox?.write ?? []) writable(p, `sandbox-write=${p}`);
  return {
    runDir: run.dir,
    cwd,
    bound,
    visible: [
      invocation.teamDir,
      path.dirname(hook.hookPath),
      ownPackageRoot(),
      nodePrefix(),
      projectRoot(opts.cwd),
      ...pathFolders(opts.baseEnv ?? process.env, user !== null),
    ],
    protect: (opts.sandbox?.protect ?? []).map(real),
    hide: [path.dirname(runsRoot(opts.baseEnv ?? process.env)), ...runtimeDirs(opts.baseEnv ?? process.env)],
    resultFile: run.resultFile,
    resultFolder: run.resultFolder ?? undefined,
    user: user ?? undefined,
  };
}

async function runIn(
  run: RunDir,
  hook: HookCommand,
  invocation: HookInvocation,
  opts: RunHookOptions,
  {
    runId,
    startedAt,
    base,
    standby,
    onStarted,
  }: { runId: string; startedAt: number; base: BaseResult; standby: Standby | null; onStarted?: () => void },
): Promise<RunResult> {
  const sandbox = sandboxOf(opts.sandbox);
  const notStarted = (message: string, code: string | undefined, truncated = false): RunResult => ({
    ...base,
    ran: false,
    contextTruncated: truncated,
    ...startFailure(message, code, startedAt),
    sandbox: sandbox.state,
  });
  if (sandbox.state === "unavailable" && sandbox.mode === "required") {
    return notStarted(
      `${hook.hookPath}: the gate requires the sandbox (sandbox=required), and this machine cannot give it: ${sandbox.reason}; it did not run`,
      SANDBOX_UNAVAILABLE,
    );
  }
  const user = opts.runAs === undefined ? null : lookUpUser(opts.runAs);
  if (opts.runAs !== undefined && user === null)
    return notStarted(`${hook.hookPath}: run-as=${opts.runAs}: no such user on this machine; it did not run`, RUN_AS);
  const confined = sandbox.mode !== "off";
  const exitOnly = opts.verdict === "exit";
  const { env, contextJson, doc, truncated } = buildHookEnvironment(invocation, {
    runId,
    contextFile: run.contextFile,
    resultFile: exitOnly ? undefined : run.resultFile,
    eventKey: opts.eventKey,
    attempt: opts.attempt,
    // Its PATH without empty or relative folders, sandboxed or not (runner/search-path.ts).
    base: withAbsoluteSearchPath(
      confined
        ? gateBaseEnv(opts.baseEnv ?? process.env, opts.sandbox?.env ?? [], sandbox.state === "on")
        : (opts.baseEnv ?? process.env),
    ),
    maxValueBytes: opts.maxEnvValueBytes,
    context: opts.context,
  });
  // Synchronous on purpose: the async open/write/close hops cost ~2.5 ms a run here (bench/runner.mjs),
  // while spawn itself already blocks the event loop for longer than these small writes do.
  const claude = opts.format === "claude";
  // A standby's stdin file is there already, empty (open in its process as fd 0): written in place.
  writeRunFile(run.contextFile, contextJson, standby?.stdinFile === run.contextFile);
  if (claude) {
    env.CLAUDE_PROJECT_DIR = opts.cwd;
    // A Claude Code gate reads Claude Code's input on stdin: a file of its own, beside the context file.
    writeRunFile(run.stdinFile, JSON.stringify(claudeInput(doc, opts.cwd)), standby?.stdinFile === run.stdinFile);
  }
  // The gate's own path, whatever file runs (its private copy: `$0` names the copy).
  env.PI_TEAMS_HOOK_PATH = hook.hookPath;
  const isNode = hook.command === process.execPath;
  const modules = isNode ? gateModules(hook.hookPath) : null;
  // A node gate whose packages are not installed beside it would die before its first line: not started.
  if (modules) {
    const missing = opts.snapshot
      ? missingImports(opts.snapshot.content.toString("utf8"), hook.hookPath, modules)
      : missingImportsOfFile(hook.hookPath);
    if (missing.length > 0)
      return notStarted(missingImportMessage(hook.hookPath, missing), MODULE_NOT_FOUND, truncated);
  }
  if (modules) env.NODE_PRESERVE_SYMLINKS = "1";
  let started = hook;
  let copy: string | null = null;
  let written: CopyStat | null = null;
  let siblings: string[] = [];
  if (opts.snapshot) {
    // The checked bytes, in the run's own folder: nothing the team can write or name.
    copy = path.join(run.dir, path.basename(hook.hookPath));
    written = writeCopy(copy, opts.snapshot.content, 0o500);
    if (written === null) {
      return {
        ...notStarted(
          `${hook.hookPath}: the copy of the checked gate was written by someone else before it started`,
          undefined,
          truncated,
        ),
        errorKind: "untrusted_hook",
      };
    }
    siblings = linkSiblings(run.dir, hook.hookPath);
    if (modules) layOutModules(run.dir, hook.hookPath, modules);
    started = startedFrom(hook, copy);
  }
  if (sandbox.state === "on") {
    const missing = (opts.sandbox?.write ?? []).find((p) => !existsSync(p));
    if (missing !== undefined)
      return notStarted(
        `${hook.hookPath}: sandbox-write=${missing}: no such file or folder; the gate did not run (make it, or change the gate's settings line)`,
        "E_SANDBOX_SETUP",
        truncated,
      );
    // A writable path through a link another user owns (the agents'): its target would be bound writable. A run from
    // a standby was planned already, by the take that checked the standby's view still fits (takeStandby).
    let plan: SandboxPlan | null = null;
    if (!standby)
      try {
        plan = planOf(run, hook, invocation, opts, user);
      } catch (error) {
        if (error instanceof SandboxRefusal) return notStarted(error.message, SANDBOX_SETUP, truncated);
        throw error;
      }
    // Inside the sandbox a command that cannot start is the sandbox's exit status: said as Node says it outside.
    // Without PATH, execvp searches the C library's default, /bin:/usr/bin.
    const unstartable = cannotExec(started.command, env.PATH ?? "/bin:/usr/bin");
    if (unstartable) {
      // Named as the author wrote it: the copy that would have started is the run's own.
      const message = spawnMessage(unstartable, opts.cwd);
      return notStarted(copy ? message.replaceAll(copy, hook.hookPath) : message, errnoCode(unstartable), truncated);
    }
    // A standby has its view built already (checked to be the one this plan builds now: takeStandby).
    if (plan) started = { ...started, ...sandboxed(started.command, started.args, plan) };
  }
  if (user) {
    const switched = runAs(user, started.command, started.args);
    if ("error" in switched) return notStarted(switched.error, RUN_AS, truncated);
    const read = [
      run.contextFile,
      ...(claude ? [run.stdinFile] : []),
      ...(sandbox.state === "on" ? VIEW_FILES.map((name) => path.join(run.dir, name)) : []),
    ];
    const opened = openRunDirTo(run.dir, runsRoot(opts.baseEnv ?? process.env), user, {
      read,
      exec: copy ? [copy] : [],
      // The set-up, run as the user, says there whether it failed (runner/sandbox.ts setupScript).
      write: [run.resultFile, ...(sandbox.state === "on" && !standby ? [setupFailedFile(run.dir)] : [])],
    });
    if ("error" in opened)
      return notStarted(`${hook.hookPath}: run-as=${user.name}: ${opened.error}`, RUN_AS, truncated);
    run.result.uid = opened.uid;
    run.result.mode = opened.mode;
    // The copy changed hands (its ctime moved): what it is now is what must stay.
    if (copy && written) written = { ...written, ...statOf(copy) };
    started = { ...started, ...switched };
  }
  // The verdict is what the result file held when the gate ended: a process of its that writes after it is
  // not the gate (and is ended with the run's namespace below).
  let atExit: ResultFileRead | null = null;
  const ran = await execute(started, opts, {
    standby: standby ?? undefined,
    onStarted,
    onExit: () => {
      if (!exitOnly) atExit = readResultFile(run.resultFile, run.result);
    },
    runId,
    env,
    stdinFile: claude ? run.stdinFile : run.contextFile,
    truncated,
    startedAt,
    base,
  });
  const { lastLine } = ran;
  // What is left of a sandboxed gate is ended before its verdict is read: nothing of it writes after it.
  const { killed: ended, settled } = sandbox.state === "on" ? endRun(run.dir) : { killed: [], settled: false };
  if (standby) standby.settled = settled;
  if (ended.length > 0) ran.result = { ...ran.result, leftoverProcesses: ran.result.leftoverProcesses + ended.length };
  // The log names the gate, not its private copy, and what it said names the gate's file too.
  const said = copy
    ? authorsNames(ran.result, run.dir, path.dirname(hook.hookPath), [path.basename(hook.hookPath), ...siblings])
    : ran.result;
  const result: RunResult = {
    ...said,
    hookPath: hook.hookPath,
    command: [hook.command, ...hook.args],
    sandbox: sandbox.state,
  };
  const tampered = copy && written ? copyChanged(copy, written) : null;
  if (tampered) {
    return {
      ...result,
      outcome: "error",
      errorKind: "untrusted_hook",
      error: `${hook.hookPath}: the copy of the checked gate that ran (${copy}) ${tampered} while it ran: the run counts for nothing; the team lead looks at who wrote it`,
    };
  }
  // A standby's word on fd 3 is waited for only where the exit looks like the set-up's (its fd is closed by then),
  // and only when the standby was told to go: one ended before (startFor) left its run to the usual set-up's file.
  const setupLike = sandbox.state === "on" && result.exitCode === SANDBOX_SETUP_FAILED;
  const setup = setupLike
    ? sandboxSetupFailure(result, run.dir, standby?.released ? await standby.execed : null)
    : null;
  if (setup)
    return { ...result, ran: false, outcome: "error", errorKind: "spawn", errorCode: SANDBOX_SETUP, error: setup };
  if (claude) return claudeResult(result);
  const rules = {
    canDefer: canDefer(invocation.event) && opts.canDefer !== false,
    exitCodes: opts.exitCodes,
  };
  const judged = exitOnly
    ? applyVerdict(result, NO_VERDICT_FILE, lastLineOf(""), rules)
    : applyVerdict(result, atExit ?? readResultFile(run.resultFile, run.result), lastLine, rules);
  // Node could not find a module the gate imports (one a look at its text cannot see): the gate
  // judged nothing, so it is a gate that cannot start, not a denial. Not for a gate judged by its exit status
  // alone: its stderr is the agents' tests' too, which could print Node's line.
  const notFound =
    isNode && !exitOnly && judged.outcome !== "passed" && !judged.verdict && judged.exitCode !== 0
      ? moduleNotFound(judged.stderr, copy ?? hook.hookPath, hook.hookPath)
      : null;
  if (notFound)
    return { ...judged, outcome: "error", errorKind: "spawn", errorCode: MODULE_NOT_FOUND, error: notFound };
  // A failure with no verdict may be the gate's own file not parsing: checked only then (no cost on a pass),
  // on the checked bytes, before the failure is blamed on the work.
  const unparsed =
    opts.snapshot && judged.outcome === "failed" && !judged.verdict && judged.exitCode !== 0
      ? await gateSyntax(hook, run.dir, opts.snapshot.content)
      : null;
  if (unparsed)
    return {
      ...judged,
      outcome: "error",
      errorKind: "spawn",
      errorCode: GATE_SYNTAX,
      error: gateSyntaxMessage(unparsed),
    };
  return judged;
}

/**
 * What the syntax check said of a gate's bytes, by the gate's path, command and bytes: a gate that fails
 * again and again (a worker's work reopened) is checked once, not at every failure. Only what the check
 * said is kept (it parses, or its error), never a check that could not say.
 */
const syntaxSaid = new Map<string, string | null>();
const SYNTAX_SAID_MAX = 256;

/** Why the gate's checked bytes do not parse (syntax.ts), or null; the check runs once per gate and bytes. */
async function gateSyntax(hook: HookCommand, runDir: string, content: Buffer): Promise<string | null> {
  const key = JSON.stringify([
    hook.hookPath,
    hook.command,
    hook.args,
    createHash("sha256").update(content).digest("hex"),
  ]);
  const known = syntaxSaid.get(key);
  if (known !== undefined) return known;
  const checked = writeForCheck(runDir, hook.hookPath, content);
  const said = checked ? await checkSyntax(hook, checked, headOf({ content })) : undefined;
  if (said === undefined) return null;
  if (syntaxSaid.size >= SYNTAX_SAID_MAX) syntaxSaid.delete(syntaxSaid.keys().next().value as string);
  syntaxSaid.set(key, said);
  return said;
}

/**
 * The checked bytes again, in a folder of their own inside the run's (the copy that ran may be another
 * user's by now: run-as=), under the gate's own name, so that a `.js` gets the run's package.json type.
 */
function writeForCheck(runDir: string, gateFile: string, content: Buffer): string | null {
  try {
    const file = path.join(mkdtempSync(path.join(runDir, ".syntax-")), path.basename(gateFile));
    writeFileSync(file, content, { mode: 0o400, flag: "wx" });
    return file;
  } catch {
    return null; // no room in the run's folder: unchecked, the failure stands as the gate's, as before
  }
}

/** The start of a gate's bytes, for its `#!` line. */
function headOf(snapshot: { content: Buffer }): string {
  return snapshot.content.subarray(0, 256).toString("latin1");
}

/** The error code of a gate whose `run-as=` user cannot be switched to. */
const RUN_AS = "E_RUN_AS";
/** The error code of a gate whose imports cannot be found (Node's own). */
const MODULE_NOT_FOUND = "ERR_MODULE_NOT_FOUND";
/** The error code of a gate that requires a sandbox this machine cannot give. */
const SANDBOX_UNAVAILABLE = "E_SANDBOX_UNAVAILABLE";
/** The error code of a sandbox whose mounts could not be made: the gate never started. */
const SANDBOX_SETUP = "E_SANDBOX_SETUP";

/** A sandbox that must not be built as planned (a writable path through another user's link): said, not run. */
class SandboxRefusal extends Error {}

/** The sandbox a run asked for, and what it gets on this machine. */
function sandboxOf(asked: RunHookOptions["sandbox"]): {
  mode: SandboxMode;
  state: "on" | "off" | "unavailable";
  reason: string;
} {
  const mode = asked?.mode ?? "off";
  if (mode === "off") return { mode, state: "off", reason: "" };
  const support = sandboxSupport();
  return support.ok ? { mode, state: "on", reason: "" } : { mode, state: "unavailable", reason: support.reason };
}

/**
 * The part of the leader's environment a confined gate gets: PATH, HOME and the names its settings
 * line declares (`env=`); TMPDIR is the sandbox's private /tmp. The contract's own variables are
 * added after.
 */
function gateBaseEnv(
  leader: Readonly<Record<string, string | undefined>>,
  declared: readonly string[],
  sandboxed: boolean,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ["PATH", "HOME", ...declared]) {
    const value = leader[name];
    if (value !== undefined) env[name] = value;
  }
  if (sandboxed) env.TMPDIR = "/tmp";
  return env;
}

/**
 * The project the working directory is in: the nearest folder at or above it with a package.json or a
 * .git (its own when none). Shown read-only where the private /tmp would hide it (a checkout under
 * /tmp), so that `npm test` in a subfolder finds the project's package.json and node_modules.
 */
/**
 * The folders of the gate's PATH that the sandbox's private /tmp or /dev/shm would hide (a folder of
 * links to the tools a machine allows, made by a script): without them the gate's `#!/usr/bin/env
 * bash` would find no bash. Shown read-only, as the gate's own folder is. For a gate of another user
 * (`run-as=`, whose view that user builds), only folders any user can reach. Nothing is looked up for
 * the usual PATH, which the view shows as it is.
 */
function pathFolders(env: Readonly<Record<string, string | undefined>>, otherUser: boolean): string[] {
  return (env.PATH ?? "").split(":").filter((dir) => {
    if (!path.isAbsolute(dir) || !hiddenInView(dir)) return false;
    return !otherUser || othersCanReach(dir);
  });
}

/** Every folder from `/` down to `dir` lets other users through, and `dir` lets them list and enter it. */
function othersCanReach(dir: string): boolean {
  try {
    if ((statSync(dir).mode & 0o005) !== 0o005) return false;
    for (let at = path.dirname(dir); ; at = path.dirname(at)) {
      if ((statSync(at).mode & 0o001) === 0) return false;
      if (at === path.dirname(at)) return true;
    }
  } catch {
    return false;
  }
}

function projectRoot(cwd: string): string {
  for (let dir = cwd; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, "package.json")) || existsSync(path.join(dir, ".git"))) return dir;
    if (path.dirname(dir) === dir) return cwd;
  }
}

/** The user's runtime folders: `$XDG_RUNTIME_DIR` and `/run/user/<uid>`, where its services' sockets are. */
function runtimeDirs(env: Readonly<Record<string, string | undefined>>): string[] {
  const dirs = [`/run/user/${process.getuid?.() ?? 0}`];
  if (env.XDG_RUNTIME_DIR && path.isAbsolute(env.XDG_RUNTIME_DIR)) dirs.push(env.XDG_RUNTIME_DIR);
  return dirs;
}

/** The folder Node is installed in (`<prefix>/bin/node`): the gate's view shows it. */
function nodePrefix(): string {
  return path.dirname(path.dirname(process.execPath));
}

/** What the run's copy was when written, to tell a change after. */
interface CopyStat {
  ino: number;
  dev: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

/**
 * Writes the run's copy of the gate's checked bytes: `0500`, in the run's own folder (`wx`: never
 * through a planted file), and reads it back: null when what is there is not what was written (a
 * process of the leader's own user wrote it in between).
 */
function writeCopy(file: string, content: Buffer, mode: number): CopyStat | null {
  const fd = openSync(
    file,
    fsConstants.O_RDWR | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW,
    mode,
  );
  try {
    writeSync(fd, content, 0, content.length, 0);
    const st = fstatSync(fd);
    const back = Buffer.alloc(content.length + 1);
    const read = readSync(fd, back, 0, back.length, 0);
    if (read !== content.length || !back.subarray(0, read).equals(content)) return null;
    return { ino: st.ino, dev: st.dev, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs };
  } finally {
    closeSync(fd);
  }
}

/** A file's identity and times, as CopyStat keeps them. */
function statOf(file: string): CopyStat {
  const st = lstatSync(file);
  return { ino: st.ino, dev: st.dev, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs };
}

/** How the run's copy changed since it was written (replaced, moved, written, its mode changed), or null. */
function copyChanged(file: string, copy: CopyStat): string | null {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(file);
  } catch {
    return "was removed";
  }
  if (st.ino !== copy.ino || st.dev !== copy.dev) return "was replaced";
  if (st.size !== copy.size || st.mtimeMs !== copy.mtimeMs) return "was written";
  // A rename away and back, a chmod, a new link: each moves the ctime, which no one but root can set back.
  if (st.ctimeMs !== copy.ctimeMs) return "was moved or changed";
  return null;
}

/**
 * What the hook said (and a spawn error), with the run folder's paths put back as the gate folder's:
 * `bash` and Node name the file they run in their errors (`<run dir>/on_task_completed.sh: line 3: …`),
 * and the author wrote the gate (and the helpers beside it), not the run's copies and links.
 */
function authorsNames(result: RunResult, runDir: string, gateDir: string, names: readonly string[]): RunResult {
  // Only the gate's copy and the files linked beside it: the run's own files (its result file) keep their path.
  const pairs: Array<[string, string]> = names.flatMap(
    (name): Array<[string, string]> => [
      [pathToFileURL(path.join(runDir, name)).href, pathToFileURL(path.join(gateDir, name)).href],
      [path.join(runDir, name), path.join(gateDir, name)],
    ],
  );
  const swap = (text: string): string =>
    pairs.reduce((t, [from, to]) => (t.includes(from) ? t.replaceAll(from, to) : t), text);
  return {
    ...result,
    stdout: swap(result.stdout),
    stderr: swap(result.stderr),
    // A spawn error names the command that did not start: the copy, for a gate that starts by its #! line.
    ...(result.error === undefined ? {} : { error: swap(result.error) }),
  };
}

/**
 * Why `command` cannot be executed as execvp would look for it on `searchPath` (an error with its
 * errno code, as Node's spawn gives it), or null when it can.
 */
function cannotExec(command: string, searchPath: string): NodeJS.ErrnoException | null {
  const refused = (code: "ENOENT" | "EACCES"): NodeJS.ErrnoException =>
    Object.assign(new Error(`spawn ${command} ${code}`), {
      code,
      errno: code === "ENOENT" ? -2 : -13,
      syscall: `spawn ${command}`,
      path: command,
    });
  const candidates = command.includes("/")
    ? [command]
    : searchPath.split(":").map((dir) => path.join(dir || ".", command));
  let denied = false;
  for (const file of candidates) {
    try {
      accessSync(file, fsConstants.X_OK);
      if (statSync(file).isFile()) return interpreterOf(file, command);
      denied = true;
    } catch (error) {
      if (errnoCode(error) === "EACCES") denied = true;
    }
  }
  return refused(denied ? "EACCES" : "ENOENT");
}

/**
 * The kernel's own refusal of a script whose `#!` interpreter is missing or not executable, as Node's
 * spawn reports it (ENOENT, EACCES, in the name of the script), or null when it would start.
 */
function interpreterOf(file: string, command: string): NodeJS.ErrnoException | null {
  let head = "";
  try {
    const fd = openSync(file, fsConstants.O_RDONLY);
    try {
      const buffer = Buffer.alloc(256);
      head = buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, 0)).toString("latin1");
    } finally {
      closeSync(fd);
    }
  } catch {
    return null; // unreadable here: the kernel says what it says
  }
  const match = /^#!\s*(\S+)/.exec(head);
  const interpreter = match?.[1];
  if (!interpreter?.startsWith("/")) return null;
  try {
    accessSync(interpreter, fsConstants.X_OK);
    return null;
  } catch (error) {
    const code = errnoCode(error) === "EACCES" ? "EACCES" : "ENOENT";
    return Object.assign(new Error(`spawn ${command} ${code}`), { code, syscall: `spawn ${command}`, path: command });
  }
}

/** The line the sandbox's set-up left when it could not build the gate's view, or null when it did. */
function sandboxSetupFailure(result: RunResult, runDir: string, execed: boolean | null): string | null {
  if (result.exitCode !== SANDBOX_SETUP_FAILED) return null;
  // Said where the gate cannot say it: a standby's `started` on its fd 3 (the gate ran), or the set-up's file beside
  // the fstab (runner/sandbox.ts setupScript). The mark on stderr alone is any gate's to print.
  if (execed === true || (execed === null && !setupSaidFailed(runDir))) return null;
  const line = result.stderr.split("\n").find((l) => l.startsWith(SANDBOX_SETUP_MARK));
  if (!line) return null;
  const first = result.stderr.split("\n").find((l) => l.trim() !== "") ?? line;
  return `the gate's sandbox could not be set up, so the gate did not run: ${first.trim()}`;
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
  /** Called the moment the hook's process has exited by itself, before the pipes drain. */
  onExit?: () => void;
  /** The chain already started for this run, waiting for its environment (runner/standby.ts). */
  standby?: Standby;
  /** Called once the hook's process has started (after onSpawn). */
  onStarted?: () => void;
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
  await pauseForTests(opts.runtime?.testPause ?? null, runId, hook.hookPath, startedAt + opts.timeoutMs);
  const started = await startFor(hook, opts, run);
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
  run.onStarted?.();
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
      run.onExit?.();
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
 * Starts the run's process: its standby told to go when it has one that can still be told and the
 * environment can be said to it, else a new process (in the standby's view, when there was one).
 */
async function startFor(hook: HookCommand, opts: RunHookOptions, run: Prepared): ReturnType<typeof startProcess> {
  const { standby } = run;
  let command = hook.command;
  let args: readonly string[] = hook.args;
  if (standby) {
    const script = environmentScript(run.env, [standby.command, ...standby.args]);
    if (script !== null && release(standby, script)) return { ok: true, process: standby.process };
    await endStandby(standby);
    ({ command, args } = usualStart(standby));
  }
  return startProcess({ command, args, cwd: opts.cwd, env: run.env, stdinFile: run.stdinFile });
}

/** A standby not used after all: ended, its folder kept (the run that took it goes on in it). */
async function endStandby(standby: Standby): Promise<void> {
  standby.process.go?.destroy();
  if (standby.process.running()) signalGroup(standby.process.pid, "SIGKILL");
  await standby.process.exited;
  standby.process.release();
}

/**
 * Writes one of the run's files: a new one (`wx`), or, `inPlace`, the empty one a standby made and holds
 * open (its own folder: no one else can have put it there).
 */
function writeRunFile(file: string, content: string, inPlace: boolean): void {
  if (!inPlace) {
    writeFileSync(file, content, { mode: 0o600, flag: "wx" });
    return;
  }
  const fd = openSync(file, fsConstants.O_WRONLY | fsConstants.O_NOFOLLOW);
  try {
    writeSync(fd, content, 0);
  } finally {
    closeSync(fd);
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

/**
 * A hook for tests, never set in use: with a test pause in the runtime (`Runtime.testPause`, which the
 * bin takes from `PI_TEAMS_HOOKS_TEST_PAUSE_DIR`), a run writes `<dir>/<run id>.paused` once its gate is
 * checked and copied, and starts only once `<dir>/<run id>.go` exists (or its timeout passes): a test
 * swaps the gate in between, the race made deterministic (test/e2e/gate-swap.test.ts).
 */
async function pauseForTests(dir: string | null, runId: string, gate: string, until: number): Promise<void> {
  if (!dir) return;
  const stem = path.join(dir, sanitizeName(runId));
  writeFileSync(`${stem}.paused`, gate);
  while (!existsSync(`${stem}.go`) && performance.now() < until)
    await new Promise((resolve) => setTimeout(resolve, 10));
}

function elapsed(startedAt: number): number {
  return Math.round(performance.now() - startedAt);
}
