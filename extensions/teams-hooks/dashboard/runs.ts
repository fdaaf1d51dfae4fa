/**
 * The runs page: the `logs` table over every team the viewer may see, with the same filters (and the
 * same parser: logs/filter.ts `parseFilterText`), newest first, 50 to a page. A page's cursor is
 * its last row (time, team, log name), so a page stays the same when new runs land above it. Cells
 * are `logs`' own (logs/format.ts `rowCells`).
 */
import { HOOK_EVENTS } from "../contract/contract.js";
import { type FilterText, type LogFilter, parseFilterText, parseLogName } from "../logs/filter.js";
import { actionsText, rowCells, shortRunId } from "../logs/format.js";
import { LOG_OUTCOMES, triggerOf } from "../logs/record.js";
import { type LogRow, streamLogs } from "../logs/query.js";
import { HOOK_TRIGGERS, MAX_WRITTEN_LOG_BYTES, compareHookLogNames } from "../logs/hook-log.js";
import type { LogIndex } from "../logs/log-index.js";
import { shownRecord } from "../logs/shown.js";
import { type Html, html, plainText, queryString } from "./html.js";
import { outcomeKind, timeParts } from "./layout.js";
import { runHref } from "./overview.js";
import type { TeamRef } from "./teams.js";

const PAGE_SIZE = 50;
const FILTER_FIELDS = ["event", "outcome", "task", "member", "hook", "since", "trigger"] as const;

/** What the runs page was asked for: the filter fields as typed, the team, the cursor. */
interface RunsQuery {
  team: string | undefined;
  fields: FilterText;
  before: Cursor | null;
}

export interface Cursor {
  timeMs: number;
  team: string;
  name: string;
}

/** A row of the table: which team's log, and when it started (by its name, as the cursor orders). */
export interface RunRow {
  team: string;
  timeMs: number;
  row: LogRow;
  /** What the gate said is withheld from this viewer (teams.ts `TeamRef.withheld`). */
  withheld?: boolean;
}

export function runsQuery(search: URLSearchParams): RunsQuery {
  const fields: FilterText = {};
  for (const field of FILTER_FIELDS) {
    const value = search.get(field);
    if (value !== null && value !== "") fields[field] = value;
  }
  const team = search.get("team") ?? undefined;
  return { team: team === "" ? undefined : team, fields, before: parseCursor(search.get("before")) };
}

/**
 * `<ms>~<team>~<name>` with the name URL-encoded (`cursorText`); null for anything else (a page then
 * starts at the newest).
 */
export function parseCursor(text: string | null | undefined): Cursor | null {
  // A team is a safe name (no `~`); the name is the rest.
  const match = /^(\d{1,15})~([^~]{1,128})~([\x21-\x7e]{1,1024})$/.exec(text ?? "");
  if (!match) return null;
  try {
    return { timeMs: Number(match[1]), team: match[2] ?? "", name: decodeURIComponent(match[3] ?? "") };
  } catch {
    return null; // not URL-encoding: no cursor this server made
  }
}

/**
 * A cursor as one line of visible ASCII, whatever the log's file name holds (an agent names that
 * file, and may put a line break in it): it is an event's `id:` line on the live stream, an
 * attribute, a query value. The name is URL-encoded, so the usual names read as they are.
 */
export function cursorText(c: Cursor): string {
  return `${c.timeMs}~${c.team}~${encodeURIComponent(c.name.replace(LONE_SURROGATE, "\ufffd"))}`;
}

/** What `encodeURIComponent` refuses; a name read from the disk has none, as Node decodes names. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** The cursor order, newer first: by time, then team, then the folder's order of names, all descending. */
export function newerCursorFirst(a: Cursor, b: Cursor): number {
  return b.timeMs - a.timeMs || (a.team === b.team ? compareHookLogNames(b.name, a.name) : a.team < b.team ? 1 : -1);
}

/** A row's place in that order. */
export function cursorOf(r: RunRow): Cursor {
  return { timeMs: r.timeMs, team: r.team, name: r.row.name };
}

function newerFirst(a: RunRow, b: RunRow): number {
  return newerCursorFirst(cursorOf(a), cursorOf(b));
}

/** The time a log sorts by: its name's, else its start. */
function timeOfRow(row: LogRow): number {
  return parseLogName(row.name)?.timeMs ?? Date.parse(row.record.startedAt);
}

/**
 * The page: at most `PAGE_SIZE` rows older than the cursor, and whether older ones remain; read
 * through the server's index of the logs (logs/log-index.ts), each row's record bounded as a server
 * holds a log (logs/shown.ts).
 */
export async function findRuns(
  index: LogIndex,
  teams: readonly TeamRef[],
  filter: LogFilter,
  before: Cursor | null,
  onProblem: () => void,
): Promise<{ rows: RunRow[]; more: boolean }> {
  const found: RunRow[] = [];
  for (const team of teams) {
    // The cursor in this team's terms: the same time and a team later in the order keeps all of that millisecond.
    const bound =
      before === null
        ? undefined
        : {
            timeMs: before.timeMs,
            name: team.name === before.team ? before.name : team.name < before.team ? "\uffff" : "",
          };
    const result = await index.query(team.dir, {
      filter,
      limit: PAGE_SIZE + 1,
      onProblem,
      before: bound,
    });
    for (const row of result.rows) found.push(shownRow(team, row));
  }
  found.sort(newerFirst);
  return { rows: found.slice(0, PAGE_SIZE), more: found.length > PAGE_SIZE };
}

/** A log of `team` as a row, its record bounded as a server holds a log (logs/shown.ts). */
export function shownRow(team: TeamRef, row: LogRow): RunRow {
  const shown = { ...row, record: shownRecord(row.record) };
  return { team: team.name, timeMs: timeOfRow(shown), row: shown, ...(team.withheld ? { withheld: true } : {}) };
}

/** Every run of one task in a team, newest first (the run page's links). */
export async function taskRuns(team: TeamRef, taskId: string): Promise<RunRow[]> {
  const rows: RunRow[] = [];
  await streamLogs(
    team.dir,
    {
      filter: { taskId },
      limit: PAGE_SIZE,
      maxBytes: MAX_WRITTEN_LOG_BYTES,
      inSlices: true,
      onProblem: () => undefined,
    },
    (row) => shownRow(team, row),
    (r) => rows.push(r),
  );
  return rows.sort(newerFirst);
}

// ---------------------------------------------------------------------------------------------
// The page

export const RUN_COLUMNS = [
  "Time",
  "Team",
  "Event",
  "Task",
  "Member",
  "Hook",
  "Outcome",
  "Duration",
  "Action",
  "First stderr line",
] as const;

/**
 * One row of the table as plain data: what the live feed sends, and what the page's script builds
 * the row from with DOM calls (text as text, never markup). Every string is as a page shows it
 * (html.ts `plainText`); `href` is the run's own page.
 */
interface RunRowData {
  team: string;
  name: string;
  cursor: string;
  href: string;
  /** The link's accessible name. */
  label: string;
  /** The start in UTC (ISO 8601), or null when the log's time cannot be read; `timeText` as printed. */
  time: string | null;
  timeText: string;
  event: string;
  task: string;
  member: string;
  hook: string;
  outcome: string;
  outcomeKind: "ok" | "note" | "bad";
  duration: string;
  /** Whether a person ran it by hand (`pi-teams-hooks run`): marked in the action cell. */
  hand: boolean;
  actions: string;
  stderr: string;
}

/**
 * The characters a cell shows at most (the run's page shows the whole): a row is a message of the
 * live feed, whose bound (live.ts) needs a size any message stays well within.
 */
const CELL_CHARS = 2_000;

function cellText(text: string): string {
  const plain = plainText(text);
  return plain.length > CELL_CHARS ? `${plain.slice(0, CELL_CHARS - 1)}…` : plain;
}

/**
 * A held run's word: `held` when the policy step held its event for the lead or a retry instead of
 * failing it (an untrusted gate, a fault of ours: the log's `policy.gate`, `held` with its cause in
 * `policy.held`, policy/gate-life.ts heldFor), whatever the run's own outcome; null otherwise, a gate
 * held for a decision included (its run says `deferred`).
 */
export function heldWord(record: LogRow["record"]): string | null {
  const policy = record.policy as { held?: unknown; gate?: unknown } | undefined;
  if (policy === undefined) return null;
  const cause = policy.held === "approval" || policy.held === "fault" ? policy.held : undefined;
  // A log written before `gate` was kept says only `held` (an approval or fault hold then).
  if (cause && (policy.gate === undefined || policy.gate === "held")) return "held";
  return policy.gate === "held" && policy.held === undefined ? "held" : null;
}

export function runRowData(r: RunRow): RunRowData {
  const [, , event, task, member, hook, ran, duration, , stderr] = rowCells(r.row).map(cellText);
  const outcome = heldWord(r.row.record) ?? ran;
  const time = timeParts(r.row.record.startedAt);
  return {
    team: r.team,
    name: plainText(r.row.name),
    cursor: cursorText(cursorOf(r)),
    href: runHref(r.team, r.row.name),
    label: `Run ${cellText(shortRunId(r.row.record.result.runId))} of ${hook ?? ""}`,
    time: time.utc,
    timeText: plainText(time.text),
    event: event ?? "",
    task: task ?? "",
    member: member ?? "",
    hook: hook ?? "",
    outcome: outcome ?? "",
    outcomeKind: outcomeKind(outcome ?? ""),
    duration: duration ?? "",
    hand: triggerOf(r.row.record) === "hand",
    actions: cellText(actionsText(r.row.record)),
    stderr: r.withheld ? WITHHELD : (stderr ?? ""),
  };
}

/** The stderr cell of a confidential team's run for a remote viewer: the task API leaves it out too. */
const WITHHELD = "(withheld: confidential team)";

/**
 * One row, as the page prints it (app.js builds the same from `runRowData` for the live feed); a run by hand is marked
 * in its action.
 */
export function runRowHtml(r: RunRow): Html {
  const d = runRowData(r);
  const time =
    d.time === null ? html`<span>${d.timeText}</span>` : html`<time datetime="${d.time}">${d.timeText}</time>`;
  const hand = d.hand ? html`<span class="badge badge-note">by hand</span> ` : "";
  return html`<tr data-team="${d.team}" data-name="${d.name}" data-cursor="${d.cursor}">
<td><a href="${d.href}" aria-label="${d.label}">${time}</a></td>
<td>${d.team}</td><td>${d.event}</td><td class="cut" title="${d.task}">${d.task}</td>\
<td class="cut" title="${d.member}">${d.member}</td><td class="cut" title="${d.hook}">${d.hook}</td>
<td><span class="badge badge-${d.outcomeKind}">${d.outcome}</span></td>
<td class="num">${d.duration}</td><td class="cut" title="${d.actions}">${hand}${d.actions}</td>\
<td class="stderr" title="${d.stderr}">${d.stderr}</td></tr>`;
}

export function runsBody(input: {
  teams: readonly TeamRef[];
  query: RunsQuery;
  rows: readonly RunRow[];
  more: boolean;
  problems: readonly string[];
  unreadable: number;
}): Html {
  const { query } = input;
  const params = { team: query.team, ...query.fields };
  const last = input.rows.at(-1);
  const older = input.more && last ? `/runs${queryString({ ...params, before: cursorText(cursorOf(last)) })}` : null;
  const first = query.before !== null ? `/runs${queryString(params)}` : null;
  const problems = html`<div class="problems" role="alert"><p>These filters could not be read, so nothing is shown:</p>\
<ul>${input.problems.map((p) => html`<li>${p}</li>`)}</ul></div>`;
  const head = RUN_COLUMNS.map((c) => html`<th scope="col"${c === "Duration" ? html` class="num"` : ""}>${c}</th>`);
  const empty = html`<p class="quiet" id="runs-empty">No run matches.</p>`;
  const logs = html`<code>pi-teams-hooks logs</code>`;
  const unreadable = html`<p class="warn">${input.unreadable} log file(s) could not be read and are left out \
(${logs} names them).</p>`;
  const newest = first ? html`<a href="${first}">Newest</a>` : "";
  const next = older ? html`<a href="${older}" rel="next">Older runs</a>` : "";
  return html`<h1>Runs</h1>
${filterForm(input.teams, query)}
${input.problems.length > 0 ? problems : ""}
<div class="table-wrap"><table class="runs" id="runs-table">
<caption>${query.before === null ? "The newest runs" : "Older runs"}${describe(query)}, newest first</caption>
<thead><tr>${head}</tr></thead>
<tbody id="runs-body">${input.rows.map(runRowHtml)}</tbody>
</table></div>
${input.rows.length === 0 && input.problems.length === 0 ? empty : ""}
${input.unreadable > 0 ? unreadable : ""}
<nav class="pager" aria-label="Pages">${newest}${next}</nav>`;
}

function describe(query: RunsQuery): string {
  const parts = [
    ...(query.team ? [`team ${query.team}`] : []),
    ...FILTER_FIELDS.flatMap((f) => (query.fields[f] ? [`${f} ${query.fields[f]}`] : [])),
  ];
  return parts.length > 0 ? ` (${parts.join(", ")})` : "";
}

function filterForm(teams: readonly TeamRef[], query: RunsQuery): Html {
  const f = query.fields;
  const select = (name: string, label: string, options: readonly string[], value: string | undefined): Html =>
    html`<div class="field"><label for="f-${name}">${label}</label><select id="f-${name}" name="${name}">\
<option value="">any</option>${options.map((o) => html`<option${o === value ? html` selected` : ""}>${o}</option>`)}\
</select></div>`;
  const input = (name: keyof FilterText, label: string, hint: string): Html =>
    html`<div class="field"><label for="f-${name}">${label}</label>\
<input id="f-${name}" name="${name}" value="${f[name] ?? ""}" placeholder="${hint}" autocomplete="off"></div>`;
  return html`<form class="filters" method="get" action="/runs" aria-label="Filter runs">
${select(
  "team",
  "Team",
  teams.map((t) => t.name),
  query.team,
)}
${select("event", "Event", HOOK_EVENTS, f.event)}
${select("outcome", "Outcome", LOG_OUTCOMES, f.outcome)}
${input("member", "Member", "alice")}
${input("hook", "Hook", "on_task_completed.sh")}
${input("task", "Task", "12")}
${input("since", "Since", "24h or 2026-12-01")}
${select("trigger", "Fired by", HOOK_TRIGGERS, f.trigger)}
<button type="submit">Filter</button>${query.team || Object.keys(f).length > 0 ? html` <a href="/runs">Clear</a>` : ""}
</form>`;
}

/** The filter and its problems, in the page's words (`since: "x" must be …`). */
export function runsFilter(query: RunsQuery, nowMs: number): { filter: LogFilter; problems: string[] } {
  const { filter, problems } = parseFilterText(query.fields, nowMs);
  return { filter, problems: problems.map((p) => `${p.field}: ${p.text}`) };
}
