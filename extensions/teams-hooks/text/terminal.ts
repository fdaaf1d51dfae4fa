/**
 * What the person's terminal is like, decided in one place from what the caller read: how wide it
 * is, whether to colour, whether a status line may be redrawn in place, the "still running" line,
 * and the clock times shown (local, with the zone named). No I/O: the terminal's facts and the
 * environment are arguments; the zone is the one `Date` uses (`TZ`, else the machine's). Imports
 * only text/width.ts: the logs command uses it before anything else is loaded.
 */
import { truncate } from "./width.js";

type Env = Readonly<Record<string, string | undefined>>;

/** What the caller knows of one output stream. */
interface StreamFacts {
  /** The stream is a terminal. */
  isTTY: boolean;
  /** The terminal's width as it reports it (`process.stdout.columns`), when it is one. */
  columns?: number | undefined;
  env: Env;
}

/** The width when nothing says otherwise: a pipe, a file, a terminal that does not tell. */
const DEFAULT_COLUMNS = 80;

/**
 * The columns output may take: the terminal's own width when the stream is a terminal, else
 * `COLUMNS` (a whole number above 0), else 80.
 */
export function terminalWidth(facts: StreamFacts): number {
  if (facts.isTTY && facts.columns !== undefined && Number.isInteger(facts.columns) && facts.columns > 0)
    return facts.columns;
  const fromEnv = (facts.env.COLUMNS ?? "").trim();
  if (/^\d+$/.test(fromEnv) && Number(fromEnv) > 0 && Number.isSafeInteger(Number(fromEnv))) return Number(fromEnv);
  return DEFAULT_COLUMNS;
}

/**
 * Colour or not: `NO_COLOR` (any value but empty) says no, and wins; `FORCE_COLOR` (any value but
 * empty, `0` or `false`) says yes even through a pipe, and `0`/`false` says no; otherwise only on a
 * terminal that is not `TERM=dumb`.
 */
export function colourEnabled(facts: Pick<StreamFacts, "isTTY" | "env">): boolean {
  if (facts.env.NO_COLOR) return false;
  const force = facts.env.FORCE_COLOR?.trim().toLowerCase();
  if (force !== undefined && force !== "") return force !== "0" && force !== "false";
  return facts.isTTY && facts.env.TERM !== "dumb";
}

/**
 * A line may be redrawn in place (`\r`, erase line): a terminal, not a pipe, not `TERM=dumb`. Colour settings do not
 * matter.
 */
export function canRedraw(facts: Pick<StreamFacts, "isTTY" | "env">): boolean {
  return facts.isTTY && facts.env.TERM !== "dumb";
}

/** Something running, and since when (ms since the epoch). */
interface Running {
  label: string;
  since: number;
}

/**
 * The "still running" line: `running on_task_completed.sh… 3s`, or for several
 * `running task_completed #3… 5s, idle… 2s`, of those running `afterMs` or longer, cut to one
 * column less than `width` (the cursor stays on the line, so `\r` can redraw it); empty when none.
 */
export function runningText(
  items: readonly Running[],
  nowMs: number,
  opts: { afterMs: number; width: number },
): string {
  const slow = items.filter((r) => nowMs - r.since >= opts.afterMs);
  if (slow.length === 0) return "";
  const text = `running ${slow.map((r) => `${r.label}\u2026 ${Math.floor((nowMs - r.since) / 1000)}s`).join(", ")}`;
  return truncate(text, opts.width - 1);
}

// ---------------------------------------------------------------------------------------------
// Clock times

/** The offset from UTC, in minutes east, at `ms` (the machine's zone: `TZ`, else its local time). */
export function localOffsetMinutes(ms: number): number {
  // getTimezoneOffset counts minutes west; -0 for UTC would print as "-0".
  return -new Date(ms).getTimezoneOffset() || 0;
}

/** `UTC` for offset 0, else `UTC+09:00`, `UTC-03:30`. */
export function offsetLabel(offsetMinutes: number): string {
  if (offsetMinutes === 0) return "UTC";
  const sign = offsetMinutes > 0 ? "+" : "-";
  const abs = Math.abs(offsetMinutes);
  return `UTC${sign}${two(Math.floor(abs / 60))}:${two(abs % 60)}`;
}

/** `+09:00` (`Z` for 0): what an ISO 8601 time without an offset is read with, to mean the times shown. */
export function isoOffset(offsetMinutes: number): string {
  return offsetMinutes === 0 ? "Z" : offsetLabel(offsetMinutes).slice(3);
}

/**
 * The machine's time zone by name: `TZ` when it names one, else what Intl says. Asking Intl loads
 * the time-zone data (about 20 ms of a start-up here), so it is asked only for the human banner.
 */
export function zoneName(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const tz = env.TZ?.trim().replace(/^:/, "");
  if (tz && /^[A-Za-z_]+(\/[A-Za-z0-9_+-]+)*$/.test(tz)) return tz;
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** The zone's name and offset now, for a banner: `Asia/Tokyo, UTC+09:00`; `UTC` alone for UTC. */
export function zoneLabel(nowMs: number, zoneName: string | undefined): string {
  const offset = offsetLabel(localOffsetMinutes(nowMs));
  const named = zoneName && !/^(Etc\/)?(UTC|UCT|GMT|Universal|Zulu)$/i.test(zoneName) ? zoneName : "";
  return named ? `${named}, ${offset}` : offset;
}

/** `2026-03-01 18:12:44` for `iso` shown at `offsetMinutes` from UTC; `iso` itself when it is no time. */
export function dateTimeAt(iso: string, offsetMinutes: number): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  const shifted = new Date(ms + offsetMinutes * 60_000).toISOString();
  return `${shifted.slice(0, 10)} ${shifted.slice(11, 19)}`;
}

/**
 * `18:12:44`: the time of `iso` on the machine's clock (its offset at that moment); `iso` itself when it is no time.
 */
export function localClock(iso: string): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  return dateTimeAt(iso, localOffsetMinutes(ms)).slice(11);
}

function two(n: number): string {
  return String(n).padStart(2, "0");
}
