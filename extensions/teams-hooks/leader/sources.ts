/**
 * What the leader knows of the team dir between two looks: for each task file a stat signature, so a
 * hint or a scan re-reads only files that changed; and which idle notifications were already turned
 * into events. Reads are consistent (one open: fstat and read the same file), and a file that is not
 * a task is reported once per version, not at every scan.
 */
import fs from "node:fs/promises";
import fsSync from "node:fs";
import type { Stats } from "node:fs";
import path from "node:path";
import {
  type IdleNotification,
  IdleNotificationSchema,
  type Task,
  TaskSchema,
  type TeamIdentity,
} from "../contract/team-files.js";
import { errnoCode, describeError } from "../contract/errors.js";
import {
  type EventOptions,
  type HookEvent,
  gateRound,
  explainIdleEvents,
  parseIdleText,
  taskEvent,
} from "../contract/events.js";
import {
  MAX_TEAM_FILE_BYTES,
  READ_FLAGS,
  type FileProblem,
  checkSchema,
  irregularFileProblem,
  parseJsonText,
  readJsonText,
  readJsonFile,
  tooLargeProblem,
} from "../team/json-file.js";
import { shortenFile } from "../team/long-strings.js";
import { readInbox } from "../team/mailbox.js";
import { fileProblem, unsafeName } from "../text/messages.js";
import { inboxFile, isSafeName, sanitizeName, taskFile, tasksDir } from "../team/paths.js";

const TASK_FILE = /^[A-Za-z0-9_-]+\.json$/;
/** The keys of claims (contract/events.ts): a state's claim is "seen", not "to run" (restoreState). */
const CLAIM_KEY = "task_started:";
/** The format of `saveState`; a state of another version is ignored (the files are read instead). */
/** 4: claims have keys (a state of 3 said none for a task in progress, which is not "seen"). */
const STATE_VERSION = 4;

/** Reused by every read of a task file (its text is copied out at once); larger files get their own. */
const READ_BUFFER = Buffer.allocUnsafe(64 * 1024);

/**
 * The text of the open regular file `fd` (`stat` its fstat): one read at offset 0 asking for a byte
 * more than its size, so that getting no more than that means the end was reached — a system call
 * less than a read to EOF, which at 10,000 files is part of a start-up scan. A file that grew since
 * its fstat (a writer not using rename) is read again, up to the cap; null when it grew past it. A
 * file of 1 MiB or more is read with its long strings cut (team/long-strings.ts).
 */
function readText(fd: number, file: string, stat: Stats): string | null {
  const size = stat.size;
  if (size >= READ_BUFFER.length) return readJsonText(fd, file, stat, MAX_TEAM_FILE_BYTES)?.text ?? null;
  const read = fsSync.readSync(fd, READ_BUFFER, 0, size + 1, 0);
  if (read <= size) return READ_BUFFER.toString("utf8", 0, read);
  return shortenFile(fd, file, stat, MAX_TEAM_FILE_BYTES)?.text ?? null;
}

/** What a file the leader will not read is, said once per version of it. */
function skipped(problem: FileProblem): string {
  return `${problem.message} — skipped until it changes`;
}

function statQuietly(file: string): Stats | null {
  try {
    return fsSync.statSync(file);
  } catch {
    return null; // gone since: the caller reports the error it has
  }
}

export function isTaskFileName(name: string): boolean {
  return TASK_FILE.test(name);
}

function signature(stat: Stats): string {
  return `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
}

export type TaskLook =
  | { kind: "unchanged" }
  /** Unchanged since the state a previous leader saved, whose event (if any) is handled: not read. */
  | { kind: "known" }
  | { kind: "gone" }
  | { kind: "problem"; message: string; fresh: boolean }
  /**
   * `changedMs`: the later of the file's mtime and ctime (a rename into place sets the ctime).
   * `previousKey`: the key the file stood for when this leader (or the one whose state it restored)
   * last read it; undefined when it was not read before.
   */
  | { kind: "task"; task: Task; event: HookEvent | null; changedMs: number; previousKey: string | null | undefined };

/** The leader's memory of each task's gate round (contract/events.ts gateRound), which keys its completions. */
interface RoundMemory {
  round(taskId: string): number;
  /** A task's file shows a higher round than remembered (a reopen by hand, by `decide`): remember it. */
  seen(taskId: string, round: number): void;
}

export class TeamSources {
  readonly tasksDir: string;
  readonly inboxFile: string;
  readonly #identity: TeamIdentity;
  readonly #rounds: RoundMemory | null;
  readonly #signatures = new Map<string, string>();
  /** The event key each task file stood for when last read (tasks only: a file that is not one is left out). */
  readonly #keys = new Map<string, string | null>();
  /** From a previous leader's saved state, until the start-up scan has used it: file name → index. */
  #restored = new Map<string, number>();
  #restoredSigs: readonly string[] = [];
  #restoredKeys: ReadonlyArray<string | null> = [];
  #inboxSignature: string | null = null;
  /** Idle keys whose events were all handed out already. */
  readonly #handledNotes = new Set<string>();

  constructor(identity: TeamIdentity, rounds: RoundMemory | null = null) {
    this.#identity = identity;
    this.#rounds = rounds;
    this.tasksDir = tasksDir(identity.teamDir, identity.taskListId);
    this.inboxFile = inboxFile(identity.teamDir, "team", identity.leadName);
  }

  get taskCount(): number {
    return this.#signatures.size;
  }

  /** Names of task files in the list folder now. */
  async listTaskFiles(): Promise<string[]> {
    try {
      // tasksDir is normalised and a task file name has no separator: plain joining is path.join here, at a fraction of
      // its cost.
      const prefix = `${this.tasksDir}${path.sep}`;
      return (await fs.readdir(this.tasksDir)).filter(isTaskFileName).map((name) => prefix + name);
    } catch (error) {
      if (errnoCode(error) === "ENOENT") return [];
      throw error;
    }
  }

  /** Cheap check for the reconcile scan: has the file changed since the last look? */
  changedSinceLook(file: string): boolean {
    try {
      return signature(fsSync.statSync(file)) !== this.#signatures.get(file);
    } catch (error) {
      return this.#signatures.has(file) || errnoCode(error) !== "ENOENT";
    }
  }

  /** Files looked at before but gone from `present`: forgotten, so a re-created file is read anew. */
  forgetMissing(present: ReadonlySet<string>): void {
    for (const file of this.#signatures.keys()) {
      if (!present.has(file)) {
        this.#signatures.delete(file);
        this.#keys.delete(file);
      }
    }
  }

  /**
   * What the leader knows of the task files, to save at shutdown: for each task file read, its stat
   * signature and the key of the event its content stands for. A restart given it back
   * (`restoreState`) stats each file and reads only those whose signature differs or whose event is
   * not handled yet: the event of a file is a function of its content, so an entry is right for as
   * long as the file is unchanged, however old the state is.
   */
  saveState(unsettled: (key: string) => boolean = () => false): string {
    // Three parallel arrays, not an object per file: parsing 10,000 entries as objects costs the
    // restarted leader twice the memory (docs/performance.md).
    const names: string[] = [];
    const sigs: string[] = [];
    const keys: Array<string | null> = [];
    for (const [file, key] of this.#keys) {
      const sig = this.#signatures.get(file);
      // A claim still queued at shutdown is left out: the next start reads its file and judges it.
      if (sig === undefined || (key?.startsWith(CLAIM_KEY) === true && unsettled(key))) continue;
      names.push(path.basename(file));
      sigs.push(sig);
      keys.push(key);
    }
    return JSON.stringify({ version: STATE_VERSION, tasksDir: this.tasksDir, names, sigs, keys });
  }

  /**
   * Takes a state saved by `saveState` for this task list, keeping the files whose event is none,
   * `handled`, or a claim (the others are read, to run their event); false (and nothing taken) if it
   * is not one. A claim the previous leader saw was either judged or seen while no start gate
   * existed: either way it is not judged now (saveState leaves out the claims still queued).
   */
  restoreState(text: string, handled: (key: string) => boolean): boolean {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return false;
    }
    const state = (value ?? {}) as {
      version?: unknown;
      tasksDir?: unknown;
      names?: unknown;
      sigs?: unknown;
      keys?: unknown;
    };
    const { names, sigs, keys } = state;
    if (state.version !== STATE_VERSION || state.tasksDir !== this.tasksDir) return false;
    if (
      !Array.isArray(names) ||
      !Array.isArray(sigs) ||
      !Array.isArray(keys) ||
      names.length !== sigs.length ||
      names.length !== keys.length
    )
      return false;
    const restored = new Map<string, number>();
    for (let i = 0; i < names.length; i++) {
      const name: unknown = names[i];
      const key: unknown = keys[i];
      if (typeof name !== "string" || !isTaskFileName(name) || typeof sigs[i] !== "string") continue;
      if (key === null || (typeof key === "string" && (handled(key) || key.startsWith(CLAIM_KEY))))
        restored.set(name, i);
    }
    this.#restored = restored;
    this.#restoredSigs = sigs as string[];
    this.#restoredKeys = keys as Array<string | null>;
    return true;
  }

  /** The start-up scan is over: a restored entry not used by now is of no use. */
  dropRestoredState(): void {
    this.#restored.clear();
    this.#restoredSigs = [];
    this.#restoredKeys = [];
  }

  /**
   * Re-reads one task file if it changed, and says what it now stands for. Synchronous on purpose:
   * a task file is a small local file, and open + fstat + read + close through the thread pool cost
   * 3–5× more here, which at 10,000 files is the leader's start-up (docs/performance.md). Callers
   * yield to the event loop between files.
   */
  lookAtTask(file: string): TaskLook {
    const name = this.#restored.size > 0 ? path.basename(file) : "";
    const restored = this.#restored.get(name);
    let previousKey = this.#keys.get(file);
    if (restored !== undefined) {
      this.#restored.delete(name);
      previousKey = this.#restoredKeys[restored] ?? null;
      try {
        const sig = signature(fsSync.statSync(file));
        if (sig === this.#restoredSigs[restored]) {
          this.#signatures.set(file, sig);
          this.#keys.set(file, this.#restoredKeys[restored] ?? null);
          return { kind: "known" };
        }
      } catch {
        // Gone or unreadable: the read below says which.
      }
    }
    let fd: number | undefined;
    try {
      // Non-blocking: a FIFO planted as a task file is refused below instead of holding the leader at
      // its open for good (a synchronous open waiting for a writer cannot even be interrupted).
      fd = fsSync.openSync(file, READ_FLAGS);
      const stat = fsSync.fstatSync(fd);
      const sig = signature(stat);
      const previous = this.#signatures.get(file);
      if (previous === sig) return { kind: "unchanged" };
      const refused = irregularFileProblem(file, stat, MAX_TEAM_FILE_BYTES);
      if (refused) return this.#refuse(file, sig, refused);
      const text = readText(fd, file, stat);
      if (text === null) return this.#refuse(file, sig, tooLargeProblem(file, null, MAX_TEAM_FILE_BYTES));
      this.#signatures.set(file, sig);
      const json = parseJsonText(text, file);
      const checked = json.ok ? checkSchema(json.raw, TaskSchema, file) : json;
      if (!checked.ok) {
        this.#keys.delete(file);
        // Said once per version of the file (its stat): the reconcile scan does not repeat it.
        return {
          kind: "problem",
          message: `${checked.problem.message} — not a task: no gate runs for it until the file is fixed`,
          fresh: true,
        };
      }
      const id = checked.value.id;
      if (!isSafeName(id)) {
        // Its file name is the one of the safe id it maps onto (`a/b` in `a-b.json`): not that task.
        this.#keys.delete(file);
        return {
          kind: "problem",
          message: fileProblem(file, "id", unsafeName(id, sanitizeName(id)), "skipped until it changes"),
          fresh: true,
        };
      }
      if (path.basename(file) !== path.basename(taskFile(this.#identity.teamDir, this.#identity.taskListId, id))) {
        // Its policy writes would go to the file its id names, another task's (or none): not an event.
        this.#keys.delete(file);
        return {
          kind: "problem",
          message: `${file}: id: ${JSON.stringify(checked.value.id)} does not match the file name (a task's file is <id>.json) — skipped until it changes`,
          fresh: true,
        };
      }
      const event = taskEvent(checked.value, this.#eventOptions(checked.value));
      this.#keys.set(file, event?.key ?? null);
      return { kind: "task", task: checked.value, event, changedMs: Math.max(stat.mtimeMs, stat.ctimeMs), previousKey };
    } catch (error) {
      if (errnoCode(error) === "ENOENT") {
        this.#signatures.delete(file);
        this.#keys.delete(file);
        return { kind: "gone" };
      }
      if (fd === undefined && errnoCode(error) === "ENXIO") {
        // What opening a socket gives: told by its stat, once per version like any file not regular.
        const stat = statQuietly(file);
        const refused = stat ? irregularFileProblem(file, stat, MAX_TEAM_FILE_BYTES) : null;
        if (stat && refused) {
          const sig = signature(stat);
          return this.#signatures.get(file) === sig ? { kind: "unchanged" } : this.#refuse(file, sig, refused);
        }
      }
      this.#keys.delete(file);
      return {
        kind: "problem",
        message: `${file}: cannot read: ${describeError(error)} — skipped until it changes`,
        fresh: true,
      };
    } finally {
      if (fd !== undefined) fsSync.closeSync(fd);
    }
  }

  /**
   * The round the leader keys `task`'s completion in: the higher of its file's and the leader's
   * memory; a higher one in the file is remembered (it only ever rises).
   */
  #eventOptions(task: Task): EventOptions {
    if (!this.#rounds) return {};
    const remembered = this.#rounds.round(task.id);
    const written = gateRound(task);
    if (written > remembered) {
      try {
        this.#rounds.seen(task.id, written);
      } catch {
        // The ledger refused the line (a full disk): the file's round is used now, and remembered at the next look.
      }
    }
    return { minRound: remembered };
  }

  /** Forgets what the last look at a task's file saw, so that the next look reads it whatever its stat. */
  forget(taskId: string): string {
    const file = taskFile(this.#identity.teamDir, this.#identity.taskListId, taskId);
    this.#signatures.delete(file);
    return file;
  }

  /** A file not read (not a regular file, too large): reported now, and not again until its stat changes. */
  #refuse(file: string, sig: string, problem: FileProblem): TaskLook {
    this.#signatures.set(file, sig);
    this.#keys.delete(file);
    return { kind: "problem", message: skipped(problem), fresh: true };
  }

  /** Reads a task by id, fresh (for an idle notification's task): null when missing or not a task. */
  async readTaskById(taskId: string): Promise<Task | null> {
    const file = taskFile(this.#identity.teamDir, this.#identity.taskListId, taskId);
    // Missing, unreadable or not a regular file: the notification alone describes the event (and
    // lookAtTask reports the file).
    const checked = await readJsonFile(file, TaskSchema, { longStrings: "short" });
    // A file that holds another task's id is not this task (lookAtTask reports it).
    return checked.ok && checked.value.id === taskId ? checked.value : null;
  }

  /**
   * The events of idle notifications in the leader's inbox that were not handed out before, if the
   * inbox changed (or `force`). `unreadOnly` for --inbox consume.
   */
  async lookAtInbox(opts: { force: boolean; unreadOnly: boolean }): Promise<InboxLook> {
    try {
      const sig = signature(await fs.stat(this.inboxFile));
      if (!opts.force && sig === this.#inboxSignature) return { events: [], problems: [], unmatched: [] };
      this.#inboxSignature = sig;
    } catch (error) {
      if (errnoCode(error) === "ENOENT") return { events: [], problems: [], unmatched: [] };
      return { events: [], problems: [`${this.inboxFile}: cannot read: ${describeError(error)}`], unmatched: [] };
    }
    const inbox = await readInbox(this.#identity.teamDir, "team", this.#identity.leadName);
    if (!inbox.ok)
      return {
        events: [],
        problems: [inbox.problem.kind === "invalid" ? inbox.problem.message : skipped(inbox.problem)],
        unmatched: [],
      };
    const events: HookEvent[] = [];
    const problems: string[] = [];
    const unmatched: InboxLook["unmatched"] = [];
    for (const { index, message } of inbox.messages) {
      if (opts.unreadOnly && message.read) continue;
      const raw = parseIdleText(message.text);
      if (raw === null) continue;
      const note = IdleNotificationSchema.safeParse(raw);
      if (!note.success) continue; // another message type, or a notification we cannot use
      const idleKey = `idle:${note.data.from}:${note.data.timestamp}`;
      if (this.#handledNotes.has(idleKey)) continue;
      // A name that is not a safe file name would act on another task's file or member's inbox
      // (`a/b` is `a-b`): no event at all, said once (the note counts as handled).
      const unsafe = unsafeNoteField(note.data);
      if (unsafe) {
        const { field, value } = unsafe;
        problems.push(
          fileProblem(
            this.inboxFile,
            `message [${index}] ${field}`,
            unsafeName(value, sanitizeName(value)),
            "idle notification skipped, no gate runs for it",
          ),
        );
        this.#handledNotes.add(idleKey);
        continue;
      }
      const task = note.data.completedTaskId ? await this.readTaskById(note.data.completedTaskId) : null;
      const found = explainIdleEvents(note.data, task, task ? this.#eventOptions(task) : {});
      events.push(...found.events);
      if (found.unmatched && note.data.completedTaskId)
        unmatched.push({ taskId: note.data.completedTaskId, detail: found.unmatched });
      this.#handledNotes.add(idleKey);
    }
    return { events, problems, unmatched };
  }
}

/** What a look at the leader's inbox found: events, problems, and reports the task files contradict (`--verbose`). */
interface InboxLook {
  events: HookEvent[];
  problems: string[];
  unmatched: Array<{ taskId: string; detail: string }>;
}

/**
 * The first field of an idle notification that names a file (an inbox, a task) but is not a safe
 * name; null when there is none. An empty `completedTaskId` names no task (idleEvents reads it so).
 */
function unsafeNoteField(note: IdleNotification): { field: "from" | "completedTaskId"; value: string } | null {
  if (!isSafeName(note.from)) return { field: "from", value: note.from };
  const id = note.completedTaskId;
  if (id !== undefined && id !== "" && !isSafeName(id)) return { field: "completedTaskId", value: id };
  return null;
}
