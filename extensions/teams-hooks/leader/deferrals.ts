/**
 * The leader's held gates (hook-state/deferrals/, deferrals/record.ts). The leader holds the team's
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
 *
 * The folder is as writable by the agents the gates judge as by the leader (docs/security.md), so a
 * file is held to what its gate held (event/deferral-check.ts) before anything is done with it: a
 * key, a deadline or any other held field edited is put back; a file under another run's name is
 * moved aside and written again from what the gate held, and so is one that cannot be read when its
 * deadline comes (not before: a person may be fixing it); a deferral no gate held is refused; a file
 * gone (the folder deleted, the team dir made again) is written again at the next reconcile scan;
 * `applied` is believed only with its decision log. Each is said (leader/deferral-guard.ts). Only
 * the decision is the deciders' to write.
 */
import { existsSync } from "node:fs";
import { readdir } from "node:fs/promises";
import path from "node:path";
import { describeError, errnoCode } from "../contract/errors.js";
import type { HookEvent } from "../contract/events.js";
import { type ApplySettings, EXPIRY_BY, applyDecision, appliedUnderText } from "../event/deferral-decision.js";
import { settingsRedactor } from "../runner/redact.js";
import {
  type DeferralRecord,
  deferralFile,
  deferralsDir,
  isDeferralFileName,
  readDeferral,
  readDeferralFile,
  updateDeferral,
} from "../deferrals/record.js";
import { checkDeferral, describeChanges, heldFields } from "../event/deferral-check.js";
import { mkdirUnder } from "../team/json-file.js";
import { formatSpan } from "../text/messages.js";
import type { Ledger } from "./ledger.js";
import type { LeaderOptions, LeaderState } from "./notices.js";
import type { Runtime } from "../runner/runtime.js";
import type { TeamSetup } from "../team/setup.js";
import { DeferralGuard, restoreFromLog } from "./deferral-guard.js";
import { ledgerMemory } from "./handle.js";
import { type GateState, moveReaching } from "../policy/gate-life.js";

/**
 * The longest a timer waits before looking again (setTimeout takes at most 2^31-1 ms; a deadline can be 30 days off).
 */
const MAX_TIMER_MS = 6 * 3_600_000;

/** What the held gates use of the leader (its context, leader/context.ts, is one). */
export interface DeferralsLeader {
  /** The team and the settings in force (a config.json change puts new ones here). */
  readonly setup: TeamSetup;
  readonly state: LeaderState;
  readonly runtime: Runtime;
  /** The environment a decision is applied with, and where its `event` notice goes. */
  readonly opts: Pick<LeaderOptions, "env" | "report">;
  warn(message: string): void;
  /** The time now, as an ISO string. */
  now(): string;
  /** Runs `job` through the queue, after the events of the same task queued before it. */
  inOrder(event: HookEvent, job: () => Promise<void>): void;
  /** Runs `step` for `event` after `delayMs`, through the queue in the event's order (not once stopping). */
  later(event: HookEvent, step: () => Promise<void>, delayMs: number): void;
}

/** What the held gates read and write of the ledger. */
export type DeferralsLedger = Pick<
  Ledger,
  "get" | "has" | "deferred" | "defer" | "finish" | "remember" | "task" | "place"
>;

export class Deferrals {
  readonly #ctx: DeferralsLeader;
  readonly #ledger: DeferralsLedger;
  /** Held gates without a decision, by run id: the timer's business. */
  readonly #open = new Map<string, DeferralRecord>();
  /** Names of applied deferral files: never looked at again. */
  readonly #closed = new Set<string>();
  /** Names of files refused (no gate held them): looked at again only when a watcher says they changed. */
  readonly #refused = new Set<string>();
  /** Run ids whose application is queued or under way (a hint and a scan must not queue one twice). */
  readonly #queued = new Set<string>();
  /**
   * Every deferral not closed, as last read and held to what its gate held: what a file edited,
   * replaced or gone is checked against and written again from.
   */
  readonly #known = new Map<string, DeferralRecord>();
  readonly #guard: DeferralGuard;
  /** Held keys of the ledger that neither a deferral file nor a log backs (found at the start): the run they name. */
  readonly #unbacked = new Map<string, string>();
  #timer: NodeJS.Timeout | null = null;
  /** The timer fires no sooner than this (an expiry that failed is tried again a second later, not at once). */
  #notBefore = 0;

  constructor(ctx: DeferralsLeader, ledger: DeferralsLedger) {
    this.#ctx = ctx;
    this.#ledger = ledger;
    this.#guard = new DeferralGuard(ctx, ledger, this.#known);
  }

  get dir(): string {
    return deferralsDir(this.#ctx.setup.identity.teamDir);
  }

  /** At start, after crash recovery: every deferral file, and the held keys of the ledger whose file is gone. */
  async start(): Promise<void> {
    const teamDir = this.#ctx.setup.identity.teamDir;
    mkdirUnder(teamDir, this.dir); // watched from the start: it must exist
    for (const held of this.#ledger.deferred()) {
      const read = await readDeferralFile(deferralFile(teamDir, held.deferral));
      if (!read.ok && read.problem.kind === "missing") {
        const restored = await restoreFromLog(this.#ctx, held.key, held.log, held.deferral);
        if (restored === null) this.#unbacked.set(held.key, held.deferral);
      }
    }
    await this.reconcile();
  }

  /**
   * The run a held key of the ledger names when neither its deferral file nor its log says a gate held
   * it (a `defer` line written by hand, or both lost), else null. The task's gate record decides: one
   * that names the run keeps it held; one that does not has the completion judged (leader/handle.ts).
   */
  unbacked(key: string): string | null {
    return this.#unbacked.get(key) ?? null;
  }

  /**
   * Every file not known as applied, looked at (the start, and the reconcile scan: what a watcher
   * missed); then the file of every deferral still open that is gone, written again.
   */
  async reconcile(): Promise<void> {
    let names: string[];
    try {
      names = await readdir(this.dir);
      this.#guard.untell(`${this.dir}\0list`);
    } catch (error) {
      if (errnoCode(error) !== "ENOENT") {
        // Said once while it lasts: the reconcile scan comes back every few seconds.
        this.#guard.tell(
          `${this.dir}\0list`,
          `${this.dir}: cannot list the deferrals (${describeError(error)}); decisions wait until it can be read`,
        );
        return;
      }
      names = []; // the folder is gone (deleted, or the team dir made again): its files are written again below
    }
    for (const name of names)
      if (isDeferralFileName(name) && !this.#closed.has(name) && !this.#refused.has(name))
        await this.#look(path.join(this.dir, name));
    const present = new Set(names);
    for (const record of [...this.#known.values()]) {
      if (!present.has(path.basename(this.#guard.file(record.runId)))) await this.#guard.rewrite(record, "is gone");
    }
    this.#arm();
  }

  /** A watcher saw a deferral file written. */
  hint(file: string): void {
    if (this.#closed.has(path.basename(file))) return;
    this.#refused.delete(path.basename(file));
    void this.#look(file)
      .then(() => this.#arm())
      .catch((error: unknown) => this.#ctx.warn(`${file}: not looked at: ${describeError(error)}`));
  }

  /** This leader has just held a gate (its file is written, its ledger record too). */
  held(record: DeferralRecord): void {
    if (!this.#known.has(record.runId)) this.#known.set(record.runId, record);
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
      if (read.problem.kind === "missing") return;
      // Left for now (a person may be fixing it; decide refuses it meanwhile), but not past the deadline: see #expire.
      this.#guard.tell(
        file,
        `${read.problem.message}; its gate stays held (decide cannot settle it) until the file is fixed or moved aside; at its deadline it is moved aside and the gate expires`,
      );
      return;
    }
    let record = read.value;
    const teamDir = this.#ctx.setup.identity.teamDir;
    const guard = this.#guard;
    if (path.basename(guard.file(record.runId)) !== path.basename(file)) {
      const owner = await guard.ownerOf(path.basename(file));
      const what = `${file}: holds run ${record.runId}, but a deferral is named by its run id (${path.basename(guard.file(record.runId))})`;
      if (owner) return guard.replace(file, owner, what);
      guard.tell(file, `${what}: refused; nothing is done with it`);
      return;
    }
    const state = this.#ledger.get(record.key);
    if (
      record.applied &&
      state !== undefined &&
      !(state.state === "held" && state.cause === "deferral" && state.deferral === record.runId)
    ) {
      this.#forget(record.runId); // applied, and its key closed (or held by another run): nothing left to do
      return;
    }
    const check = await checkDeferral(record, {
      reference: this.#known.get(record.runId) ?? null,
      ledger: guard.ledgerHold(record),
      teamDir: this.#ctx.setup.identity.teamDir,
    });
    if (check.kind === "refused") {
      guard.tell(file, `${file}: refused: ${check.problem}; nothing is done with it`);
      this.#refused.add(path.basename(file)); // its log is not read again at every reconcile scan
      return;
    }
    guard.untell(file);
    if (check.kind === "differs") {
      // Said each time: each is an edit (once put back, the file agrees until the next one).
      const changes = describeChanges(record, check.reference, check.fields);
      const held = heldFields(check.reference);
      try {
        record = { ...((await updateDeferral(teamDir, record.runId, (r) => ({ ...r, ...held }))) ?? record), ...held };
        this.#ctx.warn(`${file}: changed since its gate was held: ${changes}; put back as held`);
      } catch (error) {
        guard.tell(
          `${file}\0unwritable`,
          `${file}: changed since its gate was held: ${changes}; cannot be put back (${describeError(error)}): what its gate held is what applies`,
        );
        record = { ...record, ...held };
      }
    }
    if (record.applied) {
      const unclaimed = await guard.unclaimed(file, record, check.reference);
      if (unclaimed === null) {
        this.#forget(record.runId);
        await this.#close(record);
        return;
      }
      record = unclaimed;
    }
    this.#known.set(record.runId, record);
    await this.#know(record);
    if (record.decision) {
      this.#open.delete(record.runId);
      this.#enqueue(record);
    } else {
      this.#open.set(record.runId, record);
    }
  }

  #enqueue(record: DeferralRecord): void {
    if (
      this.#queued.has(record.runId) ||
      this.#closed.has(path.basename(deferralFile(this.#ctx.setup.identity.teamDir, record.runId)))
    )
      return;
    if (this.#ctx.state === "stopping" || this.#ctx.state === "stopped") return;
    this.#queued.add(record.runId);
    this.#ctx.inOrder(eventOf(record), () => this.#apply(record, 0));
  }

  async #apply(record: DeferralRecord, tries: number): Promise<void> {
    const ctx = this.#ctx;
    const reference = this.#known.get(record.runId);
    const app = await applyDecision(ctx.setup.identity.teamDir, record.runId, {
      ...settingsOf(ctx, this.#ledger),
      ...(reference ? { reference } : {}),
    });
    if (app.kind === "pending") {
      const delays = ctx.runtime.retry.policyMs;
      const delay = delays[tries];
      if (delay !== undefined) {
        ctx.warn(
          `${record.key}: the decision on deferred run ${record.runId} is not applied yet: ${app.error}; trying again in ${formatSpan(delay)} (${tries + 1} of ${delays.length})`,
        );
        ctx.later(eventOf(record), () => this.#apply(record, tries + 1), delay);
        return;
      }
      ctx.warn(
        `${record.key}: the decision on deferred run ${record.runId} NOT applied after ${tries + 1} tries (${app.error}); it stays recorded: the next start of the leader applies it`,
      );
    }
    this.#queued.delete(record.runId);
    if (app.kind !== "applied") return;
    this.#forget(record.runId);
    // What the decision did to the task's gate life (a round, a root, a unit spent) rides on the close's flush.
    if (app.remembered) {
      try {
        this.#ledger.remember(app.remembered);
      } catch (error) {
        ctx.warn(`ledger: ${describeError(error)}`);
      }
    }
    await this.#close(app.record, app.gate);
    // Applied before (a look that read the file while this leader was writing it queued it twice): said once.
    if (app.already) return;
    if (app.appliedUnder.changed.length > 0)
      ctx.warn(
        `${record.key}: the decision on deferred run ${record.runId} was applied ${appliedUnderText(app.appliedUnder)}`,
      );
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
        runId: app.result.runId,
        policyApplied: true,
        ...(decision
          ? {
              decision: {
                deferredRunId: record.runId,
                decision: decision.decision,
                by: decision.by,
                waitedMs: app.waitedMs,
              },
            }
          : {}),
      },
    });
  }

  /**
   * A held key the ledger does not know (held by `run --apply-policy`): recorded as held, so that this
   * leader never runs its gate again meanwhile (its start-up scan comes after this).
   */
  async #know(record: DeferralRecord): Promise<void> {
    const ledger = this.#ledger;
    if (ledger.has(record.key)) return;
    await ledger
      .defer(record.key, this.#ctx.now(), {
        runId: record.eventRunId,
        deferral: record.runId,
        expiresAt: record.expiresAt,
        log: record.logFile,
      })
      .catch((error: unknown) =>
        this.#ctx.warn(`${record.key}: the ledger could not record the held gate (${describeError(error)})`),
      );
  }

  /**
   * The state a decision took the held key to (`gate`, what its plan reached), as `next` (policy/gate-life.ts)
   * moves it from where the ledger has it (held for the decision; unknown: a `run --apply-policy`'s). A move
   * `next` refuses is a bug of ours: said, and the plan's state recorded all the same.
   */
  #decided(key: string, gate: GateState | undefined): GateState | undefined {
    if (!gate) return gate;
    const from = this.#ledger.place(key) ?? { state: "held", cause: "deferral" };
    return moveReaching(from, { state: gate }, (message) => this.#ctx.warn(`${key}: ${message}`))?.state ?? gate;
  }

  /**
   * An applied deferral: its key is done in the ledger (if the ledger holds it, or does not know it at all: a `run
   * --apply-policy`).
   */
  async #close(record: DeferralRecord, gate?: GateState): Promise<void> {
    const ledger = this.#ledger;
    const state = ledger.get(record.key);
    if (
      state !== undefined &&
      !(state.state === "held" && state.cause === "deferral" && state.deferral === record.runId)
    )
      return;
    const outcome =
      record.decision?.decision === "allow" ? "passed" : record.decision?.decision === "deny" ? "failed" : "error";
    await ledger
      .finish(record.key, this.#ctx.now(), {
        runId: record.eventRunId,
        outcome,
        log: record.applied?.logFile ?? null,
        gate: this.#decided(record.key, gate),
      })
      .catch((error: unknown) =>
        this.#ctx.warn(
          `${record.key}: the ledger could not record the decision (${describeError(error)}); the next start does`,
        ),
      );
  }

  /** A timer at the soonest deadline of the open deferrals. */
  #arm(): void {
    this.stop();
    if (this.#ctx.state === "stopping" || this.#ctx.state === "stopped") return;
    let soonest = Number.POSITIVE_INFINITY;
    for (const record of this.#open.values()) soonest = Math.min(soonest, Date.parse(record.expiresAt));
    if (!Number.isFinite(soonest)) return;
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, soonest - Date.now(), this.#notBefore - Date.now()));
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
      const held = heldFields(record);
      const expire = (r: DeferralRecord): DeferralRecord | undefined =>
        r.decision ? undefined : { ...r, ...held, decision: { decision: "expired", by: EXPIRY_BY, at } };
      const teamDir = this.#ctx.setup.identity.teamDir;
      const file = this.#guard.file(runId);
      let decided: DeferralRecord | null;
      try {
        // What the agents may have done to it meanwhile does not keep the gate from its deadline: an
        // unreadable file is moved aside, one gone or of another run written again, then it expires.
        const read = await readDeferral(teamDir, runId);
        if (read && !read.ok) await this.#guard.replace(file, record, read.problem.message);
        else if (read === null)
          await this.#guard.rewrite(record, existsSync(file) ? "holds another run's record" : "is gone");
        decided = await updateDeferral(teamDir, runId, expire);
      } catch (error) {
        this.#guard.tell(
          `${file}\0expire`,
          `${file}: cannot be expired now (${describeError(error)}); trying again every second`,
        );
        this.#open.set(runId, record);
        this.#notBefore = Date.now() + 1_000;
        continue;
      }
      if (decided?.decision) {
        this.#known.set(runId, { ...decided, ...held });
        this.#enqueue({ ...decided, ...held });
      }
    }
  }

  /** Applied (or no longer this leader's business): its file is never looked at again. */
  #forget(runId: string): void {
    this.#open.delete(runId);
    this.#known.delete(runId);
    this.#closed.add(path.basename(this.#guard.file(runId)));
  }
}

function settingsOf(ctx: DeferralsLeader, ledger: DeferralsLedger): ApplySettings {
  const { setup, opts } = ctx;
  return {
    setup,
    redact: settingsRedactor(opts.env, setup.settings, setup.hooksDir),
    runtime: ctx.runtime,
    memory: ledgerMemory(ledger),
  };
}

/** The event a deferral holds, for the queue's group and the tries again. */
function eventOf(record: DeferralRecord): HookEvent {
  return {
    key: record.key,
    event: record.event,
    taskId: record.taskId,
    member: record.member,
    timestamp: record.timestamp,
    source: "task",
  };
}
