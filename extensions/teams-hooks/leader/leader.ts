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
 * (unless catchUp): see startup.ts isHistory. stopping: no new events, running hooks finish (their timeout
 * bounds this), the ledger is flushed.
 *
 * The parts: startup.ts (start-up scan, first start, crash recovery), hints.ts (watchers, reconcile,
 * config reload, the team dir coming and going), handle.ts (one event from the queue to the ledger),
 * gate-trust.ts (the trust record), leader/deferrals.ts (held gates: decisions applied, deadlines),
 * holds/held-events.ts (held events), on the shared context.ts: the context from construction, and
 * `Running`, what start() makes, never null once made.
 */
import { tellHeldSettings } from "./context.js";
import { readApprovedSettings, writeApprovedSettings } from "../team/approved-settings.js";
import { trustedBy } from "../trust/trust-store.js";
import { groundProblems } from "../team/ownership.js";
import { probeSandbox, sandboxNotice } from "../runner/sandbox.js";
import { HooksError, describeError } from "../contract/errors.js";
import { discoverChains } from "../gates/chain.js";
import { terminateAllRuns } from "../runner/run-hook.js";
import { alsoOnSpawn, createRuntime } from "../runner/runtime.js";
import { type LeaderLock, acquireLeaderLock } from "../team/leader-lock.js";
import { LeaderContext, type Running } from "./context.js";
import { Deferrals } from "./deferrals.js";
import { Holds } from "../holds/held-events.js";
import { refreshStartGate, takeTrust } from "./gate-trust.js";
import { EventHandler } from "./handle.js";
import { Hints } from "./hints.js";
import { Ledger } from "./ledger.js";
import type { LeaderOptions, LeaderState, StartInfo } from "./notices.js";
import {
  BASELINE_DONE_KEY,
  CLAIMS_BASELINE_KEY,
  beginFirstStart,
  endOrphanedRuns,
  recoverInFlight,
  saveScanState,
  scanAtStart,
} from "./startup.js";

export class Leader {
  readonly #ctx: LeaderContext;
  /** What start() made, and the parts that work on it: null before, and when a start failed before the ledger. */
  #started: { run: Running; events: EventHandler; hints: Hints } | null = null;
  /** The leader lock taken by a start that has not made `Running` yet (released if it fails meanwhile). */
  #lock: LeaderLock | null = null;
  /** The start-up scan, under way from `start()` until the `ready` notice. */
  #startupScan: Promise<void> | null = null;
  #stopping: Promise<void> | null = null;

  constructor(opts: LeaderOptions) {
    // The runtime given (or the defaults), with this leader's own spawn listener: its notice and ledger record.
    const runtime = alsoOnSpawn(opts.runtime ?? createRuntime(), (info) => this.#started?.events.spawned(info));
    this.#ctx = new LeaderContext(opts, runtime);
  }

  get state(): LeaderState {
    return this.#ctx.state;
  }

  /**
   * Resolves once events are being taken (the watchers are armed); the start-up scan goes on in the
   * background and ends with the `ready` notice. `idle()` waits for it too.
   */
  async start(): Promise<StartInfo> {
    const ctx = this.#ctx;
    if (ctx.state !== "starting") throw new HooksError("E_INTERNAL", `start() in state ${ctx.state}`);
    const began = performance.now();
    const { opts } = ctx;
    const { identity } = opts.setup;
    // Whether this machine can sandbox a gate, asked of the kernel while the leader loads its state.
    const probe = opts.setup.settings.sandbox.value === "off" ? null : probeSandbox();
    try {
      // A state, logs or gates folder another user can write, or a link in their place: this leader
      // cannot keep its ground there (a ledger line planted, a log forged), so it does not start.
      const ground = groundProblems(identity.teamDir);
      if (ground.length > 0)
        throw new HooksError(
          "E_TEAM_DIR",
          `the leader does not keep its ground in ${identity.teamDir}, so it does not start: ${ground.join("; ")}. As root, examples/leader-user/setup.sh team lays the team dir out for a leader of its own user (docs/security.md)`,
        );
      this.#lock = await acquireLeaderLock(identity.teamDir);
      const ledger = await Ledger.open(identity.teamDir, (m) => ctx.warn(m));
      ctx.opened(ledger);
      const { run, events, hints } = this.#make(this.#lock, ledger);
      this.#lock = null;
      await endOrphanedRuns(ctx, ledger);
      // Each event's whole chain (both layers' files, then the handlers), as its events will find it.
      const chains = await discoverChains(opts.setup.hooksDir, opts.setup.teamHooksDir, opts.setup.settings.handlers);
      opts.report({ kind: "hooks", hooks: chains });
      // How the gates run, said at every start: never silent when they are not sandboxed.
      await probe;
      const sandbox = sandboxNotice(opts.setup.settings.sandbox);
      if (sandbox.level === "info") opts.report({ kind: "info", message: sandbox.message });
      else ctx.warn(sandbox.message);
      await takeTrust(ctx, ledger, chains);
      // The settings that can weaken a verdict, taken as approved at the first start (as the gates are);
      // a change held for approval is told to the lead (its warning is on the output already).
      if (readApprovedSettings(identity.teamDir, opts.env) === null)
        await writeApprovedSettings(
          identity.teamDir,
          opts.setup.settings.hooksBlock,
          trustedBy("the leader, on first use"),
          opts.env,
        );
      tellHeldSettings(ctx, opts.setup.heldSettings);
      const firstStart = ledger.fresh || !ledger.has(BASELINE_DONE_KEY);
      // A ledger of a leader that did not know claims: the claims in progress now are history too.
      const claimsFirst = !firstStart && !ledger.has(CLAIMS_BASELINE_KEY);
      if ((firstStart || claimsFirst) && !opts.catchUp)
        ctx.firstStart = beginFirstStart(ctx, ledger.fresh, claimsFirst);
      await refreshStartGate(ctx, false, chains.find((c) => c.event === "task_started")?.chain);
      // before any event of this start can be in flight
      await recoverInFlight(ctx, ledger, (event) => events.enqueue(event, true));
      // Held gates: decisions recorded while no leader ran are applied, overdue ones expire.
      await run.deferrals.start();
      // Events held because their gate could not judge the work run again: a restart is one way a hold ends.
      run.holds.start();
      // Hints are taken from here on: the watchers are armed before the start-up scan lists the folder,
      // so a file written meanwhile is either listed or hinted (or both).
      ctx.state = "watching";
      await hints.arm();
      if (opts.inbox !== "off") {
        // On a first start, the notifications already in the inbox are history.
        const inbox = await ctx.sources.lookAtInbox({ force: true, unreadOnly: opts.inbox === "consume" });
        inbox.problems.forEach((p) => ctx.warn(p));
        for (const event of inbox.events) {
          if (ctx.firstStart && !ctx.firstStart.claimsOnly) ctx.firstStart.history.add(event.key);
          else events.consider(event);
        }
      }
      const markers = firstStart ? [BASELINE_DONE_KEY, CLAIMS_BASELINE_KEY] : claimsFirst ? [CLAIMS_BASELINE_KEY] : [];
      this.#startupScan = scanAtStart(ctx, ledger, markers, began, (file) => hints.look(file))
        .catch((error: unknown) =>
          ctx.warn(`start-up scan failed: ${describeError(error)}; the reconcile scan goes on looking`),
        )
        .finally(() => hints.scheduleReconcile());
      return { hooks: chains };
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  /**
   * What start() makes once the ledger is open, before any event can run: the held gates and events,
   * the hints (the team dir and `hook-state/` noted as they are now) and the event handler, each on the
   * same `Running`; their own start is start()'s, in its order.
   */
  #make(lock: LeaderLock, ledger: Ledger): { run: Running; events: EventHandler; hints: Hints } {
    const ctx = this.#ctx;
    let hints: Hints | null = null;
    let events: EventHandler | null = null;
    const run: Running = {
      ledger,
      lock,
      deferrals: new Deferrals(ctx, ledger),
      holds: new Holds(ctx, ledger, (event) => events?.enqueue(event, true)),
      relook: (taskId) => hints?.task(ctx.sources.forget(taskId)),
      stateCheck: async () => (hints ? hints.stateDirPresent() : true),
    };
    events = new EventHandler(ctx, run);
    const handler = events;
    hints = new Hints(ctx, run, (event, task) => handler.consider(event, task));
    hints.noteTeamDir();
    hints.noteStateDir();
    this.#started = { run, events, hints };
    return this.#started;
  }

  /**
   * Resolves when no event waits or runs (and neither the inbox, a reconcile scan nor the start-up scan is being looked
   * at).
   */
  async idle(): Promise<void> {
    for (;;) {
      await Promise.all([...(this.#started?.hints.busy() ?? []), this.#startupScan]);
      await this.#ctx.queue.onIdle();
      if (this.#ctx.queue.size === 0) return;
    }
  }

  /** Stops taking events, lets running hooks finish (bounded by their timeout), flushes the ledger. */
  stop(): Promise<void> {
    this.#stopping ??= this.#shutdown();
    return this.#stopping;
  }

  async #shutdown(): Promise<void> {
    const ctx = this.#ctx;
    const started = this.#started;
    // A leader that never took events (refused by another's lock, a start that failed) did not stop:
    // it never started, and its error says why.
    const watched = ctx.state === "watching";
    ctx.state = "stopping";
    started?.hints.stop();
    started?.run.deferrals.stop();
    // Events waiting for a new try stay in flight in the ledger (or unrecorded): the next start takes them.
    for (const timer of ctx.retryTimers) clearTimeout(timer);
    ctx.retryTimers.clear();
    await started?.hints.close();
    await this.#startupScan; // it stops at its next file
    const dropped = await ctx.queue.close();
    await ctx.notes;
    await started?.run.holds.settled();
    await terminateAllRuns(); // a safety net: the queue has waited for every running hook
    if (started) {
      await saveScanState(ctx);
      await started.run.ledger.close();
      await started.run.lock.release();
    }
    await this.#lock?.release(); // a start that failed before its ledger opened
    ctx.state = "stopped";
    if (watched) ctx.opts.report({ kind: "stopped", dropped });
  }
}
