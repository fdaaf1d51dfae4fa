/**
 * One event in the leader, from the queue to the ledger: whether it is new (not done, not queued, not
 * history), the ledger's record of its start, the invocation (event/invoke.ts), and its settling: a
 * policy that could not be applied is tried again a few times and then given up loudly, a write that
 * failed is tried again until it works, and only then is the key recorded as done.
 */
import { randomUUID } from "node:crypto";
import { isTaskEvent } from "../contract/contract.js";
import type { Task } from "../contract/team-files.js";
import { describeError, isHooksError } from "../contract/errors.js";
import type { HookEvent } from "../contract/events.js";
import { markRead } from "../team/mailbox.js";
import { sentId } from "../team/sent-log.js";
import {
  describeFailure,
  formatDuration,
  heldSummary,
  missingSecretWarning,
  policyGivenUpText,
  recordsDisagreeText,
} from "../text/messages.js";
import { type LeaderContext, type Running, queueGroup } from "./context.js";
import { refreshTrust, reportTrustCheck } from "./gate-trust.js";
import { invokeEvent, type InvokeOutcome, type PendingStep } from "../event/invoke.js";
import { gateName } from "../gates/chain.js";
import { type KeyMemory, type Ledger, type LedgerEventInfo, doneOutcome, memoryWord } from "./ledger.js";
import type { GateMemory } from "../event/remediate.js";
import { BASELINE_DETAIL } from "./notices.js";
import { startStandbys, startStandbysAhead } from "../runner/run-hook.js";
import type { SpawnInfo } from "../runner/runtime.js";
import { type GateState, heldFor, isJudged, moveReaching, recordedPlaceOf } from "../policy/gate-life.js";

/** Where one event is between tries: how often each kind of step has failed so far. */
interface EventProgress {
  runId: string;
  attempt: number;
  retry: boolean;
  policyTries: number;
  writeTries: number;
}

/** A task looked at with more text than this is read again when its event runs, not kept while it waits. */
const KEEP_TASK_CHARS = 1024 * 1024;

export class EventHandler {
  readonly #ctx: LeaderContext;
  readonly #run: Running;
  /**
   * Each member's idle notification waiting in the queue (not started): a newer one of the same member
   * supersedes it. A member's burst of notifications runs the idle gate on the first and the latest.
   */
  readonly #waitingIdle = new Map<string, { key: string; supersededBy: string | null }>();
  /** Events taken again because the ledger and the task's gate record disagreed on them: what disagreed. */
  readonly #disagreements = new Map<string, { what: string; known: boolean }>();
  /** Events judged again for a disagreement that no gate judged (none in force): not taken again in this run. */
  readonly #noGate = new Set<string>();
  /** Events whose gates are running, by key: the event and its run id (that of the chain's first hook). */
  readonly #running = new Map<string, { event: HookEvent; runId: string }>();

  constructor(ctx: LeaderContext, run: Running) {
    this.#ctx = ctx;
    this.#run = run;
  }

  /**
   * A hook of an event this handler runs has started (the runtime's `onSpawn`): the `started` notice, and
   * for the chain's first hook (it carries the event's run id; later hooks have their own) the ledger's
   * record of its process group.
   */
  spawned(info: SpawnInfo): void {
    const running = this.#running.get(info.key);
    if (!running) return;
    const { event, runId } = running;
    this.#ctx.opts.report({
      kind: "started",
      event: event.event,
      key: event.key,
      hook: info.hook,
      taskId: event.taskId,
      startedAt: Date.now(),
    });
    if (info.runId === runId)
      this.#run.ledger
        .spawned(event.key, runId, info.pid)
        .catch((error: unknown) => this.#ctx.writeFailed(event.key, error));
  }

  /** A looked-at event: queued unless done, queued already, or history. `task`: the task as it was just read. */
  consider(event: HookEvent, task?: Task): void {
    if (this.#ctx.state === "stopping" || this.#ctx.state === "stopped") return;
    const ledger = this.#run.ledger;
    if (this.#ctx.firstStart?.history.has(event.key)) {
      if (this.#ctx.verbose) this.#ctx.whyEvent(event, "baseline", { detail: BASELINE_DETAIL });
      return;
    }
    const queued = this.#ctx.queued.has(event.key);
    const known = ledger.get(event.key);
    // Judged means both records agree: a `done` the task's gate record does not back is judged again.
    const done = doneOutcome(known);
    const disagreement = !queued && done !== null ? this.#disagreement(event, done, known, task) : null;
    const unbacked = !queued && disagreement === null ? this.#unbackedDeferral(event, known, task) : null;
    const what = disagreement ?? unbacked;
    if (what !== null) {
      this.#disagreements.set(event.key, { what, known: true });
      if (this.#ctx.verbose) this.#ctx.whyEvent(event, "new_event", { detail: what });
      this.enqueue(event, true, task);
      return;
    }
    if (known !== undefined || queued) {
      if (this.#ctx.verbose) this.#whyKnown(event);
      // --inbox consume: an unread notification of an event already done was handled by a leader that
      // died before marking it read; mark it now (through the queue, so that stop() waits for it).
      // test/integration/leader-inbox.test.ts.
      if (this.#ctx.opts.inbox === "consume" && event.event === "idle" && done !== null) {
        this.#ctx.queue.push(queueGroup(event), () => this.#markHandled(event));
      }
      return;
    }
    if (this.#ctx.verbose) this.#ctx.whyEvent(event, "new_event");
    // A gate record the ledger has no line for (outside a first start, whose scan says it for all at once).
    if (this.#ctx.firstStart === null && task && recordsJudged(task, event.key))
      this.#disagreements.set(event.key, {
        what: `the task's gate record names ${event.key}, and the ledger has no line for it`,
        known: false,
      });
    this.enqueue(event, false, task);
  }

  /**
   * Why the ledger's `done` of a task's completion or failure is not backed by the task's gate record: there is
   * none, or it says passed where the ledger does not (null when it is backed, or when nothing can be checked: an
   * event of no task, or already judged again under no gate in this run). docs/ledger.md, "When the ledger and the
   * task disagree".
   */
  #disagreement(
    event: HookEvent,
    outcome: string,
    known: KeyMemory | undefined,
    task: Task | undefined,
  ): string | null {
    if ((event.event !== "task_completed" && event.event !== "task_failed") || !task) return null;
    if (this.#noGate.has(event.key)) return null;
    const recorded = recordedPlaceOf(task, event.key);
    if (!isJudged(recorded))
      return `the ledger records ${event.key} as done (${outcome}), and the task holds no gate record for it`;
    // A pass the ledger does not have: the verdict a dependent acts on, so a record rewritten to it is not believed.
    const judged = known !== undefined && "outcome" in known ? known.state : null;
    if (recorded?.state === "passed" && judged !== null && judged !== "passed")
      return `the ledger records ${event.key} as ${judged}, and the task's gate record says passed`;
    return null;
  }

  /**
   * Why a deferral the ledger holds for a task's event is not a gate's (null when it may be): neither its
   * file nor its log says a gate held it (leader/deferrals.ts `unbacked`), and the task's gate record
   * does not name its run. Such a `defer` line was written by hand: the gate never ran, so it runs now.
   */
  #unbackedDeferral(event: HookEvent, known: KeyMemory | undefined, task: Task | undefined): string | null {
    if (known?.state !== "held" || known.cause !== "deferral" || !task) return null;
    const run = this.#run.deferrals.unbacked(event.key);
    if (run === null || run !== known.deferral) return null;
    const meta = task.metadata ?? {};
    if (meta.qualityGateEventKey === event.key && meta.qualityGateDeferredRunId === run) {
      // Held, on the task's word alone: no gate runs it and `decide` has no file to settle, so the lead is told
      // (once) what keeps the completion from being judged.
      const { leadName } = this.#ctx.setup.identity;
      this.#ctx.noteToLead(
        sentId("deferral-unbacked", event.key, leadName),
        `Quality gate: ${event.key} stays held as deferred (run ${run}), but neither its deferral file nor its hook log is there: only the task's own gate record names that run, which a worker can write. No gate runs it and decide cannot settle it. If no gate of yours deferred it, take qualityGateDeferredRunId out of task #${event.taskId}'s metadata: the leader then judges the completion.`,
        `${event.key}: the lead was not told that its deferral is backed by the task's record alone`,
      );
      return null;
    }
    return `the ledger holds ${event.key} as deferred (run ${run}), and no deferral file, log or gate record of the task says a gate held it`;
  }

  /** `--verbose`: an event already taken, by this leader (queued, running) or by the ledger. */
  #whyKnown(event: HookEvent): void {
    if (this.#ctx.queued.has(event.key))
      return this.#ctx.whyEvent(event, "queued", { detail: "queued or running in this leader" });
    this.#ctx.whyEvent(event, "in_ledger", { detail: memoryWord(this.#run.ledger.get(event.key)) });
  }

  /** `--verbose`: what the gates did not do: none existed, or some were skipped by their matchers. */
  #whyRuns(event: HookEvent, outcome: InvokeOutcome): void {
    if (outcome.chain.hooks.length === 0) {
      this.#ctx.whyEvent(event, "no_gate", { detail: "recorded as handled (outcome no_hook)" });
      return;
    }
    for (const run of outcome.runs) {
      if (run.result.skipped !== undefined)
        this.#ctx.whyEvent(event, "matcher_skipped", {
          hook: gateName(run.hook, event.event),
          detail: run.result.skipped,
        });
    }
  }

  enqueue(event: HookEvent, retry: boolean, looked?: Task): void {
    // A large task is not kept while its event waits (five 60 MB descriptions queued would all stay in
    // memory): its gate reads it again when it runs, one at a time.
    const task = looked && looked.description.length + looked.subject.length <= KEEP_TASK_CHARS ? looked : undefined;
    this.#ctx.queued.add(event.key);
    this.#ctx.enqueued += 1;
    if (event.event !== "idle") {
      this.#ctx.queue.push(queueGroup(event), () => this.#handle(event, retry, undefined, task));
      // Events wait now: a gate under way builds its next run's view meanwhile (runner/run-hook.ts).
      if (this.#ctx.queue.size > this.#ctx.queue.running) startStandbysAhead();
      return;
    }
    // Idle notifications wait behind every task's event, and a newer one of a member supersedes the waiting one.
    const member = event.member ?? "";
    const earlier = this.#waitingIdle.get(member);
    if (earlier) earlier.supersededBy = event.key;
    const slot = { key: event.key, supersededBy: null as string | null };
    this.#waitingIdle.set(member, slot);
    const job = async (): Promise<void> => {
      if (this.#waitingIdle.get(member) === slot) this.#waitingIdle.delete(member);
      if (slot.supersededBy === null) return this.#handle(event, retry, undefined, task);
      await this.#supersede(event, slot.supersededBy);
    };
    this.#ctx.queue.push(queueGroup(event), job, true);
  }

  /** An idle notification a newer one replaced before its gate started: done, with no run and no log. */
  async #supersede(event: HookEvent, by: string): Promise<void> {
    try {
      await this.#run.ledger.finish(event.key, this.#ctx.now(), { runId: null, outcome: "superseded", log: null });
    } catch (error) {
      // Not recorded: the next start looks at it again (and runs its gate): a gate too many, never one lost.
      this.#ctx.warn(`${event.key}: ${describeError(error)}`);
    }
    this.#ctx.queued.delete(event.key);
    if (this.#ctx.opts.inbox === "consume") await this.#markHandled(event);
    if (this.#ctx.verbose) this.#ctx.whyEvent(event, "superseded", { detail: `by ${by}, before its gate started` });
  }

  /** `task`: the task as the look read it, passed to the hooks instead of being read again (a retry reads it anew). */
  async #handle(event: HookEvent, retry: boolean, progress?: EventProgress, task?: Task): Promise<void> {
    const ledger = this.#run.ledger;
    const setup = this.#ctx.setup;
    const runId = randomUUID();
    // hook-state/ deleted meanwhile: written again from memory first (its lock keeps a second leader out).
    if (!(await this.#run.stateCheck())) {
      const writes = (progress?.writeTries ?? 0) + 1;
      this.#ctx.later(
        event,
        () => this.#handle(event, retry, { runId, attempt: 0, retry, policyTries: 0, writeTries: writes }, task),
        this.#ctx.writeDelay(writes),
      );
      return;
    }
    const info: LedgerEventInfo = {
      event: event.event,
      taskId: event.taskId,
      member: event.member,
      timestamp: event.timestamp,
    };
    let begun: { attempt: number; durable: Promise<void> };
    try {
      // The record is appended now and flushed while the hook is prepared; the spawn waits for the flush.
      begun = ledger.beginRecord(event.key, runId, this.#ctx.now(), info);
    } catch (error) {
      const writes = (progress?.writeTries ?? 0) + 1;
      this.#ctx.writeFailed(event.key, error);
      this.#ctx.later(
        event,
        () => this.#handle(event, retry, { runId, attempt: 0, retry, policyTries: 0, writeTries: writes }),
        this.#ctx.writeDelay(writes),
      );
      return;
    }
    const { attempt, durable } = begun;
    durable.catch(() => undefined); // awaited through invokeEvent (notBefore); never unhandled meanwhile
    const state: EventProgress = {
      runId,
      attempt,
      retry: retry || attempt > 1,
      policyTries: 0,
      writeTries: progress?.writeTries ?? 0,
    };
    // The record changed since the last look (an approval): events held for it are looked at again.
    if (refreshTrust(this.#ctx)) void this.#run.holds.reconsider();
    let outcome: InvokeOutcome;
    this.#running.set(event.key, { event, runId });
    try {
      outcome = await invokeEvent({
        // The settings in force as this try begins, whole: a config.json change takes effect at the next.
        setup,
        event: event.event,
        key: event.key,
        taskId: event.taskId,
        member: event.member,
        timestamp: event.timestamp,
        notification: event.notification,
        task,
        applyPolicy: isTaskEvent(event.event),
        retry: state.retry,
        attempt,
        runtime: this.#ctx.runtime,
        memory: ledgerMemory(ledger),
        trust: { record: this.#ctx.trust.record, onCheck: (check) => reportTrustCheck(this.#ctx, check) },
        env: this.#ctx.opts.env,
        runId,
        notBefore: durable,
        // In a burst (events wait) the next run's standby starts as soon as this gate has (runner/run-hook.ts).
        standby: { ahead: () => this.#ctx.queue.size > this.#ctx.queue.running },
        stopping: () => this.#ctx.state === "stopping" || this.#ctx.state === "stopped",
      });
    } catch (error) {
      if (isWriteError(error)) {
        // The ledger's record of the start did not reach the disk, so no hook ran: the whole event again.
        state.writeTries += 1;
        this.#ctx.writeFailed(event.key, error);
        this.#ctx.later(event, () => this.#handle(event, true, state), this.#ctx.writeDelay(state.writeTries));
        return;
      }
      // A bug of ours. Left in flight on purpose: the next start retries it; kept in #queued so it does not loop now.
      this.#ctx.warn(`${event.key}: not completed: ${describeError(error)}; it is retried at the next start`);
      return;
    } finally {
      this.#running.delete(event.key);
    }
    if (outcome.interrupted !== undefined) {
      // Nothing applied, nothing logged: the key stays in flight in the ledger, as after a crash.
      this.#ctx.warn(`${event.key}: ${outcome.interrupted}; the event stays open: the next start runs its gate again`);
      return;
    }
    this.#warnMissingSecrets(outcome);
    if (this.#ctx.verbose) this.#whyRuns(event, outcome);
    await this.#settle(event, outcome, state);
  }

  /** A handler's secret variable that was not set: said once per handler and variable (never a value). */
  #warnMissingSecrets(outcome: InvokeOutcome): void {
    for (const run of outcome.runs) {
      if (run.hook.kind !== "http" || !run.hook.handler) continue;
      for (const variable of run.result.http?.missingSecrets ?? []) {
        const id = `missing-secret:${run.hook.name}:${variable}`;
        if (this.#ctx.told.has(id)) continue;
        this.#ctx.told.add(id);
        this.#ctx.warn(missingSecretWarning(run.hook.name, variable, run.hook.handler));
      }
    }
  }

  /**
   * Finishes an event whose hooks have run, in steps, each only once the one before it is done: a
   * policy not applied is tried again (a few times, then given up loudly: the event stays open), a log
   * that failed is written again, the ledger records where the event is (done, deferred, held), a hold
   * is listed for the lead, and the event is reported. Each step may run again (a retry after a failed
   * write): the ledger's records and the lists are idempotent per key.
   */
  async #settle(event: HookEvent, outcome: InvokeOutcome, state: EventProgress): Promise<void> {
    const pending = outcome.pending;
    if (pending?.stage === "remediation") return this.#retryPolicy(event, outcome, pending, state);
    this.#run.holds.unlist(event.key);
    if (pending?.stage === "logs") {
      state.writeTries += 1;
      this.#ctx.writeFailed(event.key, pending.error);
      const again = async (): Promise<void> => this.#settle(event, await pending.resume(), state);
      this.#ctx.later(event, again, this.#ctx.writeDelay(state.writeTries));
      return;
    }
    if (!(await this.#record(event, outcome, state))) return;
    if (outcome.deferral) this.#run.deferrals.held(outcome.deferral);
    this.#listHold(event, outcome, state);
    // A policy given up on leaves the key in flight in the ledger: the next start tries it again.
    outcome.problems.forEach((p) => this.#ctx.warn(`${event.key}: ${p}`));
    this.#ctx.wroteOk(event.key);
    this.#ctx.queued.delete(event.key);
    if (this.#ctx.opts.inbox === "consume" && event.event === "idle") await this.#markHandled(event);
    const ledger = this.#run.ledger;
    await ledger.maybeCompact().catch((error: unknown) => this.#ctx.warn(`ledger: ${describeError(error)}`));
    // Taken again for a disagreement, and no gate judged it (none in force): nothing was missed, nothing to report.
    if (!(await this.#sayDisagreement(event, outcome))) return;
    this.#report(event, outcome, state);
    // A reopen moved the task into its next gate round: a look made before the round was remembered
    // (a worker's completion right after the reopen, with an old copy of the metadata) is made again.
    if (outcome.remembered?.round && event.taskId !== null) this.#run.relook(event.taskId);
    // The next run's standby, once this event's policy and log are written (runner/standby.ts). In a burst,
    // with events waiting, it was started already as the gate started (`standby.ahead` above): the standbys
    // still due start once nothing waits.
    if (this.#ctx.queue.size === this.#ctx.queue.running) startStandbys();
  }

  /**
   * A policy that could not be applied: tried again after each of the waits; past them, said loudly
   * once, held where the lead looks, and tried again at the last wait until it is written (a stop
   * leaves it open, for the next start). Never dropped, never accepted.
   */
  async #retryPolicy(
    event: HookEvent,
    outcome: InvokeOutcome,
    pending: PendingStep,
    state: EventProgress,
  ): Promise<void> {
    const delays = this.#ctx.runtime.retry.policyMs;
    const delay = delays[state.policyTries];
    state.policyTries += 1;
    const again = async (): Promise<void> => this.#settle(event, await pending.resume(), state);
    if (delay !== undefined) {
      this.#ctx.warn(
        `${event.key}: policy not applied: ${pending.error}; trying again in ${formatDuration(delay)} (${state.policyTries} of ${delays.length})`,
      );
      this.#ctx.later(event, again, delay);
      return;
    }
    if (state.policyTries === delays.length + 1) {
      await this.#giveUp(event, pending.error, state);
      this.#run.holds.listUnwritten({
        key: event.key,
        event: event.event,
        taskId: event.taskId,
        member: event.member,
        cause: "fault",
        kind: null,
        hook: outcome.hook ? gateName(outcome.hook, event.event) : null,
        reason: `the gate judged it, and its policy cannot be written: ${pending.error}`,
        since: this.#ctx.now(),
        runId: outcome.result?.runId ?? null,
        log: null,
      });
    }
    this.#ctx.later(event, again, delays.at(-1) ?? 30_000);
  }

  /**
   * The ledger's record of where the event is now: deferred (closed by its decision), held (run again
   * when its hold ends), else done; with what the task's gate life now is (a round, a follow-up's
   * root, a budget spent) riding on the same flush. False when the write failed: tried again later.
   */
  async #record(event: HookEvent, outcome: InvokeOutcome, state: EventProgress): Promise<boolean> {
    if (outcome.policyApplied === false) return true;
    const ledger = this.#run.ledger;
    const at = this.#ctx.now();
    const { deferral: held } = outcome;
    const hold = heldFor(outcome.counted);
    const gate = this.#gateMove(event, outcome);
    try {
      if (outcome.remembered) ledger.remember(outcome.remembered);
      if (held)
        await ledger.defer(event.key, at, {
          runId: state.runId,
          deferral: held.runId,
          expiresAt: held.expiresAt,
          log: outcome.logFile,
        });
      else if (hold)
        await ledger.hold(event.key, at, {
          runId: state.runId,
          cause: hold,
          log: outcome.logFile,
          event: eventInfo(event),
        });
      else
        await ledger.finish(event.key, at, {
          runId: state.runId,
          outcome: outcome.result?.outcome ?? "no_hook",
          log: outcome.logFile,
          gate,
        });
      return true;
    } catch (error) {
      state.writeTries += 1;
      this.#ctx.writeFailed(event.key, error);
      this.#ctx.later(event, () => this.#settle(event, outcome, state), this.#ctx.writeDelay(state.writeTries));
      return false;
    }
  }

  /**
   * The state a task event the policy settled goes to: `next` (policy/gate-life.ts) from where the ledger
   * has the key (running: this leader began it) on what the policy did. A move from a state the key is
   * not in is a bug of ours: said, and the policy's state recorded all the same (the task holds it already).
   */
  #gateMove(event: HookEvent, outcome: InvokeOutcome): GateState | undefined {
    const reached = outcome.policyApplied === true ? outcome.gate : undefined;
    if (!reached) return undefined;
    const from = this.#run.ledger.place(event.key) ?? { state: "running" };
    const warn = (message: string): void => this.#ctx.warn(`${event.key}: ${message}`);
    return moveReaching(from, { state: reached.to, cause: reached.cause }, warn)?.state;
  }

  /** A gate that could not judge the work: listed for the lead (holds/held-events.ts), run again when its hold ends. */
  #listHold(event: HookEvent, outcome: InvokeOutcome, state: EventProgress): void {
    const { result } = outcome;
    const hold = heldFor(outcome.counted);
    if (!hold || !result) return;
    const entry = {
      key: event.key,
      event: event.event,
      taskId: event.taskId,
      member: event.member,
      cause: hold,
      kind: result.errorKind ?? null,
      hook: outcome.hook ? gateName(outcome.hook, event.event) : null,
      reason: describeFailure(result, this.#ctx.setup.settings.timeoutMs.value),
      since: this.#ctx.now(),
      runId: result.runId,
      log: outcome.logFile,
    };
    this.#run.holds.held(event, entry, state.attempt, result.errorCode ?? null);
  }

  /** The event's one-line report (and --json's record). */
  #report(event: HookEvent, outcome: InvokeOutcome, state: EventProgress): void {
    const { result, deferral: held } = outcome;
    const hold = heldFor(outcome.counted);
    // Said to the lead in full (the approval command too); the team's words leave it out.
    const summary =
      hold && result
        ? heldSummary(hold, describeFailure(result, this.#ctx.setup.settings.timeoutMs.value))
        : outcome.summary;
    this.#ctx.opts.report({
      kind: "event",
      report: {
        time: this.#ctx.now(),
        key: event.key,
        event: event.event,
        taskId: event.taskId,
        member: event.member,
        hook: outcome.hook?.name ?? null,
        outcome: result?.outcome ?? "no_hook",
        timedOut: result?.timedOut ?? false,
        durationMs: result?.durationMs ?? 0,
        summary,
        actions: outcome.actions,
        ...(outcome.followupTaskId === undefined ? {} : { followupTaskId: outcome.followupTaskId }),
        retry: state.retry,
        logFile: outcome.logFile,
        ...(result ? { runId: result.runId } : {}),
        ...(outcome.runs.length > 1 ? { runIds: outcome.runs.map((r) => r.result.runId) } : {}),
        policyApplied: outcome.policyApplied,
        ...(outcome.noGateInForce ? { noGateInForce: true as const } : {}),
        ...(outcome.nonBlocking ? { nonBlocking: outcome.nonBlocking } : {}),
        ...(result?.verdictUnread !== undefined ? { verdictUnread: result.verdictUnread } : {}),
        ...(held ? { deferral: { runId: held.runId, expiresAt: held.expiresAt } } : {}),
        ...(hold ? { held: hold } : {}),
      },
    });
  }

  /**
   * An event judged again because the ledger and the task disagreed on it: said on the output and to the
   * lead once, when a gate judged it; when none did (no gate in force), nothing was missed, so nothing is said.
   */
  async #sayDisagreement(event: HookEvent, outcome: InvokeOutcome): Promise<boolean> {
    const disagreed = this.#disagreements.get(event.key);
    if (disagreed === undefined) return true;
    const { what, known } = disagreed;
    this.#disagreements.delete(event.key);
    const judged = outcome.policyApplied === true || heldFor(outcome.counted) !== null || outcome.deferral !== null;
    if (!judged) {
      this.#noGate.add(event.key);
      if (this.#ctx.verbose) this.#ctx.whyEvent(event, "no_gate", { detail: `${what}; no gate judged it now either` });
      // A new event (a record with no ledger line) is reported as any other.
      return !known;
    }
    const { identity } = this.#ctx.setup;
    this.#ctx.warn(`${event.key}: judged again: ${what} (a record edited or lost)`);
    await this.#ctx.tellLead(
      sentId("records-disagree", event.key, identity.leadName),
      recordsDisagreeText(event, what, outcome.summary),
      `${event.key}: the lead was not told that its records disagreed`,
    );
    return true;
  }

  /** The policy of `event` could not be applied in all the tries: said loudly, and to the lead's inbox. */
  async #giveUp(event: HookEvent, error: string, state: EventProgress): Promise<void> {
    const { identity } = this.#ctx.setup;
    const how = event.taskId
      ? `pi-teams-hooks run ${event.event} --team-dir ${identity.teamDir} --task ${event.taskId} --apply-policy`
      : "a restart of the leader";
    this.#ctx.warn(
      `${event.key}: policy NOT applied after ${state.policyTries} tries (${error}); held: the leader keeps trying it, the event stays open until it is written (a stop leaves it to the next start), or: ${how}`,
    );
    const text = policyGivenUpText(event, error, how);
    await this.#ctx.tellLead(
      sentId("policy-not-applied", event.key, identity.leadName),
      text,
      `${event.key}: the lead was not told`,
    );
  }

  /** --inbox consume: the notification behind a handled idle event is marked read. */
  async #markHandled(event: HookEvent): Promise<void> {
    const { identity } = this.#ctx.opts.setup;
    const marked = await markRead(identity.teamDir, "team", identity.leadName, (m) => {
      const text = m.text;
      return (
        text.includes("idle_notification") &&
        text.includes(JSON.stringify(event.member ?? "")) &&
        text.includes(JSON.stringify(event.timestamp ?? ""))
      );
    }).catch((error: unknown) => ({ ok: false as const, problem: { message: describeError(error) } }));
    if (!marked.ok) this.#ctx.warn(`cannot mark the idle notification of ${event.key} read: ${marked.problem.message}`);
  }
}

/** The leader's memory of its tasks' gate lives, as the policy reads it (event/remediate.ts GateMemory). */
export function ledgerMemory(ledger: Pick<Ledger, "task" | "remember">): GateMemory {
  return {
    round: (id) => ledger.task(id).round,
    root: (id) => ledger.task(id).root,
    spent: (id) => ledger.task(id).spent,
    spentBy: (id, key) => ledger.task(id).spentBy.includes(key),
    spend: (id, key) => ledger.remember({ spent: { root: id, key } }),
    adopt: (id, root) => ledger.remember({ root: { taskId: id, root } }),
    lower: (id, round) => ledger.remember({ lowered: { taskId: id, round } }),
  };
}

/**
 * Whether the task's gate record says its gate judged `key`: the leader's record of that very event, with
 * its verdict (passed or failed). A held or deferred record is the ledger's to settle.
 */
function recordsJudged(task: Task, key: string): boolean {
  return isJudged(recordedPlaceOf(task, key));
}

function eventInfo(event: HookEvent): LedgerEventInfo {
  return { event: event.event, taskId: event.taskId, member: event.member, timestamp: event.timestamp };
}

/** A write of our own that failed on the disk (E_IO, E_LEDGER: ENOSPC, EFBIG, EIO…): worth trying again. */
function isWriteError(error: unknown): boolean {
  return isHooksError(error) && (error.code === "E_IO" || error.code === "E_LEDGER");
}
