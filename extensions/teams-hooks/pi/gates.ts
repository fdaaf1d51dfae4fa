/**
 * The quality-gate leader inside a pi leader session: the same Leader `pi-teams-hooks watch` runs,
 * in-process, for the team the session works on. It follows that team the way pi-agent-teams does
 * (the session's id names it; `/team attach` moves the session to another team for a while), waits
 * for the team dir when it is not there yet, and stops on shutdown and on every switch. What it does
 * reaches the user as pi notifications: passes as one info line, failures as warnings.
 */
import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { describeError } from "../contract/errors.js";
import { Leader } from "../leader/leader.js";
import type { EventReport, LeaderNotice } from "../leader/notices.js";
import { terminateAllRuns } from "../runner/run-hook.js";
import { createRuntime } from "../runner/runtime.js";
import { attachedTeam, piTeamsRoot } from "../team/attach-claim.js";
import { isSafeName } from "../team/paths.js";
import { resolveTeamSetup, type TeamSetup } from "../team/setup.js";
import { formatDuration, nonBlockingPass } from "../text/messages.js";
import type { NotifyLevel } from "./pi-api.js";

type Env = Readonly<Record<string, string | undefined>>;

/** `starting`: a leader is being stopped or started (a team switch); `watching` only once it watches. */
type Phase = "off" | "waiting" | "starting" | "watching" | "failed";

export interface GateStatus {
  phase: Phase;
  /** For people: why off, what it waits for, why it failed, or what it watches. */
  detail: string;
  teamDir: string | null;
  /** How the team dir was chosen: `PI_TEAMS_HOOKS_TEAM_DIR`, the session's team, or an attached team. */
  how: string | null;
  setup: TeamSetup | null;
  /** The newest handled events, newest last. */
  recent: readonly EventReport[];
}

interface GateServiceOptions {
  env: Env;
  processCwd: string;
  pid?: number;
  home?: string;
  /** How often the attached team is looked for (and a failed start tried again). */
  followMs?: number;
  /** How often a team dir that is not there yet is looked for. */
  waitMs?: number;
  /** How long shutdown lets running gates finish before it ends them. */
  stopGraceMs?: number;
  /** The leader's reconcile scan, which also notices the team dir gone and back (as `watch --reconcile-ms`). */
  reconcileMs?: number;
}

const RECENT = 20;

/** What a recovered event's notice says in pi, by how the leader took it back. */
const RECOVERED_HOW: Readonly<Record<"logged" | "retry" | "deferred" | "held", string>> = {
  logged: "it had finished",
  retry: "running it again",
  deferred: "held for a decision, as before",
  held: "held again, as before, and run again at the start",
};

export class GateService {
  readonly #opts: Required<Omit<GateServiceOptions, "home">> & { home: string | undefined };
  /** What every leader of this pi runs on (runner/runtime.ts), built once. */
  readonly #runtime = createRuntime();
  #notify: (text: string, level: NotifyLevel) => void = () => {};
  #sessionId: string | null = null;
  #leader: Leader | null = null;
  #setup: TeamSetup | null = null;
  #teamDir: string | null = null;
  #how: string | null = null;
  #phase: Phase = "off";
  #detail = "not started";
  #lastFailure: string | null = null;
  #timer: NodeJS.Timeout | null = null;
  #chain: Promise<void> = Promise.resolve();
  #recent: EventReport[] = [];
  #ended = false;

  constructor(opts: GateServiceOptions) {
    this.#opts = {
      pid: process.pid,
      followMs: 5000,
      waitMs: 1000,
      stopGraceMs: 5000,
      reconcileMs: 5000,
      ...opts,
      home: opts.home,
    };
  }

  get status(): GateStatus {
    return {
      phase: this.#phase,
      detail: this.#detail,
      teamDir: this.#teamDir,
      how: this.#how,
      setup: this.#setup,
      recent: [...this.#recent],
    };
  }

  /** Marks the service off with a reason (the switch said no). */
  off(why: string): void {
    this.#phase = "off";
    this.#detail = why;
  }

  /** A session started (or was replaced): follow its team from now on. */
  async begin(sessionId: string, notify: (text: string, level: NotifyLevel) => void): Promise<void> {
    this.#ended = false;
    this.#sessionId = sessionId;
    this.#notify = notify;
    await this.#serialized(() => this.#follow());
  }

  /** The session ends: stop following, stop the leader (running gates get the grace, then end). */
  async end(): Promise<void> {
    this.#ended = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#serialized(async () => {
      await this.#stopLeader();
      this.#phase = "off";
      this.#detail = "stopped with the session";
    });
  }

  /** The team a command or the tool works on: the one followed, else where it would be. */
  async teamDir(): Promise<string | null> {
    return this.#teamDir ?? (await this.#target())?.dir ?? null;
  }

  #serialized(step: () => Promise<void>): Promise<void> {
    const next = this.#chain.then(step, step);
    this.#chain = next.catch(() => {});
    return next;
  }

  #schedule(): void {
    if (this.#ended) return;
    if (this.#timer) clearTimeout(this.#timer);
    const fixed = Boolean(this.#opts.env.PI_TEAMS_HOOKS_TEAM_DIR);
    const again =
      this.#phase === "waiting" ? this.#opts.waitMs : fixed && this.#phase === "watching" ? null : this.#opts.followMs;
    if (again === null) return;
    this.#timer = setTimeout(() => void this.#serialized(() => this.#follow()), again);
    this.#timer.unref(); // never what keeps pi running
  }

  async #target(): Promise<{ dir: string; how: string } | null> {
    const { env } = this.#opts;
    const fixed = env.PI_TEAMS_HOOKS_TEAM_DIR?.trim();
    if (fixed) return { dir: path.resolve(this.#opts.processCwd, fixed), how: "PI_TEAMS_HOOKS_TEAM_DIR" };
    const id = this.#sessionId;
    if (!id || !isSafeName(id)) return null;
    const root = piTeamsRoot(env, this.#opts.home);
    const attached = await attachedTeam(root, id, this.#opts.pid, Date.now());
    if (attached) return { dir: attached, how: `attached to team ${path.basename(attached)} (/team attach)` };
    return { dir: path.join(root, id), how: "the session's team" };
  }

  /** Looks at where the session's team is now, and moves the leader there if it moved. */
  async #follow(): Promise<void> {
    if (this.#ended) return;
    try {
      const target = await this.#target();
      if (!target) {
        this.#phase = "failed";
        this.#detail = `no team: the session id ${JSON.stringify(this.#sessionId)} cannot name a team dir`;
        return;
      }
      if (target.dir !== this.#teamDir) {
        const moved = this.#teamDir !== null;
        if (this.#leader) {
          this.#phase = "starting";
          this.#detail = `stopping the leader of ${this.#teamDir}, to follow ${target.how}`;
        }
        await this.#stopLeader();
        this.#teamDir = target.dir;
        this.#how = target.how;
        this.#lastFailure = null;
        if (moved) this.#notify(`quality gates: following ${target.how}: ${target.dir}`, "info");
      } else {
        this.#how = target.how;
      }
      if (this.#leader === null) await this.#start(target.dir);
    } finally {
      this.#schedule();
    }
  }

  async #start(dir: string): Promise<void> {
    if (!isDirectory(dir)) {
      this.#phase = "waiting";
      this.#detail = `waiting for the team dir ${dir} (pi-agent-teams creates it when the team starts)`;
      return;
    }
    const { env, processCwd } = this.#opts;
    this.#phase = "starting";
    this.#detail = `starting the leader of pi-teams-hooks watch for ${dir}`;
    let leader: Leader | null = null;
    try {
      const setup = await resolveTeamSetup({ teamDir: dir, env, processCwd });
      for (const warning of setup.warnings) this.#notify(`quality gates: ${warning}`, "warning");
      leader = new Leader({
        setup,
        env,
        concurrency: 1,
        inbox: "observe",
        reconcileMs: this.#opts.reconcileMs,
        poll: false,
        pollIntervalMs: 250,
        catchUp: false,
        runtime: this.#runtime,
        reloadSetup: (lastValidHooks) => resolveTeamSetup({ teamDir: dir, env, processCwd, lastValidHooks }),
        report: (notice) => this.#onNotice(notice),
      });
      await leader.start();
      this.#leader = leader;
      this.#setup = setup;
      this.#phase = "watching";
      this.#detail = `since ${new Date().toISOString().slice(0, 19).replace("T", " ")} (UTC), the leader of pi-teams-hooks watch in this pi`;
      this.#lastFailure = null;
    } catch (error) {
      if (leader) await leader.stop().catch(() => {});
      const message = describeError(error);
      this.#phase = "failed";
      this.#detail = `not running: ${message}`;
      // Tried again at each look; said again only when the reason changes.
      if (message !== this.#lastFailure) this.#notify(`quality gates not running for ${dir}: ${message}`, "error");
      this.#lastFailure = message;
    }
  }

  async #stopLeader(): Promise<void> {
    const leader = this.#leader;
    this.#leader = null;
    this.#setup = null;
    if (!leader) return;
    const stopped = leader.stop();
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), this.#opts.stopGraceMs)));
    const first = await Promise.race([stopped.then(() => "done" as const), grace]);
    clearTimeout(timer);
    // A gate still running after the grace is ended as a timeout would end it; the ledger keeps its
    // event, so the next leader for this team runs it again.
    if (first === "late") await terminateAllRuns();
    await stopped;
  }

  #onNotice(notice: LeaderNotice): void {
    switch (notice.kind) {
      case "event": {
        this.#recent.push(notice.report);
        if (this.#recent.length > RECENT) this.#recent.shift();
        const line = outcomeLine(notice.report);
        if (line) this.#notify(line.text, line.level);
        return;
      }
      case "warning":
        this.#notify(`quality gates: ${notice.message}`, "warning");
        return;
      case "info":
        this.#notify(`quality gates: ${notice.message}`, "info");
        return;
      case "config":
        if (notice.valid) this.#setup = notice.setup;
        else
          this.#notify(
            `quality gates: config.json's hooks block was refused (${notice.setup.settings.block.from === "kept" ? "the last valid block stays" : "defaults apply"})`,
            "warning",
          );
        return;
      case "recovered":
        this.#notify(`quality gates: recovered ${notice.key} after a restart: ${RECOVERED_HOW[notice.how]}`, "info");
        return;
      default:
        return;
    }
  }
}

/**
 * One handled event as a notification: a task event's pass as info (`Gate on_task_completed.sh passed
 * for task #3 (120ms)`), a failure as a warning with its summary and what the policy did; an idle
 * pass and an event without a hook say nothing. A pass that let an error through is a warning that
 * says it (`Gate on_idle.sh passed (non-blocking error: exit code 1 • …) for idle ada`), idle too.
 */
export function outcomeLine(r: EventReport): { text: string; level: NotifyLevel } | null {
  if (r.outcome === "no_hook") return null;
  const subject = r.taskId
    ? `${r.event === "task_started" ? "the claim of " : ""}task #${r.taskId}`
    : r.member
      ? `idle ${r.member}`
      : r.event;
  const hook = r.hook ?? r.event;
  if (r.outcome === "deferred")
    return {
      text: `Gate ${hook} deferred for ${subject}: ${r.summary} (run ${r.deferral?.runId ?? "?"}; ${r.actions.join(", ")})`,
      level: "info",
    };
  const by = r.decision
    ? r.decision.decision === "expired"
      ? " (no decision before its deadline)"
      : ` (decided by ${r.decision.by})`
    : "";
  if (r.outcome === "passed" && r.nonBlocking) {
    return { text: `Gate ${hook} ${nonBlockingPass(r.nonBlocking)} for ${subject}`, level: "warning" };
  }
  if (r.outcome === "passed")
    return r.event === "idle"
      ? null
      : { text: `Gate ${hook} passed for ${subject}${by || ` (${formatDuration(r.durationMs)})`}`, level: "info" };
  const what = r.timedOut ? "timed out" : r.outcome === "error" ? (r.decision ? "expired" : "could not run") : "failed";
  const verdict = `${what}${by}`;
  const actions = r.actions.length && r.actions.join("") !== "none" ? ` → ${r.actions.join(", ")}` : "";
  const open = r.policyApplied === false ? " (policy not applied yet: the event stays open)" : "";
  return { text: `Gate ${hook} ${verdict} for ${subject}: ${r.summary}${actions}${open}`, level: "warning" };
}

function isDirectory(dir: string): boolean {
  try {
    return existsSync(dir) && statSync(dir).isDirectory();
  } catch {
    return false;
  }
}
