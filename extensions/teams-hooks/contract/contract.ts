/**
 * The hook contract, version 1, as a hook reads it: the version, the event names, the limits of the
 * context document, the invocation, and the pure builder of the document (with its `truncateText`);
 * the module the hook helper (hook.ts) imports. The files of the team directory are in team-files.ts,
 * one run of a hook (its command, environment and result) in hook-run.ts. No I/O here.
 * docs/hook-contract.md describes the same contract in prose, and a golden test holds the two together.
 */
import { withoutGateNote } from "./gate-note.js";
import { z } from "zod";
import { IdleNotificationSchema, MetadataSchema, type Task, TaskSchema } from "./team-files.js";
import { WorkSchema, workOf } from "./work.js";

/** Raised only for breaking changes: see docs/hook-contract.md, "Compatibility". */
export const HOOK_CONTRACT_VERSION = 1 as const;

/** `task_started` came last (additive, still v1): the order of the first three is what output and logs always had. */
export const HOOK_EVENTS = ["task_completed", "task_failed", "idle", "task_started"] as const;
export type HookEventName = (typeof HOOK_EVENTS)[number];
export const HookEventNameSchema = z.enum(HOOK_EVENTS);

/** The file base name looked up in the hooks dir for each event. */
export const HOOK_BASE_NAMES: Readonly<Record<HookEventName, string>> = Object.freeze({
  task_completed: "on_task_completed",
  task_failed: "on_task_failed",
  idle: "on_idle",
  task_started: "on_task_started",
});

/** The events the failure policy applies to (follow-up, reopen, nudge): a task's completion and its failure. */
export type PolicyEventName = "task_completed" | "task_failed";

/**
 * Events about one task: the hook gets `PI_TEAMS_TASK_*` and the document's `task`, `run` needs
 * `--task`, and the leader acts on the task after the gate (the failure policy, or a start gate's
 * compensation). Not a statement about the policy, holds or chains: see the three predicates below.
 */
export function isTaskEvent(event: HookEventName): event is PolicyEventName | "task_started" {
  return event !== "idle";
}

/**
 * Whether the failure policy (`hooks.failureAction`: reopen, follow-up, nudge) applies after the
 * gate. `task_started` has its own answer to a denial (the claim is put back), `idle` none.
 */
export function policyApplies(event: HookEventName): event is PolicyEventName {
  return event === "task_completed" || event === "task_failed";
}

/**
 * Whether a gate may hold the event (`defer`, decided later). Elsewhere a defer is a denial with the
 * code `deferral_not_supported`: `idle` has nothing to hold, and a claim cannot wait for a decision
 * (the worker is at work already).
 */
export function canDefer(event: HookEventName): boolean {
  return policyApplies(event);
}

/**
 * Whether the event's chain stops at the first hook that does not count as a pass: every event but `idle`, which runs
 * every hook.
 */
export function stopsAtDenial(event: HookEventName): boolean {
  return event !== "idle";
}

/** Limits of the context document (characters, entries). Lowering one needs contract version 2. */
export const CONTEXT_LIMITS = Object.freeze({
  subject: 1_000,
  description: 8_000,
  links: 200,
  failureReason: 8_000,
  /** `work.summary` and `work.error` (additive, still v1). */
  workText: 8_000,
});

/** The mark left where text was cut (U+2026). */
export const ELLIPSIS = "\u2026";

// ---------------------------------------------------------------------------------------------
// One invocation and its context document

/** What the leader (or `run`) asks to run: the shape the log file keeps under `invocation`. */
export const HookInvocationSchema = z.object({
  event: HookEventNameSchema,
  teamId: z.string(),
  teamDir: z.string(),
  taskListId: z.string(),
  style: z.string(),
  memberName: z.string().optional(),
  timestamp: z.string().optional(),
  completedTask: TaskSchema.nullable(),
  /**
   * The idle notification the event came from (its `failureReason` and any other field the worker sent); absent
   * otherwise.
   */
  notification: IdleNotificationSchema.optional(),
});
export type HookInvocation = z.infer<typeof HookInvocationSchema>;

const ContextTaskSchema = z.object({
  id: z.string(),
  subject: z.string(),
  description: z.string(),
  owner: z.string().nullable(),
  status: z.string(),
  blockedBy: z.array(z.string()),
  blocks: z.array(z.string()),
  metadata: MetadataSchema,
  createdAt: z.string(),
  updatedAt: z.string(),
});

/** The context document of contract v1; key order is part of the contract. */
export const ContextDocumentSchema = z.object({
  version: z.literal(HOOK_CONTRACT_VERSION),
  event: HookEventNameSchema,
  team: z.object({ id: z.string(), dir: z.string(), taskListId: z.string(), style: z.string() }),
  member: z.string().nullable(),
  timestamp: z.string().nullable(),
  task: ContextTaskSchema.nullable(),
  /**
   * Additive, still v1, and only when the event came from an idle notification: the notification as
   * the worker sent it (`type`, `from`, `timestamp`, `completedTaskId`, `completedStatus`,
   * `failureReason`, and any other field), `failureReason` cut to the description's limit.
   */
  notification: IdleNotificationSchema.optional(),
  /**
   * Additive, still v1, on every task event whose task was read (contract/work.ts): what made the task,
   * its API parameters, and the worker's result summary and error.
   */
  work: WorkSchema.optional(),
  /**
   * Additive, still v1, and only when it applies (contract/projection.ts): the fields this hook is
   * shown (config.json `hooks.projection`); every other task field holds its empty value.
   */
  projection: z.array(z.string()).optional(),
  /**
   * Additive, still v1: the team is confidential and this is an HTTP handler: no description, no metadata, the subject
   * is the id.
   */
  confidential: z.literal(true).optional(),
});
export type ContextDocument = z.infer<typeof ContextDocumentSchema>;

/**
 * Cuts `value` to at most `limit` UTF-16 units: the first (limit − 1) followed by `…`. A surrogate
 * pair on the cut is dropped whole, so the result is always well-formed.
 */
export function truncateText(value: string, limit: number): string {
  if (value.length <= limit) return value;
  if (limit <= 0) return "";
  let cut = limit - 1;
  if (cut > 0 && isHighSurrogate(value.charCodeAt(cut - 1))) cut -= 1;
  return value.slice(0, cut) + ELLIPSIS;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * The mark in the name of a private copy of a gate that a release before the run folders wrote beside the
 * gate (`.<name without extension>.pi-run-<run id><extension>`): such a leftover is never taken for a gate.
 */
const RUN_COPY_MARK = ".pi-run-";

/** True for the name of such a leftover copy. */
export function isRunCopyName(name: string): boolean {
  return name.startsWith(".") && name.includes(RUN_COPY_MARK);
}

/**
 * The lines around the failing gate's output that a follow-up task's description quotes (text/messages.ts
 * followupDescription). What is between them is the leader's quotation, not the work: a gate shown a
 * follow-up sees QUOTED_OUTPUT_LEFT_OUT in its place (contract v1, additive; docs/gate-life.md), so
 * that a gate failing on its own output does not fail the follow-up made to fix it.
 */
export const QUOTED_OUTPUT_BEGIN =
  "----- begin: the failing gate's output, quoted by pi-teams-hooks (not part of the work) -----";
export const QUOTED_OUTPUT_END = "----- end of the quoted output -----";
export const QUOTED_OUTPUT_LEFT_OUT =
  "[the failing gate's output quoted here by pi-teams-hooks is left out of what gates are shown; the task file and the hook log keep it]";

/**
 * A task's description as gates are shown it: without the gate's note of a reopen (contract/gate-note.ts),
 * and a follow-up's quoted output (between the marker lines, only in a task whose metadata says
 * `qualityGateQuotedOutput: true`) replaced by one line.
 */
export function workDescription(task: Pick<Task, "description" | "metadata">): string {
  const description = withoutGateNote(task.description);
  if (task.metadata?.qualityGateQuotedOutput !== true || !description.includes(QUOTED_OUTPUT_BEGIN)) return description;
  const out: string[] = [];
  let quoting = false;
  for (const line of description.split("\n")) {
    if (!quoting && line === QUOTED_OUTPUT_BEGIN) {
      quoting = true;
      out.push(QUOTED_OUTPUT_LEFT_OUT);
    } else if (quoting) {
      if (line === QUOTED_OUTPUT_END) quoting = false;
    } else out.push(line);
  }
  return out.join("\n");
}

/**
 * Builds the v1 context document. Keys are written in contract order; absent values are `null`.
 * `notification` is added only when the event came from one, and `work` (additive) when the event has
 * a task: every key of the first v1 document keeps its place and its value.
 */
export function buildContextDocument(invocation: HookInvocation): ContextDocument {
  const task = invocation.completedTask;
  const doc: ContextDocument = {
    version: HOOK_CONTRACT_VERSION,
    event: invocation.event,
    team: {
      id: invocation.teamId,
      dir: invocation.teamDir,
      taskListId: invocation.taskListId,
      style: invocation.style,
    },
    member: invocation.memberName ?? null,
    timestamp: invocation.timestamp ?? null,
    task: task
      ? {
          id: task.id,
          subject: truncateText(task.subject, CONTEXT_LIMITS.subject),
          description: truncateText(workDescription(task), CONTEXT_LIMITS.description),
          owner: task.owner ?? null,
          status: task.status,
          blockedBy: task.blockedBy.slice(0, CONTEXT_LIMITS.links),
          blocks: task.blocks.slice(0, CONTEXT_LIMITS.links),
          metadata: task.metadata ?? {},
          createdAt: task.createdAt,
          updatedAt: task.updatedAt,
        }
      : null,
  };
  const note = invocation.notification;
  if (note)
    doc.notification =
      typeof note.failureReason === "string"
        ? { ...note, failureReason: truncateText(note.failureReason, CONTEXT_LIMITS.failureReason) }
        : note;
  if (task) doc.work = workOf(task, note, (value) => truncateText(value, CONTEXT_LIMITS.workText));
  return doc;
}
