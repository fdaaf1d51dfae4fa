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
import { filterSliced, yieldIfDue } from "./slices.js";
import { hookLogsDir } from "../team/paths.js";

/** A log's place (the time it sorts by: its name's, else its start) and its facts, or why it could not be read. */
type Entry = { timeMs: number; facts: LogFacts } | { problem: HookLogProblem; atMs: number };

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
      if (!factsMatch(entry.facts, q.filter)) continue;
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
    for (let i = 0; i < team.names.length; i++) {
      if (i % 1024 === 0) await yieldIfDue();
      const name = team.names[i] as string;
      const entry = team.entries.get(name);
      if (entry === undefined || ("problem" in entry && now - entry.atMs >= RETRY_PROBLEM_MS))
        lacking.push({ name, timeMs: 0 });
    }
    if (!listed && lacking.length === 0) return;
    team.generation += 1;
    await readCandidates(
      team.dir,
      lacking,
      (problem) => {
        const name = problem.file.slice(team.dir.length + 1);
        team.entries.set(name, { problem, atMs: Date.now() });
      },
      (row) => {
        const info = parseLogName(row.name);
        const facts = factsOf(row.record, true);
        if (info === null) team.foreign.add(row.name);
        team.entries.set(row.name, { timeMs: info?.timeMs ?? facts.startedMs, facts });
      },
      this.#maxBytes,
    );
    if (listed) {
      // Every loop over 100,000 names gives the event loop its turns.
      const present = new Set<string>();
      for (let i = 0; i < team.names.length; i++) {
        if (i % 1024 === 0) await yieldIfDue();
        present.add(team.names[i] as string);
      }
      const gone = await filterSliced([...team.entries.keys()], (name) => !present.has(name));
      for (const name of gone) {
        team.entries.delete(name);
        team.foreign.delete(name);
      }
    }
    const ordered = await filterSliced(team.names, (name) => team.entries.has(name));
    if (team.foreign.size > 0) {
      const timeOf = (name: string): number => {
        const entry = team.entries.get(name);
        return entry && "timeMs" in entry ? entry.timeMs : (parseLogName(name)?.timeMs ?? 0);
      };
      ordered.sort((a, b) => timeOf(a) - timeOf(b)); // stable: same-time names keep the folder's order
    }
    team.ordered = ordered;
  }
}

/** Whether `name` comes before `other` in the folder's order (same time: the cursor's tie-break). */
function older(name: string, other: string): boolean {
  return compareHookLogNames(name, other) < 0;
}
