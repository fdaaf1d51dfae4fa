/**
 * The leader: turns changes in a team directory into events, runs each event's hook once, and applies
 * the failure policy.
 *
 *   starting ──▶ watching ──▶ stopping ──▶ stopped
 *      │                           ▲
 *      └────────── (error) ────────┘
 *
 * starting: takes the leader lock, opens the ledger, ends process groups a crashed leader left,
 * starts the watchers and reads the inbox; in-flight keys of a crashed run are finished from their log
 * or retried. watching: hints from the watchers feed the queue from the moment the watchers are armed,
 * while the start-up scan looks at every task file in the background (a restart reads only the files
 * that changed since the saved scan state); once it is done (the `ready` notice) a periodic reconcile
 * scan takes over. On the first start on a team dir what existed before it is a baseline, not run
 * (unless catchUp): see #isHistory. stopping: no new events, running hooks finish (their timeout
 * bounds this), the ledger is flushed.
 */
import { randomUUID } from "node:crypto";
import { closeSync, constants as fsConstants, fstatSync, fsyncSync, openSync, statSync, unlinkSync, writeSync } from "node:fs";
import path from "node:path";
import { HOOK_EVENTS, type HookEventName, isTaskEvent } from "../contract/contract.js";
import { discoverChains } from "../runner/chain.js";
import { findHook, type HookDiscovery } from "../runner/discover.js";
import { HooksError, describeError, errnoCode, isHooksError } from "../contract/errors.js";
import type { HookEvent } from "../contract/events.js";
import { listHookLogs, readHookLog } from "../runner/hook-log.js";
import { invokeEvent, type InvokeOutcome } from "./invoke.js";
import { Ledger, type LedgerEventInfo } from "./ledger.js";
import { acquireLeaderLock, type LeaderLock } from "../team/leader-lock.js";
import { MAX_TEAM_FILE_BYTES, readRegularFile, writeTextAtomic } from "../team/json-file.js";
import { markRead } from "../team/mailbox.js";
import { formatDuration, policyGivenUpText } from "../text/messages.js";
import { firstStartFile, scanStateFile } from "../team/paths.js";
import { createKeyedQueue, type KeyedQueue } from "./queue.js";
import { preloadRunner, removeRunFiles, terminateAllRuns } from "../runner/run.js";
import { sendOnce } from "../policy/remediate.js";
import { SentLog, sentId } from "../team/sent-log.js";
import { type ChainTrust, type TrustEntry, TrustState, entryFor, fingerprint, keepTrustedCopy, octal, replaceTrust, trustFile, trustedBy, updateTrust } from "../runner/trust.js";
import { TeamSources, type TaskLook, isTaskFileName } from "./sources.js";
import type { TeamSetup } from "../team/setup.js";
import { killRunId } from "../runner/terminate.js";
import { type DirWatcher, watchDirs } from "../team/watch.js";

export type LeaderState = "starting" | "watching" | "stopping" | "stopped";
export type InboxMode = "observe" | "consume" | "off";

export interface LeaderOptions {
  setup: TeamSetup;
  env: Readonly<Record<string, string | undefined>>;
  concurrency: number;
  inbox: InboxMode;
  reconcileMs: number;
  poll: boolean;
  pollIntervalMs: number;
  catchUp: boolean;
  report: (notice: LeaderNotice) => void;
  now?: () => Date;
  /**
   * Re-reads the team's settings when config.json changes, given the `hooks` block in force (undefined
   * when none is) so that an invalid block, or a config.json unreadable, gone or without `hooks`,
   * keeps it. Without it, config.json is read once, at start.
   */
  reloadSetup?: (lastValidHooks: Record<string, unknown> | undefined) => Promise<TeamSetup>;
  /** How long the policy's writes wait for a lock (default the lock protocol's 10 s). */
  lockTimeoutMs?: number;
  /**
   * Waits before each new try of a policy that could not be applied (a task lock held too long); once
   * they are used up the leader gives up on that event, loudly. Default RETRY_POLICY_MS.
   */
  retryPolicyMs?: readonly number[];
  /** First and longest wait between tries of a write that failed (a full disk); default 1 s and 30 s. */
  retryWriteMs?: { first: number; max: number };
  /** `--trust-changes`: gates changed since they were trusted run as they are (each change still said once). */
  trustChanges?: boolean;
  /** `--allow-insecure-hooks`: world-writable gates and gates of other users run. */
  allowInsecureHooks?: boolean;
}

/** One handled event, as the one-line output and --json show it. */
export interface EventReport {
  time: string;
  key: string;
  event: HookEventName;
  taskId: string | null;
  member: string | null;
  hook: string | null;
  outcome: "passed" | "failed" | "error" | "no_hook";
  timedOut: boolean;
  durationMs: number;
  summary: string;
  actions: string[];
  retry: boolean;
  logFile: string | null;
  /** False when the leader gave up applying the policy (the event stays open); null when none applies. */
  policyApplied: boolean | null;
}

export type LeaderNotice =
  | { kind: "warning"; message: string }
  /** Something that went wrong is right again (writing works again, the team dir is back). */
  | { kind: "info"; message: string }
  | { kind: "config"; valid: boolean; setup: TeamSetup }
  | { kind: "hooks"; hooks: StartInfo["hooks"] }
  | { kind: "event"; report: EventReport }
  | { kind: "started"; event: HookEventName; key: string; hook: string; taskId: string | null; startedAt: number }
  | { kind: "recovered"; key: string; how: "logged" | "retry" }
  /** The start-up scan is done (after `start()` resolved): `queued` events it (and hints meanwhile) gave the queue. */
  | { kind: "ready"; tasks: number; baseline: number; queued: number; startupMs: number }
  | { kind: "stopped"; dropped: number };

export interface StartInfo {
  hooks: Array<{ event: HookEventName; discovery: HookDiscovery }>;
}

/**
 * A ledger key recorded (as a baseline) once the first start's baseline is complete. A ledger without
 * it comes from a first start that died before recording its baseline (the ledger file exists from
 * the moment it is opened), so the next start is still a first start: history stays a baseline
 * instead of running all at once. test/integration/leader-first-start.test.ts.
 */
const BASELINE_DONE_KEY = "leader:baseline-complete";
/**
 * Recorded once the first start has taken the trust record (trust on first use). A ledger with it and
 * no `hook-state/trust.json` means the record was removed: every gate is then untrusted, rather than
 * trusted anew as it is now (which is what deleting the record would otherwise buy).
 */
const TRUST_TAKEN_KEY = "leader:trust-taken";

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

/** Waits before the 1st, 2nd, … new try of a policy that could not be applied: about a minute in all. */
export const RETRY_POLICY_MS: readonly number[] = Object.freeze([1_000, 2_000, 4_000, 8_000, 15_000, 30_000]);
const RETRY_WRITE_MS = Object.freeze({ first: 1_000, max: 30_000 });

/** Where one event is between tries: how often each kind of step has failed so far. */
interface EventProgress {
  runId: string;
  attempt: number;
  retry: boolean;
  policyTries: number;
  writeTries: number;
}

export class Leader {
  readonly #opts: LeaderOptions;
  /** The settings in force; config.json changes replace the policy part (never identity or dirs). */
  #setup: TeamSetup;
  #configReload: Promise<void> = Promise.resolve();
  /** The warnings of the last config.json read (the start's, then each reload's): a reload says only new ones. */
  #configWarnings: ReadonlySet<string>;
  readonly #sources: TeamSources;
  readonly #queue: KeyedQueue;
  /** Keys queued or running in this process. */
  readonly #queued = new Set<string>();
  /**
   * During a first start's start-up scan: the first-start mark (file-system ms), the files looked at
   * so far (each file's first look decides whether its event is history), and the history found,
   * recorded in the ledger as the baseline when the scan ends. test/integration/leader-first-start.test.ts.
   */
  #firstStart: { markMs: number; looked: Set<string>; history: Set<string>; edited: string[] } | null = null;
  /** The start-up scan, under way from `start()` until the `ready` notice. */
  #startupScan: Promise<void> | null = null;
  /** Events handed to the queue so far (the `ready` notice's `queued`). */
  #enqueued = 0;
  #state: LeaderState = "starting";
  #ledger: Ledger | null = null;
  #lock: LeaderLock | null = null;
  #watcher: DirWatcher | null = null;
  #reconcileTimer: NodeJS.Timeout | null = null;
  #reconciling: Promise<void> | null = null;
  #inboxLook: Promise<void> = Promise.resolve();
  #stopping: Promise<void> | null = null;
  /** Timers of events waiting to be tried again (a policy or a write that failed). */
  readonly #retryTimers = new Set<NodeJS.Timeout>();
  /** The write failure being reported (said once, until writing works again), and the keys it holds. */
  #writeTrouble: { message: string; keys: Set<string> } | null = null;
  /** The team dir's inode while it is there; null while it is gone. */
  #teamDirIno: number | null | undefined;
  #teamDirGoneAt: string | null = null;
  #sent: SentLog;
  readonly #trust: TrustState;
  /** Gate changes and insecure gates already reported by this process (each is said once). */
  readonly #told = new Set<string>();
  /** Notes to the lead's inbox under way (awaited by stop()). */
  #notes: Promise<void> = Promise.resolve();

  constructor(opts: LeaderOptions) {
    this.#opts = opts;
    this.#setup = opts.setup;
    this.#configWarnings = new Set(opts.setup.warnings);
    this.#sources = new TeamSources(opts.setup.identity);
    this.#sent = new SentLog(opts.setup.identity.teamDir);
    this.#trust = new TrustState(opts.setup.identity.teamDir);
    this.#queue = createKeyedQueue({
      concurrency: opts.concurrency,
      onError: (error) => this.#warn(`event failed: ${describeError(error)}`),
    });
  }

  get state(): LeaderState {
    return this.#state;
  }

  /**
   * Resolves once events are being taken (the watchers are armed); the start-up scan goes on in the
   * background and ends with the `ready` notice. `idle()` waits for it too.
   */
  async start(): Promise<StartInfo> {
    if (this.#state !== "starting") throw new HooksError("E_INTERNAL", `start() in state ${this.#state}`);
    const began = performance.now();
    const { identity } = this.#opts.setup;
    try {
      this.#lock = await acquireLeaderLock(identity.teamDir);
      this.#teamDirIno = inodeOf(identity.teamDir);
      this.#ledger = await Ledger.open(identity.teamDir, (m) => this.#warn(m));
      await this.#endOrphanedRuns();
      const hooks = await Promise.all(HOOK_EVENTS.map(async (event) => ({ event, discovery: await findHook(this.#opts.setup.hooksDir, event) })));
      this.#opts.report({ kind: "hooks", hooks });
      const ledger = this.#requireLedger();
      await this.#takeTrust(ledger);
      const firstStart = ledger.fresh || !ledger.has(BASELINE_DONE_KEY);
      if (firstStart && !this.#opts.catchUp) this.#firstStart = { markMs: this.#firstStartMark(ledger.fresh), looked: new Set(), history: new Set(), edited: [] };
      await this.#recoverInFlight(); // before any event of this start can be in flight
      // Hints are taken from here on: the watchers are armed before the start-up scan lists the folder,
      // so a file written meanwhile is either listed or hinted (or both).
      this.#state = "watching";
      this.#watcher = await watchDirs(this.#watchTargets(), {
        poll: this.#opts.poll,
        pollIntervalMs: this.#opts.pollIntervalMs,
        onError: (m) => this.#warn(m),
      });
      if (this.#opts.inbox !== "off") {
        // On a first start, the notifications already in the inbox are history.
        const inbox = await this.#sources.lookAtInbox({ force: true, unreadOnly: this.#opts.inbox === "consume" });
        inbox.problems.forEach((p) => this.#warn(p));
        for (const event of inbox.events) {
          if (this.#firstStart) this.#firstStart.history.add(event.key);
          else this.#consider(event);
        }
      }
      this.#startupScan = this.#scanAtStart(firstStart, began)
        .catch((error: unknown) => this.#warn(`start-up scan failed: ${describeError(error)}; the reconcile scan goes on looking`))
        .finally(() => this.#scheduleReconcile());
      return { hooks };
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  /** Resolves when no event waits or runs (and neither the inbox, a reconcile scan nor the start-up scan is being looked at). */
  async idle(): Promise<void> {
    for (;;) {
      await Promise.all([this.#inboxLook, this.#reconciling, this.#startupScan]);
      await this.#queue.onIdle();
      if (this.#queue.size === 0) return;
    }
  }

  /** Stops taking events, lets running hooks finish (bounded by their timeout), flushes the ledger. */
  stop(): Promise<void> {
    this.#stopping ??= this.#shutdown();
    return this.#stopping;
  }

  async #shutdown(): Promise<void> {
    this.#state = "stopping";
    if (this.#reconcileTimer) clearTimeout(this.#reconcileTimer);
    // Events waiting for a new try stay in flight in the ledger (or unrecorded): the next start takes them.
    for (const timer of this.#retryTimers) clearTimeout(timer);
    this.#retryTimers.clear();
    await this.#watcher?.close();
    await this.#startupScan; // it stops at its next file
    const dropped = await this.#queue.close();
    await this.#notes;
    await terminateAllRuns(); // a safety net: the queue has waited for every running hook
    if (this.#ledger) await this.#saveScanState();
    await this.#ledger?.close();
    await this.#lock?.release();
    this.#state = "stopped";
    this.#opts.report({ kind: "stopped", dropped });
  }

  #watchTargets() {
    const targets = [{ dir: this.#sources.tasksDir, accept: isTaskFileName, onHint: (file: string) => this.#hintTask(file) }];
    if (this.#opts.inbox !== "off") {
      const name = path.basename(this.#sources.inboxFile);
      targets.push({ dir: path.dirname(this.#sources.inboxFile), accept: (n: string) => n === name, onHint: () => this.#hintInbox() });
    }
    if (this.#opts.reloadSetup) {
      targets.push({ dir: this.#setup.identity.teamDir, accept: (n: string) => n === "config.json", onHint: () => this.#hintConfig() });
    }
    return targets;
  }

  /**
   * config.json changed: re-read it whole. An invalid `hooks` block, or a config.json that cannot be
   * read, is gone or has no `hooks`, keeps the block in force. Each refusal is said once while it
   * lasts (an editor saving broken JSON twice is one state, not two), and its end is a `config` notice.
   */
  #hintConfig(): void {
    const reload = this.#opts.reloadSetup;
    if (!reload || this.#state !== "watching") return;
    this.#configReload = this.#configReload.then(async () => {
      try {
        const before = this.#setup;
        const next = await reload(before.settings.block.from === "none" ? undefined : before.hooksBlock);
        const refusal = next.settings.refusal;
        const sameRefusal = refusal !== null && refusal === before.settings.refusal;
        for (const warning of next.warnings) {
          if (this.#configWarnings.has(warning) || (sameRefusal && next.settings.block.problems.includes(warning))) continue;
          this.#warn(warning);
        }
        this.#configWarnings = new Set(next.warnings);
        const same =
          JSON.stringify(next.hooksBlock) === JSON.stringify(before.hooksBlock) &&
          next.settings.block.from === before.settings.block.from &&
          refusal === before.settings.refusal;
        // Identity and directories stay as started: a leader does not move to another team mid-run.
        this.#setup = {
          ...before,
          hooksBlock: next.hooksBlock,
          hooksBlockValid: next.hooksBlockValid,
          settings: next.settings,
          policy: next.policy,
          failureModes: next.failureModes,
          limits: next.limits,
          sweep: next.sweep,
        };
        if (!same) this.#opts.report({ kind: "config", valid: next.hooksBlockValid, setup: this.#setup });
      } catch (error) {
        this.#warn(`config.json not reloaded: ${describeError(error)}; the settings in force stay`);
      }
    });
  }

  /**
   * Ends the processes of runs that were in flight when a previous leader died (every hook of the
   * chain: they carry the event's run id, or `<runId>.N`), and removes their context files.
   */
  async #endOrphanedRuns(): Promise<void> {
    for (const run of this.#requireLedger().inFlight()) {
      const killed = await killRunId(run.runId, "SIGKILL", { chain: true });
      if (killed > 0) this.#warn(`ended ${killed} process(es) left by an interrupted run of ${run.key}`);
      removeRunFiles(run.runId);
    }
  }

  /**
   * Looks at every task file once, in slices (hints go on being handled in between), then records a
   * first start's baseline and reports `ready`; the reconcile scan takes over after it.
   */
  async #scanAtStart(firstStart: boolean, began: number): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve)); // `start()` returns (the `watching` line) first
    const files = await this.#sources.listTaskFiles();
    // A file hinted before this was read in full; one looked at from here on is only stat'ed if the
    // saved state knows it unchanged.
    this.#restoreScanState();
    await forEachYielding(files, (file) => this.#state === "watching" && this.#look(file), 64);
    this.#sources.dropRestoredState();
    if (this.#state !== "watching") return; // stopping: a first start's baseline stays unrecorded
    let baseline = 0;
    if (firstStart) {
      const history = this.#firstStart?.history ?? new Set<string>();
      const edited = this.#firstStart?.edited ?? [];
      if (edited.length > 0) {
        // Said once: the one case where the leader judged by an event's own timestamp (see #isHistory).
        const shown = edited.slice(0, 10).map((id) => `#${id}`).join(", ");
        this.#warn(
          `${edited.length} task(s) changed while the first start scanned, holding events stamped over a minute before it (${shown}${edited.length > 10 ? ", …" : ""}): ` +
            `recorded as history, as edits of old tasks; to run one's gate: pi-teams-hooks run task_completed (or task_failed) --team-dir ${this.#opts.setup.identity.teamDir} --task <id> --apply-policy`,
        );
      }
      baseline = history.size;
      await this.#requireLedger().baseline([...history, BASELINE_DONE_KEY], this.#now());
      this.#firstStart = null;
      try {
        unlinkSync(firstStartFile(this.#opts.setup.identity.teamDir));
      } catch {
        // Already gone (or never written, with catchUp): nothing reads it once the baseline is complete.
      }
    }
    this.#opts.report({ kind: "ready", tasks: this.#sources.taskCount, baseline, queued: this.#enqueued, startupMs: Math.round(performance.now() - began) });
    preloadRunner(); // after `ready`: not part of the start-up, and off the first event's path
  }

  /**
   * The first-start mark's time on the file system's clock: written now (on a fresh ledger, or when a
   * first start that died left none), or kept from the first start that died before recording its
   * baseline, so that what came after that start is still not taken for history.
   */
  #firstStartMark(fresh: boolean): number {
    const file = firstStartFile(this.#opts.setup.identity.teamDir);
    if (!fresh) {
      try {
        return statSync(file).mtimeMs;
      } catch (error) {
        if (errnoCode(error) !== "ENOENT") this.#warn(`${file}: cannot read (${describeError(error)}); a new first-start mark is written`);
      }
    }
    // O_NONBLOCK: a FIFO planted in its place fails the open (ENXIO) instead of blocking the start.
    let fd: number;
    try {
      fd = openSync(file, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_TRUNC | fsConstants.O_NONBLOCK, 0o644);
    } catch (error) {
      const why = errnoCode(error) === "ENXIO" ? "not a regular file (a FIFO or a socket)" : `cannot be written (${describeError(error)})`;
      throw new HooksError("E_TEAM_DIR", `${file}: ${why}; remove it and start again`, { cause: error });
    }
    try {
      if (!fstatSync(fd).isFile()) throw new HooksError("E_TEAM_DIR", `${file}: not a regular file; remove it and start again`);
      writeSync(fd, `${this.#now()} first start of pid ${process.pid}: task files unchanged since are history\n`);
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
  #isHistory(look: Extract<TaskLook, { kind: "task" }>, event: HookEvent, first: { markMs: number; edited: string[] }): boolean {
    if (look.changedMs < first.markMs - UNCHANGED_SLACK_MS) return true;
    const stamp = stampMs(event.timestamp);
    if (stamp === null || stamp >= first.markMs - STAMP_SLACK_MS) return false;
    first.edited.push(look.task.id); // reported once the scan is done
    return true;
  }

  /**
   * A previous leader's knowledge of the task files (saved at its shutdown): with it, the start-up scan
   * stats every file but reads only the changed ones. Missing, unreadable or foreign: every file is read.
   */
  #restoreScanState(): void {
    const file = scanStateFile(this.#opts.setup.identity.teamDir);
    const read = readRegularFile(file, { maxBytes: MAX_TEAM_FILE_BYTES });
    if (!read.ok) {
      if (read.problem.kind !== "missing") this.#warn(`${read.problem.message}; every task file is read`);
      return;
    }
    // A state of another task list or version (a cache, not data) is ignored without a word.
    const ledger = this.#requireLedger();
    this.#sources.restoreState(read.text, (key) => ledger.has(key));
  }

  async #saveScanState(): Promise<void> {
    const file = scanStateFile(this.#opts.setup.identity.teamDir);
    await writeTextAtomic(file, this.#sources.saveState()).catch((error: unknown) => this.#warn(`${file}: not saved (${describeError(error)}); the next start reads every task file`));
  }

  /** Keys begun but never finished by a leader that died: done if their log exists, else retried. */
  async #recoverInFlight(): Promise<void> {
    const ledger = this.#requireLedger();
    const inFlight = ledger.inFlight();
    if (inFlight.length === 0) return;
    const earliest = inFlight.map((r) => r.startedAt).sort()[0] ?? "";
    const stemFloor = earliest.replace(/[:.]/g, "-").slice(0, 19);
    const logs = (await listHookLogs(this.#opts.setup.identity.teamDir)).filter((entry) => entry.name.slice(0, 19) >= stemFloor);
    const byRunId = new Map<string, { file: string; outcome: string; complete: boolean }>();
    for (const entry of logs) {
      const read = await readHookLog(entry.file);
      // A log whose policy says `complete: false` was written by a leader that gave up applying it.
      if (read.ok) byRunId.set(read.record.result.runId, { file: entry.file, outcome: read.record.result.outcome, complete: read.record.policy?.complete !== false });
    }
    for (const run of inFlight) {
      const logged = byRunId.get(run.runId);
      if (logged?.complete) {
        await ledger.finish(run.key, this.#now(), { runId: run.runId, outcome: logged.outcome, log: logged.file });
        this.#opts.report({ kind: "recovered", key: run.key, how: "logged" });
      } else if (run.event) {
        this.#opts.report({ kind: "recovered", key: run.key, how: "retry" });
        this.#enqueue({ key: run.key, ...run.event, source: "task" }, true);
      } else {
        this.#warn(`${ledger.file}: in-flight ${run.key} has no event details; it is not retried`);
      }
    }
  }

  /**
   * A watcher or the reconcile scan says `file` may have changed. The look is synchronous (a small
   * local file, sources.ts lookAtTask), so a hint is handled whole before the next one: nothing to
   * track between them.
   */
  #hintTask(file: string): void {
    if (this.#state !== "watching") return;
    try {
      this.#look(file);
    } catch (error) {
      this.#warn(`${file}: not looked at: ${describeError(error)}`); // a bug of ours: said, and the leader goes on
    }
  }

  #look(file: string): void {
    const first = this.#firstStart;
    const firstLook = first !== null && !first.looked.has(file);
    if (firstLook) first.looked.add(file);
    const look = this.#sources.lookAtTask(file);
    if (look.kind === "problem") this.#warn(look.message);
    else if (look.kind === "task" && look.event) {
      if (firstLook && this.#isHistory(look, look.event, first)) first.history.add(look.event.key);
      else this.#consider(look.event);
    }
  }

  #hintInbox(): void {
    if (this.#state !== "watching") return;
    this.#inboxLook = this.#inboxLook.then(async () => {
      const inbox = await this.#sources.lookAtInbox({ force: false, unreadOnly: this.#opts.inbox === "consume" });
      inbox.problems.forEach((p) => this.#warn(p));
      inbox.events.forEach((e) => this.#consider(e));
    });
  }

  #scheduleReconcile(): void {
    if (this.#state !== "watching") return;
    this.#reconcileTimer = setTimeout(() => {
      this.#reconciling = this.#reconcile()
        .catch((error: unknown) => this.#warn(`reconcile scan failed: ${describeError(error)}`))
        .finally(() => {
          this.#reconciling = null;
          this.#scheduleReconcile();
        });
    }, this.#opts.reconcileMs);
  }

  /** Finds what the watchers missed: every task file whose stat changed, and the inbox. */
  async #reconcile(): Promise<void> {
    if (!(await this.#teamDirPresent())) return; // nothing to scan (and nothing to run) while it is gone
    const files = await this.#sources.listTaskFiles();
    this.#sources.forgetMissing(new Set(files));
    // Small slices (~1 ms at 10,000 files): an event arriving mid-scan waits for one slice at most.
    await forEachYielding(
      files,
      (file) => {
        if (this.#sources.changedSinceLook(file)) this.#hintTask(file);
      },
      64,
    );
    if (this.#opts.inbox !== "off") this.#hintInbox();
  }

  /**
   * Whether the team dir is there, said loudly when that changes. Another process may delete it (a
   * team runtime cleaning up) and create it again: then the leader's own files in it are written
   * anew from memory (leader lock, ledger), the watchers follow the new folder, and the lead's inbox
   * gets a note that gates did not run meanwhile.
   */
  async #teamDirPresent(): Promise<boolean> {
    const dir = this.#setup.identity.teamDir;
    const ino = inodeOf(dir);
    const before = this.#teamDirIno;
    this.#teamDirIno = ino;
    if (ino === null) {
      if (before !== null) {
        this.#teamDirGoneAt = this.#now();
        this.#warn(`team dir ${dir} is gone: no gate runs until it is back (the leader keeps watching for it)`);
      }
      return false;
    }
    if (before === null || (before !== undefined && before !== ino)) await this.#teamDirBack(dir);
    return true;
  }

  async #teamDirBack(dir: string): Promise<void> {
    const goneAt = this.#teamDirGoneAt;
    this.#teamDirGoneAt = null;
    try {
      // The old lock file went with the old folder: never release it (that would remove the new one).
      this.#lock = await acquireLeaderLock(dir);
      await this.#requireLedger().compact(); // the whole ledger, from memory, into the new hook-state/
      // The trust record too: gone with the folder, it would make every gate untrusted.
      if (this.#trust.record) this.#trust.set(await replaceTrust(dir, this.#trust.record));
    } catch (error) {
      this.#warn(`team dir ${dir} is back, but the leader's state could not be written there: ${describeError(error)}`);
    }
    this.#watcher?.rearm();
    const since = goneAt ? ` (gone since ${goneAt})` : " (it was replaced)";
    this.#opts.report({ kind: "info", message: `team dir ${dir} is back${since}: watching it again` });
    const { identity } = this.#setup;
    const text = `pi-teams-hooks: the team dir ${dir} was gone${goneAt ? ` from ${goneAt} to ${this.#now()}` : " and was created again"}. No quality gate ran meanwhile; what changed while it was gone is looked at now.`;
    await this.#tellLead(sentId("team-dir-back", goneAt ?? this.#now(), identity.leadName), text, "the lead was not told that the team dir is back");
  }

  #consider(event: HookEvent): void {
    if (this.#state === "stopping" || this.#state === "stopped") return;
    const ledger = this.#requireLedger();
    if (this.#firstStart?.history.has(event.key)) return;
    if (ledger.has(event.key) || this.#queued.has(event.key)) {
      // --inbox consume: an unread notification of an event already done was handled by a leader that
      // died before marking it read; mark it now (through the queue, so that stop() waits for it).
      // test/integration/leader-inbox.test.ts.
      if (this.#opts.inbox === "consume" && event.event === "idle" && ledger.get(event.key)?.state === "done") {
        this.#queue.push(`member:${event.member ?? ""}`, () => this.#markHandled(event));
      }
      return;
    }
    this.#enqueue(event, false);
  }

  #enqueue(event: HookEvent, retry: boolean): void {
    this.#queued.add(event.key);
    this.#enqueued += 1;
    const group = event.taskId !== null ? `task:${event.taskId}` : `member:${event.member ?? ""}`;
    this.#queue.push(group, () => this.#handle(event, retry));
  }

  async #handle(event: HookEvent, retry: boolean, progress?: EventProgress): Promise<void> {
    const ledger = this.#requireLedger();
    const setup = this.#setup;
    const runId = randomUUID();
    const info: LedgerEventInfo = { event: event.event, taskId: event.taskId, member: event.member, timestamp: event.timestamp };
    let begun: { attempt: number; durable: Promise<void> };
    try {
      // The record is appended now and flushed while the hook is prepared; the spawn waits for the flush.
      begun = ledger.beginRecord(event.key, runId, this.#now(), info);
    } catch (error) {
      const writes = (progress?.writeTries ?? 0) + 1;
      this.#writeFailed(event.key, error);
      this.#later(event, () => this.#handle(event, retry, { runId, attempt: 0, retry, policyTries: 0, writeTries: writes }), this.#writeDelay(writes));
      return;
    }
    const { attempt, durable } = begun;
    durable.catch(() => undefined); // awaited through invokeEvent (notBefore); never unhandled meanwhile
    const state: EventProgress = { runId, attempt, retry: retry || attempt > 1, policyTries: 0, writeTries: progress?.writeTries ?? 0 };
    this.#refreshTrust();
    let outcome: InvokeOutcome;
    try {
      outcome = await invokeEvent({
        identity: setup.identity,
        event: event.event,
        key: event.key,
        taskId: event.taskId,
        member: event.member,
        timestamp: event.timestamp,
        hooksDir: setup.hooksDir,
        cwd: setup.cwd,
        timeoutMs: setup.timeout.value,
        policy: isTaskEvent(event.event) ? setup.policy.policy : null,
        failureMode: setup.failureModes[event.event],
        limits: setup.limits,
        sweep: setup.sweep.value,
        teamHooksDir: setup.teamHooksDir,
        retry: state.retry,
        attempt,
        sentLog: this.#sent,
        trust: {
          record: this.#trust.record,
          acceptChanges: this.#opts.trustChanges === true,
          allowInsecure: this.#opts.allowInsecureHooks === true,
          onCheck: (check) => this.#onTrustCheck(check),
        },
        ...(this.#opts.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: this.#opts.lockTimeoutMs }),
        env: this.#opts.env,
        runId,
        notBefore: durable,
        onSpawn: ({ pid, runId: spawnedRunId, hook }) => {
          this.#opts.report({ kind: "started", event: event.event, key: event.key, hook, taskId: event.taskId, startedAt: Date.now() });
          // The chain's first hook carries the event's run id; later hooks of a chain have their own.
          if (spawnedRunId === runId) ledger.spawned(event.key, runId, pid).catch((error: unknown) => this.#writeFailed(event.key, error));
        },
      });
    } catch (error) {
      if (isWriteError(error)) {
        // The ledger's record of the start did not reach the disk, so no hook ran: the whole event again.
        state.writeTries += 1;
        this.#writeFailed(event.key, error);
        this.#later(event, () => this.#handle(event, true, state), this.#writeDelay(state.writeTries));
        return;
      }
      // A bug of ours. Left in flight on purpose: the next start retries it; kept in #queued so it does not loop now.
      this.#warn(`${event.key}: not completed: ${describeError(error)}; it is retried at the next start`);
      return;
    }
    await this.#settle(event, outcome, state);
  }

  /**
   * Finishes an event whose hooks have run: a policy that could not be applied is tried again (a few
   * times, then given up loudly: the event stays open), a log or ledger write that failed is tried
   * again until it works; only then is the key recorded as done.
   */
  async #settle(event: HookEvent, outcome: InvokeOutcome, state: EventProgress): Promise<void> {
    const pending = outcome.pending;
    if (pending?.stage === "remediation") {
      const delays = this.#opts.retryPolicyMs ?? RETRY_POLICY_MS;
      const delay = delays[state.policyTries];
      state.policyTries += 1;
      if (delay !== undefined) {
        this.#warn(`${event.key}: policy not applied: ${pending.error}; trying again in ${formatDuration(delay)} (${state.policyTries} of ${delays.length})`);
        this.#later(event, async () => this.#settle(event, await pending.resume(), state), delay);
        return;
      }
      await this.#giveUp(event, pending.error, state);
      return this.#settle(event, await pending.abandon(), state);
    }
    if (pending?.stage === "logs") {
      state.writeTries += 1;
      this.#writeFailed(event.key, pending.error);
      this.#later(event, async () => this.#settle(event, await pending.resume(), state), this.#writeDelay(state.writeTries));
      return;
    }
    const ledger = this.#requireLedger();
    const result = outcome.result;
    if (outcome.policyApplied !== false) {
      try {
        await ledger.finish(event.key, this.#now(), { runId: state.runId, outcome: result?.outcome ?? "no_hook", log: outcome.logFile });
      } catch (error) {
        state.writeTries += 1;
        this.#writeFailed(event.key, error);
        this.#later(event, () => this.#settle(event, outcome, state), this.#writeDelay(state.writeTries));
        return;
      }
    }
    // A policy given up on leaves the key in flight in the ledger: the next start tries it again.
    outcome.problems.forEach((p) => this.#warn(`${event.key}: ${p}`));
    this.#wroteOk(event.key);
    this.#queued.delete(event.key);
    if (this.#opts.inbox === "consume" && event.event === "idle") await this.#markHandled(event);
    await ledger.maybeCompact().catch((error: unknown) => this.#warn(`ledger: ${describeError(error)}`));
    this.#opts.report({
      kind: "event",
      report: {
        time: this.#now(),
        key: event.key,
        event: event.event,
        taskId: event.taskId,
        member: event.member,
        hook: outcome.hook?.name ?? null,
        outcome: result?.outcome ?? "no_hook",
        timedOut: result?.timedOut ?? false,
        durationMs: result?.durationMs ?? 0,
        summary: outcome.summary,
        actions: outcome.actions,
        retry: state.retry,
        logFile: outcome.logFile,
        policyApplied: outcome.policyApplied,
      },
    });
  }

  /** The policy of `event` could not be applied in all the tries: said loudly, and to the lead's inbox. */
  async #giveUp(event: HookEvent, error: string, state: EventProgress): Promise<void> {
    const { identity } = this.#setup;
    const how = event.taskId
      ? `pi-teams-hooks run ${event.event} --team-dir ${identity.teamDir} --task ${event.taskId} --apply-policy`
      : "a restart of the leader";
    this.#warn(
      `${event.key}: policy NOT applied after ${state.policyTries} tries (${error}); the event stays open: the next start of the leader tries it again, or: ${how}`,
    );
    const text = policyGivenUpText(event, error, how);
    await this.#tellLead(sentId("policy-not-applied", event.key, identity.leadName), text, `${event.key}: the lead was not told`);
  }

  /** One note to the lead's inbox (team namespace), once whatever happens (sent-log.ts). */
  async #tellLead(id: string, text: string, failure: string): Promise<void> {
    const { teamDir, leadName } = this.#setup.identity;
    const sent = await sendOnce(this.#sent, {
      teamDir,
      namespace: "team",
      to: leadName,
      id,
      message: { from: "pi-teams-hooks", text, timestamp: this.#now(), read: false, qualityGateNoteId: id },
      isIt: (m) => m.qualityGateNoteId === id,
    });
    if (sent.error) this.#warn(`${failure}: ${sent.error}`);
  }

  /** Runs `step` for `event` after `delayMs`, through the queue (so the task's events stay in order). */
  #later(event: HookEvent, step: () => Promise<void>, delayMs: number): void {
    const timer = setTimeout(() => {
      this.#retryTimers.delete(timer);
      if (this.#state !== "watching") return;
      const group = event.taskId !== null ? `task:${event.taskId}` : `member:${event.member ?? ""}`;
      this.#queue.push(group, step);
    }, delayMs);
    this.#retryTimers.add(timer);
  }

  #writeDelay(tries: number): number {
    const { first, max } = this.#opts.retryWriteMs ?? RETRY_WRITE_MS;
    return Math.min(max, first * 2 ** Math.max(0, tries - 1));
  }

  /** A write of the leader's own failed (ledger, log): said once until writing works again. */
  #writeFailed(key: string, error: unknown): void {
    const message = typeof error === "string" ? error : describeError(error);
    if (this.#writeTrouble === null) {
      this.#writeTrouble = { message, keys: new Set() };
      const { first, max } = this.#opts.retryWriteMs ?? RETRY_WRITE_MS;
      this.#warn(`${message}: events stay in flight and are tried again (every ${formatDuration(first)} at first, then up to every ${formatDuration(max)}) until writing works again`);
    }
    this.#writeTrouble.keys.add(key);
  }

  #wroteOk(key: string): void {
    const trouble = this.#writeTrouble;
    if (!trouble?.keys.has(key)) return;
    trouble.keys.delete(key);
    if (trouble.keys.size > 0) return;
    this.#writeTrouble = null;
    this.#opts.report({ kind: "info", message: `writing works again: the events held back by "${trouble.message}" are done` });
  }

  /**
   * The trust record at start: taken from the gates as they are on a first start (trust on first use),
   * read otherwise. A record that is gone or unreadable after it was taken makes every gate untrusted.
   */
  async #takeTrust(ledger: Ledger): Promise<void> {
    const { teamDir } = this.#setup.identity;
    const { read } = this.#trust.refresh();
    if (read?.state === "ok") {
      this.#trust.set(read.record);
    } else if (read?.state === "invalid" || ledger.has(TRUST_TAKEN_KEY)) {
      const why = read?.state === "invalid" ? read.problem : `${trustFile(teamDir)} is gone`;
      this.#warn(`${why}: every gate is untrusted (its events fail as untrusted_hook) until the team lead records trust again: pi-teams-hooks trust --team-dir ${teamDir} --all`);
      this.#trust.set({ version: 1, gates: {} });
    } else {
      const entries = new Map<string, TrustEntry>();
      const at = this.#now();
      const by = trustedBy("first start of the leader");
      for (const { chain } of await discoverChains(this.#setup.hooksDir, this.#setup.teamHooksDir)) {
        for (const hook of chain.hooks) {
          const fp = fingerprint(hook.hook.hookPath, { content: true });
          if ("problem" in fp) continue;
          entries.set(hook.hook.hookPath, entryFor(fp, at, by));
          if (fp.content) keepTrustedCopy(teamDir, fp.sha256, fp.content);
        }
      }
      this.#trust.set(await updateTrust(teamDir, entries));
      const names = [...entries.keys()];
      this.#opts.report({
        kind: "info",
        message: `trusted ${names.length} gate(s) on first use (${trustFile(teamDir)})${names.length ? `: ${names.join(", ")}` : ""}; a gate changed, added or removed from now on fails its events until approved (pi-teams-hooks trust)`,
      });
    }
    if (!ledger.has(TRUST_TAKEN_KEY)) await ledger.baseline([TRUST_TAKEN_KEY], this.#now());
  }

  /** Re-reads the trust record if its file changed, and says what changed (anyone may have written it). */
  #refreshTrust(): void {
    const { read, changes } = this.#trust.refresh();
    if (read === null) return;
    const { teamDir } = this.#setup.identity;
    if (read.state === "ok") {
      this.#trust.set(read.record);
      for (const c of changes) {
        this.#warn(
          c.change === "approved"
            ? `trust record: ${c.path} approved (sha256 ${c.entry?.sha256.slice(0, 12) ?? "?"}…, mode ${octal(c.entry?.mode ?? 0)}, by ${c.entry?.trustedBy || "unknown"})`
            : `trust record: ${c.path} removed (its absence is approved)`,
        );
      }
      return;
    }
    const why = read.state === "invalid" ? read.problem : `${trustFile(teamDir)} was removed`;
    this.#warn(`${why}: every gate is untrusted until the team lead records trust again: pi-teams-hooks trust --team-dir ${teamDir} --all`);
    this.#trust.set({ version: 1, gates: {} });
  }

  /** A gate changed since it was trusted, or is insecure: said once here, and once to the lead's inbox. */
  #onTrustCheck(check: ChainTrust): void {
    const { teamDir, leadName } = this.#setup.identity;
    for (const problem of check.problems.filter((p) => p.kind === "insecure_hook")) {
      const id = `insecure:${problem.reason}`;
      if (this.#told.has(id)) continue;
      this.#told.add(id);
      this.#warn(problem.reason);
    }
    for (const change of check.changes) {
      const sha = change.now?.sha256 ?? change.trusted?.sha256 ?? "";
      const id = `${change.change}:${change.path}:${sha}:${change.now?.mode ?? ""}`;
      if (this.#told.has(id)) continue;
      this.#told.add(id);
      const what = change.change === "new" ? "is new (not trusted yet)" : change.change === "changed" ? `changed since it was trusted (${change.detail})` : `no longer runs (${change.detail})`;
      const then = this.#opts.trustChanges
        ? "it runs as it is now (--trust-changes); the log keeps both hashes"
        : `its events fail (${change.change === "removed" ? "gate_missing" : "untrusted_hook"}) until the team lead approves the change: pi-teams-hooks trust --team-dir ${teamDir} ${change.path}`;
      this.#warn(`gate ${change.path} ${what}: ${then}`);
      const text = `pi-teams-hooks: quality gate ${change.path} ${what}. ${then[0]?.toUpperCase()}${then.slice(1)}.`;
      this.#notes = this.#notes.then(() => this.#tellLead(sentId("gate-change", id, leadName), text, `the lead was not told of the change of ${change.path}`));
    }
  }

  /** --inbox consume: the notification behind a handled idle event is marked read. */
  async #markHandled(event: HookEvent): Promise<void> {
    const { identity } = this.#opts.setup;
    const marked = await markRead(identity.teamDir, "team", identity.leadName, (m) => {
      const text = m.text;
      return text.includes("idle_notification") && text.includes(JSON.stringify(event.member ?? "")) && text.includes(JSON.stringify(event.timestamp ?? ""));
    }).catch((error: unknown) => ({ ok: false as const, problem: { message: describeError(error) } }));
    if (!marked.ok) this.#warn(`cannot mark the idle notification of ${event.key} read: ${marked.problem.message}`);
  }

  #requireLedger(): Ledger {
    if (!this.#ledger) throw new HooksError("E_INTERNAL", "the ledger is not open");
    return this.#ledger;
  }

  #warn(message: string): void {
    this.#opts.report({ kind: "warning", message });
  }

  #now(): string {
    return (this.#opts.now?.() ?? new Date()).toISOString();
  }
}

/**
 * Runs a synchronous `fn` over `items`, giving the event loop a turn every `every` items, so that a
 * scan of 10,000 files never holds an event back for more than a few milliseconds.
 */
async function forEachYielding<T>(items: readonly T[], fn: (item: T) => void, every = 256): Promise<void> {
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (item !== undefined) fn(item);
    if (i % every === every - 1) await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** The inode of `dir`, or null when it is not there (or not a directory). */
function inodeOf(dir: string): number | null {
  try {
    const info = statSync(dir);
    return info.isDirectory() ? info.ino : null;
  } catch {
    return null; // ENOENT (deleted) or anything else that makes it unusable: not there for the leader
  }
}

/** A write of our own that failed on the disk (E_IO, E_LEDGER: ENOSPC, EFBIG, EIO…): worth trying again. */
function isWriteError(error: unknown): boolean {
  return isHooksError(error) && (error.code === "E_IO" || error.code === "E_LEDGER");
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
