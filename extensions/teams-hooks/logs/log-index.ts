/**
 * What a long-running reader (`serve`) keeps of each team's `hook-logs/` between requests, so that a
 * filtered page of runs never reads the folder again: per log, the facts a filter looks at
 * (logs/filter.ts `LogFacts`: a hundred bytes or so), read once. A query lists the folder (or keeps
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
import { Worker } from "node:worker_threads";
import type { FactsMessage, FactsRead, FactsRequest } from "./facts-worker.js";
import type { HookLogProblem } from "./hook-log.js";
import { compareHookLogNames, listHookLogNames } from "./hook-log.js";
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
import { filterSliced, sortSliced, yieldIfDue } from "./slices.js";
import { hookLogsDir } from "../team/paths.js";

/**
 * A log's facts and its place (the time it sorts by: its name's, else its start), one object per log
 * with its text shared between logs (`intern`): 100,000 of them are what the collector walks.
 */
type Indexed = LogFacts & { timeMs: number };
/** A log's facts, or why it could not be read. */
type Entry = Indexed | { problem: HookLogProblem; atMs: number };

/** Distinct texts (members, hooks, task ids) shared per team at most; past it the table starts again. */
const MAX_INTERNED = 65_536;

/** How long a file that could not be read is left before it is read again. */
const RETRY_PROBLEM_MS = 10_000;
/**
 * A listing is kept while the folder's mtime is the one seen before it, if it was made at least this
 * long after that mtime: a file system's clock may be coarse (a few ms), and a file added within the
 * same tick would not move the mtime.
 */
const MTIME_MARGIN_MS = 50;

interface TeamIndex {
  teamDir: string;
  /** Its `hook-logs/`. */
  dir: string;
  /** The listing: names in the folder's order (logs/hook-log.ts), and when it may be kept. */
  names: string[];
  listedMtimeMs: number | null;
  entries: Map<string, Entry>;
  /** Names whose entry is a problem (read again after `RETRY_PROBLEM_MS`). */
  problems: Set<string>;
  /** The one copy of each text the facts hold. */
  texts: Map<string, string>;
  /** Names with an entry, oldest first by their time (the folder's order, but for names not of ours). */
  ordered: string[];
  /** Names with an entry that are not of the names this project writes (placed by their start). */
  foreign: Set<string>;
  running: Promise<void> | null;
  queued: Promise<void> | null;
  /** Queries of this team run one at a time: ten at once cost the others one slice a turn, not ten. */
  turn: Promise<unknown>;
  /** Bumped whenever an entry is added or removed: what `picks` remembers holds while it stays. */
  generation: number;
  /** The last picks (names, and whether older matches were left out) by query, for this generation. */
  picks: Map<string, { generation: number; names: string[]; truncated: boolean; problems: HookLogProblem[] }>;
}

/**
 * Files to read at least for a refresh to read them on a thread of its own (logs/facts-worker.ts):
 * starting one takes some 50 ms of CPU (beside the event loop), reading a thousand logs here about
 * 100 ms of turns of it.
 */
const THREAD_MIN_LOGS = 1_000;

/** Queries remembered per team (a page polled again, the ten requests of a burst). */
const REMEMBERED_PICKS = 16;

export interface IndexQuery {
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

  /** `maxBytes`: a larger file is a problem, read no further (logs/query.ts `QueryOptions.maxBytes`). */
  constructor(opts: { maxBytes: number }) {
    this.#maxBytes = opts.maxBytes;
  }

  /**
   * The newest `limit` logs of `teamDir` that match (older than `before`), oldest first, each read
   * whole; `truncated` when older ones that match were left out.
   */
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
    const rows: LogRow[] = [];
    const wanted = names.map((name) => ({ name, timeMs: 0 }));
    await readCandidates(
      team.dir,
      wanted,
      q.onProblem,
      (row) => {
        if (recordMatches(row.record, q.filter)) rows.push(row);
      },
      this.#maxBytes,
    );
    return { rows, truncated };
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
    for (let i = team.ordered.length - 1, n = 0; i >= 0; i--, n++) {
      if (n % 1024 === 0) await yieldIfDue();
      const name = team.ordered[i] as string;
      const entry = team.entries.get(name);
      if (!entry) continue;
      if ("problem" in entry) {
        const info = parseLogName(name);
        if (info === null || nameMayMatch(info, q.filter)) problems.push(entry.problem);
        continue;
      }
      if (before && !(entry.timeMs < before.timeMs || (entry.timeMs === before.timeMs && older(name, before.name))))
        continue;
      if (!factsMatch(entry, q.filter)) continue;
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
        entries: new Map(),
        problems: new Set(),
        texts: new Map(),
        ordered: [],
        foreign: new Set(),
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
      team.names = await listHookLogNames(team.teamDir, { inSlices: true });
      listed = true;
      team.listedMtimeMs = mtimeMs !== null && listedAt - mtimeMs >= MTIME_MARGIN_MS ? mtimeMs : null;
    }
    const now = Date.now();
    const lacking: Array<{ name: string; timeMs: number }> = [];
    const due = (entry: Entry): boolean => "problem" in entry && now - entry.atMs >= RETRY_PROBLEM_MS;
    // Names listed with an entry: every entry's name unless some are gone from a new listing.
    let listedWithEntry = 0;
    if (!listed && team.entries.size === team.names.length) {
      // The usual case of a query: the same listing, every name read; only problems may be due.
      if (team.problems.size === 0) return;
      for (const name of team.problems) {
        const entry = team.entries.get(name);
        if (entry !== undefined && due(entry)) lacking.push({ name, timeMs: 0 });
      }
      if (lacking.length === 0) return;
      listedWithEntry = team.entries.size;
    } else {
      for (let i = 0; i < team.names.length; i++) {
        if (i % 1024 === 0) await yieldIfDue();
        const name = team.names[i] as string;
        const entry = team.entries.get(name);
        if (entry !== undefined) listedWithEntry += 1;
        if (entry === undefined || due(entry)) lacking.push({ name, timeMs: 0 });
      }
      if (!listed && lacking.length === 0) return;
    }
    team.generation += 1;
    if (listed && listedWithEntry < team.entries.size) {
      // Some entries are of names no longer listed. Every loop over 100,000 names gives the event loop its turns.
      const present = new Set<string>();
      for (let i = 0; i < team.names.length; i++) {
        if (i % 1024 === 0) await yieldIfDue();
        present.add(team.names[i] as string);
      }
      const gone = await filterSliced([...team.entries.keys()], (name) => !present.has(name));
      for (const name of gone) {
        team.entries.delete(name);
        team.foreign.delete(name);
        team.problems.delete(name);
      }
    }
    const onProblem = (problem: HookLogProblem): void => {
      const name = problem.file.slice(team.dir.length + 1);
      team.entries.set(name, { problem, atMs: Date.now() });
      team.problems.add(name);
    };
    const onFacts = (name: string, facts: LogFacts): void => {
      const info = parseLogName(name);
      if (info === null) team.foreign.add(name);
      team.problems.delete(name);
      team.entries.set(name, indexed(team, facts, info?.timeMs ?? facts.startedMs));
    };
    // Many files: on a thread of their own (what it could not do, here).
    const done =
      lacking.length >= THREAD_MIN_LOGS
        ? await readOnThread(
            team.dir,
            lacking.map((c) => c.name),
            this.#maxBytes,
            (read) => ("problem" in read ? onProblem(read.problem) : onFacts(read.name, read.facts)),
          )
        : 0;
    await readCandidates(
      team.dir,
      done === 0 ? lacking : lacking.slice(done),
      onProblem,
      (row) => onFacts(row.name, factsOf(row.record, true)),
      this.#maxBytes,
    );
    // Every name read (none vanished): the listing is the order, shared rather than copied.
    const ordered =
      team.entries.size === team.names.length && team.foreign.size === 0
        ? team.names
        : await filterSliced(team.names, (name) => team.entries.has(name));
    if (team.foreign.size > 0) {
      const timeOf = (name: string): number => {
        const entry = team.entries.get(name);
        return entry && "timeMs" in entry ? entry.timeMs : (parseLogName(name)?.timeMs ?? 0);
      };
      await sortSliced(ordered, (a, b) => timeOf(a) - timeOf(b)); // stable: same-time names keep the folder's order
    }
    team.ordered = ordered;
  }
}

/** One reading thread at a time, whatever the teams: the second waits for the first. */
let threadTurn: Promise<unknown> = Promise.resolve();

/**
 * Reads the logs `names` of `dir` on a thread (logs/facts-worker.ts), handing each read to `onRead`
 * on this one; resolves with how many of `names` were done (all, or fewer if the thread failed or
 * could not start: the caller reads the rest itself).
 */
function readOnThread(
  dir: string,
  names: string[],
  maxBytes: number,
  onRead: (read: FactsRead) => void,
): Promise<number> {
  const run = threadTurn.then(
    () =>
      new Promise<number>((resolve) => {
        let done = 0;
        let worker: Worker;
        try {
          worker = new Worker(new URL("./facts-worker.js", import.meta.url));
        } catch {
          resolve(0);
          return;
        }
        // A server that stops does not wait for it.
        worker.unref();
        worker.on("message", (message: FactsMessage) => {
          for (const read of message.read) onRead(read);
          done = message.upTo;
        });
        worker.on("error", () => undefined); // what it did not read is read by the caller
        worker.on("exit", () => resolve(done));
        worker.postMessage({ dir, names, maxBytes } satisfies FactsRequest);
      }),
  );
  threadTurn = run.catch(() => undefined);
  return run;
}

/** `facts` as the index keeps them: with their place, and each text the one copy the team holds. */
function indexed(team: TeamIndex, facts: LogFacts, timeMs: number): Indexed {
  const { texts } = team;
  const intern = <T extends string | null>(text: T): T => {
    if (text === null) return text;
    const known = texts.get(text);
    if (known !== undefined) return known as T;
    if (texts.size >= MAX_INTERNED) texts.clear();
    texts.set(text, text);
    return text;
  };
  const entry: Indexed = {
    timeMs,
    startedMs: facts.startedMs,
    event: facts.event,
    taskId: intern(facts.taskId),
    member: intern(facts.member),
    outcome: facts.outcome,
    hook: intern(facts.hook),
    trigger: facts.trigger,
  };
  if (facts.long) entry.long = true;
  return entry;
}

/** Whether `name` comes before `other` in the folder's order (same time: the cursor's tie-break). */
function older(name: string, other: string): boolean {
  return compareHookLogNames(name, other) < 0;
}
