/**
 * One run, found by what a person types (`logs show <id>`): the run id or its short form from the
 * `logs` table, the table's time, the log file's name, stem, path, or a unique prefix or suffix of the
 * name; or the newest run a filter keeps (`last`). Several matches are handed back to be listed,
 * never guessed between.
 */
import path from "node:path";
import { type HookLogEntry, listHookLogs } from "./hook-log.js";
import type { LogFilter } from "./filter.js";
import { MIN_ID_PREFIX, shortRunId, splitRunId } from "./format.js";
import { type LogRow, type ProblemSink, queryLogs, readCandidates, readLogsHolding } from "./query.js";
import { hookLogsDir } from "../team/paths.js";

/**
 * What `logs show` found: one log, none, or `count` of them: the newest `MAX_LISTED` read (newest
 * first; a file that cannot be read went to `onProblem`), `more` not listed.
 */
export type LogPick =
  | { kind: "found"; entry: HookLogEntry }
  | { kind: "none" }
  | { kind: "ambiguous"; rows: LogRow[]; count: number; more: number };

/** Matches listed when a selector is ambiguous. */
export const MAX_LISTED = 20;

/** The newest log `filter` keeps (`last`, `--task N`, `--failed`): reads the newest few files, not every one. */
export async function pickNewest(teamDir: string, filter: LogFilter, onProblem: ProblemSink): Promise<LogPick> {
  const { rows } = await queryLogs(teamDir, { filter, limit: 1, onProblem });
  const [row] = rows;
  return row ? { kind: "found", entry: { file: row.file, name: row.name } } : { kind: "none" };
}

/**
 * The log `id` names. In order: an exact file name, stem or path; the table's time (`2026-12-04
 * 19:00:53`: every log of that second); one run whose full or short id it is; else every log whose
 * name it prefixes or ends, and every run whose id it prefixes (at least `MIN_ID_PREFIX` characters;
 * a chain's `.2` kept). The run ids are searched (every file's bytes, the few that hold `id` parsed)
 * when `id` looks like one, or when no name matched.
 */
export async function pickRun(
  teamDir: string,
  id: string,
  onProblem: ProblemSink,
  offsetMinutes = 0,
  maxBytes?: number,
): Promise<LogPick> {
  const entries = await listHookLogs(teamDir);
  const byName = nameMatches(entries, id, offsetMinutes);
  if (byName.exact) return { kind: "found", entry: byName.exact };
  const order = new Map(entries.map((e, i) => [e.name, i]));
  const rows = new Map<string, LogRow>();
  const exactRuns: LogRow[] = [];
  let partial = byName.partial;
  const wanted = runIdSelector(id);
  if (tableTime(id) === null && (wanted.uuid || partial.length === 0)) {
    const byId: HookLogEntry[] = [];
    await readLogsHolding(
      hookLogsDir(teamDir),
      entries.map((e) => e.name),
      wanted.needle,
      onProblem,
      (row) => {
        const match = runIdMatch(row.record.result.runId, wanted.text);
        if (match === null) return;
        rows.set(row.name, row);
        if (match === "exact") exactRuns.push(row);
        byId.push({ file: row.file, name: row.name });
      },
      maxBytes,
    );
    const [only] = exactRuns;
    if (only && exactRuns.length === 1) return { kind: "found", entry: { file: only.file, name: only.name } };
    if (exactRuns.length > 1)
      return {
        kind: "ambiguous",
        rows: newestFirst(exactRuns, order).slice(0, MAX_LISTED),
        count: exactRuns.length,
        more: Math.max(0, exactRuns.length - MAX_LISTED),
      };
    const named = new Set(partial.map((e) => e.name));
    partial = [...partial, ...byId.filter((e) => !named.has(e.name))];
  }
  const [one] = partial;
  if (partial.length === 0 || !one) return { kind: "none" };
  if (partial.length === 1) return { kind: "found", entry: one };
  const listed = newestFirst(partial, order).slice(0, MAX_LISTED);
  const unread = listed.filter((e) => !rows.has(e.name)).map((e) => ({ name: e.name, timeMs: 0 }));
  if (unread.length > 0)
    await readCandidates(hookLogsDir(teamDir), unread, onProblem, (row) => rows.set(row.name, row), maxBytes);
  return {
    kind: "ambiguous",
    rows: listed.flatMap((e) => rows.get(e.name) ?? []),
    count: partial.length,
    more: partial.length - listed.length,
  };
}

function nameMatches(
  entries: readonly HookLogEntry[],
  id: string,
  offsetMinutes = 0,
): { exact: HookLogEntry | null; partial: HookLogEntry[] } {
  const stamp = tableTime(id, offsetMinutes);
  const wanted = stamp ?? (id.includes("/") ? path.basename(id) : id);
  if (wanted === "") return { exact: null, partial: [] };
  const exact = stamp === null ? entries.find((e) => e.name === wanted || e.name === `${wanted}.json`) : undefined;
  if (exact) return { exact, partial: [] };
  const partial = entries.filter(
    (e) =>
      e.name.startsWith(wanted) ||
      (stamp === null && (e.name.endsWith(wanted) || e.name.slice(0, -".json".length).endsWith(wanted))),
  );
  return { exact: null, partial };
}

/**
 * The start of the log names of a time as the table prints it (`2026-12-04 19:00:53`, at
 * `offsetMinutes` from UTC: the offset the table shows), or as ISO 8601 (`2026-12-04T19:00:53.120Z`,
 * UTC), down to the minute at least: `2026-12-04T19-00-53` (the names are UTC). Null for anything
 * else (a date alone is a prefix of the names already).
 */
export function tableTime(id: string, offsetMinutes = 0): string | null {
  const m = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?(Z)?$/.exec(id.trim());
  if (!m) return null;
  const [, date = "", hh = "", mm = "", ss, ms, zulu] = m;
  let minute = `${date}T${hh}-${mm}`;
  if (zulu === undefined && offsetMinutes !== 0) {
    // Offsets are whole minutes: the seconds and milliseconds stay as typed.
    const utc = Date.parse(`${date}T${hh}:${mm}:00Z`) - offsetMinutes * 60_000;
    if (Number.isNaN(utc)) return null;
    const iso = new Date(utc).toISOString();
    minute = `${iso.slice(0, 10)}T${iso.slice(11, 13)}-${iso.slice(14, 16)}`;
  }
  return `${minute}${ss === undefined ? "" : `-${ss}`}${ms === undefined ? "" : `-${ms}`}`;
}

/** The UUID of a run id, as typed from its start (`4a73`, `4a739620-51`). */
const UUID_TEMPLATE = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";

/**
 * `id` as a run id selector: lower case when it looks like the start of a UUID (a chain's `.2` after
 * it), and the text to look for in the files' bytes (the UUID part: a chain's id is written whole).
 */
function runIdSelector(id: string): { text: string; needle: string; uuid: boolean } {
  const lower = id.toLowerCase();
  const base = lower.replace(/\.\d+$/, "");
  const uuid =
    base.length >= MIN_ID_PREFIX &&
    base.length <= UUID_TEMPLATE.length &&
    [...base].every((c, i) => (UUID_TEMPLATE[i] === "-" ? c === "-" : /[0-9a-f]/.test(c)));
  return uuid ? { text: lower, needle: base, uuid } : { text: id, needle: id, uuid };
}

/** Whether `selector` is `runId` (or its short id), the start of it (a chain's `.N` kept), or neither. */
export function runIdMatch(runId: string, selector: string): "exact" | "prefix" | null {
  if (runId === selector || shortRunId(runId) === selector) return "exact";
  const { base, chain } = splitRunId(runId);
  if (chain !== "" && !selector.endsWith(chain)) return null;
  const start = selector.slice(0, selector.length - chain.length);
  return start.length >= MIN_ID_PREFIX && base.startsWith(start) ? "prefix" : null;
}

/** Newest first, by the folder's order (time, for the names this project writes). */
function newestFirst<T extends { name: string }>(items: readonly T[], order: ReadonlyMap<string, number>): T[] {
  return [...items].sort((a, b) => (order.get(b.name) ?? 0) - (order.get(a.name) ?? 0));
}
