/**
 * The leader's interface with whoever runs it (the `watch` command, the pi extension, the library):
 * the options it takes, the states it goes through, and the notices it reports, one at a time, through
 * `LeaderOptions.report`. The leader never prints; its callers decide what a notice looks like.
 */
import type { HookEventName } from "../contract/contract.js";
import type { ChainDiscovery } from "../gates/chain.js";
import type { TeamSetup } from "../team/setup.js";
import type { Runtime } from "../runner/runtime.js";
import type { RerunCause } from "../policy/gate-life.js";

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
  /**
   * The clock, lock timeout, sent log, retry waits, spawn listener and test pause, whole
   * (runner/runtime.ts); default `createRuntime()`. The leader adds its own spawn listener to it.
   */
  runtime?: Runtime;
  /**
   * Re-reads the team's settings when config.json changes, given the `hooks` block in force (undefined
   * when none is) so that an invalid block, or a config.json unreadable, gone or without `hooks`,
   * keeps it. Without it, config.json is read once, at start.
   */
  reloadSetup?: (lastValidHooks: Record<string, unknown> | undefined) => Promise<TeamSetup>;
  /**
   * `--verbose`: a `why` notice for every change looked at, saying whether it became an event and why
   * (or why not). Off, the leader builds none of them: its hot path only tests this flag.
   */
  verbose?: boolean;
}

/**
 * Why a change did or did not become an event (docs/cli.md, "watch --verbose"):
 *   baseline        present at the first start: history, recorded, not run (unless --catch-up)
 *   in_ledger       its event key is in the ledger already (detail: its gate life's place, done, or baseline)
 *   queued          its event is queued or running in this leader already
 *   same_signature  the file's stat (inode, size, mtime) is the one last seen: not read again
 *   not_task_file   a file in the task list folder whose name is not `<id>.json`
 *   invalid_task    a `.json` file that is not a task (bad JSON, wrong fields, an id that is not its name…)
 *   gone            the file was deleted
 *   no_event        a task whose state is no event (pending, in progress without a claim…)
 *   claim_seen      a claim already seen at the last look (a worker's progress, the leader's own write)
 *   no_gate         no gate exists for the event (a claim then is nothing; another event is recorded as done)
 *   matcher_skipped a gate of the event was skipped by its matchers (`hook`, `detail` say which and why)
 *   new_event       a new event: queued for its gates
 *   superseded      an idle notification that a newer one of the same member replaced before its gate
 *                   started: recorded as done, not run (a burst runs the idle gate a few times, not once each)
 */
/** The `detail` of a `baseline` notice, whether the start-up scan or the event handler says it. */
export const BASELINE_DETAIL = "present at the first start: recorded as history, not run (--catch-up runs it)";

export type WhyReason =
  | "baseline"
  | "in_ledger"
  | "queued"
  | "same_signature"
  | "not_task_file"
  | "invalid_task"
  | "gone"
  | "no_event"
  | "claim_seen"
  | "no_gate"
  | "matcher_skipped"
  | "new_event"
  | "superseded"
  | "report_not_in_file";

/** One `--verbose` notice: the file (null when none), and what is known of the task and its event. */
export interface WhyNotice {
  kind: "why";
  reason: WhyReason;
  file: string | null;
  taskId: string | null;
  event?: HookEventName;
  key?: string;
  /** `matcher_skipped`: the gate's name (`on_task_completed.d/10-lint.sh`). */
  hook?: string;
  /** What more there is to say: the ledger state, the task status, the matcher, the problem. */
  detail?: string;
}

/** One handled event, as the one-line output and --json show it. */
export interface EventReport {
  time: string;
  key: string;
  event: HookEventName;
  taskId: string | null;
  member: string | null;
  hook: string | null;
  outcome: "passed" | "failed" | "error" | "deferred" | "no_hook";
  timedOut: boolean;
  durationMs: number;
  summary: string;
  actions: string[];
  /** The follow-up task the policy made for this event (or found made before); absent when none. */
  followupTaskId?: string;
  retry: boolean;
  logFile: string | null;
  /**
   * The run id of the deciding run (its log's `result.runId`; a decision's own run): what `logs show` takes. Absent
   * when no hook ran.
   */
  runId?: string;
  /** Every run of a chain of several hooks, in order (the deciding one among them). */
  runIds?: string[];
  /** False when the leader gave up applying the policy (the event stays open); null when none applies. */
  policyApplied: boolean | null;
  /** The gate is held (outcome `deferred`): the run id a decision names, and the deadline. */
  deferral?: { runId: string; expiresAt: string };
  /**
   * Every gate of the event was skipped by its matchers or is in shadow mode: nothing judged it (the summary says what
   * each did).
   */
  noGateInForce?: true;
  /**
   * The event is held, not judged: its gate waits for the lead's approval, or was cut off by our own fault
   * (holds/held-events.ts).
   */
  held?: RerunCause;
  /** It passed, but an error did not block it (a Claude Code gate's, or under failure mode open): `exit code 1 • …`. */
  nonBlocking?: string;
  /** The deciding run's last stdout line looked like a verdict but was not read (`RunResult.verdictUnread`). */
  verdictUnread?: string;
  /** This report is a held gate's decision, applied: which deferral, what, by whom, how long it was held. */
  decision?: { deferredRunId: string; decision: "allow" | "deny" | "expired"; by: string; waitedMs: number };
}

export type LeaderNotice =
  | { kind: "warning"; message: string }
  /** Something that went wrong is right again (writing works again, the team dir is back). */
  | { kind: "info"; message: string }
  | { kind: "config"; valid: boolean; setup: TeamSetup }
  | { kind: "hooks"; hooks: StartInfo["hooks"] }
  | { kind: "event"; report: EventReport }
  | { kind: "started"; event: HookEventName; key: string; hook: string; taskId: string | null; startedAt: number }
  /** `deferred`: its log says its gate is held (the deferral is written again if a crash lost it). */
  | { kind: "recovered"; key: string; how: "logged" | "retry" | "deferred" | "held" }
  /** The start-up scan is done (after `start()` resolved): `queued` events it (and hints meanwhile) gave the queue. */
  | { kind: "ready"; tasks: number; baseline: number; queued: number; startupMs: number }
  | { kind: "stopped"; dropped: number }
  | WhyNotice;

export interface StartInfo {
  /** `chain`: everything that runs for the event, in order. */
  hooks: Array<{ event: HookEventName; chain: ChainDiscovery }>;
}
