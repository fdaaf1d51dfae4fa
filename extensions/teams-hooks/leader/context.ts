/**
 * What the parts of the leader share, in two parts. The context (`LeaderContext`) is what exists from
 * construction: its options, runtime and settings, the team's sources, the queue, the sent log, the
 * trust record, and the few services every part uses (warn, the clock, one note to the lead, a step
 * tried again later, a write failure said once). What `start()` makes (`Running`: the ledger, the lock,
 * the held gates and events…) is a second object, never null once made. leader.ts owns the life cycle;
 * startup.ts, hints.ts, handle.ts and gate-trust.ts each do one part of the work on them.
 */
import { sentId } from "../team/sent-log.js";
import { heldSettingWarning } from "../team/setup.js";
import type { SettingChange } from "../settings/weakening.js";
import { describeError } from "../contract/errors.js";
import type { HookEvent } from "../contract/events.js";
import { sendOnce } from "../event/remediate.js";
import { TrustState } from "../trust/trust-store.js";
import type { LeaderLock } from "../team/leader-lock.js";
import type { SentLog } from "../team/sent-log.js";
import type { Runtime } from "../runner/runtime.js";
import type { TeamSetup } from "../team/setup.js";
import { taskFile } from "../team/paths.js";
import { formatDuration } from "../text/messages.js";
import type { Deferrals } from "./deferrals.js";
import type { Holds } from "../holds/held-events.js";
import type { Ledger } from "./ledger.js";
import type { LeaderOptions, LeaderState, WhyNotice } from "./notices.js";
import { createKeyedQueue, type KeyedQueue } from "./queue.js";
import { TeamSources } from "./sources.js";

/**
 * During a first start's start-up scan: the first-start mark (file-system ms), the files looked at so
 * far (each file's first look decides whether its event is history), and the history found, recorded
 * in the ledger as the baseline when the scan ends (startup.ts).
 */
export interface FirstStart {
  /**
   * Only claims are history: the first start of a leader that knows `task_started` on a ledger of one
   * that did not (its completions and failures were taken as they came; its claims were never seen).
   */
  claimsOnly: boolean;
  markMs: number;
  looked: Set<string>;
  history: Set<string>;
  /** Tasks changed since the mark whose events were judged history by their own timestamp. */
  edited: string[];
  /**
   * Tasks whose latest completion or failure was not taken as history because they carry a leader's gate
   * record: a leader judged them before, and its ledger is gone (hook-state/ deleted or rebuilt).
   */
  rejudged: string[];
}

/**
 * What `start()` makes, never null once made (leader/leader.ts builds it right after the ledger opens,
 * before any event can run): the ledger, the leader lock, the held gates, the held events, a second look
 * at a task's file, and the check of `hook-state/`. The parts that run once started (handle.ts, hints.ts,
 * startup.ts) take it beside the context; holds/held-events.ts and deferrals.ts take only the narrow part they use.
 */
export interface Running {
  readonly ledger: Ledger;
  /** The leader lock: taken again when `hook-state/` or the team dir comes back (hints.ts). */
  lock: LeaderLock;
  /** The held gates (leader/deferrals.ts). */
  readonly deferrals: Deferrals;
  /** Events held because their gate could not judge the work (holds/held-events.ts). */
  readonly holds: Holds;
  /** Looks at a task's file again, whatever its stat says (hints.ts). */
  readonly relook: (taskId: string) => void;
  /** Whether `hook-state/` is as the leader wrote it, written again from memory if not (hints.ts). */
  readonly stateCheck: () => Promise<boolean>;
}

export class LeaderContext {
  readonly opts: LeaderOptions;
  /** The clock, lock timeout, sent log, retry waits, spawn listener and test pause (runner/runtime.ts), whole. */
  readonly runtime: Runtime;
  /** `--verbose`: every caller of `why` tests this first, so that nothing is built when it is off. */
  readonly verbose: boolean;
  /**
   * The team and the settings in force (frozen, passed whole to each event): a change of config.json
   * puts a new one here with the new settings (hints.ts; never a new identity or dirs).
   */
  setup: TeamSetup;
  state: LeaderState = "starting";
  readonly sources: TeamSources;
  readonly queue: KeyedQueue;
  /** Keys queued or running in this process. */
  readonly queued = new Set<string>();
  /** Events handed to the queue so far (the `ready` notice's `queued`). */
  enqueued = 0;
  firstStart: FirstStart | null = null;
  /**
   * Whether a start gate is in force (a file or handler for `task_started`, or one the trust record
   * names): without one a claim is nothing, not even a ledger line (gate-trust.ts refreshStartGate).
   */
  startGate = false;
  readonly sent: SentLog;
  readonly trust: TrustState;
  /** Gate changes and insecure gates already reported by this process (each is said once). */
  readonly told = new Set<string>();
  /** Notes to the lead's inbox under way (awaited by stop()). */
  notes: Promise<void> = Promise.resolve();
  /** Timers of events waiting to be tried again (a policy or a write that failed). */
  readonly retryTimers = new Set<NodeJS.Timeout>();
  /** The write failure being reported (said once, until writing works again), and the keys it holds. */
  #writeTrouble: { message: string; keys: Set<string> } | null = null;
  /** The ledger, once start() has opened it: what keys the completions the sources look at (`opened`). */
  #memory: Ledger | null = null;

  constructor(opts: LeaderOptions, runtime: Runtime) {
    this.opts = opts;
    this.runtime = runtime;
    this.verbose = opts.verbose === true;
    this.setup = opts.setup;
    // The leader's memory of each task's gate round (the ledger, once open) keys its completions.
    this.sources = new TeamSources(opts.setup.identity, {
      round: (taskId) => this.#memory?.task(taskId).round ?? 0,
      seen: (taskId, round) => this.#memory?.remember({ round: { taskId, round } }),
    });
    this.sent = runtime.sentLog(opts.setup.identity.teamDir);
    this.trust = new TrustState(opts.setup.identity.teamDir);
    this.queue = createKeyedQueue({
      concurrency: opts.concurrency,
      onError: (error) => this.warn(`event failed: ${describeError(error)}`),
    });
  }

  /** The ledger is open (start()): the sources key each task's completions by its gate round from here on. */
  opened(ledger: Ledger): void {
    this.#memory = ledger;
  }

  warn(message: string): void {
    this.opts.report({ kind: "warning", message });
  }

  /** A `--verbose` notice (callers test `verbose` first). */
  why(notice: Omit<WhyNotice, "kind">): void {
    this.opts.report({ kind: "why", ...notice });
  }

  /** A `--verbose` notice about an event: its file is its task's, or the inbox for `idle`. */
  whyEvent(event: HookEvent, reason: WhyNotice["reason"], more: Pick<WhyNotice, "hook" | "detail"> = {}): void {
    const { teamDir, taskListId } = this.setup.identity;
    const file =
      event.source === "inbox"
        ? this.sources.inboxFile
        : event.taskId !== null
          ? taskFile(teamDir, taskListId, event.taskId)
          : null;
    this.why({ reason, file, taskId: event.taskId, event: event.event, key: event.key, ...more });
  }

  now(): string {
    return this.runtime.now().toISOString();
  }

  /** One note to the lead's inbox (team namespace), once whatever happens (team/sent-log.ts). */
  async tellLead(id: string, text: string, failure: string): Promise<void> {
    const { teamDir, leadName } = this.setup.identity;
    const sent = await sendOnce(this.sent, {
      teamDir,
      namespace: "team",
      to: leadName,
      id,
      message: { from: "pi-teams-hooks", text, timestamp: this.now(), read: false, qualityGateNoteId: id },
      isIt: (m) => m.qualityGateNoteId === id,
    });
    if (sent.error) this.warn(`${failure}: ${sent.error}`);
  }

  /** A note to the lead (tellLead) after those under way: stop() waits for it. */
  noteToLead(id: string, text: string, failure: string): void {
    this.notes = this.notes.then(() => this.tellLead(id, text, failure));
  }

  /** Runs `job` through the queue in `event`'s group: after the events of its task (or member) queued before it. */
  inOrder(event: HookEvent, job: () => Promise<void>): void {
    this.queue.push(queueGroup(event), job);
  }

  /** Runs `step` for `event` after `delayMs`, through the queue (so the task's events stay in order). */
  later(event: HookEvent, step: () => Promise<void>, delayMs: number): void {
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer);
      if (this.state !== "watching") return;
      this.queue.push(queueGroup(event), step);
    }, delayMs);
    this.retryTimers.add(timer);
  }

  /** How long to wait before the `tries`-th new try of a write: doubling from the first wait, capped. */
  writeDelay(tries: number): number {
    const { first, max } = this.runtime.retry.writeMs;
    return Math.min(max, first * 2 ** Math.max(0, tries - 1));
  }

  /** A write of the leader's own failed (ledger, log): said once until writing works again. */
  writeFailed(key: string, error: unknown): void {
    const message = typeof error === "string" ? error : describeError(error);
    if (this.#writeTrouble === null) {
      this.#writeTrouble = { message, keys: new Set() };
      const { first, max } = this.runtime.retry.writeMs;
      this.warn(
        `${message}: events stay in flight and are tried again (every ${formatDuration(first)} at first, then up to every ${formatDuration(max)}) until writing works again`,
      );
    }
    this.#writeTrouble.keys.add(key);
  }

  wroteOk(key: string): void {
    const trouble = this.#writeTrouble;
    if (!trouble?.keys.has(key)) return;
    trouble.keys.delete(key);
    if (trouble.keys.size > 0) return;
    this.#writeTrouble = null;
    this.opts.report({
      kind: "info",
      message: `writing works again: the events held back by "${trouble.message}" are done`,
    });
  }
}

/** The queue's group of an event: a task's events run in order, and so do a member's idle events. */
export function queueGroup(event: HookEvent): string {
  return event.taskId !== null ? `task:${event.taskId}` : `member:${event.member ?? ""}`;
}

/**
 * Runs a synchronous `fn` over `items`, giving the event loop a turn every `every` items, so that a
 * scan of 10,000 files never holds an event back for more than a few milliseconds.
 */
export async function forEachYielding<T>(items: readonly T[], fn: (item: T) => void, every = 256): Promise<void> {
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (item !== undefined) fn(item);
    if (i % every === every - 1) await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** Each change of config.json held for the lead's approval, told to the lead once (settings/weakening.ts). */
export function tellHeldSettings(ctx: LeaderContext, held: readonly SettingChange[]): void {
  const { identity } = ctx.setup;
  for (const c of held) {
    ctx.noteToLead(
      sentId("held-setting", `${c.path}:${c.to}`, identity.leadName),
      heldSettingWarning(ctx.setup.configFile, c),
      `the lead was not told of the held change of ${c.path}`,
    );
  }
}
