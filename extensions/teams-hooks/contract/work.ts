/**
 * The work's own story in the context document (contract v1, additive; docs/hook-contract.md, "The
 * work"): what made the task (`createdBy`: a worker, a gate's follow-up, or the task API's template
 * and key), the parameters an API template made it with, and what the worker recorded of the work:
 * its result summary (`metadata.result`) and its error (`metadata.abortReason`, else the failure
 * reason of the idle notification the event came from). Read from the task as the hook is shown it;
 * pure, no I/O. The task API's status route says `createdBy` from the same function.
 */
import { z } from "zod";
import type { IdleNotification, Task } from "./team-files.js";

/** Who made the task: the task API (its template and key), the leader (a gate's follow-up), or the team. */
const CreatedBySchema = z.union([
  z.object({ kind: z.literal("api"), template: z.string().nullable(), key: z.string().nullable() }),
  z.object({
    kind: z.literal("followup"),
    sourceTaskId: z.string().nullable(),
    hook: z.string().nullable(),
    event: z.string().nullable(),
  }),
  z.object({ kind: z.literal("worker") }),
]);
type CreatedBy = z.infer<typeof CreatedBySchema>;

/** The document's `work`: every key always there, `null` when unknown (or, for a confidential handler, left out). */
export const WorkSchema = z.object({
  createdBy: CreatedBySchema.nullable(),
  /** The parameters of the API request that made the task (`metadata.taskApi.parameters`); null otherwise. */
  parameters: z.record(z.string(), z.unknown()).nullable(),
  /** The worker's result summary (`metadata.result`), cut to the description's limit; null without one. */
  summary: z.string().nullable(),
  /** The work's error as the worker recorded it (`metadata.abortReason`, else the notification's `failureReason`). */
  error: z.string().nullable(),
});
export type Work = z.infer<typeof WorkSchema>;

/** The fields of `work`, in document order: a projection names one as `work.<field>`. */
export const WORK_FIELDS = ["createdBy", "parameters", "summary", "error"] as const;
export type WorkField = (typeof WORK_FIELDS)[number];

/** What made the task, from what its metadata says: `taskApi` (the API), `qualityGateFollowupFor` (a follow-up). */
export function createdByOf(task: Pick<Task, "metadata">): CreatedBy {
  const meta = task.metadata ?? {};
  const api = objectOf(meta.taskApi);
  if (api) return { kind: "api", template: name(api.template), key: name(api.key) };
  if (text(meta.qualityGateFollowupFor) !== null) {
    return {
      kind: "followup",
      sourceTaskId: name(meta.qualityGateSourceTaskId),
      hook: name(meta.qualityGateFollowupHook),
      event: name(meta.qualityGateFollowupEvent),
    };
  }
  return { kind: "worker" };
}

/** Names read from metadata a worker can write: at most `NAME_CHARS` characters, a longer one cut with `…`. */
const NAME_CHARS = 256;

function name(value: unknown): string | null {
  const t = text(value);
  return t === null || t.length <= NAME_CHARS ? t : `${t.slice(0, NAME_CHARS - 1)}…`;
}

/**
 * The document's `work` for `task`, whose text fields are cut to `limit` characters by `cut`; the
 * notification's `failureReason` stands for the error when the task's metadata records none and the
 * notification is about this task.
 */
export function workOf(
  task: Pick<Task, "id" | "metadata">,
  notification: IdleNotification | undefined,
  cut: (value: string) => string,
): Work {
  const meta = task.metadata ?? {};
  const parameters = objectOf(objectOf(meta.taskApi)?.parameters);
  const reported =
    notification?.completedTaskId === task.id && typeof notification.failureReason === "string"
      ? notification.failureReason
      : null;
  const error = recorded(meta.abortReason) ?? (reported === null || reported === "" ? null : reported);
  const summary = recorded(meta.result);
  return {
    createdBy: createdByOf(task),
    parameters: parameters ? { ...parameters } : null,
    summary: summary === null ? null : cut(summary),
    error: error === null ? null : cut(error),
  };
}

/** A recorded value as text: a string as it is, other JSON as its JSON text; null when absent or empty. */
function recorded(value: unknown): string | null {
  if (value === undefined || value === null || value === "") return null;
  return typeof value === "string" ? value : JSON.stringify(value);
}

function objectOf(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

function text(value: unknown): string | null {
  return typeof value === "string" && value !== "" ? value : null;
}
