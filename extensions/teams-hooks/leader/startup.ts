/**
 * The leader's start-up and crash recovery: the process groups and in-flight keys a crashed leader
 * left, the first start's baseline (what existed before the first start is history, not run), and the
 * start-up scan that looks at every task file once, in slices, with the state a previous leader saved.
 */
import {
  closeSync,
  constants as fsConstants,
  fstatSync,
  fsyncSync,
  openSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { HooksError, describeError, errnoCode } from "../contract/errors.js";
import type { HookEvent } from "../contract/events.js";
import { listHookLogs, readHookLog } from "../logs/hook-log.js";
import { removeRunDir, runDirsOf } from "../runner/run-dir.js";
import { endRun } from "../runner/sandbox.js";
import { removeOrphanStandbys, standbyDirsOf } from "../runner/standby.js";
import { killRunId } from "../runner/terminate.js";
import { MAX_TEAM_FILE_BYTES, readRegularFile, writeTextAtomic } from "../team/json-file.js";
import { firstStartFile, scanStateFile } from "../team/paths.js";
import { deferralOfLog, writeDeferral } from "../deferrals/record.js";
import { type FirstStart, type LeaderContext, forEachYielding } from "./context.js";
import type { TaskLook } from "./sources.js";
import { sentId } from "../team/sent-log.js";
import { ledgerLostText } from "../text/messages.js";
import type { Ledger } from "./ledger.js";
import { gateHistory } from "./gate-trust.js";
import { type GatePlace, heldFor, isJudged, moveReaching, placeOfLog } from "../policy/gate-life.js";

/**
 * A ledger key recorded (as a baseline) once the first start's baseline is complete. A ledger without
 * it comes from a first start that died before recording its baseline (the ledger file exists from
 * the moment it is opened), so the next start is still a first start: history stays a baseline
 * instead of running all at once. test/integration/leader-first-start.test.ts.
 */
export const BASELINE_DONE_KEY = "leader:baseline-complete";
/**
 * Recorded once a first start has taken the claims in progress as history: with a ledger of a leader
 * that did not know `task_started` (no such key), the next start is a first start for claims only.
 */
export const CLAIMS_BASELINE_KEY = "leader:claims-baseline-complete";

/**
 * On a first start, a task file whose mtime and ctime are this much older than the first-start mark
 * has not changed since before the leader began to watch: what it holds is history. (File times come
 * from a coarse clock, a few milliseconds behind; the mark's time is read back from the same file
 * system, so clock skew between machines does not enter.)
 */
const UNCHANGED_SLACK_MS = 20;
/**
 * A file that changed since the mark (an edit or a new completion after the first start began): its
 * event is history if the event's own timestamp is older than the mark by more than this, a completion
 * of a minute ago or more that a worker's unrelated edit touched. A completion stamped within the
 * minute before the first start runs: better a gate too many than a completion lost.
 */
const STAMP_SLACK_MS = 60_000;

/**
 * Ends the processes of runs that were in flight when a previous leader died (every hook of the
 * chain: they carry the event's run id, or `<runId>.N`), and removes their run folders, and the
 * standby folders a dead leader left.
 */
export async function endOrphanedRuns(ctx: LeaderContext, ledger: Ledger): Promise<void> {
  for (const run of ledger.inFlight()) {
    // What the run left in its sandbox's view, found by its root: a process that cleared its environment carries no
    // run id. Its folders, named by the run or the standby it started from (whose environment file names the run).
    const views = [...runDirsOf(run.runId, ctx.opts.env), ...standbyDirsOf(run.runId, ctx.opts.env)];
    const ended = new Set(views.flatMap((dir) => endRun(dir).killed));
    // The same process may be found both ways (in the view and carrying the run id): counted once.
    for (const pid of await killRunId(run.runId, "SIGKILL", { chain: true })) ended.add(pid);
    const count = ended.size;
    if (count > 0) ctx.warn(`ended ${count} process(es) left by an interrupted run of ${run.key}`);
    for (const dir of views) removeRunDir(dir);
  }
  // Standbys (runner/standby.ts) a dead leader left, and the folders of its runs that started from one
  // (their processes ended above).
  removeOrphanStandbys(ctx.opts.env);
}

/**
 * Keys begun but never finished by a leader that died: done if their log exists (with the state its
 * policy block says, through `next`), deferred if that log says the gate was deferred (its deferral
 * file written again if the crash came before it), held again if its policy held the event for the
 * lead or a retry, else retried.
 */
export async function recoverInFlight(
  ctx: LeaderContext,
  ledger: Ledger,
  retry: (event: HookEvent) => void,
): Promise<void> {
  const inFlight = ledger.inFlight();
  if (inFlight.length === 0) return;
  const earliest = inFlight.map((r) => r.startedAt).sort()[0] ?? "";
  const stemFloor = earliest.replace(/[:.]/g, "-").slice(0, 19);
  const logs = (await listHookLogs(ctx.setup.identity.teamDir)).filter((entry) => entry.name.slice(0, 19) >= stemFloor);
  const byRunId = new Map<
    string,
    { file: string; outcome: string; complete: boolean; deferral: unknown; place: GatePlace | null }
  >();
  for (const entry of logs) {
    const read = await readHookLog(entry.file);
    // A log whose policy says `complete: false` was written by a run that gave up on its policy (a hand run).
    if (read.ok)
      byRunId.set(read.record.result.runId, {
        file: entry.file,
        outcome: read.record.result.outcome,
        complete: read.record.policy?.complete !== false,
        deferral: read.record.deferral,
        place: placeOfLog(read.record.policy?.gate, read.record.policy?.held),
      });
  }
  for (const run of inFlight) {
    const logged = byRunId.get(run.runId);
    const held = logged?.complete ? deferralOfLog(logged.deferral) : null;
    if (logged && held) {
      // What a decider may have added to the file since is kept: it is written only when missing.
      await writeDeferral(ctx.setup.identity.teamDir, held);
      await ledger.defer(run.key, ctx.now(), {
        runId: run.runId,
        deferral: held.runId,
        expiresAt: held.expiresAt,
        log: logged.file,
      });
      ctx.opts.report({ kind: "recovered", key: run.key, how: "deferred" });
    } else if (logged?.complete) {
      const to = movedByLog(ctx, ledger, run.key, logged.place);
      const hold = heldFor(to);
      if (hold && run.event) {
        // Held for the lead or a retry: held again (the held events are taken up after this), never done.
        await ledger.hold(run.key, ctx.now(), { runId: run.runId, cause: hold, log: logged.file, event: run.event });
        ctx.opts.report({ kind: "recovered", key: run.key, how: "held" });
        continue;
      }
      await ledger.finish(run.key, ctx.now(), {
        runId: run.runId,
        outcome: logged.outcome,
        log: logged.file,
        gate: to !== null && isJudged(to) ? to.state : undefined,
      });
      ctx.opts.report({ kind: "recovered", key: run.key, how: "logged" });
    } else if (run.event) {
      ctx.opts.report({ kind: "recovered", key: run.key, how: "retry" });
      retry({ key: run.key, ...run.event, source: "task" });
    } else {
      ctx.warn(`${ledger.file}: in-flight ${run.key} has no event details; it is not retried`);
    }
  }
}

/**
 * Where the log of a run a crashed leader began says its policy took the event (`place`), as `next`
 * (policy/gate-life.ts) moves it from where the ledger has the key (running); null when the log records
 * no place. A move `next` refuses is a bug of ours: said, and the log's place taken all the same.
 */
function movedByLog(ctx: LeaderContext, ledger: Ledger, key: string, place: GatePlace | null): GatePlace | null {
  if (!place) return null;
  return moveReaching(ledger.place(key) ?? { state: "running" }, place, (message) => ctx.warn(`${key}: ${message}`));
}

/** A first start's state, with its first-start mark (written now, or kept from a first start that died). */
export function beginFirstStart(ctx: LeaderContext, freshLedger: boolean, claimsOnly: boolean): FirstStart {
  return {
    claimsOnly,
    markMs: firstStartMark(ctx, freshLedger),
    looked: new Set(),
    history: new Set(),
    edited: [],
    rejudged: [],
  };
}

/**
 * The first-start mark's time on the file system's clock: written now (on a fresh ledger, or when a
 * first start that died left none), or kept from the first start that died before recording its
 * baseline, so that what came after that start is still not taken for history.
 */
function firstStartMark(ctx: LeaderContext, fresh: boolean): number {
  const file = firstStartFile(ctx.setup.identity.teamDir);
  if (!fresh) {
    try {
      return statSync(file).mtimeMs;
    } catch (error) {
      if (errnoCode(error) !== "ENOENT")
        ctx.warn(`${file}: cannot read (${describeError(error)}); a new first-start mark is written`);
    }
  }
  // O_NONBLOCK: a FIFO planted in its place fails the open (ENXIO) instead of blocking the start.
  let fd: number;
  try {
    fd = openSync(
      file,
      fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_TRUNC | fsConstants.O_NONBLOCK,
      0o644,
    );
  } catch (error) {
    const why =
      errnoCode(error) === "ENXIO"
        ? "not a regular file (a FIFO or a socket)"
        : `cannot be written (${describeError(error)})`;
    throw new HooksError("E_TEAM_DIR", `${file}: ${why}; remove it and start again`, { cause: error });
  }
  try {
    if (!fstatSync(fd).isFile())
      throw new HooksError("E_TEAM_DIR", `${file}: not a regular file; remove it and start again`);
    writeSync(fd, `${ctx.now()} first start of pid ${process.pid}: task files unchanged since are history\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return statSync(file).mtimeMs;
}

/**
 * A first start's first look at a task file: is its event history (a baseline, not run)? Yes if the
 * file has not changed since the first-start mark; if it has, yes only if the event's own timestamp
 * is over a minute older than the mark (a worker edited an old completed task). See STAMP_SLACK_MS.
 */
export function isHistory(look: Extract<TaskLook, { kind: "task" }>, event: HookEvent, first: FirstStart): boolean {
  if (look.changedMs < first.markMs - UNCHANGED_SLACK_MS) return true;
  const stamp = stampMs(event.timestamp);
  if (stamp === null || stamp >= first.markMs - STAMP_SLACK_MS) return false;
  first.edited.push(look.task.id); // reported once the scan is done
  return true;
}

/**
 * Looks at every task file once, in slices (hints go on being handled in between), then records a
 * first start's baseline and reports `ready`; the reconcile scan takes over after it.
 */
export async function scanAtStart(
  ctx: LeaderContext,
  ledger: Ledger,
  markers: readonly string[],
  began: number,
  look: (file: string) => void,
): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve)); // `start()` returns (the `watching` line) first
  const files = await ctx.sources.listTaskFiles();
  // A file hinted before this was read in full; one looked at from here on is only stat'ed if the
  // saved state knows it unchanged.
  restoreScanState(ctx, ledger);
  await forEachYielding(files, (file) => ctx.state === "watching" && look(file), 64);
  ctx.sources.dropRestoredState();
  if (ctx.state !== "watching") return; // stopping: a first start's baseline stays unrecorded
  let baseline = 0;
  // `markers`: the marker keys a first start records with its baseline (none: not a first start).
  if (markers.length > 0) {
    const history = ctx.firstStart?.history ?? new Set<string>();
    const edited = ctx.firstStart?.edited ?? [];
    if (edited.length > 0) {
      // Said once: the one case where the leader judged by an event's own timestamp (see isHistory).
      const shown = edited
        .slice(0, 10)
        .map((id) => `#${id}`)
        .join(", ");
      ctx.warn(
        `${edited.length} task(s) changed while the first start scanned, holding events stamped over a minute before it (${shown}${edited.length > 10 ? ", …" : ""}): recorded as history, as edits of old tasks; to run one's gate: pi-teams-hooks run task_completed (task_failed, task_started) --team-dir ${ctx.opts.setup.identity.teamDir} --task <id> --apply-policy`,
      );
    }
    const rejudged = ctx.firstStart?.rejudged ?? [];
    if (rejudged.length > 0) {
      // Said once: the records of a leader that judged these tasks are there, its ledger is not.
      const { teamDir, leadName } = ctx.opts.setup.identity;
      const shown = rejudged
        .slice(0, 10)
        .map((id) => `#${id}`)
        .join(", ");
      ctx.warn(
        `no ledger, and ${rejudged.length} task(s) carry the gate record of a leader that judged them (${shown}${rejudged.length > 10 ? ", …" : ""}): hook-state/ was deleted or rebuilt; their latest events are judged again, not taken as history`,
      );
      await ctx.tellLead(
        sentId("ledger-lost", String(ctx.firstStart?.markMs ?? 0), leadName),
        ledgerLostText(teamDir, rejudged),
        "the lead was not told that the ledger was lost",
      );
    }
    // A team a leader gated before (its hook logs say so) whose ledger is gone: what is taken as history
    // now may be completions no gate judged (made while the ledger was gone). Said, with how to judge one.
    const taken = [...history].flatMap((key) => (/^task_(completed|failed):/.test(key) ? [key.split(":")[1]] : []));
    if (ledger.fresh && taken.length > 0) {
      const before = await gateHistory(ctx.opts.setup.identity.teamDir);
      if (before !== null) {
        const { teamDir, leadName } = ctx.opts.setup.identity;
        const shown = taken
          .slice(0, 10)
          .map((id) => `#${id}`)
          .join(", ");
        const text = `no ledger, though ${before}: ${taken.length} completion(s) or failure(s) of tasks with no gate record were taken as history, not judged (${shown}${taken.length > 10 ? ", …" : ""}); one made while the ledger was gone cannot be told from one made before any leader: to judge one, pi-teams-hooks run task_completed --team-dir ${teamDir} --task <id> --apply-policy`;
        ctx.warn(text);
        await ctx.tellLead(
          sentId("history-without-ledger", String(ctx.firstStart?.markMs ?? 0), leadName),
          `pi-teams-hooks: ${text}`,
          "the lead was not told that completions were taken as history without a ledger",
        );
      }
    }
    baseline = history.size;
    await ledger.baseline([...history, ...markers], ctx.now());
    ctx.firstStart = null;
    try {
      unlinkSync(firstStartFile(ctx.opts.setup.identity.teamDir));
    } catch {
      // Already gone (or never written, with catchUp): nothing reads it once the baseline is complete.
    }
  }
  ctx.opts.report({
    kind: "ready",
    tasks: ctx.sources.taskCount,
    baseline,
    queued: ctx.enqueued,
    startupMs: Math.round(performance.now() - began),
  });
}

/**
 * A previous leader's knowledge of the task files (saved at its shutdown): with it, the start-up scan
 * stats every file but reads only the changed ones. Missing, unreadable or foreign: every file is read.
 */
function restoreScanState(ctx: LeaderContext, ledger: Ledger): void {
  const file = scanStateFile(ctx.setup.identity.teamDir);
  const read = readRegularFile(file, { maxBytes: MAX_TEAM_FILE_BYTES });
  if (!read.ok) {
    if (read.problem.kind !== "missing") ctx.warn(`${read.problem.message}; every task file is read`);
    return;
  }
  // A state of another task list or version (a cache, not data) is ignored without a word.
  ctx.sources.restoreState(read.text, (key) => ledger.has(key));
}

/**
 * The task files' state, for the next start's scan (at shutdown). Not a word when the team dir itself
 * is gone: its runtime removed it (pi-agent-teams removes a team that never had a task or a teammate
 * when its session ends), so there is no next start to save for, and the write creates nothing there.
 */
export async function saveScanState(ctx: LeaderContext): Promise<void> {
  const teamDir = ctx.setup.identity.teamDir;
  const file = scanStateFile(teamDir);
  try {
    // A claim still queued or under way (a stop drops what waits) is left out of the state: read and
    // judged at the next start.
    await writeTextAtomic(
      file,
      ctx.sources.saveState((key) => ctx.queued.has(key)),
    );
  } catch (error) {
    if (isGone(teamDir)) return;
    ctx.warn(`${file}: not saved (${describeError(error)}); the next start reads every task file`);
  }
}

/** Whether `dir` no longer exists (removed by another process); any other trouble with it is not "gone". */
function isGone(dir: string): boolean {
  try {
    statSync(dir);
    return false;
  } catch (error) {
    return errnoCode(error) === "ENOENT";
  }
}

/** An event timestamp in ms: an ISO date, or a number of ms (or s) since the epoch; null if neither. */
function stampMs(stamp: string | null): number | null {
  if (stamp === null) return null;
  if (/^\d+(\.\d+)?$/.test(stamp)) {
    const n = Number(stamp);
    return n < 1e11 ? n * 1000 : n;
  }
  const ms = Date.parse(stamp);
  return Number.isNaN(ms) ? null : ms;
}
