/**
 * From file contents to events, purely. A task file's current state stands for at most one event
 * (its claim, its completion or its failure), identified by a key; an idle notification stands for an `idle`
 * event and, through the task file it names, maybe a task event. The ledger decides which keys are
 * new, so the same change seen twice (file and notification, watcher and scan) runs once.
 */
import type { HookEventName } from "./contract.js";
import type { IdleNotification, Task } from "./team-files.js";

export interface HookEvent {
  /**
   * `task_completed:<taskId>:<completedAt>`, `task_failed:<taskId>:<abortedAt>`,
   * `task_started:<taskId>:<owner>:<claim stamp>` (claimStamp), `idle:<member>:<timestamp>`
   */
  key: string;
  event: HookEventName;
  taskId: string | null;
  /** From the first source to see the event: the task's owner, or the notification's `from`. */
  member: string | null;
  /**
   * When it happened (`PI_TEAMS_EVENT_TIMESTAMP`): for a task event, the task's own
   * `metadata.completedAt` / `metadata.abortedAt` when set, whichever source saw it first; else, from
   * the task file, the stamp that keys it (`updatedAt`), and from a notification, its `timestamp`. For
   * `task_started`, `metadata.claimedAt` when it is the claim's stamp, else the task's `updatedAt` as
   * first seen in progress (no runtime we know writes a claim time: the claim is its last write).
   */
  timestamp: string | null;
  source: "task" | "inbox";
  /** The idle notification the event came from (source `inbox`): the context document's `notification`. */
  notification?: IdleNotification;
}

export function eventKey(event: HookEventName, subject: string, stamp: string): string {
  return `${event}:${subject}:${stamp}`;
}

function metaString(task: Task, field: string): string | undefined {
  const value = task.metadata?.[field];
  return typeof value === "string" && value.trim() !== "" ? value : undefined;
}

/**
 * The gate round of a task: how many times the leader has ended an event of it by putting it back to
 * `pending` (a reopen after a failed completion gate, a start gate's denial of a claim). Written by
 * the leader as `metadata.qualityGateRound` in the same locked write as the status; 0 when absent.
 * Every completion key carries the round (`#r<n>` when it is not 0), so a completion after the
 * leader's reopen is a new event whatever the worker writes to `completedAt` (the same value, an
 * older one, none). A worker that writes a lower round back cannot lower it: the leader keeps the
 * highest round it has seen or written (its ledger) and passes it as `minRound`.
 */
export function gateRound(task: Task): number {
  const value = task.metadata?.qualityGateRound;
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}

/** The round part of a completion key: `#r<n>` at its end. */
const ROUND_SUFFIX = /#r([1-9][0-9]*)$/;

/** A completion key split into its key without the round and the round (0 when it has none). */
export function splitRound(key: string): { base: string; round: number } {
  const match = ROUND_SUFFIX.exec(key);
  return match?.[1] ? { base: key.slice(0, match.index), round: Number(match[1]) } : { base: key, round: 0 };
}

/** `key` in round `round`: the key itself in round 0, `<key>#r<round>` after. */
function inRound(key: string, round: number): string {
  return round > 0 ? `${key}#r${round}` : key;
}

/**
 * The stamp that tells one completion of `task` from the next within a round. `metadata.completedAt`
 * when the worker set it; otherwise `updatedAt` — except right after the leader's own gate write (its
 * `updatedAt` equals `metadata.qualityGateAt`), which keeps the stamp of the key recorded then, so
 * that the leader's write is never a new completion.
 */
function completionStamp(task: Task): string {
  const completedAt = metaString(task, "completedAt");
  if (completedAt) return completedAt;
  const recorded = metaString(task, "qualityGateEventKey");
  const prefix = `task_completed:${task.id}:`;
  if (recorded?.startsWith(prefix) && metaString(task, "qualityGateAt") === task.updatedAt) {
    return splitRound(recorded).base.slice(prefix.length);
  }
  return task.updatedAt;
}

/**
 * The marks a task's metadata keeps of the moments it became claimable again: a worker gave it up
 * (`abortedAt`, pi-agent-teams' `unassignedAt`), it was completed (and then taken back), the
 * completion gate reopened it (`reopenedByQualityGateAt`), a start gate put the claim back
 * (`qualityGateStartDeniedAt`).
 */
const RELEASE_MARKS = [
  "abortedAt",
  "unassignedAt",
  "completedAt",
  "reopenedByQualityGateAt",
  "qualityGateStartDeniedAt",
] as const;

/**
 * The stamp that tells one claim of an in-progress task from the next (the last part of its
 * `task_started` key), or null when the task is not claimed (not `in_progress`, no owner). The stamp
 * is the later of `metadata.claimedAt`, when the runtime writes one, and the last release mark
 * (RELEASE_MARKS); with neither, `createdAt`. None of these moves when a worker writes progress, or
 * when the leader writes its own metadata, so the key is stable for as long as the claim lasts; a new
 * claim comes after a release (a denial, an abort, an unassign, a reopen) or with a new `claimedAt`,
 * and gets a new key. The owner is part of the key, so a task handed from one member to another is a
 * new claim too.
 *
 * The leader's own status writes are never claims: a reopen and a start gate's denial write
 * `pending`, which is no claim. The worker who takes a reopened task up again (`in_progress`) makes
 * a new claim, and a start gate judges it like any other (docs/ledger.md, "Event keys").
 */
function claimStamp(task: Task): { stamp: string; claimedAt: boolean } | null {
  if (task.status !== "in_progress" || !task.owner || task.owner.trim() === "") return null;
  let released: string | undefined;
  for (const field of RELEASE_MARKS) {
    const value = metaString(task, field);
    if (value && (released === undefined || isLater(value, released))) released = value;
  }
  const claimedAt = metaString(task, "claimedAt");
  const found =
    claimedAt && (released === undefined || isLater(claimedAt, released))
      ? { stamp: claimedAt, claimedAt: true }
      : { stamp: released ?? task.createdAt, claimedAt: false };
  return { ...found, stamp: afterDenials(task, found.stamp) };
}

/**
 * A claim after a start gate's denial is a new claim, whatever the worker's stamps say. They come
 * from the worker's clock: one ahead of the leader's (another host) leaves a stamp later than the
 * denial, the same stamp as the denied claim's, and the re-claim would read as the claim already
 * judged. Such a stamp gets the count of denials so far (`<stamp>#<n>`), which only a denial moves.
 */
function afterDenials(task: Task, stamp: string): string {
  const deniedAt = metaString(task, "qualityGateStartDeniedAt");
  if (!deniedAt || stamp === deniedAt || !isLater(stamp, deniedAt)) return stamp;
  const count = task.metadata?.qualityGateStartDeniedCount;
  return `${stamp}#${typeof count === "number" && Number.isFinite(count) ? count : 0}`;
}

/** What the caller knows beyond the file: the leader's memory of the task's gate round (gateRound). */
export interface EventOptions {
  minRound?: number;
}

/**
 * The event a task's current state stands for, or null. A pending task is a failure only while its
 * `abortedAt` is later than the gate's last reopen and the start gate's last denial: both keep an old
 * `abortedAt` in place, and that must not look like a new failure. An in-progress task with an owner
 * is a claim (`task_started`, claimStamp).
 */
export function taskEvent(task: Task, opts: EventOptions = {}): HookEvent | null {
  if (task.status === "in_progress") {
    const claim = claimStamp(task);
    if (!claim || !task.owner) return null;
    return {
      key: eventKey("task_started", task.id, `${task.owner}:${claim.stamp}`),
      event: "task_started",
      taskId: task.id,
      member: task.owner,
      timestamp: claim.claimedAt ? (metaString(task, "claimedAt") ?? task.updatedAt) : task.updatedAt,
      source: "task",
    };
  }
  if (task.status === "completed") {
    const stamp = completionStamp(task);
    const round = Math.max(gateRound(task), opts.minRound ?? 0);
    return {
      key: inRound(eventKey("task_completed", task.id, stamp), round),
      event: "task_completed",
      taskId: task.id,
      member: task.owner ?? null,
      timestamp: stamp,
      source: "task",
    };
  }
  if (task.status === "pending") {
    const abortedAt = metaString(task, "abortedAt");
    if (!abortedAt) return null;
    // The leader's own writes back to pending: the completion gate's reopen, the start gate's denial.
    for (const field of ["reopenedByQualityGateAt", "qualityGateStartDeniedAt"]) {
      const at = metaString(task, field);
      if (at && !isLater(abortedAt, at)) return null;
    }
    return {
      key: eventKey("task_failed", task.id, abortedAt),
      event: "task_failed",
      taskId: task.id,
      member: task.owner ?? metaString(task, "abortedBy") ?? null,
      timestamp: abortedAt,
      source: "task",
    };
  }
  return null;
}

function isLater(a: string, b: string): boolean {
  const ta = Date.parse(a);
  const tb = Date.parse(b);
  if (Number.isNaN(ta) || Number.isNaN(tb)) return a > b;
  return ta > tb;
}

/** `{ type: "idle_notification", … }` inside a message's text, or null for any other text. */
export function parseIdleText(text: string): unknown {
  if (!text.includes("idle_notification")) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null; // plain prose that mentions the word: not a notification
  }
}

/**
 * The events of one idle notification: always `idle`, plus the task event it reports. The task
 * event's key comes from the task file when the file shows that state (so both sources agree);
 * a missing file (task null) falls back to the notification's timestamp. `task` is the named task
 * as read now, or null when its file is gone.
 */
export function idleEvents(note: IdleNotification, task: Task | null, opts: EventOptions = {}): HookEvent[] {
  return explainIdleEvents(note, task, opts).events;
}

/**
 * idleEvents, and why the task event a notification reports is not among them (`--verbose` says it):
 * the task file is the truth of the task's state, so a report the file contradicts (a failure of a
 * task its file shows completed, a completion the file does not show) runs `idle` only.
 */
export function explainIdleEvents(
  note: IdleNotification,
  task: Task | null,
  opts: EventOptions = {},
): { events: HookEvent[]; unmatched: string | null } {
  const events: HookEvent[] = [
    {
      key: eventKey("idle", note.from, note.timestamp),
      event: "idle",
      taskId: null,
      member: note.from,
      timestamp: note.timestamp,
      source: "inbox",
      notification: note,
    },
  ];
  const taskId = note.completedTaskId;
  if (!taskId || !note.completedStatus) return { events, unmatched: null };
  const fromNote = (event: HookEventName, stamp: string): HookEvent => ({
    key: eventKey(event, taskId, stamp),
    event,
    taskId,
    member: note.from,
    timestamp: note.timestamp,
    source: "inbox",
    notification: note,
  });
  const wanted = note.completedStatus === "completed" ? "task_completed" : "task_failed";
  if (task === null) {
    events.push(fromNote(wanted, note.timestamp));
    return { events, unmatched: null };
  }
  const fileEvent = taskEvent(task, opts);
  if (fileEvent?.event === wanted) {
    // The task's own stamp when it has one: the same event gets the same timestamp from either source.
    const own = metaString(task, wanted === "task_completed" ? "completedAt" : "abortedAt");
    events.push({
      ...fileEvent,
      member: note.from,
      timestamp: own ?? note.timestamp,
      source: "inbox",
      notification: note,
    });
  } else if (wanted === "task_failed" && task.status !== "completed" && !metaString(task, "abortedAt")) {
    // A runtime that reports failures only by message: the notification is the only source.
    events.push(fromNote("task_failed", note.timestamp));
  } else {
    // A reported completion that the file does not show (already reopened, or not yet written) is the
    // file's to report: inventing a key here would run the same completion twice. A reported failure
    // of a task the file shows completed: the completion is what its gate judges, and a task_failed
    // gate's record would overwrite the completion's on the task.
    const reported = `${note.from} reports task #${taskId} ${note.completedStatus}`;
    const why =
      wanted === "task_completed"
        ? `its file does not show that completion (status ${task.status}): the file reports it when it does`
        : task.status === "completed"
          ? "its file says completed: the completion is gated, not a failure"
          : "its file already shows the failure (metadata.abortedAt): that event is the file's";
    return { events, unmatched: `${reported}, but ${why}; the notification runs idle only` };
  }
  return { events, unmatched: null };
}
