/**
 * What a long-running reader (`serve`) keeps of each team's `hook-logs/` between requests, so that a
 * filtered page of runs never reads the folder again: per log, the facts a filter looks at
 * (logs/filter.ts `LogFacts`), read once, and kept in columns (typed arrays, each text once per team)
 * rather than as an object per log: 100,000 objects were 40 MB that every full collection walked,
 * 150 ms of marking each second or so while requests came. A query lists the folder (or keeps
 * its listing while the folder's mtime has not moved), reads only the logs it has not seen, picks
 * the newest that match from the facts, and reads those few whole.
 *
 * Nothing here holds the event loop: every loop over files or facts gives way at least every
 * `SLICE_MS` (logs/query.ts `yieldIfDue`), and one refresh per team runs at a time, shared by the
 * queries that wait for it (ten requests over 100,000 new logs read them once, not ten times). A
 * team's queries take turns, and the last few picks are remembered until an entry changes: ten
 * requests with one filter pick from the facts once, and another team's request waits for one slice
 * of theirs at most, not ten.
 * A log is written once and never changed (logs/hook-log.ts): its facts stay true while its name is
 * listed; a file that could not be read is tried again after `RETRY_PROBLEM_MS`.
 */
import { statSync } from "node:fs";
import type { Worker } from "node:worker_threads";
import type { FactsMessage, FactsRead, FactsRequest } from "./facts-worker.js";
import type { HookLogProblem } from "./hook-log.js";
import { compareHookLogNames, hookLogFile, listHookLogNames } from "./hook-log.js";
import {
  type LogFacts,
  type LogFilter,
  factsMatch,
  factsOf,
  nameMayMatch,
  parseLogName,
  recordMatches,
} from "./filter.js";
import { type LogRow, readCandidates } from "./query.js";
import { sortSliced, yieldIfDue } from "./slices.js";
import { hookLogsDir } from "../team/paths.js";

/** How long a file that could not be read is left before it is read again. */
const RETRY_PROBLEM_MS = 10_000;
/**
 * A listing is kept while the folder's mtime is the one seen before it, if it was made at least this
 * long after that mtime: a file system's clock may be coarse (a few ms), and a file added within the
 * same tick would not move the mtime.
 */
const MTIME_MARGIN_MS = 50;

/** A listed log: not read yet (or vanished when read), its facts, or a problem. */
const NONE = 0;
const FACTS = 1;
const PROBLEM = 2;
/** `flags` bits: the texts were cut (`LogFacts.long`); the name is not of those this project writes. */
const LONG = 1;
const FOREIGN = 2;

/** Each text the facts of a team hold, once; a fact holds its number (-1: null). */
class Texts {
  readonly list: string[] = [];
  readonly #ids = new Map<string, number>();

  id(text: string | null): number {
    if (text === null) return -1;
    let id = this.#ids.get(text);
    if (id === undefined) {
      id = this.list.length;
      this.list.push(text);
      this.#ids.set(text, id);
    }
    return id;
  }

  at(id: number): string | null {
    return id < 0 ? null : (this.list[id] as string);
  }
}

/** The facts of the listed logs, by their place in the listing. */
class Columns {
  readonly state: Uint8Array;
  readonly flags: Uint8Array;
  /** The time a log sorts by: its name's, else its start. */
  readonly timeMs: Float64Array;
  readonly startedMs: Float64Array;
  readonly event: Int32Array;
  readonly taskId: Int32Array;
  readonly member: Int32Array;
  readonly outcome: Int32Array;
  readonly hook: Int32Array;
  readonly trigger: Int32Array;

  constructor(n: number) {
    this.state = new Uint8Array(n);
    this.flags = new Uint8Array(n);
    this.timeMs = new Float64Array(n);
    this.startedMs = new Float64Array(n);
    this.event = new Int32Array(n);
    this.taskId = new Int32Array(n);
    this.member = new Int32Array(n);
    this.outcome = new Int32Array(n);
    this.hook = new Int32Array(n);
    this.trigger = new Int32Array(n);
  }
}

interface TeamIndex {
  teamDir: string;
  /** Its `hook-logs/`. */
  dir: string;
  /** The listing: names in the folder's order (logs/hook-log.ts), and when it may be kept. */
  names: string[];
  listedMtimeMs: number | null;
  cols: Columns;
  texts: Texts;
  /** Places of the listing not `NONE`. */
  known: number;
  /** Places whose log is not of the names this project writes, with facts (placed by their start). */
  foreign: number;
  /** Why the logs at these places could not be read, and when that was found. */
  problems: Map<number, { problem: HookLogProblem; atMs: number }>;
  /** Places known, oldest first by their time, when some are foreign; null: the listing's order. */
  order: Int32Array | null;
  running: Promise<void> | null;
  queued: Promise<void> | null;
  /** Queries of this team run one at a time: ten at once cost the others one slice a turn, not ten. */
  turn: Promise<unknown>;
  /** Bumped whenever an entry is added or removed: what `picks` remembers holds while it stays. */
  generation: number;
  /** The last picks (names, and whether older matches were left out) by query, for this generation. */
  picks: Map<string, { generation: number; names: string[]; truncated: boolean; problems: HookLogProblem[] }>;
}

/** Records kept for the pages asked again: at most this many bytes of files, and this many records. */
const KEPT_RECORD_BYTES = 1024 * 1024;
const KEPT_RECORDS = 512;

/** Queries remembered per team (a page polled again, the ten requests of a burst). */
const REMEMBERED_PICKS = 16;

/**
 * Files to read at least for a refresh to read them on a thread of its own (logs/facts-worker.ts):
 * starting one takes some 50 ms of CPU (beside the event loop), reading a thousand logs here about
 * 100 ms of turns of it.
 */
const THREAD_MIN_LOGS = 1_000;

interface IndexQuery {
  filter: LogFilter;
  /** The newest `limit` matches. */
  limit: number;
  /** Only logs older than this one (a page's cursor: logs/query.ts `QueryOptions.before`). */
  before?: { timeMs: number; name: string };
  /** Hears each log that could not be read and that the filter might have kept. */
  onProblem: (problem: HookLogProblem) => void;
}

export class LogIndex {
  readonly #teams = new Map<string, TeamIndex>();
  readonly #maxBytes: number;
  /** Reading threads running (logs/facts-worker.ts). */
  readonly #threads = new Set<Worker>();
  #closed = false;
  /** Records lately shown (ten requests for one page read its logs once), by file, with what their file was. */
  readonly #records = new Map<string, { row: LogRow; size: number; mtimeMs: number; ino: number }>();
  #recordBytes = 0;

  /** `maxBytes`: a larger file is a problem, read no further (logs/query.ts `QueryOptions.maxBytes`). */
  constructor(opts: { maxBytes: number }) {
    this.#maxBytes = opts.maxBytes;
  }

  /**
   * The newest `limit` logs of `teamDir` that match (older than `before`), oldest first, each read
   * whole; `truncated` when older ones that match were left out.
   */
  /** Ends the reading threads, and starts none any more (a server that has stopped answering). */
  close(): void {
    this.#closed = true;
    for (const thread of this.#threads) void thread.terminate();
  }

  query(teamDir: string, q: IndexQuery): Promise<{ rows: LogRow[]; truncated: boolean }> {
    const team = this.#team(teamDir);
    const run = team.turn.then(() => this.#query(team, q));
    team.turn = run.catch(() => undefined);
    return run;
  }

  async #query(team: TeamIndex, q: IndexQuery): Promise<{ rows: LogRow[]; truncated: boolean }> {
    await this.#fresh(team);
    const key = JSON.stringify([q.filter, q.before ?? null, q.limit]);
    const known = team.picks.get(key);
    const { names, truncated, problems } =
      known && known.generation === team.generation ? known : await this.#pick(team, q);
    if (!known || known.generation !== team.generation) {
      team.picks.delete(key);
      team.picks.set(key, { generation: team.generation, names, truncated, problems });
      if (team.picks.size > REMEMBERED_PICKS) team.picks.delete(team.picks.keys().next().value as string);
    }
    for (const problem of problems) q.onProblem(problem);
    const read = await this.#read(team, names, q.onProblem);
    const rows: LogRow[] = [];
    for (const name of names) {
      const row = read.get(name);
      if (row && recordMatches(row.record, q.filter)) rows.push(row);
    }
    return { rows, truncated };
  }

  /**
   * The logs `names` read whole, from the records kept (`#records`) while their files are the ones
   * read (same size, time and inode), else from the files; problems to `onProblem`, as `readCandidates`.
   */
  async #read(team: TeamIndex, names: string[], onProblem: (problem: HookLogProblem) => void) {
    const read = new Map<string, LogRow>();
    const lacking: Array<{ name: string; timeMs: number }> = [];
    const stats = new Map<string, { size: number; mtimeMs: number; ino: number }>();
    for (const name of names) {
      await yieldIfDue();
      const file = hookLogFile(team.dir, name);
      let stat: { size: number; mtimeMs: number; ino: number } | undefined;
      try {
        stat = statSync(file);
      } catch {
        stat = undefined; // gone, or unreadable: the reader says which
      }
      const kept = stat === undefined ? undefined : this.#records.get(file);
      if (stat && kept && kept.size === stat.size && kept.mtimeMs === stat.mtimeMs && kept.ino === stat.ino) {
        this.#records.delete(file); // the newest last
        this.#records.set(file, kept);
        read.set(name, kept.row);
        continue;
      }
      if (stat) stats.set(name, { size: stat.size, mtimeMs: stat.mtimeMs, ino: stat.ino });
      lacking.push({ name, timeMs: 0 });
    }
    await readCandidates(
      team.dir,
      lacking,
      onProblem,
      (row) => {
        read.set(row.name, row);
        const stat = stats.get(row.name);
        if (stat) this.#keep(row, stat);
      },
      this.#maxBytes,
    );
    return read;
  }

  /** Keeps a record read, the oldest kept dropped past `KEPT_RECORD_BYTES` (file sizes) or `KEPT_RECORDS`. */
  #keep(row: LogRow, stat: { size: number; mtimeMs: number; ino: number }): void {
    const old = this.#records.get(row.file);
    if (old) this.#recordBytes -= old.size;
    this.#records.delete(row.file);
    this.#records.set(row.file, { row, ...stat });
    this.#recordBytes += stat.size;
    while (this.#recordBytes > KEPT_RECORD_BYTES || this.#records.size > KEPT_RECORDS) {
      const [file, oldest] = this.#records.entries().next().value as [string, { size: number }];
      this.#records.delete(file);
      this.#recordBytes -= oldest.size;
    }
  }

  /** The names of the newest matches, oldest first, from the facts; and the problems the filter might have kept. */
  async #pick(
    team: TeamIndex,
    q: IndexQuery,
  ): Promise<{ names: string[]; truncated: boolean; problems: HookLogProblem[] }> {
    const picked: string[] = [];
    const problems: HookLogProblem[] = [];
    let truncated = false;
    const { before } = q;
    const { cols, texts, order } = team;
    // One object for every place's facts in turn: a pick makes no object per log.
    const facts: LogFacts = {
      startedMs: 0,
      event: "task_completed",
      taskId: null,
      member: null,
      outcome: "passed",
      hook: "",
      trigger: "leader",
    };
    const count = order === null ? team.names.length : order.length;
    for (let i = count - 1, n = 0; i >= 0; i--, n++) {
      if (n % 1024 === 0) await yieldIfDue();
      const at = order === null ? i : (order[i] as number);
      const state = cols.state[at];
      if (state === NONE) continue;
      const name = team.names[at] as string;
      if (state === PROBLEM) {
        const info = parseLogName(name);
        const entry = team.problems.get(at);
        if (entry && (info === null || nameMayMatch(info, q.filter))) problems.push(entry.problem);
        continue;
      }
      const timeMs = cols.timeMs[at] as number;
      if (before && !(timeMs < before.timeMs || (timeMs === before.timeMs && older(name, before.name)))) continue;
      facts.startedMs = cols.startedMs[at] as number;
      facts.event = texts.at(cols.event[at] as number) as LogFacts["event"];
      facts.taskId = texts.at(cols.taskId[at] as number);
      facts.member = texts.at(cols.member[at] as number);
      facts.outcome = texts.at(cols.outcome[at] as number) as LogFacts["outcome"];
      facts.hook = texts.at(cols.hook[at] as number) as string;
      facts.trigger = texts.at(cols.trigger[at] as number) as LogFacts["trigger"];
      const long = ((cols.flags[at] as number) & LONG) !== 0;
      if (!factsMatch(long ? { ...facts, long: true } : facts, q.filter)) continue;
      if (picked.length === q.limit) {
        truncated = true;
        // Still counts the problems further down, as a full read would have met them.
        continue;
      }
      picked.push(name);
    }
    return { names: picked.reverse(), truncated, problems };
  }

  #team(teamDir: string): TeamIndex {
    let team = this.#teams.get(teamDir);
    if (!team) {
      team = {
        teamDir,
        dir: hookLogsDir(teamDir),
        names: [],
        listedMtimeMs: null,
        cols: new Columns(0),
        texts: new Texts(),
        known: 0,
        foreign: 0,
        problems: new Map(),
        order: null,
        running: null,
        queued: null,
        turn: Promise.resolve(),
        generation: 0,
        picks: new Map(),
      };
      this.#teams.set(teamDir, team);
    }
    return team;
  }

  /**
   * The team brought up to date. A refresh under way may have listed the folder before the caller's
   * log landed: the caller waits for it, then for one more (shared by all who came while it ran).
   */
  #fresh(team: TeamIndex): Promise<void> {
    if (team.running === null) return this.#run(team);
    team.queued ??= team.running
      .catch(() => undefined)
      .then(() => {
        team.queued = null;
        return this.#run(team);
      });
    return team.queued;
  }

  #run(team: TeamIndex): Promise<void> {
    const run = this.#refresh(team).finally(() => {
      if (team.running === run) team.running = null;
    });
    team.running = run;
    return run;
  }

  async #refresh(team: TeamIndex): Promise<void> {
    let mtimeMs: number | null = null;
    try {
      mtimeMs = statSync(team.dir).mtimeMs;
    } catch {
      mtimeMs = null; // no folder yet (or none any more): listed as empty below
    }
    const listedAt = Date.now();
    let listed = false;
    if (mtimeMs === null || mtimeMs !== team.listedMtimeMs) {
      const names = await listHookLogNames(team.teamDir, { inSlices: true });
      await relist(team, names);
      listed = true;
      team.listedMtimeMs = mtimeMs !== null && listedAt - mtimeMs >= MTIME_MARGIN_MS ? mtimeMs : null;
    }
    const now = Date.now();
    const { cols } = team;
    // Places to read: not read yet, or a problem due to be read again.
    const lacking: number[] = [];
    for (const [at, entry] of team.problems) if (now - entry.atMs >= RETRY_PROBLEM_MS) lacking.push(at);
    lacking.sort((a, b) => a - b); // the folder's order (the places not read yet come after, in order)
    if (team.known < team.names.length) {
      for (let at = 0; at < team.names.length; at++) {
        if (at % 1024 === 0) await yieldIfDue();
        if (cols.state[at] === NONE) lacking.push(at);
      }
    }
    if (!listed && lacking.length === 0) return; // the usual query: nothing new
    team.generation += 1;
    const placeOf = new Map<string, number>();
    const names: string[] = [];
    for (let i = 0; i < lacking.length; i++) {
      if (i % 1024 === 0) await yieldIfDue();
      const name = team.names[lacking[i] as number] as string;
      placeOf.set(name, lacking[i] as number);
      names.push(name);
    }
    const onProblem = (problem: HookLogProblem): void => {
      const at = placeOf.get(problem.file.slice(team.dir.length + 1));
      if (at === undefined) return;
      if (cols.state[at] === NONE) team.known += 1;
      if (cols.state[at] === FACTS && ((cols.flags[at] as number) & FOREIGN) !== 0) team.foreign -= 1;
      cols.state[at] = PROBLEM;
      cols.flags[at] = 0;
      team.problems.set(at, { problem, atMs: Date.now() });
    };
    const onFacts = (name: string, facts: LogFacts): void => {
      const at = placeOf.get(name);
      if (at === undefined) return;
      if (cols.state[at] === NONE) team.known += 1;
      team.problems.delete(at);
      const info = parseLogName(name);
      const wasForeign = cols.state[at] === FACTS && ((cols.flags[at] as number) & FOREIGN) !== 0;
      if (info === null && !wasForeign) team.foreign += 1;
      setFacts(team, at, facts, info?.timeMs ?? facts.startedMs, info === null);
    };
    // Many files: on a thread of their own (what it could not do, here).
    const done =
      names.length >= THREAD_MIN_LOGS
        ? await readOnThread(
            { dir: team.dir, names, maxBytes: this.#maxBytes },
            (read) => ("problem" in read ? onProblem(read.problem) : onFacts(read.name, read.facts)),
            this.#threads,
            () => this.#closed,
          )
        : 0;
    if (this.#closed) return;
    await readCandidates(
      team.dir,
      (done === 0 ? names : names.slice(done)).map((name) => ({ name, timeMs: 0 })),
      onProblem,
      (row) => onFacts(row.name, factsOf(row.record, true)),
      this.#maxBytes,
    );
    team.order = team.foreign > 0 ? await timeOrder(team) : null;
  }
}

/** Stores `facts` at place `at` of the team's columns. */
function setFacts(team: TeamIndex, at: number, facts: LogFacts, timeMs: number, foreign: boolean): void {
  const { cols, texts } = team;
  cols.state[at] = FACTS;
  cols.flags[at] = (facts.long ? LONG : 0) | (foreign ? FOREIGN : 0);
  cols.timeMs[at] = timeMs;
  cols.startedMs[at] = facts.startedMs;
  cols.event[at] = texts.id(facts.event);
  cols.taskId[at] = texts.id(facts.taskId);
  cols.member[at] = texts.id(facts.member);
  cols.outcome[at] = texts.id(facts.outcome);
  cols.hook[at] = texts.id(facts.hook);
  cols.trigger[at] = texts.id(facts.trigger);
}

/**
 * Takes a new listing: what is known of names still listed moves to their new places; the rest is
 * dropped. The texts start again when most of them are no longer held.
 */
async function relist(team: TeamIndex, names: string[]): Promise<void> {
  const old = team.cols;
  const oldTexts = team.texts;
  const placeOf = new Map<string, number>();
  for (let at = 0; at < team.names.length; at++) {
    if (at % 1024 === 0) await yieldIfDue();
    if (old.state[at] !== NONE) placeOf.set(team.names[at] as string, at);
  }
  const cols = new Columns(names.length);
  const texts = oldTexts.list.length > 2 * names.length + 1024 ? new Texts() : oldTexts;
  const text = texts === oldTexts ? (id: number) => id : (id: number) => texts.id(oldTexts.at(id));
  const problems = new Map<number, { problem: HookLogProblem; atMs: number }>();
  let known = 0;
  let foreign = 0;
  for (let at = 0; at < names.length; at++) {
    if (at % 1024 === 0) await yieldIfDue();
    const from = placeOf.get(names[at] as string);
    if (from === undefined) continue;
    known += 1;
    const state = old.state[from] as number;
    cols.state[at] = state;
    if (state === PROBLEM) {
      const entry = team.problems.get(from);
      if (entry) problems.set(at, entry);
      continue;
    }
    cols.flags[at] = old.flags[from] as number;
    if (((old.flags[from] as number) & FOREIGN) !== 0) foreign += 1;
    cols.timeMs[at] = old.timeMs[from] as number;
    cols.startedMs[at] = old.startedMs[from] as number;
    cols.event[at] = text(old.event[from] as number);
    cols.taskId[at] = text(old.taskId[from] as number);
    cols.member[at] = text(old.member[from] as number);
    cols.outcome[at] = text(old.outcome[from] as number);
    cols.hook[at] = text(old.hook[from] as number);
    cols.trigger[at] = text(old.trigger[from] as number);
  }
  Object.assign(team, { names, cols, texts, problems, known, foreign, order: null });
}

/**
 * The known places in time order, when some names are not ours: the folder's order, with those placed
 * by their start (a problem of such a name first). Stable: same-time names keep the folder's order.
 */
async function timeOrder(team: TeamIndex): Promise<Int32Array> {
  const { cols } = team;
  const places: number[] = [];
  for (let at = 0; at < team.names.length; at++) {
    if (at % 1024 === 0) await yieldIfDue();
    if (cols.state[at] !== NONE) places.push(at);
  }
  const timeOf = (at: number): number =>
    cols.state[at] === FACTS ? (cols.timeMs[at] as number) : (parseLogName(team.names[at] as string)?.timeMs ?? 0);
  await sortSliced(places, (a, b) => timeOf(a) - timeOf(b));
  return Int32Array.from(places);
}

/** Names sent to a reading thread per message. */
const NAMES_PER_MESSAGE = 4096;

/** One reading thread at a time, whatever the teams: the second waits for the first. */
let threadTurn: Promise<unknown> = Promise.resolve();
/**
 * Reads the logs `request.names` on a thread (logs/facts-worker.ts), handing each read to `onRead`
 * on this one; resolves with how many of the names were done (all, or fewer if the thread failed,
 * could not start or was ended: the caller reads the rest itself). The thread is in `threads` while
 * it runs; none starts once `closed()`.
 */
function readOnThread(
  request: Omit<FactsRequest, "last">,
  onRead: (read: FactsRead) => void,
  threads: Set<Worker>,
  closed: () => boolean,
): Promise<number> {
  const run = threadTurn.then(
    () =>
      new Promise<number>((resolve) => {
        let done = 0;
        let worker: Worker;
        try {
          if (closed()) throw new Error("closed");
          // node:worker_threads loaded only here: a command that starts no reader does without it.
          const { Worker } = process.getBuiltinModule("node:worker_threads");
          worker = new Worker(new URL("./facts-worker.js", import.meta.url));
        } catch {
          resolve(0);
          return;
        }
        threads.add(worker);
        worker.on("message", (message: FactsMessage) => {
          for (const read of message.read) onRead(read);
          done = message.upTo;
        });
        worker.on("error", () => undefined); // what it did not read is read by the caller
        worker.on("exit", () => {
          threads.delete(worker);
          resolve(done);
        });
        // The names in parts: copying 100,000 names to the thread at once held this one some 20 ms.
        void (async () => {
          for (let from = 0; from < request.names.length; from += NAMES_PER_MESSAGE) {
            await yieldIfDue();
            const names = request.names.slice(from, from + NAMES_PER_MESSAGE);
            worker.postMessage({ ...request, names, last: from + NAMES_PER_MESSAGE >= request.names.length });
          }
        })();
      }),
  );
  threadTurn = run.catch(() => undefined);
  return run;
}

/** Whether `name` comes before `other` in the folder's order (same time: the cursor's tie-break). */
function older(name: string, other: string): boolean {
  return compareHookLogNames(name, other) < 0;
}
