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
import { closeSync, fsyncSync, openSync, statSync, unlinkSync, writeSync } from "node:fs";
import path from "node:path";
import { HOOK_EVENTS, type HookEventName, isTaskEvent } from "./contract.js";
import { findHook, type HookDiscovery } from "./discover.js";
import { HooksError, describeError, errnoCode } from "./errors.js";
import type { HookEvent } from "./events.js";
import { listHookLogs, readHookLog } from "./hook-log.js";
import { invokeEvent } from "./invoke.js";
import { Ledger, type LedgerEventInfo } from "./ledger.js";
import { acquireLeaderLock, type LeaderLock } from "./leader-lock.js";
import { MAX_TEAM_FILE_BYTES, readRegularFile, writeTextAtomic } from "./json-file.js";
import { markRead } from "./mailbox.js";
import { firstStartFile, scanStateFile } from "./paths.js";
import { createKeyedQueue, type KeyedQueue } from "./queue.js";
import { preloadRunner, removeRunFiles, terminateAllRuns } from "./run.js";
import { TeamSources, type TaskLook, isTaskFileName } from "./sources.js";
import type { TeamSetup } from "./team-setup.js";
import { killRunId } from "./terminate.js";
import { type DirWatcher, watchDirs } from "./watch.js";

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
   * Re-reads the team's settings when config.json changes (issue 5), given the `hooks` block in force
   * so that an invalid new block keeps it. Without it, config.json is read once, at start.
   */
  reloadSetup?: (lastValidHooks: Record<string, unknown>) => Promise<TeamSetup>;
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
}

export type LeaderNotice =
  | { kind: "warning"; message: string }
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

export class Leader {
  readonly #opts: LeaderOptions;
  /** The settings in force; config.json changes replace the policy part (never identity or dirs). */
  #setup: TeamSetup;
  #configReload: Promise<void> = Promise.resolve();
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

  constructor(opts: LeaderOptions) {
    this.#opts = opts;
    this.#setup = opts.setup;
    this.#sources = new TeamSources(opts.setup.identity);
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
      this.#ledger = await Ledger.open(identity.teamDir, (m) => this.#warn(m));
      await this.#endOrphanedRuns();
      const hooks = await Promise.all(HOOK_EVENTS.map(async (event) => ({ event, discovery: await findHook(this.#opts.setup.hooksDir, event) })));
      this.#opts.report({ kind: "hooks", hooks });
      const ledger = this.#requireLedger();
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
    await this.#watcher?.close();
    await this.#startupScan; // it stops at its next file
    const dropped = await this.#queue.close();
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

  /** config.json changed: re-read it whole; an invalid `hooks` block keeps the one in force. */
  #hintConfig(): void {
    const reload = this.#opts.reloadSetup;
    if (!reload || this.#state !== "watching") return;
    this.#configReload = this.#configReload.then(async () => {
      try {
        const next = await reload(this.#setup.hooksBlock);
        const same = JSON.stringify(next.hooksBlock) === JSON.stringify(this.#setup.hooksBlock) && next.hooksBlockValid;
        next.warnings.forEach((w) => this.#warn(w));
        // Identity and directories stay as started: a leader does not move to another team mid-run.
        this.#setup = { ...this.#setup, hooksBlock: next.hooksBlock, hooksBlockValid: next.hooksBlockValid, policy: next.policy, failureModes: next.failureModes, limits: next.limits, sweep: next.sweep };
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
    const fd = openSync(file, "w");
    try {
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
    const byRunId = new Map<string, { file: string; outcome: string }>();
    for (const entry of logs) {
      const read = await readHookLog(entry.file);
      if (read.ok) byRunId.set(read.record.result.runId, { file: entry.file, outcome: read.record.result.outcome });
    }
    for (const run of inFlight) {
      const logged = byRunId.get(run.runId);
      if (logged) {
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

  async #handle(event: HookEvent, retry: boolean): Promise<void> {
    const ledger = this.#requireLedger();
    const setup = this.#setup;
    const runId = randomUUID();
    const info: LedgerEventInfo = { event: event.event, taskId: event.taskId, member: event.member, timestamp: event.timestamp };
    // The record is appended now and flushed while the hook is prepared; the spawn waits for the flush.
    const { attempt, durable } = ledger.beginRecord(event.key, runId, this.#now(), info);
    durable.catch(() => undefined); // awaited through invokeEvent (notBefore); never unhandled meanwhile
    let outcome;
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
        retry: retry || attempt > 1,
        env: this.#opts.env,
        runId,
        notBefore: durable,
        onSpawn: ({ pid, runId: spawnedRunId, hook }) => {
          this.#opts.report({ kind: "started", event: event.event, key: event.key, hook, taskId: event.taskId, startedAt: Date.now() });
          // The chain's first hook carries the event's run id; later hooks of a chain have their own.
          if (spawnedRunId === runId) ledger.spawned(event.key, runId, pid).catch((error: unknown) => this.#warn(`ledger: ${describeError(error)}`));
        },
      });
    } catch (error) {
      // Left in flight on purpose: the next start retries it. Kept in #queued so it does not loop now.
      this.#warn(`${event.key}: not completed: ${describeError(error)}; it is retried at the next start`);
      return;
    }
    outcome.problems.forEach((p) => this.#warn(`${event.key}: ${p}`));
    const result = outcome.result;
    await ledger.finish(event.key, this.#now(), { runId, outcome: result?.outcome ?? "no_hook", log: outcome.logFile });
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
        retry: retry || attempt > 1,
        logFile: outcome.logFile,
      },
    });
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
