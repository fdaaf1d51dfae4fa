/**
 * The leader's held gates (hook-state/deferrals/, invoke/deferral.ts). The leader holds the team's
 * leader lock, so it is where decisions are applied while it runs: a decision recorded by
 * `pi-teams-hooks decide` or the task API, or the expiry it records itself at a deferral's deadline,
 * is applied through the queue in its task's group (after any event of the task that came first).
 * Each deferral goes
 *
 *   open ──decision recorded (decide, the API)──▶ decided ──applyDecision──▶ applied ──ledger done──▶ closed
 *     └──its deadline (a timer at the soonest; at start, overdue ones at once)──▶ expired (a decision) ─┘
 *
 * The files are read all at start (after crash recovery), then on a watcher hint, on the reconcile
 * scan and when this leader holds a gate (handle.ts). An applied file is remembered by name and not
 * read again; a ledger key held without its file gets it back from its log.
 */
import { readdir } from "node:fs/promises";
import path from "node:path";
import { describeError, errnoCode } from "../contract/errors.js";
import type { HookEvent } from "../contract/events.js";
import { type ApplySettings, EXPIRY_BY, applyDecision } from "../invoke/decision.js";
import { type DeferralRecord, deferralFile, deferralOfLog, deferralsDir, isDeferralFileName, readDeferralFile, updateDeferral, writeDeferral } from "../invoke/deferral.js";
import { readHookLog } from "../runner/hook-log.js";
import { mkdirUnder } from "../team/json-file.js";
import { formatSpan } from "../text/messages.js";
import { type LeaderContext, RETRY_POLICY_MS, queueGroup } from "./context.js";

/** The longest a timer waits before looking again (setTimeout takes at most 2^31-1 ms; a deadline can be 30 days off). */
const MAX_TIMER_MS = 6 * 3_600_000;

export class Deferrals {
  readonly #ctx: LeaderContext;
  /** Held gates without a decision, by run id: the timer's business. */
  readonly #open = new Map<string, DeferralRecord>();
  /** Names of applied deferral files: never looked at again. */
  readonly #closed = new Set<string>();
  /** Run ids whose application is queued or under way (a hint and a scan must not queue one twice). */
  readonly #queued = new Set<string>();
  /** Files whose problem was said (said once while it lasts). */
  readonly #told = new Set<string>();
  #timer: NodeJS.Timeout | null = null;

  constructor(ctx: LeaderContext) {
    this.#ctx = ctx;
  }

  get dir(): string {
    return deferralsDir(this.#ctx.setup.identity.teamDir);
  }

  /** At start, after crash recovery: every deferral file, and the held keys of the ledger whose file is gone. */
  async start(): Promise<void> {
    const teamDir = this.#ctx.setup.identity.teamDir;
    mkdirUnder(teamDir, this.dir); // watched from the start: it must exist
    for (const held of this.#ctx.requireLedger().deferred()) {
      const read = await readDeferralFile(deferralFile(teamDir, held.deferral));
      if (!read.ok && read.problem.kind === "missing") await restoreFromLog(this.#ctx, held.key, held.log);
    }
    await this.reconcile();
  }

  /** Every file not known as applied, looked at (the start, and the reconcile scan: what a watcher missed). */
  async reconcile(): Promise<void> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (error) {
      if (errnoCode(error) !== "ENOENT") this.#ctx.warn(`${this.dir}: cannot list the deferrals (${describeError(error)}); decisions wait until it can be read`);
      return;
    }
    for (const name of names) if (isDeferralFileName(name) && !this.#closed.has(name)) await this.#look(path.join(this.dir, name));
    this.#arm();
  }

  /** A watcher saw a deferral file written. */
  hint(file: string): void {
    if (this.#closed.has(path.basename(file))) return;
    void this.#look(file)
      .then(() => this.#arm())
      .catch((error: unknown) => this.#ctx.warn(`${file}: not looked at: ${describeError(error)}`));
  }

  /** This leader has just held a gate (its file is written, its ledger record too). */
  held(record: DeferralRecord): void {
    if (this.#queued.has(record.runId)) return; // decided already (a decider that answered at once)
    this.#open.set(record.runId, record);
    this.#arm();
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  async #look(file: string): Promise<void> {
    const read = await readDeferralFile(file);
    if (!read.ok) {
      if (read.problem.kind !== "missing" && !this.#told.has(file)) this.#ctx.warn(`${read.problem.message}; its gate stays held until the file is fixed or moved aside`);
      this.#told.add(file);
      return;
    }
    this.#told.delete(file);
    const record = read.value;
    if (path.basename(deferralFile(this.#ctx.setup.identity.teamDir, record.runId)) !== path.basename(file)) return; // not ours to name
    if (record.applied) {
      this.#open.delete(record.runId);
      this.#closed.add(path.basename(file));
      await this.#close(record);
      return;
    }
    await this.#know(record);
    if (record.decision) {
      this.#open.delete(record.runId);
      this.#enqueue(record);
    } else {
      this.#open.set(record.runId, record);
    }
  }

  #enqueue(record: DeferralRecord): void {
    if (this.#queued.has(record.runId) || this.#closed.has(path.basename(deferralFile(this.#ctx.setup.identity.teamDir, record.runId)))) return;
    if (this.#ctx.state === "stopping" || this.#ctx.state === "stopped") return;
    this.#queued.add(record.runId);
    this.#ctx.queue.push(queueGroup(eventOf(record)), () => this.#apply(record, 0));
  }

  async #apply(record: DeferralRecord, tries: number): Promise<void> {
    const ctx = this.#ctx;
    const app = await applyDecision(ctx.setup.identity.teamDir, record.runId, settingsOf(ctx));
    if (app.kind === "pending") {
      const delays = ctx.opts.retryPolicyMs ?? RETRY_POLICY_MS;
      const delay = delays[tries];
      if (delay !== undefined) {
        ctx.warn(`${record.key}: the decision on deferred run ${record.runId} is not applied yet: ${app.error}; trying again in ${formatSpan(delay)} (${tries + 1} of ${delays.length})`);
        ctx.later(eventOf(record), () => this.#apply(record, tries + 1), delay);
        return;
      }
      ctx.warn(`${record.key}: the decision on deferred run ${record.runId} NOT applied after ${tries + 1} tries (${app.error}); it stays recorded: the next start of the leader applies it`);
    }
    this.#queued.delete(record.runId);
    if (app.kind !== "applied") return;
    this.#closed.add(path.basename(deferralFile(ctx.setup.identity.teamDir, record.runId)));
    await this.#close(app.record);
    // Applied before (a look that read the file while this leader was writing it queued it twice): said once.
    if (app.already) return;
    const decision = app.record.decision;
    ctx.opts.report({
      kind: "event",
      report: {
        time: ctx.now(),
        key: record.key,
        event: record.event,
        taskId: record.taskId,
        member: record.member,
        hook: record.hook.name,
        outcome: app.result.outcome,
        timedOut: false,
        durationMs: 0,
        summary: app.summary,
        actions: app.actions,
        retry: false,
        logFile: app.logFile,
        policyApplied: true,
        ...(decision ? { decision: { deferredRunId: record.runId, decision: decision.decision, by: decision.by, waitedMs: app.waitedMs } } : {}),
      },
    });
  }

  /**
   * A held key the ledger does not know (held by `run --apply-policy`): recorded as held, so that this
   * leader never runs its gate again meanwhile (its start-up scan comes after this).
   */
  async #know(record: DeferralRecord): Promise<void> {
    const ledger = this.#ctx.requireLedger();
    if (ledger.has(record.key)) return;
    await ledger
      .defer(record.key, this.#ctx.now(), { runId: record.eventRunId, deferral: record.runId, expiresAt: record.expiresAt, log: record.logFile })
      .catch((error: unknown) => this.#ctx.warn(`${record.key}: the ledger could not record the held gate (${describeError(error)})`));
  }

  /** An applied deferral: its key is done in the ledger (if the ledger holds it, or does not know it at all: a `run --apply-policy`). */
  async #close(record: DeferralRecord): Promise<void> {
    const ledger = this.#ctx.requireLedger();
    const state = ledger.get(record.key);
    if (state !== undefined && !(state.state === "deferred" && state.deferral === record.runId)) return;
    const outcome = record.decision?.decision === "allow" ? "passed" : record.decision?.decision === "deny" ? "failed" : "error";
    await ledger
      .finish(record.key, this.#ctx.now(), { runId: record.eventRunId, outcome, log: record.applied?.logFile ?? null })
      .catch((error: unknown) => this.#ctx.warn(`${record.key}: the ledger could not record the decision (${describeError(error)}); the next start does`));
  }

  /** A timer at the soonest deadline of the open deferrals. */
  #arm(): void {
    this.stop();
    if (this.#ctx.state === "stopping" || this.#ctx.state === "stopped") return;
    let soonest = Number.POSITIVE_INFINITY;
    for (const record of this.#open.values()) soonest = Math.min(soonest, Date.parse(record.expiresAt));
    if (!Number.isFinite(soonest)) return;
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, soonest - Date.now()));
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#expire()
        .catch((error: unknown) => this.#ctx.warn(`deferrals: ${describeError(error)}`))
        .finally(() => this.#arm());
    }, delay);
  }

  /** Records `expired` on every open deferral past its deadline (unless a decision came first) and applies it. */
  async #expire(): Promise<void> {
    const now = Date.now();
    for (const [runId, record] of [...this.#open]) {
      if (Date.parse(record.expiresAt) > now) continue;
      this.#open.delete(runId);
      const at = new Date(Math.max(now, Date.parse(this.#ctx.now()))).toISOString();
      const decided = await updateDeferral(this.#ctx.setup.identity.teamDir, runId, (r) => (r.decision ? undefined : { ...r, decision: { decision: "expired", by: EXPIRY_BY, at } }));
      if (decided?.decision) this.#enqueue(decided);
    }
  }
}

/**
 * A held key whose deferral file is not there (a leader killed between the held run's log and the
 * file, or the file removed by hand): the file again, from the log's `deferral` block. Returns the
 * deferral, or null (and a warning) when the log does not hold one.
 */
export async function restoreFromLog(ctx: LeaderContext, key: string, logFile: string | null): Promise<DeferralRecord | null> {
  const read = logFile ? await readHookLog(logFile) : null;
  const held = read?.ok ? deferralOfLog(read.record.deferral) : null;
  if (!held) {
    ctx.warn(`${key}: held, but neither its deferral file nor its log (${logFile ?? "none"}) says by which run; it stays held until the ledger is reset (docs/ledger.md)`);
    return null;
  }
  return writeDeferral(ctx.setup.identity.teamDir, held);
}

function settingsOf(ctx: LeaderContext): ApplySettings {
  const { setup, opts } = ctx;
  return {
    identity: setup.identity,
    policy: setup.policy.policy,
    failureModes: setup.failureModes,
    timeoutMs: setup.timeout.value,
    sentLog: ctx.sent,
    ...(opts.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: opts.lockTimeoutMs }),
    ...(opts.now ? { now: opts.now } : {}),
  };
}

/** The event a deferral holds, for the queue's group and the tries again. */
function eventOf(record: DeferralRecord): HookEvent {
  return { key: record.key, event: record.event, taskId: record.taskId, member: record.member, timestamp: record.timestamp, source: "task" };
}
