/**
 * The task list: one JSON file per task under `tasks/<taskListId>/`. Every rewrite is a
 * read-modify-write under the task file's lock, starting from what is on disk at that moment, so
 * that a worker's concurrent change to other fields survives ours. Unknown fields and the file's key
 * order are kept. The task list is the team's: what we write there is `shared` (json-file.ts), so a
 * leader under its own Unix user leaves it writable by the agents' group.
 */
import { access, readdir } from "node:fs/promises";
import { existsSync } from "node:fs";
import path from "node:path";
import { TaskSchema, type Task } from "../contract/team-files.js";
import { HooksError, describeError, errnoCode } from "../contract/errors.js";
import {
  checkSchema,
  mkdirUnder,
  readJsonFile,
  readRegularFile,
  writeJsonAtomic,
  writeTextAtomic,
  type FileProblem,
  type ReadResult,
} from "./json-file.js";
import { withLock } from "./lock.js";
import { highWatermarkFile, taskFile, tasksDir } from "./paths.js";

/** A task file name: a sanitised id plus `.json`. Excludes `.tmp.*`, `.lock` and `.highwatermark` by construction. */
const TASK_FILE = /^([A-Za-z0-9_-]+)\.json$/;
const NUMERIC_ID = /^\d+$/;

interface TaskFileEntry {
  /** The id from the file name (the file's `id` field is checked by whoever reads it). */
  id: string;
  file: string;
}

/**
 * The task files of a list, numeric ids first in numeric order, then the others by name. A missing folder is an empty
 * list.
 */
export async function listTaskFiles(teamDir: string, taskListId: string): Promise<TaskFileEntry[]> {
  const dir = tasksDir(teamDir, taskListId);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return [];
    throw new HooksError("E_TEAM_DIR", `cannot list tasks in ${dir}: ${describeError(error)}`, { cause: error });
  }
  const entries: TaskFileEntry[] = [];
  for (const name of names) {
    const id = TASK_FILE.exec(name)?.[1];
    if (id !== undefined) entries.push({ id, file: path.join(dir, name) });
  }
  return entries.sort(compareIds);
}

function compareIds(a: TaskFileEntry, b: TaskFileEntry): number {
  const an = NUMERIC_ID.test(a.id);
  const bn = NUMERIC_ID.test(b.id);
  if (an && bn) return Number(a.id) - Number(b.id) || a.id.localeCompare(b.id);
  if (an !== bn) return an ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** Reads one task file. Missing or mistyped required fields are a problem naming the field, never a throw. */
export function readTask(file: string): Promise<ReadResult<Task>> {
  return readJsonFile(file, TaskSchema, { longStrings: "short" });
}

/** Every readable task of a list, plus a problem for each file that is not a task (for a warning). */
export async function readAllTasks(
  teamDir: string,
  taskListId: string,
): Promise<{ tasks: Task[]; problems: FileProblem[] }> {
  const tasks: Task[] = [];
  const problems: FileProblem[] = [];
  for (const entry of await listTaskFiles(teamDir, taskListId)) {
    const result = await readTask(entry.file);
    if (result.ok) tasks.push(result.value);
    // deleted since the listing: not a problem
    else if (result.problem.kind !== "missing") problems.push(result.problem);
  }
  return { tasks, problems };
}

type UpdateTaskResult = { ok: true; written: boolean; task: Task; file: string } | { ok: false; problem: FileProblem };

/**
 * Read-modify-write of one task under its lock. `mutate` gets a copy of the task as it is on disk
 * inside the lock and returns the new task, or `undefined` to write nothing. The result is laid over
 * the file's own object, so fields `mutate` leaves out (unknown ones included) are kept: to remove a
 * field, set it to `undefined`. Nothing is set implicitly (`updatedAt` is the caller's to set).
 * A task file that is missing or not a task is returned as a problem, and left untouched.
 */
export async function updateTask(
  teamDir: string,
  taskListId: string,
  taskId: string,
  mutate: (task: Task) => Task | undefined,
  options: { label?: string; timeoutMs?: number } = {},
): Promise<UpdateTaskResult> {
  const file = taskFile(teamDir, taskListId, taskId);
  // No task, no lock: its folder may not even exist, and a lock file must not create one.
  if (!existsSync(file)) return { ok: false, problem: { kind: "missing", file, message: `${file}: file not found` } };
  return withLock(
    file,
    async (): Promise<UpdateTaskResult> => {
      // A long description is read as its head and written back whole (team/long-strings.ts).
      const current = await readJsonFile(file, TaskSchema, { longStrings: "keep" });
      if (!current.ok) return current;
      const next = mutate(structuredClone(current.value));
      if (next === undefined) return { ok: true, written: false, task: current.value, file };
      const merged = { ...asRecord(current.raw), ...next };
      const task = validTask(merged, file);
      await writeJsonAtomic(file, merged, { shared: true, parts: current.parts });
      return { ok: true, written: true, task, file };
    },
    {
      label: options.label ?? `update task ${taskId}`,
      timeoutMs: options.timeoutMs,
    },
  );
}

interface CreateTaskOptions {
  /**
   * Checked inside the id lock, against every readable task: a task returned here is returned instead of creating one.
   */
  existing?: (tasks: Task[]) => Task | undefined;
  label?: string;
  timeoutMs?: number;
}

/** `created: false` when `existing` found the task. */
interface CreateTaskResult {
  created: boolean;
  task: Task;
  file: string;
}

/**
 * Creates a task with the next free id, allocated under `.highwatermark.lock`:
 * id = max(highwatermark, largest numeric task file id) + 1. The task file is written first, then
 * the highwatermark, so a crash in between only leaves a watermark that the file ids overrule.
 * `build(id)` must return a task whose `id` is that id.
 */
export async function createTask(
  teamDir: string,
  taskListId: string,
  build: (id: string) => Task,
  options: CreateTaskOptions = {},
): Promise<CreateTaskResult> {
  mkdirUnder(teamDir, tasksDir(teamDir, taskListId), { shared: true });
  const watermarkFile = highWatermarkFile(teamDir, taskListId);
  return withLock(
    watermarkFile,
    async (): Promise<CreateTaskResult> => {
      if (options.existing) {
        const found = options.existing((await readAllTasks(teamDir, taskListId)).tasks);
        if (found) return { created: false, task: found, file: taskFile(teamDir, taskListId, found.id) };
      }
      let id = Math.max(await readHighWatermark(watermarkFile), await largestNumericId(teamDir, taskListId)) + 1;
      // A writer that ignores the watermark could have taken the id since the listing: never overwrite a task.
      while (await exists(taskFile(teamDir, taskListId, String(id)))) id += 1;
      const built = build(String(id));
      if (built.id !== String(id)) {
        throw new HooksError(
          "E_INTERNAL",
          `createTask: build(${id}) returned a task with id ${JSON.stringify(built.id)}`,
        );
      }
      const file = taskFile(teamDir, taskListId, String(id));
      const task = validTask(built, file);
      await writeJsonAtomic(file, built, { shared: true });
      // pi-agent-teams rewrites the watermark in place (writeFile), not by rename: it must stay group-writable.
      await writeTextAtomic(watermarkFile, `${id}\n`, { shared: true });
      return { created: true, task, file };
    },
    {
      label: options.label ?? "create task",
      timeoutMs: options.timeoutMs,
    },
  );
}

/**
 * The last allocated id; 0 when the file is missing or does not hold a decimal number — a FIFO, a
 * device or a file too large for one included, read without blocking (the allocation then rests on
 * the listing, and the next write replaces it with a regular file).
 */
export async function readHighWatermark(file: string): Promise<number> {
  const read = readRegularFile(file, { maxBytes: MAX_WATERMARK_BYTES });
  if (read.ok) {
    const text = read.text.trim();
    return NUMERIC_ID.test(text) ? Number(text) : 0;
  }
  const { kind } = read.problem;
  if (kind === "missing" || kind === "not_regular" || kind === "too_large") return 0;
  throw new HooksError("E_IO", `cannot read ${read.problem.message}`);
}

/** A watermark is one decimal number: a file far longer holds none. */
const MAX_WATERMARK_BYTES = 4096;

async function largestNumericId(teamDir: string, taskListId: string): Promise<number> {
  let max = 0;
  for (const entry of await listTaskFiles(teamDir, taskListId)) {
    if (NUMERIC_ID.test(entry.id)) max = Math.max(max, Number(entry.id));
  }
  return max;
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch (error) {
    return errnoCode(error) !== "ENOENT";
  }
}

/** A task we are about to write must be a task: writing a broken one is a bug of the caller. */
function validTask(value: unknown, file: string): Task {
  const checked = checkSchema(value, TaskSchema, file);
  if (!checked.ok) throw new HooksError("E_TASK", `refusing to write an invalid task: ${checked.problem.message}`);
  return checked.value;
}

function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
