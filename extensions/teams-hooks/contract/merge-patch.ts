/**
 * Patch verdicts (contract v1, additive): a JSON merge patch (RFC 7396) that a gate asks to lay over
 * its task, and the writable fields that bound it. Pure: no I/O.
 *
 * A merge patch is an object: each key merges into the target's key — an object into an object,
 * recursively; `null` deletes the key; anything else (a string, a number, an array, an object laid
 * over a non-object) replaces it.
 *
 * Writable fields are dotted paths (`metadata.labels`, `description`): a path covers itself and
 * everything below it. Without `hooks.writableFields` the default is `metadata` (every metadata key).
 * Whatever the configuration says, some paths are never writable: the task's identity and workflow
 * (`id`, `status`, `owner`, `blocks`, `blockedBy`), its own times (`createdAt`, `updatedAt`), the
 * metadata the gate and the task API own (`metadata.qualityGate*`, `metadata.reopenedByQualityGate*`,
 * `metadata.taskApi`), and the worker's stamps of its events (`metadata.completedAt`, `abortedAt`,
 * `abortedBy`, `claimedAt`, `unassignedAt`): a gate must not forge its own record, reset a reopen
 * count, widen an API key's reach, or make its own write look like a new event (the leader keys events
 * by those stamps and times, contract/events.ts: a completion without `completedAt` by its
 * `updatedAt`, a claim by `claimedAt`, the release marks or `createdAt`), which would run the gate
 * again, and again. A `__proto__` key is never kept either: no task reader would see it.
 */
import { z } from "zod";
import { TaskSchema, type Task } from "./team-files.js";
import { DEFAULT_WRITABLE_FIELDS } from "./setting-defaults.js";

export type JsonObject = Record<string, unknown>;

/** Top-level task fields no patch may write. */
const NEVER_WRITABLE_FIELDS = Object.freeze([
  "id",
  "status",
  "owner",
  "blocks",
  "blockedBy",
  "createdAt",
  "updatedAt",
] as const);

/** Prefixes of the metadata keys the gate (and the task API) write: never writable. */
const GATE_METADATA_PREFIXES = Object.freeze(["qualityGate", "reopenedByQualityGate", "taskApi"] as const);

/** Metadata keys the worker runtime stamps an event with (contract/events.ts keys events by them): never writable. */
const EVENT_STAMP_KEYS = Object.freeze(["completedAt", "abortedAt", "abortedBy", "claimedAt", "unassignedAt"] as const);

/** How deep a patch may nest (objects within objects): deeper is an invalid verdict. */
export const MAX_PATCH_DEPTH = 32;

/**
 * One writable field: dotted segments of letters, digits, `_` and `-`; a trailing `.*` means the same as without it.
 */
const WritableFieldSchema = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*(\.\*)?$/, "must be a dotted path such as metadata.labels or description")
  .transform((s) => (s.endsWith(".*") ? s.slice(0, -2) : s));
/** `hooks.writableFields`: the fields a patch verdict may write (replaces the default, `metadata`); `[]`: none. */
export const WritableFieldsSchema = z.array(WritableFieldSchema).max(64);

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Sets an own, enumerable key (never the prototype, whatever the key is named: `__proto__` included). */
function put(target: JsonObject, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** RFC 7396: `target` with `patch` merged into it; neither is changed. A non-object patch replaces the target. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isJsonObject(patch)) return patch;
  const out: JsonObject = {};
  if (isJsonObject(target)) for (const [key, value] of Object.entries(target)) put(out, key, value);
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else put(out, key, applyMergePatch(Object.hasOwn(out, key) ? out[key] : undefined, value));
  }
  return out;
}

/**
 * Whether `value` nests objects and arrays more than `max` levels deep (a scalar is 0 levels). Walked
 * without recursion and stopped at the first branch too deep, so that a hostile nesting costs nothing.
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<{ node: unknown; depth: number }> = [{ node: value, depth: 0 }];
  while (stack.length > 0) {
    const { node, depth } = stack.pop() as { node: unknown; depth: number };
    if (typeof node !== "object" || node === null) continue;
    if (depth + 1 > max) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push({ node: child, depth: depth + 1 });
  }
  return false;
}

/** Whether the dotted path (as segments) may never be written, whatever the configuration says. */
export function neverWritable(segments: readonly string[]): boolean {
  const [head, key] = segments;
  if (head === undefined) return false;
  // JSON.parse makes `__proto__` an own key; a task's schema drops it, so it is never written.
  if (segments.includes("__proto__")) return true;
  if ((NEVER_WRITABLE_FIELDS as readonly string[]).includes(head)) return true;
  if (head !== "metadata" || key === undefined) return false;
  return (
    GATE_METADATA_PREFIXES.some((prefix) => key.startsWith(prefix)) ||
    (EVENT_STAMP_KEYS as readonly string[]).includes(key)
  );
}

/** The warnings for configured writable fields that are never writable: listed, yet no patch will ever write them. */
export function neverWritableWarnings(fields: readonly string[] | null | undefined): string[] {
  const refused = (fields ?? []).filter((field) => neverWritable(field.split(".")));
  return refused.length === 0
    ? []
    : [
        `hooks.writableFields: ${refused.join(", ")} ${refused.length === 1 ? "is" : "are"} never writable (a patch's ${refused.length === 1 ? "write of it is" : "writes of them are"} dropped whatever the list says)`,
      ];
}

/** Whether some never-writable path lies strictly below `segments` (the root, or `metadata`). */
function holdsNeverWritable(segments: readonly string[]): boolean {
  return segments.length === 0 || (segments.length === 1 && segments[0] === "metadata");
}

interface FilteredPatch {
  /** The part of the patch inside the writable fields (possibly `{}`). */
  patch: JsonObject;
  /** The dotted paths kept, in the patch's order. */
  applied: string[];
  /** The dotted paths dropped: outside the writable fields, or never writable. */
  rejected: string[];
}

/**
 * Splits a patch along the writable fields (`null`: the default). A path is kept when a writable field
 * covers it and nothing never-writable lies below it; an object on the way to a writable field is
 * walked into; anything else is rejected whole (a `null` or a scalar on `metadata` would delete or
 * replace the gate's own keys, so it is rejected).
 */
export function filterPatch(patch: JsonObject, writableFields: readonly string[] | null): FilteredPatch {
  const writable = (writableFields ?? DEFAULT_WRITABLE_FIELDS).map((field) => field.split("."));
  const applied: string[] = [];
  const rejected: string[] = [];
  const covers = (field: readonly string[], path: readonly string[]): boolean =>
    field.length <= path.length && field.every((s, i) => path[i] === s);
  const walk = (node: JsonObject, at: readonly string[]): JsonObject => {
    const kept: JsonObject = {};
    for (const [key, value] of Object.entries(node)) {
      const path = [...at, key];
      const name = path.join(".");
      if (neverWritable(path)) {
        rejected.push(name);
        continue;
      }
      const covered = writable.some((field) => covers(field, path));
      const onTheWay = writable.some((field) => covers(path, field) && field.length > path.length);
      if (covered && !holdsNeverWritable(path)) {
        put(kept, key, value);
        applied.push(name);
      } else if ((covered || onTheWay) && isJsonObject(value)) {
        const inner = walk(value, path);
        if (Object.keys(inner).length > 0) put(kept, key, inner);
      } else {
        rejected.push(name);
      }
    }
    return kept;
  };
  const kept = walk(patch, []);
  return { patch: kept, applied, rejected };
}

/**
 * The patch without anything never writable (a second net where a stored patch is applied later: a
 * held gate's patches in its deferral file).
 */
export function withoutNeverWritable(patch: JsonObject): JsonObject {
  return filterPatch(patch, Object.keys(patch)).patch;
}

/**
 * The task with a patch laid over it, or why that is no task (`description` deleted, `subject` made a
 * number). A top-level key the patch deletes is there as `undefined`, which is what removes it in a
 * locked rewrite (team/tasks.ts updateTask).
 */
export function patchTask(task: Task, patch: JsonObject): { ok: true; task: Task } | { ok: false; problem: string } {
  const parsed = TaskSchema.safeParse(applyMergePatch(task, patch));
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.map(String).join(".") || "task"}: ${issue.message}`,
    );
    return { ok: false, problem: `the patched task is not a task (${problems.join("; ")})` };
  }
  const next: Record<string, unknown> = { ...parsed.data };
  for (const [key, value] of Object.entries(patch))
    if (value === null && Object.hasOwn(task, key)) next[key] = undefined;
  return { ok: true, task: next as Task };
}
