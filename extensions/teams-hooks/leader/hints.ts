/**
 * What the leader watches, and what it does with a hint: a task file looked at (synchronously, so a
 * hint is handled whole before the next), the inbox read, config.json re-read; the periodic reconcile
 * scan that finds what the watchers missed; and the team dir itself, deleted and created again by
 * another process.
 */
import { tellHeldSettings } from "./context.js";
import { existsSync, statSync } from "node:fs";
import path from "node:path";
import type { Task } from "../contract/team-files.js";
import { describeError, unreachable } from "../contract/errors.js";
import type { HookEvent } from "../contract/events.js";
import { isDeferralFileName } from "../deferrals/record.js";
import { TRUST_FILE_NAME, replaceTrust, trustFile } from "../trust/trust-store.js";
import { acquireLeaderLock } from "../team/leader-lock.js";
import { sentId } from "../team/sent-log.js";
import { type DirWatcher, type WatchTarget, watchDirs } from "../team/file-hints.js";
import { type LeaderContext, type Running, forEachYielding } from "./context.js";
import { BASELINE_DETAIL, type WhyReason } from "./notices.js";
import { isTaskFileName, type TaskLook } from "./sources.js";
import { isHistory } from "./startup.js";
import { refreshStartGate, trustHint } from "./gate-trust.js";
import { leaderStateDir } from "../team/paths.js";
import { withSettingsOf } from "../team/setup.js";

/** Where a looked-at event goes: the task as it was read, for the hooks to see. */
type Consider = (event: HookEvent, task?: Task) => void;

export class Hints {
  readonly #ctx: LeaderContext;
  readonly #run: Running;
  /** The watchers (team/file-hints.ts), once armed (`arm`). */
  #watcher: DirWatcher | null = null;
  readonly #consider: Consider;
  #configReload: Promise<void> = Promise.resolve();
  /** The warnings of the last config.json read (the start's, then each reload's): a reload says only new ones. */
  #configWarnings: ReadonlySet<string>;
  #inboxLook: Promise<void> = Promise.resolve();
  #trustLook: Promise<void> = Promise.resolve();
  #stateLook: Promise<void> = Promise.resolve();
  /** `hook-state/`'s inode while it is the one the leader wrote; null while it is gone. */
  #stateDirIno: number | null | undefined;
  #reconcileTimer: NodeJS.Timeout | null = null;
  #reconciling: Promise<void> | null = null;
  /** The team dir's inode while it is there; null while it is gone. */
  #teamDirIno: number | null | undefined;
  #teamDirGoneAt: string | null = null;

  constructor(ctx: LeaderContext, run: Running, consider: Consider) {
    this.#ctx = ctx;
    this.#run = run;
    this.#consider = consider;
    this.#configWarnings = new Set(ctx.opts.setup.warnings);
  }

  /** Notes the team dir as it is at start (its inode), to tell later when it is gone or replaced. */
  noteTeamDir(): void {
    this.#teamDirIno = inodeOf(this.#ctx.setup.identity.teamDir);
  }

  /** What is being looked at now (idle() waits for it). */
  busy(): Array<Promise<void> | null> {
    return [this.#inboxLook, this.#trustLook, this.#stateLook, this.#reconciling];
  }

  stop(): void {
    if (this.#reconcileTimer) clearTimeout(this.#reconcileTimer);
  }

  /** Arms the watchers on `targets()`: hints are taken from here on. */
  async arm(): Promise<void> {
    const ctx = this.#ctx;
    this.#watcher = await watchDirs(this.targets(), {
      poll: ctx.opts.poll,
      pollIntervalMs: ctx.opts.pollIntervalMs,
      onError: (m) => ctx.warn(m),
    });
  }

  /** Closes the watchers (stop). */
  async close(): Promise<void> {
    await this.#watcher?.close();
  }

  targets() {
    const ctx = this.#ctx;
    // The task list and the lead's inbox folder are the team's: made group-writable where the team's folders are.
    const tasks: WatchTarget = {
      dir: ctx.sources.tasksDir,
      shared: true,
      accept: isTaskFileName,
      onHint: (file: string) => this.task(file),
    };
    // --verbose: a file in the task list folder that is not a task file is said too (only the native watcher tells).
    if (ctx.verbose) {
      tasks.onIgnored = (file: string) => {
        if (ctx.state === "watching")
          ctx.why({ reason: "not_task_file", file, taskId: null, detail: "a task file is named <id>.json" });
      };
    }
    const targets: WatchTarget[] = [tasks];
    if (ctx.opts.inbox !== "off") {
      const name = path.basename(ctx.sources.inboxFile);
      const dir = path.dirname(ctx.sources.inboxFile);
      targets.push({ dir, shared: true, accept: (n: string) => n === name, onHint: () => this.inbox() });
    }
    if (ctx.opts.reloadSetup) {
      targets.push({
        dir: ctx.setup.identity.teamDir,
        accept: (n: string) => n === "config.json",
        onHint: () => this.config(),
      });
    }
    const { deferrals } = this.#run;
    targets.push({ dir: deferrals.dir, accept: isDeferralFileName, onHint: (file: string) => deferrals.hint(file) });
    // The lead's approval (`trust` rewrites the record): events held for it run at once.
    targets.push({
      dir: leaderStateDir(ctx.setup.identity.teamDir),
      accept: (n: string) => n === TRUST_FILE_NAME || n === "leader.lock",
      onHint: (file: string) => (path.basename(file) === TRUST_FILE_NAME ? this.trust() : this.stateDir()),
    });
    // hook-state/ itself deleted or replaced (another process cleaning up): written anew from memory at once.
    targets.push({
      dir: ctx.setup.identity.teamDir,
      accept: (n: string) => n === path.basename(leaderStateDir(ctx.setup.identity.teamDir)),
      onHint: () => this.stateDir(),
    });
    return targets;
  }

  /**
   * A watcher or the reconcile scan says `file` may have changed. The look is synchronous (a small
   * local file, leader/sources.ts lookAtTask), so a hint is handled whole before the next one: nothing
   * to track between them.
   */
  task(file: string): void {
    if (this.#ctx.state !== "watching") return;
    try {
      this.look(file);
    } catch (error) {
      this.#ctx.warn(`${file}: not looked at: ${describeError(error)}`); // a bug of ours: said, and the leader goes on
    }
  }

  look(file: string): void {
    const ctx = this.#ctx;
    const first = ctx.firstStart;
    const firstLook = first !== null && !first.looked.has(file);
    if (firstLook) first.looked.add(file);
    const look = ctx.sources.lookAtTask(file);
    if (look.kind === "problem") ctx.warn(look.message);
    else if (look.kind === "task" && look.event) {
      const event = look.event;
      // A claim is nothing without a start gate (no ledger line, no log), and one seen before (the
      // same key at the last look: a worker's progress, the leader's own write) was judged then or
      // seen while no start gate existed. docs/ledger.md, "Event keys".
      if (event.event === "task_started" && (!ctx.startGate || event.key === look.previousKey)) {
        if (ctx.verbose) whyTask(ctx, file, look, ctx.startGate ? "claim_seen" : "no_gate");
        return;
      }
      const judged = firstLook && (!first.claimsOnly || event.event === "task_started");
      // A task a leader judged before carries its gate record: with no ledger to back it (hook-state/
      // deleted or rebuilt), its latest event is judged again, never taken as history. docs/ledger.md.
      if (judged && event.event !== "task_started" && typeof look.task.metadata?.qualityGateEventKey === "string") {
        first.rejudged.push(look.task.id);
        this.#consider(event, look.task);
      } else if (judged && isHistory(look, event, first)) {
        first.history.add(event.key);
        if (ctx.verbose) whyTask(ctx, file, look, "baseline");
      } else this.#consider(event, look.task);
      return;
    }
    if (ctx.verbose) whyLook(ctx, file, look);
  }

  /** `hook-state/` or its leader lock may be gone: written again from memory (stateDirPresent). */
  stateDir(): void {
    if (this.#ctx.state !== "watching") return;
    void this.stateDirPresent();
  }

  /**
   * The leader's own state is where it left it: `hook-state/` with its lock. Another process (an
   * agent, a cleanup) may delete it while the leader runs; then a second leader could start beside
   * this one, and a restart would lose the ledger and the trust record. So it is written again from
   * memory at once — the lock first, then the ledger, the trust record and the held events — said on
   * the leader's output and to the lead. Called on a watcher hint, before each event, and by the
   * reconcile scan. False when it could not be written (no event runs then).
   */
  stateDirPresent(): Promise<boolean> {
    // One look at a time: a hint and two events at once must not each write the state again.
    const look = this.#stateLook.then(() => this.#stateDirPresent());
    this.#stateLook = look.then(
      () => undefined,
      (error: unknown) => this.#ctx.warn(`hook-state: not looked at: ${describeError(error)}`),
    );
    return look.catch(() => false);
  }

  async #stateDirPresent(): Promise<boolean> {
    const ctx = this.#ctx;
    const { teamDir, leadName } = ctx.setup.identity;
    const lockFile = path.join(leaderStateDir(teamDir), "leader.lock");
    const intact = (): boolean => {
      const ino = inodeOf(leaderStateDir(teamDir));
      return ino !== null && ino === this.#stateDirIno && existsSync(lockFile);
    };
    if (intact()) return true;
    // A whole team dir being deleted loses hook-state/ first (rm -r empties a folder before removing
    // it): wait a moment, and leave a team dir gone or replaced to #teamDirPresent (which writes it all
    // when it is back), never creating it here. No event runs meanwhile.
    await new Promise((resolve) => setTimeout(resolve, STATE_SETTLE_MS));
    if (ctx.state !== "watching") return false;
    if (!this.#teamDirIno || inodeOf(teamDir) !== this.#teamDirIno) return false;
    if (intact()) return true;
    const ino = inodeOf(leaderStateDir(teamDir));
    const gone = ino === null ? "was deleted" : ino !== this.#stateDirIno ? "was replaced" : "lost the leader lock";
    try {
      this.#run.lock = await acquireLeaderLock(teamDir);
      await this.#run.ledger.compact();
      if (ctx.trust.record) ctx.trust.set(await replaceTrust(teamDir, ctx.trust.record));
      this.#run.holds.rewrite();
      this.#stateDirIno = inodeOf(leaderStateDir(teamDir));
    } catch (error) {
      ctx.warn(
        `${leaderStateDir(teamDir)} ${gone}, and the leader's state could not be written there again: ${describeError(error)}; no gate runs until it can`,
      );
      return false;
    }
    this.#watcher?.rearm();
    ctx.warn(
      `${leaderStateDir(teamDir)} ${gone} while the leader ran: written again from memory (leader lock, ledger, trust record, held events)`,
    );
    const text = `pi-teams-hooks: ${leaderStateDir(teamDir)} ${gone} while the leader watched ${teamDir}. The leader wrote it again from memory (its lock, so that no second leader starts; the ledger; the trust record; the held events). Who deleted it could also have edited the gates or the record: pi-teams-hooks trust --team-dir ${teamDir} shows what is not as approved.`;
    await ctx.tellLead(
      sentId("state-dir-gone", ctx.now(), leadName),
      text,
      "the lead was not told that hook-state/ was deleted",
    );
    return true;
  }

  /** Notes the state dir's inode once the leader's state is written (the start). */
  noteStateDir(): void {
    this.#stateDirIno = inodeOf(leaderStateDir(this.#ctx.setup.identity.teamDir));
  }

  /**
   * The trust record may have changed: re-read, and events held for approval looked at again (through the queue's
   * order).
   */
  trust(): void {
    const ctx = this.#ctx;
    if (ctx.state !== "watching") return;
    // A record deleted (the team dir with it, often) is the next event's to say (gate-trust.ts): the
    // leader writes its own back when the team dir returns, and must not take the gap for an edit.
    if (!existsSync(trustFile(ctx.setup.identity.teamDir))) return;
    this.#trustLook = this.#trustLook
      .then(() => trustHint(ctx, this.#run.holds))
      .catch((error: unknown) => ctx.warn(`trust record: not looked at: ${describeError(error)}`));
    // `trust` approved held settings (it rewrites the record for that): config.json is read again.
    if (ctx.setup.heldSettings.length > 0) this.config();
  }

  inbox(): void {
    const ctx = this.#ctx;
    if (ctx.state !== "watching") return;
    this.#inboxLook = this.#inboxLook.then(async () => {
      const inbox = await ctx.sources.lookAtInbox({ force: false, unreadOnly: ctx.opts.inbox === "consume" });
      inbox.problems.forEach((p) => ctx.warn(p));
      if (ctx.verbose) {
        for (const u of inbox.unmatched)
          ctx.why({ reason: "report_not_in_file", file: ctx.sources.inboxFile, taskId: u.taskId, detail: u.detail });
      }
      inbox.events.forEach((e) => this.#consider(e));
    });
  }

  /**
   * config.json changed: re-read it whole, and the settings in force are the new ones (one frozen
   * object, team/setup.ts `withSettingsOf`): the next event takes them, one under way keeps those it
   * began with. An invalid `hooks` block, or a config.json that cannot be read, is gone or has no
   * `hooks`, keeps the block in force. Each refusal is said once while it lasts (an editor saving
   * broken JSON twice is one state, not two), and its end is a `config` notice.
   */
  config(): void {
    const ctx = this.#ctx;
    const reload = ctx.opts.reloadSetup;
    if (!reload || ctx.state !== "watching") return;
    this.#configReload = this.#configReload.then(async () => {
      try {
        const before = ctx.setup;
        const next = await reload(before.settings.block.from === "none" ? undefined : before.settings.hooksBlock);
        const refusal = next.settings.refusal;
        const sameRefusal = refusal !== null && refusal === before.settings.refusal;
        const told = new Set(before.heldSettings.map((c) => `${c.path}:${c.to}`));
        tellHeldSettings(
          ctx,
          next.heldSettings.filter((c) => !told.has(`${c.path}:${c.to}`)),
        );
        for (const warning of next.warnings) {
          if (this.#configWarnings.has(warning) || (sameRefusal && next.settings.block.problems.includes(warning)))
            continue;
          ctx.warn(warning);
        }
        this.#configWarnings = new Set(next.warnings);
        const same =
          JSON.stringify(next.settings.hooksBlock) === JSON.stringify(before.settings.hooksBlock) &&
          next.settings.block.from === before.settings.block.from &&
          refusal === before.settings.refusal;
        // Identity and directories stay as started: a leader does not move to another team mid-run.
        ctx.setup = withSettingsOf(before, next);
        if (!same) ctx.opts.report({ kind: "config", valid: next.settings.block.valid, setup: ctx.setup });
        await refreshStartGate(ctx, true); // a handler declared for task_started (or no longer)
      } catch (error) {
        ctx.warn(`config.json not reloaded: ${describeError(error)}; the settings in force stay`);
      }
    });
  }

  scheduleReconcile(): void {
    if (this.#ctx.state !== "watching") return;
    this.#reconcileTimer = setTimeout(() => {
      this.#reconciling = this.#reconcile()
        .catch((error: unknown) => this.#ctx.warn(`reconcile scan failed: ${describeError(error)}`))
        .finally(() => {
          this.#reconciling = null;
          this.scheduleReconcile();
        });
    }, this.#ctx.opts.reconcileMs);
  }

  /** Finds what the watchers missed: every task file whose stat changed, and the inbox. */
  async #reconcile(): Promise<void> {
    const ctx = this.#ctx;
    if (!(await this.#teamDirPresent())) return; // nothing to scan (and nothing to run) while it is gone
    if (!(await this.stateDirPresent())) return;
    await refreshStartGate(ctx, true); // a start gate added or removed since the last scan
    // A trust record changed without a hint: events held for approval looked at again.
    await trustHint(ctx, this.#run.holds);
    // A hold ends when its cause does: a gate put back as it was trusted runs its held events without an approval.
    if (this.#run.holds.size > 0) await this.#run.holds.reconsider({ trustOnly: true });
    // And a fault that is seen cleared: its held events run now, not at their next try.
    this.#run.holds.releaseCleared();
    // The list people read says every event still held (a process of the team's user can rewrite it).
    await this.#run.holds.check();
    const files = await ctx.sources.listTaskFiles();
    ctx.sources.forgetMissing(new Set(files));
    // Small slices (~1 ms at 10,000 files): an event arriving mid-scan waits for one slice at most.
    await forEachYielding(
      files,
      (file) => {
        if (ctx.sources.changedSinceLook(file)) this.task(file);
      },
      64,
    );
    if (ctx.opts.inbox !== "off") this.inbox();
    await this.#run.deferrals.reconcile();
  }

  /**
   * Whether the team dir is there, said loudly when that changes. Another process may delete it (a
   * team runtime cleaning up) and create it again: then the leader's own files in it are written
   * anew from memory (leader lock, ledger), the watchers follow the new folder, and the lead's inbox
   * gets a note that gates did not run meanwhile.
   */
  async #teamDirPresent(): Promise<boolean> {
    const ctx = this.#ctx;
    const dir = ctx.setup.identity.teamDir;
    const ino = inodeOf(dir);
    const before = this.#teamDirIno;
    this.#teamDirIno = ino;
    if (ino === null) {
      if (before !== null) {
        this.#teamDirGoneAt = ctx.now();
        ctx.warn(`team dir ${dir} is gone: no gate runs until it is back (the leader keeps watching for it)`);
      }
      return false;
    }
    if (before === null || (before !== undefined && before !== ino)) await this.#teamDirBack(dir);
    return true;
  }

  async #teamDirBack(dir: string): Promise<void> {
    const ctx = this.#ctx;
    const goneAt = this.#teamDirGoneAt;
    this.#teamDirGoneAt = null;
    try {
      // The old lock file went with the old folder: never release it (that would remove the new one).
      this.#run.lock = await acquireLeaderLock(dir);
      await this.#run.ledger.compact(); // the whole ledger, from memory, into the new hook-state/
      // The trust record too: gone with the folder, it would make every gate untrusted.
      if (ctx.trust.record) ctx.trust.set(await replaceTrust(dir, ctx.trust.record));
      this.#run.holds.rewrite();
      this.noteStateDir();
    } catch (error) {
      ctx.warn(`team dir ${dir} is back, but the leader's state could not be written there: ${describeError(error)}`);
    }
    this.#watcher?.rearm();
    const since = goneAt ? ` (gone since ${goneAt})` : " (it was replaced)";
    ctx.opts.report({ kind: "info", message: `team dir ${dir} is back${since}: watching it again` });
    const { identity } = ctx.setup;
    const text = `pi-teams-hooks: the team dir ${dir} was gone${goneAt ? ` from ${goneAt} to ${ctx.now()}` : " and was created again"}. No quality gate ran meanwhile; what changed while it was gone is looked at now.`;
    await ctx.tellLead(
      sentId("team-dir-back", goneAt ?? ctx.now(), identity.leadName),
      text,
      "the lead was not told that the team dir is back",
    );
  }
}

/**
 * How long a look at a broken `hook-state/` waits before writing it again (a team dir being deleted whole finishes
 * first).
 */
const STATE_SETTLE_MS = 250;

/** The `detail` of each reason a task file's event goes no further. */
const TASK_WHY_DETAIL: Partial<Record<WhyReason, string>> = {
  baseline: BASELINE_DETAIL,
  claim_seen: "the same claim as at the last look",
  no_gate: "a claim is nothing without a start gate",
};

/** `--verbose`: a look at a task file whose event went no further (`reason`). */
function whyTask(ctx: LeaderContext, file: string, look: Extract<TaskLook, { kind: "task" }>, reason: WhyReason): void {
  const event = look.event;
  const detail = TASK_WHY_DETAIL[reason];
  ctx.why({
    reason,
    file,
    taskId: look.task.id,
    ...(event ? { event: event.event, key: event.key } : {}),
    ...(detail ? { detail } : {}),
  });
}

/** `--verbose`: a look at a task file that gave no event at all. */
function whyLook(ctx: LeaderContext, file: string, look: TaskLook): void {
  switch (look.kind) {
    case "unchanged":
      return ctx.why({
        reason: "same_signature",
        file,
        taskId: null,
        detail: "inode, size and mtime unchanged: not read again",
      });
    case "known":
      return ctx.why({
        reason: "same_signature",
        file,
        taskId: null,
        detail: "unchanged since the last leader saved its scan state: not read again",
      });
    case "gone":
      return ctx.why({ reason: "gone", file, taskId: null });
    case "problem":
      // The warning names the file first: the notice has it already.
      return ctx.why({
        reason: "invalid_task",
        file,
        taskId: null,
        detail: look.message.startsWith(`${file}: `) ? look.message.slice(file.length + 2) : look.message,
      });
    case "task":
      return ctx.why({ reason: "no_event", file, taskId: look.task.id, detail: `status ${look.task.status}` });
    default:
      return unreachable(look);
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
