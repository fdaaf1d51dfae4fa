/**
 * The leader's crash-safe memory of event keys: `<teamDir>/hook-state/ledger.jsonl`, one JSON record a
 * line, appended and flushed to disk (fdatasync) before the call returns (`spawn` records are written
 * but ride on the next flush).
 *
 *   baseline  key existed before the leader's first start; never run (unless --catch-up)
 *   begin     the event's hook is about to start (runId, attempt)
 *   spawn     its process group (pid), for people reading the file (a restarted leader finds a dead
 *             leader's hooks by their run id, not by this pid)
 *   defer     its gate is held (a `defer` verdict): logged, its deferral written; never run again
 *   done      its log and policy actions are written (or no hook existed), or its deferral's
 *             decision is applied; `gate`: the state a task event's gate life reached
 *             (policy/gate-life.ts: passed, failed, reopened, escalated)
 *   hold      its gate could not judge the work (untrusted, missing, our own fault): neither done
 *             nor in flight; run again when the lead approves, after a retry, or at the next start
 *   task      what the leader remembers of one task's gate life (`key` is `task:<id>`): its gate
 *             round, the root it recorded when it made the task as a follow-up, the units of a
 *             root's budget spent and the events that spent them (policy/gate-life.ts); a value only
 *             ever rises (but a round marked `lowered`: the leader undid its own reopen), and the
 *             budget is counted from here alone, never from the task's metadata
 *
 * What it remembers of a key (KeyMemory) is where the key's event is in its gate life, a GatePlace of
 * policy/gate-life.ts (`begin`: running; `defer`: held for a decision; `hold`: held for the lead or a
 * retry; `done`: the state its judgement reached), with what that place needs; a key with no gate life
 * (history, an idle event, no gate) has none. Lines written before `done` kept `gate` read the same way.
 *
 * A key whose last record is `begin` or `spawn` was in flight when the leader died: the restarted
 * leader looks for that run's log and marks it done, deferred or held again as the log says, or runs it
 * again as a retry (leader/startup.ts recoverInFlight). A deferred or held key stays so, across
 * restarts and compaction, until `done`. A torn last line (a crash mid-append) is ignored. The file is
 * compacted (each key's last state, atomic rename) when it grows past twice its keys. See docs/ledger.md.
 */
import fs from "node:fs";
import path from "node:path";
import { HOOK_EVENTS, type HookEventName } from "../contract/contract.js";
import { HooksError, describeError } from "../contract/errors.js";
import {
  GATE_STATES,
  type GatePlace,
  type GateState,
  JUDGED_STATES,
  type JudgedState,
  type RerunCause,
} from "../policy/gate-life.js";
import { readRegularFile, writeAll } from "../team/json-file.js";
import { ledgerFile } from "../team/paths.js";

/** What a retry needs to fire the event again without its source: kept with `begin`. */
export interface LedgerEventInfo {
  event: HookEventName;
  taskId: string | null;
  member: string | null;
  timestamp: string | null;
}

type LedgerRecord =
  | { op: "baseline"; key: string; at: string }
  | { op: "begin"; key: string; at: string; runId: string; attempt: number; event?: LedgerEventInfo }
  | { op: "spawn"; key: string; runId: string; pid: number }
  /** `deferral`: the run id the deferral is known by (the deferring hook's: `<runId>.N` in a chain). */
  | { op: "defer"; key: string; at: string; runId: string; deferral: string; expiresAt: string; log: string | null }
  | {
      op: "done";
      key: string;
      at: string;
      runId: string | null;
      outcome: string;
      log: string | null;
      /** The state the task event's gate life reached (absent: no gate life, or an older line). */
      gate?: GateState;
    }
  | {
      op: "hold";
      key: string;
      at: string;
      runId: string;
      cause: RerunCause;
      log: string | null;
      event?: LedgerEventInfo;
    }
  /** `by`: the event keys that spent the root's units (`spent` is at least their number). */
  /** `lowered`: the round is set to `round` (the leader undid its own reopen), not raised to it. */
  | { op: "task"; key: string; round?: number; lowered?: true; root?: string; spent?: number; by?: string[] };

/** What the leader remembers of one task's gate life (the `task` records). */
interface TaskMemory {
  round: number;
  root?: string;
  spent: number;
  /** The events that spent this root's units (a retry of one spends nothing more). */
  spentBy: string[];
}

/** The key of a task's memory record: never an event key (those start with an event's name). */
const TASK_KEY = "task:";

/**
 * What the ledger remembers of one key: where its event is in its gate life (a GatePlace of
 * policy/gate-life.ts), with what that place needs. `attempt`: the runs begun so far.
 *
 *   running            begun, its end not recorded (in flight): what a restart needs to end or retry it
 *   held (deferral)    its gate answered `defer`: the deferral's run id and deadline; closed by its decision
 *   held (approval,    its gate could not judge the work: run again when the hold ends, with `event`
 *         fault)
 *   passed, failed,    done: the state its judgement reached, with the log's `outcome`
 *   reopened, escalated
 *   null               no gate life here: done without one (`outcome`: an idle event, `no_hook`,
 *                      `superseded`, a line older than the ledger's `gate`), or history (`outcome` null,
 *                      attempt 0: a baseline, never run)
 */
export type KeyMemory =
  | {
      state: "running";
      attempt: number;
      runId: string;
      startedAt: string;
      pid: number | null;
      event: LedgerEventInfo | null;
    }
  | {
      state: "held";
      cause: "deferral";
      attempt: number;
      runId: string;
      at: string;
      log: string | null;
      deferral: string;
      expiresAt: string;
    }
  | {
      state: "held";
      cause: RerunCause;
      attempt: number;
      runId: string;
      at: string;
      log: string | null;
      event: LedgerEventInfo | null;
    }
  | { state: JudgedState | null; attempt: number; outcome: string; log: string | null }
  | { state: null; attempt: 0; outcome: null; log: null };

/**
 * The ledger's word for a key (`watch --verbose`): where its event is in its gate life (`running`,
 * `held (deferral)`, `passed`…), `done` when it is done without one, `baseline` for history.
 */
export function memoryWord(memory: KeyMemory | undefined): string {
  if (memory === undefined) return "unknown";
  if (memory.state === "held") return `held (${memory.cause})`;
  if (memory.state !== null) return memory.state;
  return memory.outcome === null ? "baseline" : "done";
}

/** How the key's event ended, once done (the log's outcome, `no_hook`, `superseded`); null: not done, or history. */
export function doneOutcome(memory: KeyMemory | undefined): string | null {
  return memory !== undefined && "outcome" in memory ? memory.outcome : null;
}

/**
 * The largest ledger loaded. Compaction keeps it near one line per key (about 150 bytes), so this is
 * over a million events; past it (or at a FIFO or device in its place) the leader refuses to start
 * rather than read without end.
 */
const MAX_LEDGER_BYTES = 256 * 1024 * 1024;

export { ledgerFile };

export class Ledger {
  readonly file: string;
  /** True when the ledger file did not exist: the leader's first start on this team dir. */
  readonly fresh: boolean;
  readonly #keys: Map<string, KeyMemory>;
  readonly #tasks: Map<string, TaskMemory>;
  #lines: number;
  #fd: number | null;
  /** A write failed part-way: the next record must start on a line of its own. */
  #torn = false;
  /** The fdatasync under way, and the one queued behind it (see #flush). */
  #sync: Promise<void> | null = null;
  #nextSync: Promise<void> | null = null;

  private constructor(
    file: string,
    fresh: boolean,
    keys: Map<string, KeyMemory>,
    tasks: Map<string, TaskMemory>,
    lines: number,
    fd: number,
  ) {
    this.file = file;
    this.fresh = fresh;
    this.#keys = keys;
    this.#tasks = tasks;
    this.#lines = lines;
    this.#fd = fd;
  }

  /** Loads the ledger of `teamDir` (creating it), reporting unreadable lines through `warn`. */
  static async open(teamDir: string, warn: (message: string) => void = () => {}): Promise<Ledger> {
    const file = ledgerFile(teamDir);
    await fs.promises.mkdir(path.dirname(file), { recursive: true });
    let text = "";
    let fresh = false;
    const read = readRegularFile(file, { maxBytes: MAX_LEDGER_BYTES });
    if (read.ok) text = read.text;
    else if (read.problem.kind === "missing") fresh = true;
    else {
      throw new HooksError(
        "E_LEDGER",
        `cannot load the ledger ${read.problem.message}; move it aside (mv '${file}' '${file}.bad') and start again: without a ledger the next start is a first start, which records the completions there are as history`,
      );
    }
    const keys = new Map<string, KeyMemory>();
    const tasks = new Map<string, TaskMemory>();
    const lines = text.split("\n");
    let count = 0;
    lines.forEach((line, index) => {
      if (line.trim() === "") return;
      count += 1;
      const parsed = parseLine(line);
      if (parsed) apply(keys, tasks, parsed);
      // A torn last line is what a crash mid-append leaves: expected, so silent.
      else if (index < lines.length - 1) warn(`${file}:${index + 1}: unreadable ledger line skipped`);
    });
    if (text !== "" && !text.endsWith("\n")) {
      // Seal the torn line so the next record starts on a line of its own.
      await fs.promises.appendFile(file, "\n");
    }
    const ledger = new Ledger(file, fresh, keys, tasks, count, fs.openSync(file, "a"));
    if (count > 1000 && count > (keys.size + tasks.size) * 2) await ledger.compact();
    return ledger;
  }

  get(key: string): KeyMemory | undefined {
    return this.#keys.get(key);
  }

  /**
   * Where the key's event is in its gate life (policy/gate-life.ts), as this ledger records it: `running`
   * (in flight), `held` (a deferral, or an approval or fault hold), or the state a judged event reached.
   * Null for a key with no gate life here: unknown, history (baseline), or done without one (an idle
   * event, no gate, superseded, a line written before the ledger kept the state).
   */
  place(key: string): GatePlace | null {
    const entry = this.#keys.get(key);
    if (entry === undefined || entry.state === null) return null;
    return entry.state === "held" ? { state: entry.state, cause: entry.cause } : { state: entry.state };
  }

  has(key: string): boolean {
    return this.#keys.has(key);
  }

  get size(): number {
    return this.#keys.size;
  }

  /** Keys whose hook started but whose end was never recorded. */
  inFlight(): Array<{
    key: string;
    runId: string;
    attempt: number;
    startedAt: string;
    pid: number | null;
    event: LedgerEventInfo | null;
  }> {
    const out = [];
    for (const [key, state] of this.#keys) {
      if (state.state === "running")
        out.push({
          key,
          runId: state.runId,
          attempt: state.attempt,
          startedAt: state.startedAt,
          pid: state.pid,
          event: state.event,
        });
    }
    return out;
  }

  /** Keys whose gate is held until a decision arrives (hook-state/deferrals/). */
  deferred(): Array<Extract<KeyMemory, { cause: "deferral" }> & { key: string }> {
    return [...this.#keys].flatMap(([key, state]) =>
      state.state === "held" && state.cause === "deferral" ? [{ key, ...state }] : [],
    );
  }

  /** Keys held because their gate could not judge the work, with what a new run needs. */
  held(): Array<Extract<KeyMemory, { cause: RerunCause }> & { key: string }> {
    return [...this.#keys].flatMap(([key, state]) =>
      state.state === "held" && state.cause !== "deferral" ? [{ key, ...state }] : [],
    );
  }

  /** What the leader remembers of task `taskId`'s gate life (zeros when nothing). */
  task(taskId: string): TaskMemory {
    return this.#tasks.get(taskId) ?? { round: 0, spent: 0, spentBy: [] };
  }

  /**
   * Remembers more of tasks' gate lives: a round, a root, units spent, each only if it rises (or is
   * new). Written, not flushed: it reaches the disk with the event's `done`, which comes after.
   */
  remember(what: {
    round?: { taskId: string; round: number };
    root?: { taskId: string; root: string };
    spent?: { root: string; key: string };
    /** The round set back (the leader undid its own reopen): the one memory that lowers. */
    lowered?: { taskId: string; round: number };
  }): void {
    const records: LedgerRecord[] = [];
    if (what.round && what.round.round > this.task(what.round.taskId).round)
      records.push({ op: "task", key: TASK_KEY + what.round.taskId, round: what.round.round });
    if (what.lowered && what.lowered.round < this.task(what.lowered.taskId).round)
      records.push({ op: "task", key: TASK_KEY + what.lowered.taskId, round: what.lowered.round, lowered: true });
    if (what.root && this.task(what.root.taskId).root === undefined)
      records.push({ op: "task", key: TASK_KEY + what.root.taskId, root: what.root.root });
    if (what.spent) {
      const known = this.task(what.spent.root);
      if (!known.spentBy.includes(what.spent.key))
        records.push({ op: "task", key: TASK_KEY + what.spent.root, spent: known.spent + 1, by: [what.spent.key] });
    }
    this.#append(records);
  }

  /**
   * The key's gate could not judge the work (policy/gate-life.ts): held until the lead approves, a
   * retry, or the next start, which run it again. On disk before it returns.
   */
  async hold(
    key: string,
    at: string,
    info: { runId: string; cause: RerunCause; log: string | null; event: LedgerEventInfo },
  ): Promise<void> {
    this.#append([{ op: "hold", key, at, ...info }]);
    await this.#flush();
  }

  /** Records keys that existed before the first start, in one flush. */
  async baseline(keys: Iterable<string>, at: string): Promise<void> {
    const records: LedgerRecord[] = [];
    for (const key of keys) if (!this.#keys.has(key)) records.push({ op: "baseline", key, at });
    this.#append(records);
    await this.#flush();
  }

  /** Returns the attempt number (1 for the first run of the key). On disk before it returns. */
  async begin(key: string, runId: string, at: string, event?: LedgerEventInfo): Promise<number> {
    const { attempt, durable } = this.beginRecord(key, runId, at, event);
    await durable;
    return attempt;
  }

  /**
   * `begin`, for a caller with work to do while the record reaches the disk: appended now, `durable`
   * resolves once it is flushed (rejects if the flush fails). The leader prepares the hook meanwhile
   * and waits for `durable` just before the spawn.
   */
  beginRecord(
    key: string,
    runId: string,
    at: string,
    event?: LedgerEventInfo,
  ): { attempt: number; durable: Promise<void> } {
    const attempt = (this.#keys.get(key)?.attempt ?? 0) + 1;
    this.#append([{ op: "begin", key, at, runId, attempt, event }]);
    return { attempt, durable: this.#flush() };
  }

  /**
   * Written, not flushed: it reaches the disk with the next flushed record (the `done` of this key at
   * the latest). Lost in a crash, it costs nothing: a restarted leader finds a run's processes by its
   * run id (runner/terminate.ts killRunId), not by this pid.
   */
  async spawned(key: string, runId: string, pid: number): Promise<void> {
    this.#append([{ op: "spawn", key, runId, pid }]);
  }

  /**
   * The key's gate is held: its deferral is on disk (hook-state/deferrals/), and the key is neither
   * done nor in flight. On disk before it returns.
   */
  async defer(
    key: string,
    at: string,
    info: { runId: string; deferral: string; expiresAt: string; log: string | null },
  ): Promise<void> {
    this.#append([{ op: "defer", key, at, ...info }]);
    await this.#flush();
  }

  /** On disk before it returns. `gate`: the state the task event's gate life reached (policy/gate-life.ts). */
  async finish(
    key: string,
    at: string,
    info: { runId: string | null; outcome: string; log: string | null; gate?: GateState | undefined },
  ): Promise<void> {
    const { gate, ...rest } = info;
    this.#append([{ op: "done", key, at, ...rest, gate }]);
    await this.#flush();
  }

  /**
   * Appends synchronously (a short write to the page cache; no other task of this process runs between
   * recording a key and acting on it). Throws E_LEDGER when the disk refuses.
   */
  #append(records: LedgerRecord[]): void {
    if (records.length === 0) return;
    const fd = this.#fd;
    if (fd === null) throw new HooksError("E_LEDGER", `${this.file}: the ledger is closed`);
    const text = (this.#torn ? "\n" : "") + records.map((r) => JSON.stringify(r) + "\n").join("");
    try {
      writeAll(fd, text);
      this.#torn = false;
    } catch (error) {
      // A full disk (ENOSPC) or a file-size limit (EFBIG) may have let part of a line through.
      this.#torn = true;
      throw new HooksError("E_LEDGER", `${this.file}: cannot append to the ledger: ${describeError(error)}`, {
        cause: error,
      });
    }
    // Only what is in the file counts: a record that could not be written changes nothing, so a
    // retry of the same step starts from the same state.
    for (const record of records) apply(this.#keys, this.#tasks, record);
    this.#lines += records.length;
  }

  /**
   * Resolves once everything appended so far is on disk. fdatasync runs off the main thread (it waits
   * for the disk, 0.3 ms here when quiet, several ms when busy), and calls are grouped: a flush asked
   * for while one is under way waits for it and then shares the next one with every caller that came
   * meanwhile (group commit), so two events finishing together cost one fdatasync.
   */
  #flush(): Promise<void> {
    if (this.#nextSync) return this.#nextSync;
    if (!this.#sync) {
      this.#sync = this.#datasync();
      return this.#sync;
    }
    // The sync under way may have started before our write: the one after it covers it.
    this.#nextSync = this.#sync
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        this.#nextSync = null;
        this.#sync = this.#datasync();
        return this.#sync;
      });
    return this.#nextSync;
  }

  #datasync(): Promise<void> {
    const fd = this.#fd;
    const done = new Promise<void>((resolve, reject) => {
      if (fd === null) return reject(new HooksError("E_LEDGER", `${this.file}: the ledger is closed`));
      fs.fdatasync(fd, (error) =>
        error
          ? reject(
              new HooksError("E_LEDGER", `${this.file}: cannot flush the ledger: ${describeError(error)}`, {
                cause: error,
              }),
            )
          : resolve(),
      );
    });
    const settled = (): void => {
      if (this.#sync === done) this.#sync = null;
    };
    done.then(settled, settled);
    return done;
  }

  /** Compacts when the history has grown past twice the keys (and past 10,000 lines). */
  async maybeCompact(): Promise<void> {
    if (this.#lines <= 10_000 || this.#lines <= (this.#keys.size + this.#tasks.size) * 2) return;
    await this.compact();
  }

  /**
   * Rewrites the file with one line per key (atomically: a synced temp file renamed over it),
   * dropping the history of each. Synchronous like the appends, so no record can land in the old
   * file after the snapshot was taken.
   */
  async compact(): Promise<void> {
    const tmp = `${this.file}.tmp.${process.pid}.${Date.now()}`;
    const lines: string[] = [];
    for (const [key, state] of this.#keys) lines.push(...recordsFor(key, state).map((r) => JSON.stringify(r)));
    for (const [taskId, memory] of this.#tasks) lines.push(JSON.stringify(taskRecord(taskId, memory)));
    try {
      const out = fs.openSync(tmp, "w");
      try {
        writeAll(out, lines.join("\n") + (lines.length ? "\n" : ""));
        fs.fsyncSync(out);
      } finally {
        fs.closeSync(out);
      }
      fs.renameSync(tmp, this.file);
    } catch (error) {
      fs.rmSync(tmp, { force: true });
      // The old file and its descriptor are untouched: appends go on there.
      throw new HooksError("E_LEDGER", `${this.file}: cannot compact the ledger: ${describeError(error)}`, {
        cause: error,
      });
    }
    // Appends from now on go to the new file (the old descriptor points at the replaced one).
    const old = this.#fd;
    this.#fd = fs.openSync(this.file, "a");
    // A flush under way still uses the old descriptor: closed once it is done (later ones use the new one).
    if (old !== null) void Promise.allSettled([this.#sync, this.#nextSync]).then(() => fs.closeSync(old));
    this.#torn = false;
    this.#lines = lines.length;
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.#sync, this.#nextSync]);
    const fd = this.#fd;
    this.#fd = null;
    if (fd !== null) fs.closeSync(fd);
  }
}

function parseLine(line: string): LedgerRecord | null {
  try {
    return asRecord(JSON.parse(line));
  } catch {
    return null;
  }
}

/**
 * The record a parsed line holds, or null when it is not one. Checked by hand, not by a zod schema:
 * a restart reads thousands of lines, and this is ~10× cheaper per line (docs/performance.md).
 */
function asRecord(value: unknown): LedgerRecord | null {
  if (value === null || typeof value !== "object") return null;
  const r = value as Record<string, unknown>;
  if (!str(r.key)) return null;
  switch (r.op) {
    case "baseline":
      return str(r.at) ? { op: "baseline", key: r.key, at: r.at } : null;
    case "begin": {
      if (!str(r.at) || !str(r.runId) || !Number.isInteger(r.attempt)) return null;
      const begin: LedgerRecord = { op: "begin", key: r.key, at: r.at, runId: r.runId, attempt: r.attempt as number };
      if (r.event === undefined) return begin;
      const event = asEventInfo(r.event);
      return event ? { ...begin, event } : null;
    }
    case "spawn":
      return str(r.runId) && Number.isInteger(r.pid)
        ? { op: "spawn", key: r.key, runId: r.runId, pid: r.pid as number }
        : null;
    case "defer":
      return str(r.at) && str(r.runId) && str(r.deferral) && str(r.expiresAt) && strOrNull(r.log)
        ? {
            op: "defer",
            key: r.key,
            at: r.at,
            runId: r.runId,
            deferral: r.deferral,
            expiresAt: r.expiresAt,
            log: r.log,
          }
        : null;
    case "done":
      return str(r.at) && strOrNull(r.runId) && str(r.outcome) && strOrNull(r.log)
        ? {
            op: "done",
            key: r.key,
            at: r.at,
            runId: r.runId,
            outcome: r.outcome,
            log: r.log,
            // A word that is no gate state is left out (the line stays): the outcome still says how it ended.
            ...(isGateState(r.gate) ? { gate: r.gate } : {}),
          }
        : null;
    case "hold": {
      if (!str(r.at) || !str(r.runId) || (r.cause !== "approval" && r.cause !== "fault") || !strOrNull(r.log))
        return null;
      const hold: LedgerRecord = { op: "hold", key: r.key, at: r.at, runId: r.runId, cause: r.cause, log: r.log };
      if (r.event === undefined) return hold;
      const event = asEventInfo(r.event);
      return event ? { ...hold, event } : null;
    }
    case "task": {
      if (!r.key.startsWith(TASK_KEY)) return null;
      const count = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0;
      if (
        (r.round !== undefined && !count(r.round)) ||
        (r.lowered !== undefined && !(r.lowered === true && r.round !== undefined)) ||
        (r.spent !== undefined && !count(r.spent)) ||
        (r.root !== undefined && !str(r.root)) ||
        (r.by !== undefined && !(Array.isArray(r.by) && r.by.every(str)))
      )
        return null;
      return {
        op: "task",
        key: r.key,
        ...(r.round !== undefined ? { round: r.round as number } : {}),
        ...(r.lowered === true ? { lowered: true as const } : {}),
        ...(str(r.root) ? { root: r.root } : {}),
        ...(r.spent !== undefined ? { spent: r.spent as number } : {}),
        ...(Array.isArray(r.by) ? { by: r.by as string[] } : {}),
      };
    }
    default:
      return null;
  }
}

function isGateState(value: unknown): value is GateState {
  return (GATE_STATES as readonly unknown[]).includes(value);
}

function isJudgedState(value: GateState | undefined): value is JudgedState {
  return (JUDGED_STATES as readonly unknown[]).includes(value);
}

function str(value: unknown): value is string {
  return typeof value === "string";
}

function strOrNull(value: unknown): value is string | null {
  return value === null || typeof value === "string";
}

function asEventInfo(value: unknown): LedgerEventInfo | null {
  if (value === null || typeof value !== "object") return null;
  const e = value as Record<string, unknown>;
  if (
    !(HOOK_EVENTS as readonly unknown[]).includes(e.event) ||
    !strOrNull(e.taskId) ||
    !strOrNull(e.member) ||
    !strOrNull(e.timestamp)
  )
    return null;
  return { event: e.event as HookEventName, taskId: e.taskId, member: e.member, timestamp: e.timestamp };
}

function apply(keys: Map<string, KeyMemory>, tasks: Map<string, TaskMemory>, record: LedgerRecord): void {
  if (record.op === "task") {
    const taskId = record.key.slice(TASK_KEY.length);
    const known = tasks.get(taskId) ?? { round: 0, spent: 0, spentBy: [] };
    const spentBy = [...known.spentBy, ...(record.by ?? []).filter((k) => !known.spentBy.includes(k))];
    tasks.set(taskId, {
      round: record.lowered ? (record.round ?? 0) : Math.max(known.round, record.round ?? 0),
      spent: Math.max(known.spent, record.spent ?? 0, spentBy.length),
      spentBy,
      ...(known.root !== undefined ? { root: known.root } : record.root !== undefined ? { root: record.root } : {}),
    });
    return;
  }
  const previous = keys.get(record.key);
  // A record that ends a run counts the run begun for it (one, when its `begin` is not there).
  const attempt = Math.max(previous?.attempt ?? 1, 1);
  switch (record.op) {
    case "baseline":
      if (!previous) keys.set(record.key, { state: null, attempt: 0, outcome: null, log: null });
      return;
    case "begin":
      keys.set(record.key, {
        state: "running",
        attempt: record.attempt,
        runId: record.runId,
        startedAt: record.at,
        pid: null,
        event: record.event ?? null,
      });
      return;
    case "spawn":
      if (previous?.state === "running" && previous.runId === record.runId) previous.pid = record.pid;
      return;
    case "defer":
      keys.set(record.key, {
        state: "held",
        cause: "deferral",
        attempt,
        runId: record.runId,
        at: record.at,
        log: record.log,
        deferral: record.deferral,
        expiresAt: record.expiresAt,
      });
      return;
    case "done":
      // A state no judgement leads to (a line written by hand) leaves the event done without a gate life.
      keys.set(record.key, {
        state: isJudgedState(record.gate) ? record.gate : null,
        attempt,
        outcome: record.outcome,
        log: record.log,
      });
      return;
    case "hold": {
      const event = record.event ?? (previous?.state === "running" ? previous.event : null);
      keys.set(record.key, {
        state: "held",
        cause: record.cause,
        attempt,
        runId: record.runId,
        at: record.at,
        log: record.log,
        event,
      });
      return;
    }
  }
}

function taskRecord(taskId: string, memory: TaskMemory): LedgerRecord {
  return {
    op: "task",
    key: TASK_KEY + taskId,
    ...(memory.round > 0 ? { round: memory.round } : {}),
    root: memory.root,
    ...(memory.spent > 0 ? { spent: memory.spent } : {}),
    ...(memory.spentBy.length > 0 ? { by: memory.spentBy } : {}),
  };
}

function recordsFor(key: string, memory: KeyMemory): LedgerRecord[] {
  const at = new Date(0).toISOString();
  switch (memory.state) {
    case "running": {
      const begin: LedgerRecord = {
        op: "begin",
        key,
        at: memory.startedAt,
        runId: memory.runId,
        attempt: memory.attempt,
        event: memory.event ?? undefined,
      };
      return memory.pid === null ? [begin] : [begin, { op: "spawn", key, runId: memory.runId, pid: memory.pid }];
    }
    case "held": {
      // The begin keeps the attempt count; the defer or hold keeps everything a restart needs.
      const begin: LedgerRecord = { op: "begin", key, at, runId: memory.runId, attempt: memory.attempt };
      if (memory.cause === "deferral")
        return [
          begin,
          {
            op: "defer",
            key,
            at: memory.at,
            runId: memory.runId,
            deferral: memory.deferral,
            expiresAt: memory.expiresAt,
            log: memory.log,
          },
        ];
      return [
        begin,
        {
          op: "hold",
          key,
          at: memory.at,
          runId: memory.runId,
          cause: memory.cause,
          log: memory.log,
          event: memory.event ?? undefined,
        },
      ];
    }
    default:
      if (memory.outcome === null) return [{ op: "baseline", key, at }];
      return [
        { op: "begin", key, at, runId: "compacted", attempt: memory.attempt },
        {
          op: "done",
          key,
          at,
          runId: null,
          outcome: memory.outcome,
          log: memory.log,
          gate: memory.state ?? undefined,
        },
      ];
  }
}
