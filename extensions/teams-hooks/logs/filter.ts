/**
 * What `logs` keeps: the filter, what a log's file name says (its time, event, and task or member
 * suffix: logs/hook-log.ts `hookLogStem`), and time bounds. Filters are tried on the name first, so
 * that a query opens only the files that can match; the record decides the rest. Pure.
 */
import { DURATION_FORMS, parseDuration } from "../text/duration.js";
import { HOOK_EVENTS, type HookEventName } from "../contract/contract.js";
import { HOOK_TRIGGERS, type HookLogRecord, type HookTrigger } from "./hook-log.js";
import { hookName } from "./format.js";
import { LOG_OUTCOMES, type LogOutcome, outcomeOf, taskIdOf, triggerOf } from "./record.js";
import { sanitizeName } from "../team/paths.js";

/** What a query keeps. Every field narrows; an absent field keeps everything. */
export interface LogFilter {
  events?: readonly HookEventName[];
  taskId?: string;
  member?: string;
  outcomes?: readonly LogOutcome[];
  /**
   * The hook as the table names it: its file's base name (`on_task_completed.sh`, `10-lint.sh`), or a handler's
   * `http:<name>`.
   */
  hook?: string;
  /** Runs started at or after this time (ms since the epoch). */
  sinceMs?: number;
  /** What fired the run's event: `hand` (`run`), `leader` (a log without `trigger` is the leader's). */
  triggers?: readonly HookTrigger[];
}

/** What a log's name says: `<time>_<event>[_task-<id>|_member-<name>][_<n>].json`. */
interface LogNameInfo {
  timeMs: number;
  event: HookEventName;
  /** The suffix as written: sanitised, cut to 64 characters, maybe followed by `_<n>` (a collision). */
  suffix: { kind: "task" | "member"; raw: string } | null;
}

const NAME = new RegExp(`^\\d{4}-\\d{2}-\\d{2}T\\d{2}-\\d{2}-\\d{2}-\\d{3}Z_(${HOOK_EVENTS.join("|")})(_.*)?\\.json$`);
/** Where the event starts in a name NAME accepts: after `2026-03-01T09-12-44-046Z_`. */
const EVENT_AT = 25;
/** logs/hook-log.ts cuts suffix values to this many characters. */
const SUFFIX_CHARS = 64;
/** Midnight (UTC) of each date seen: most names of a folder share a few dates. */
const dayStart = new Map<string, number>();

/** Parses a log file name; null for a name this project did not write (that file must be opened to know). */
export function parseLogName(name: string): LogNameInfo | null {
  // NAME.test, then fixed positions: capture groups would cost more than everything else here.
  if (!NAME.test(name)) return null;
  const event = HOOK_EVENTS.find((e) => name.startsWith(e, EVENT_AT));
  if (event === undefined) return null;
  const digits = (from: number, to: number): number => {
    let n = 0;
    for (let i = from; i < to; i++) n = n * 10 + name.charCodeAt(i) - 48;
    return n;
  };
  const timeMs = timeOf(name.slice(0, 10), digits(11, 13), digits(14, 16), digits(17, 19), digits(20, 23));
  if (Number.isNaN(timeMs)) return null;
  const rest = name.slice(EVENT_AT + event.length, -".json".length);
  if (rest === "" || /^_\d+$/.test(rest)) return { timeMs, event, suffix: null };
  // NAME's `.` already kept line breaks out of `rest`.
  if (rest.startsWith("_task-") && rest.length > 6)
    return { timeMs, event, suffix: { kind: "task", raw: rest.slice(6) } };
  if (rest.startsWith("_member-") && rest.length > 8)
    return { timeMs, event, suffix: { kind: "member", raw: rest.slice(8) } };
  return null;
}

/** `Date.parse` of `<date>T<hh>:<mm>:<ss>.<ms>Z`, with the day's start looked up once per date. */
function timeOf(date: string, hh: number, mm: number, ss: number, ms: number): number {
  // Out of range, Date.parse decides (NaN, or its own reading of 24:00:00); in range it adds up.
  if (hh > 23 || mm > 59 || ss > 59)
    return Date.parse(`${date}T${pad(hh, 2)}:${pad(mm, 2)}:${pad(ss, 2)}.${pad(ms, 3)}Z`);
  let day = dayStart.get(date);
  if (day === undefined) {
    day = Date.parse(`${date}T00:00:00.000Z`);
    if (dayStart.size > 10_000) dayStart.clear();
    dayStart.set(date, day);
  }
  return day + ((hh * 60 + mm) * 60 + ss) * 1000 + ms;
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, "0");
}

/** True when a suffix written for `value` could be `raw` (`3` matches `3` and `3_2`, never `31`). */
function suffixMayBe(raw: string, value: string): boolean {
  const written = sanitizeName(value).slice(0, SUFFIX_CHARS);
  return raw === written || (raw.startsWith(`${written}_`) && /^\d+$/.test(raw.slice(written.length + 1)));
}

/**
 * False only when the name proves that the log cannot match: a cheap first pass before any file is
 * opened. The record decides the rest (`recordMatches`).
 */
export function nameMayMatch(info: LogNameInfo, filter: LogFilter): boolean {
  if (filter.sinceMs !== undefined && info.timeMs < filter.sinceMs) return false;
  if (filter.events && !filter.events.includes(info.event)) return false;
  if (filter.taskId !== undefined) {
    if (info.suffix?.kind === "task") {
      if (!suffixMayBe(info.suffix.raw, filter.taskId)) return false;
    } else if (info.event === "idle") {
      return false; // idle has no task; a task event whose task file was gone still names it in its key
    }
  }
  if (filter.member !== undefined) {
    if (info.suffix === null) return false; // no suffix: neither a task nor a member
    if (info.suffix.kind === "member" && !suffixMayBe(info.suffix.raw, filter.member)) return false;
  }
  return true;
}

export function recordMatches(record: HookLogRecord, filter: LogFilter): boolean {
  return factsMatch(factsOf(record), filter);
}

/**
 * What the filter looks at in a log, and nothing else: small enough to keep for 100,000 logs (a
 * server's index of them). Text longer than `FACT_CHARS` is kept cut, and `long` says so: such a log
 * may match a filter on that text, and its record decides.
 */
export interface LogFacts {
  startedMs: number;
  event: HookEventName;
  taskId: string | null;
  member: string | null;
  outcome: LogOutcome;
  hook: string;
  trigger: HookTrigger;
  long?: true;
}

/** Characters of a task id, a member or a hook name the facts keep. */
const FACT_CHARS = 256;

/** The facts of `record`, whole; with `keep`, as an index keeps them (text cut to `FACT_CHARS`, `long` set). */
export function factsOf(record: HookLogRecord, keep = false): LogFacts {
  const taskId = taskIdOf(record);
  const member = record.invocation.memberName ?? null;
  const hook = hookName(record.result);
  const facts: LogFacts = {
    startedMs: Date.parse(record.startedAt),
    event: record.invocation.event,
    taskId,
    member,
    outcome: outcomeOf(record.result),
    hook,
    trigger: triggerOf(record),
  };
  const long = (taskId?.length ?? 0) > FACT_CHARS || (member?.length ?? 0) > FACT_CHARS || hook.length > FACT_CHARS;
  if (keep && long) {
    facts.taskId = taskId?.slice(0, FACT_CHARS) ?? null;
    facts.member = member?.slice(0, FACT_CHARS) ?? null;
    facts.hook = hook.slice(0, FACT_CHARS);
    facts.long = true;
  }
  return facts;
}

/** Whether a log with these facts matches (with `long` facts: may match; its record decides). */
export function factsMatch(facts: LogFacts, filter: LogFilter): boolean {
  const same = (value: string | null, wanted: string): boolean =>
    facts.long ? value !== null && wanted.startsWith(value) : value === wanted;
  if (filter.sinceMs !== undefined && !(facts.startedMs >= filter.sinceMs)) return false;
  if (filter.events && !filter.events.includes(facts.event)) return false;
  if (filter.taskId !== undefined && !same(facts.taskId, filter.taskId)) return false;
  if (filter.member !== undefined && !same(facts.member, filter.member)) return false;
  if (filter.outcomes && !filter.outcomes.includes(facts.outcome)) return false;
  if (filter.hook !== undefined && !same(facts.hook, filter.hook)) return false;
  if (filter.triggers && !filter.triggers.includes(facts.trigger)) return false;
  return true;
}

/** An age as people write it (`30m`, `1.5h`, `1d12h`, `2H`: text/duration.ts), in ms; null when `text` is none. */
export function parseAge(text: string): number | null {
  return parseDuration(text);
}

/**
 * A point in time given as an age before `nowMs` (`2h`) or as an ISO 8601 date or time
 * (`2026-03-01`, `2026-03-01T09:00`, `2026-03-01 09:00:00`, `2026-03-01T11:00:00+02:00`). A date
 * or time without an offset is read at `offset` (`Z`, `+09:00`): the offset the times `logs`
 * prints are shown at. Null when neither.
 */
export function parseTimeBound(text: string, nowMs: number, offset = "Z"): number | null {
  const age = parseAge(text);
  if (age !== null) return nowMs - age;
  // `2026-03-01 09:12:44`, as the table prints it, is `2026-03-01T09:12:44`.
  const iso = text.trim().replace(/^(\d{4}-\d{2}-\d{2}) (?=\d{2}:)/, "$1T");
  if (!/^\d{4}-\d{2}-\d{2}/.test(iso) || impossibleDate(iso) !== null) return null;
  // JavaScript reads a date alone as UTC but a date-time without an offset as local time: both get `offset`.
  const bare = /^\d{4}-\d{2}-\d{2}$/.test(iso)
    ? `${iso}T00:00${offset}`
    : /T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(iso)
      ? `${iso}${offset}`
      : iso;
  const ms = Date.parse(bare);
  return Number.isNaN(ms) ? null : ms;
}

/**
 * Why the calendar date `text` starts with cannot be (`February 2026 has 28 days`), or null when it
 * can or `text` starts with no date. JavaScript reads `2026-02-30` as March 2: a filter must not.
 */
export function impossibleDate(text: string): string | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})/.exec(text.trim());
  if (!m) return null;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12) return `there is no month ${m[2]}`;
  const days = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day < 1 || day > days) return `${MONTHS[month - 1]} ${m[1]} has ${days} days`;
  return null;
}

const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];

/** The filter fields as people type them (`logs` flags, the dashboard's form); absent fields keep everything. */
export interface FilterText {
  event?: string | undefined;
  outcome?: string | undefined;
  task?: string | undefined;
  member?: string | undefined;
  hook?: string | undefined;
  since?: string | undefined;
  trigger?: string | undefined;
}

/** One field that could not be read: `{field: "since", text: '"x" must be an age …'}`. */
interface FilterProblem {
  field: keyof FilterText;
  text: string;
}

/**
 * The filter `fields` ask for, and a problem per field that cannot be read. Lists are comma
 * separated (`failed,timed_out`, `hand,leader`); `timed-out` and `timeout` are `timed_out`; a task
 * may start with `#`; `since` is an age before `nowMs` or an ISO time read at `offset` (`parseTimeBound`).
 */
export function parseFilterText(
  fields: FilterText,
  nowMs: number,
  offset = "Z",
): { filter: LogFilter; problems: FilterProblem[] } {
  const filter: LogFilter = {};
  const problems: FilterProblem[] = [];
  const list = (field: "event" | "outcome" | "trigger"): string[] | undefined => {
    const raw = fields[field];
    if (raw === undefined) return undefined;
    const items = raw
      .split(",")
      .map((item) => item.trim())
      .filter((item) => item !== "");
    if (items.length === 0) problems.push({ field, text: "must not be empty" });
    return items.length > 0 ? items : undefined;
  };
  const events = list("event");
  if (events) {
    const bad = events.find((e) => !(HOOK_EVENTS as readonly string[]).includes(e));
    if (bad !== undefined) problems.push({ field: "event", text: `"${bad}" must be one of ${HOOK_EVENTS.join(", ")}` });
    else filter.events = events as HookEventName[];
  }
  const outcomes = list("outcome")?.map((o) =>
    o === "timed-out" || o === "timed out" || o === "timeout" ? "timed_out" : o,
  );
  if (outcomes) {
    const bad = outcomes.find((o) => !(LOG_OUTCOMES as readonly string[]).includes(o));
    if (bad !== undefined)
      problems.push({ field: "outcome", text: `"${bad}" must be one of ${LOG_OUTCOMES.join(", ")}` });
    else filter.outcomes = outcomes as LogOutcome[];
  }
  const triggers = list("trigger");
  if (triggers) {
    const bad = triggers.find((t) => !(HOOK_TRIGGERS as readonly string[]).includes(t));
    const allowed = HOOK_TRIGGERS.join(", ");
    if (bad !== undefined) problems.push({ field: "trigger", text: `"${bad}" must be one of ${allowed}` });
    else filter.triggers = triggers as HookTrigger[];
  }
  const text = (field: "task" | "member" | "hook", value: string | undefined): string | undefined => {
    if (value === undefined) return undefined;
    if (value.trim() === "") problems.push({ field, text: "must not be empty" });
    return value.trim() === "" ? undefined : value;
  };
  const task = text("task", fields.task?.replace(/^#/, ""));
  if (task !== undefined) filter.taskId = task;
  const member = text("member", fields.member);
  if (member !== undefined) filter.member = member;
  const hook = text("hook", fields.hook);
  if (hook !== undefined) filter.hook = hook;
  if (fields.since !== undefined) {
    const ms = parseTimeBound(fields.since, nowMs, offset);
    const impossible = impossibleDate(fields.since);
    if (impossible !== null) problems.push({ field: "since", text: `"${fields.since}" is not a date: ${impossible}` });
    else if (ms === null)
      problems.push({
        field: "since",
        text: `"${fields.since}" must be an age (${DURATION_FORMS}) or an ISO 8601 time (2026-03-01 or 2026-03-01T09:00:00Z)`,
      });
    else filter.sinceMs = ms;
  }
  return { filter, problems };
}
