/**
 * What one hook is shown of its event (contract v1, additive; docs/hook-contract.md, "What a
 * hook is shown"): a projection (the dotted fields a hook may see, config.json
 * `hooks.projection`) and confidentiality (`hooks.confidential`: an HTTP handler is sent identity
 * and lifecycle, never content). Pure: a document in, the document the hook is shown out.
 *
 * The shape a shown document keeps, so that a hook written for v1 still parses it: every key of the
 * v1 document, in contract order, with its v1 type. A field the hook may not see holds its empty
 * value: `""` for a string, `null` for `owner`, `[]` for a list, `{}` for `metadata` (which holds
 * only the metadata keys projected). `notification` (the idle notification the event came from) is
 * kept only when the projection names it, and a confidential view keeps only its identity and
 * lifecycle fields (never the worker's `failureReason`, which is content); `work` (additive) likewise
 * only when the projection names it or a field of it, a confidential view keeping only `createdBy`. Two
 * keys are added at the end, each only when it applies: `projection` (the fields shown, as configured) and
 * `confidential: true`. A document with neither is the v1 document byte for byte.
 */
import { createHash } from "node:crypto";
import type { ContextDocument, HookInvocation } from "./contract.js";
import type { IdleNotification, Task } from "./team-files.js";
import { WORK_FIELDS, type Work, type WorkField } from "./work.js";

/** The task fields of the context document, in contract order. */
export const CONTEXT_TASK_FIELDS = [
  "id",
  "subject",
  "description",
  "owner",
  "status",
  "blockedBy",
  "blocks",
  "metadata",
  "createdAt",
  "updatedAt",
] as const;
type ContextTaskField = (typeof CONTEXT_TASK_FIELDS)[number];

/** Fields every hook is shown, projected or not: who and what the event is, never the task's content. */
const IDENTITY_PATHS: readonly string[] = Object.freeze([
  "version",
  "event",
  "team",
  "team.id",
  "team.dir",
  "team.taskListId",
  "team.style",
  "member",
  "timestamp",
]);

const TASK_FIELDS: ReadonlySet<string> = new Set(CONTEXT_TASK_FIELDS);

/**
 * The projection path that shows the idle notification an event came from (shown whole: it is the worker's own report).
 */
const NOTIFICATION_PATH = "notification";

/** The projection path that shows the work's story (contract/work.ts) whole; `work.<field>` shows one of its fields. */
const WORK_PATH = "work";

/** The work's fields that are content: a confidential view leaves them out (`null`); `createdBy` is identity. */
const WORK_CONTENT: ReadonlySet<WorkField> = new Set(["parameters", "summary", "error"]);

/**
 * The work a view shows, or undefined: a projection must name `work` or one of its fields (the others are
 * `null`); a confidential view keeps who made the task, never its parameters, result or error.
 */
function shownWork(work: Work | undefined, view: ContextView): Work | undefined {
  if (!work) return undefined;
  const named =
    view.projection === null
      ? new Set<string>(WORK_FIELDS)
      : new Set(
          view.projection.flatMap((p) =>
            p === WORK_PATH ? [...WORK_FIELDS] : p.startsWith(`${WORK_PATH}.`) ? [p.slice(WORK_PATH.length + 1)] : [],
          ),
        );
  if (named.size === 0) return undefined;
  const shows = (field: WorkField): boolean => named.has(field) && !(view.confidential && WORK_CONTENT.has(field));
  return {
    createdBy: shows("createdBy") ? work.createdBy : null,
    parameters: shows("parameters") ? work.parameters : null,
    summary: shows("summary") ? work.summary : null,
    error: shows("error") ? work.error : null,
  };
}

/** The notification fields a confidential view keeps: who sent it, when, and which task ended how. */
const NOTIFICATION_LIFECYCLE = ["type", "from", "timestamp", "completedTaskId", "completedStatus"] as const;

/**
 * The notification a view shows, or undefined: a projection must name it; confidential keeps its lifecycle fields only.
 */
function shownNotification(note: IdleNotification | undefined, view: ContextView): IdleNotification | undefined {
  if (!note) return undefined;
  if (view.projection !== null && !view.projection.includes(NOTIFICATION_PATH)) return undefined;
  if (!view.confidential) return note;
  const kept: Record<string, unknown> = {};
  for (const field of NOTIFICATION_LIFECYCLE) if (note[field] !== undefined) kept[field] = note[field];
  return kept as IdleNotification;
}

/**
 * Why `path` names no field of the context document (a config error), or null when it names one:
 * an identity field, `task`, `task.<field>`, or `task.metadata.<key>[.<key>…]` (metadata is any
 * JSON object, so any key of it is a field).
 */
export function projectionPathProblem(path: string): string | null {
  if (IDENTITY_PATHS.includes(path) || path === "task" || path === NOTIFICATION_PATH || path === WORK_PATH) return null;
  if (path.startsWith(`${WORK_PATH}.`)) {
    const field = path.slice(WORK_PATH.length + 1);
    return (WORK_FIELDS as readonly string[]).includes(field)
      ? null
      : `names no field of the work (${WORK_PATH}.${WORK_FIELDS.join(`, ${WORK_PATH}.`)})`;
  }
  const segments = path.split(".");
  if (segments.some((s) => s === "")) return "is not a dotted path (no empty parts: task.metadata.files)";
  const [root, field, ...deeper] = segments;
  if (root !== "task" || field === undefined || !TASK_FIELDS.has(field)) {
    return `names no field of the context document (task.${CONTEXT_TASK_FIELDS.join(", task.")}, task.metadata.<key>, ${NOTIFICATION_PATH}, ${WORK_PATH}, ${WORK_PATH}.<field>, or an identity field: ${IDENTITY_PATHS.join(", ")})`;
  }
  if (deeper.length > 0 && field !== "metadata")
    return `task.${field} has no fields of its own (only task.metadata.<key> goes deeper)`;
  return null;
}

/**
 * What one hook is shown. `projection` null: every field; `confidential`: content left out (HTTP handlers of a
 * confidential team).
 */
export interface ContextView {
  projection: readonly string[] | null;
  confidential: boolean;
}

export const FULL_VIEW: ContextView = Object.freeze({ projection: null, confidential: false });

export function isFullView(view: ContextView): boolean {
  return view.projection === null && !view.confidential;
}

/** The same string for views that show the same document: a chain builds one document per distinct view. */
export function viewKey(view: ContextView): string {
  if (isFullView(view)) return "";
  const paths = view.projection === null ? "*" : JSON.stringify([...new Set(view.projection)].sort());
  return `${view.confidential ? "confidential:" : ""}${paths}`;
}

/** What a view shows of the task: each field whole, none, or (metadata) some of its keys. */
interface TaskShown {
  fields: ReadonlySet<ContextTaskField>;
  /** Metadata paths under `task.metadata` (each a list of keys); used when `metadata` is not shown whole. */
  metadata: string[][];
}

function taskShown(view: ContextView): TaskShown {
  const all = new Set<ContextTaskField>(CONTEXT_TASK_FIELDS);
  const fields = new Set<ContextTaskField>();
  const metadata: string[][] = [];
  if (view.projection === null) for (const f of all) fields.add(f);
  else {
    for (const path of view.projection) {
      if (path === "task") for (const f of all) fields.add(f);
      const [root, field, ...deeper] = path.split(".");
      if (root !== "task" || field === undefined || !TASK_FIELDS.has(field)) continue;
      if (field === "metadata" && deeper.length > 0) metadata.push(deeper);
      else fields.add(field as ContextTaskField);
    }
  }
  if (view.confidential) {
    fields.delete("description");
    fields.delete("metadata");
    metadata.length = 0;
  }
  return { fields, metadata };
}

/** Whether a hook with this view is shown the task's `field` (the `PI_TEAMS_TASK_*` variables follow it). */
export function showsTaskField(view: ContextView, field: "id" | "subject" | "owner" | "status"): boolean {
  return taskShown(view).fields.has(field);
}

/** The subject a view shows: the subject, or (confidential) the task's id when the id is shown, else nothing. */
function shownSubject(task: { id: string; subject: string }, view: ContextView, shown: TaskShown): string {
  if (!shown.fields.has("subject")) return "";
  if (!view.confidential) return task.subject;
  return shown.fields.has("id") ? task.id : "";
}

/**
 * The document a hook with `view` is shown: `doc` itself for the full view, else a new document of
 * the same keys and types (see the top of the file), then `projection` and `confidential`.
 */
export function viewDocument(doc: ContextDocument, view: ContextView): ContextDocument {
  if (isFullView(view)) return doc;
  const shown = taskShown(view);
  const has = (field: ContextTaskField): boolean => shown.fields.has(field);
  const t = doc.task;
  const out: ContextDocument = {
    version: doc.version,
    event: doc.event,
    team: doc.team,
    member: doc.member,
    timestamp: doc.timestamp,
    task: t
      ? {
          id: has("id") ? t.id : "",
          subject: shownSubject(t, view, shown),
          description: has("description") ? t.description : "",
          owner: has("owner") ? t.owner : null,
          status: has("status") ? t.status : "",
          blockedBy: has("blockedBy") ? t.blockedBy : [],
          blocks: has("blocks") ? t.blocks : [],
          metadata: has("metadata") ? t.metadata : pickPaths(t.metadata, shown.metadata),
          createdAt: has("createdAt") ? t.createdAt : "",
          updatedAt: has("updatedAt") ? t.updatedAt : "",
        }
      : null,
  };
  const note = shownNotification(doc.notification, view);
  if (note) out.notification = note;
  const work = shownWork(doc.work, view);
  if (work) out.work = work;
  if (view.projection !== null) out.projection = [...new Set(view.projection)];
  if (view.confidential) out.confidential = true;
  return out;
}

/**
 * The parts of `source` named by `paths` (lists of keys), in `source`'s own key order; a path
 * through something that is not an object, or to a key that is not there, picks nothing.
 */
function pickPaths(source: Record<string, unknown>, paths: readonly string[][]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (paths.length === 0) return out;
  for (const [key, value] of Object.entries(source)) {
    const below = paths.filter((p) => p[0] === key);
    if (below.length === 0) continue;
    if (below.some((p) => p.length === 1)) define(out, key, value);
    else if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      const picked = pickPaths(
        value as Record<string, unknown>,
        below.map((p) => p.slice(1)),
      );
      if (Object.keys(picked).length > 0) define(out, key, picked);
    }
  }
  return out;
}

/** `out[key] = value` that stays a plain own property even for a key like `__proto__` (metadata is anyone's JSON). */
function define(out: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * The invocation a confidential team's hook logs keep: the task's identity and lifecycle (id, owner,
 * status, links, times), its subject replaced by its id, no description, no metadata, and none of
 * the task file's fields the contract does not name; of an idle notification, only its lifecycle
 * fields (no `failureReason`).
 */
export function confidentialInvocation(given: HookInvocation): HookInvocation {
  const notification = shownNotification(given.notification, { projection: null, confidential: true });
  const invocation = notification ? { ...given, notification } : given;
  const task = invocation.completedTask;
  if (!task) return invocation;
  const kept: Task = {
    id: task.id,
    subject: task.id,
    description: "",
    ...(task.owner === undefined ? {} : { owner: task.owner }),
    status: task.status,
    blocks: task.blocks,
    blockedBy: task.blockedBy,
    createdAt: task.createdAt,
    updatedAt: task.updatedAt,
  };
  return { ...invocation, completedTask: kept };
}

/**
 * The event key a hook is given (`PI_TEAMS_HOOK_EVENT_KEY`, `X-Pi-Teams-Hook-Event-Key`): the key
 * itself, unless a projection hides part of the task, whose id, owner and stamps the key spells out
 * (`task_completed:7:<completedAt>`). Then `sha256:` and the key's hex digest: as stable across
 * attempts and as distinct between events, so still an idempotency key, and it shows nothing.
 * An idle event's key holds only identity fields (its member and time), which every view shows.
 */
export function shownEventKey(key: string, view: ContextView): string {
  if (view.projection === null || key.startsWith("idle:")) return key;
  return `sha256:${createHash("sha256").update(key).digest("hex")}`;
}
