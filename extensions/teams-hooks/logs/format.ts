/**
 * The text of `logs`: table rows, NDJSON lines, and one log in full (`logs show`). Pure.
 */
import path from "node:path";
import { truncateText } from "../contract/contract.js";
import type { RunResult } from "../contract/hook-run.js";
import type { HookLogRecord } from "./hook-log.js";
import { type LogOutcome, outcomeOf, taskIdOf, triggerOf } from "./record.js";
import {
  type ColumnSpec,
  type TableLayout,
  fitTable,
  hiddenColumns,
  hiddenNote,
  naturalWidths,
  tableRow,
} from "../text/table.js";
import { formatDuration, formatSpan, stderrReason, verdictNotRead } from "../text/messages.js";
import { dateTimeAt, offsetLabel } from "../text/terminal.js";

/** One readable log (logs/query.ts `LogRow`). */
interface Row {
  file: string;
  record: HookLogRecord;
}

/**
 * ANSI escapes (an OSC, such as a window title, whole) and control characters, C1 too (U+009B is a
 * CSI of its own to a terminal); tabs and line breaks become spaces where a cell needs one line.
 */
const CONTROL =
  /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|\u009b[0-9;?]*[ -/]*[@-~]|\u001b[@-_]|[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
/**
 * Characters that reorder or hide the text around them in a terminal (bidirectional overrides,
 * embeddings, isolates and marks; line and paragraph separators): a right-to-left override in a hook's
 * name would print the rest of the row backwards. Shown as their code point (`<U+202E>`).
 */
const INVISIBLE = /[\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
/** Any character `oneLine` would change (all of CONTROL's start with one of these, or INVISIBLE's). */
const NOT_PLAIN = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/**
 * `text` on one line: line breaks and tabs as spaces, escapes and control characters dropped,
 * bidirectional controls shown as their code point, trimmed.
 */
export function oneLine(text: string): string {
  if (!NOT_PLAIN.test(text)) return text.trim();
  return visible(text.replace(/[\t\n\r]+/g, " ").replace(CONTROL, "")).trim();
}

/** `text` with each bidirectional control written as its code point (`<U+202E>`). */
function visible(text: string): string {
  return text.replace(INVISIBLE, (c) => `<U+${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}>`);
}

/** The first line of `text` that holds something, cleaned, cut to `max` characters. */
export function firstLine(text: string, max = 100): string {
  // Line by line rather than split(): stderr can be 12,000 characters of lines that are not needed.
  const breaks = /\r\n|\n|\r/g;
  let start = 0;
  for (;;) {
    const found = breaks.exec(text);
    const clean = oneLine(text.slice(start, found ? found.index : text.length));
    if (clean) return truncateText(clean, max);
    if (!found) return "";
    start = found.index + found[0].length;
  }
}

export function hookName(result: Pick<RunResult, "hookPath">): string {
  return result.hookPath ? path.basename(result.hookPath) : "(none)";
}

/** `timed out` for `timed_out`; the others as they are. */
function outcomeWord(outcome: LogOutcome): string {
  return outcome === "timed_out" ? "timed out" : outcome;
}

/**
 * The actions the policy step took (`reopened (1/3)`, `follow-up #12 for bob`, `nudge bob`); empty when none or no
 * policy ran.
 */
export function policyActions(record: HookLogRecord): string[] {
  const actions = record.policy?.actions;
  if (!Array.isArray(actions)) return [];
  return actions.filter((a): a is string => typeof a === "string" && a !== "none");
}

/** The policy's actions as the table's action cell; `-` for none. */
export function actionsText(record: HookLogRecord): string {
  const actions = policyActions(record);
  return actions.length > 0 ? oneLine(actions.join(", ")) : "-";
}

/** A pass with a non-blocking error, in the table's outcome column (which is never cut). */
export const NON_BLOCKING_WORD = "passed (error)";

/**
 * What marks a run fired by hand (`pi-teams-hooks run`) in the table: first in its action cell, so
 * that a narrow terminal, which cuts that cell from its end, still shows it.
 */
const HAND_MARK = "by hand";

// ---------------------------------------------------------------------------------------------
// Run ids as people type them

/** Characters of a run id's UUID a short id keeps: 32 bits, unique in practice, short enough to type. */
const SHORT_ID_CHARS = 8;
/** A run id the project writes: a UUID, and for a chain's later hooks `.2`, `.3`… (event/chain-run.ts). */
const UUID_RUN_ID = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(\.\d+)?$/;

/** A run id as its UUID and its chain position (`.2`, or empty); any other id is all base. */
export function splitRunId(id: string): { base: string; chain: string } {
  const m = UUID_RUN_ID.exec(id);
  return m ? { base: m[1] ?? id, chain: m[2] ?? "" } : { base: id, chain: "" };
}

/** The fewest characters of a run id that `logs show` and `decide` take as the start of one. */
export const MIN_ID_PREFIX = 4;

/** `4a739620` for `4a739620-51eb-42cb-945b-c9232b60cf26`, `4a739620.2` for the chain's second hook. */
export function shortRunId(id: string): string {
  const { base, chain } = splitRunId(id);
  return `${base.slice(0, SHORT_ID_CHARS)}${chain}`;
}

/**
 * The short id of each of `ids`, longer where two different ids would share one (`4a739620-5`,
 * `4a739620-9`), so that every id shown can be typed back. Sorting puts ids that share a prefix
 * side by side: each needs one character past what it shares with its neighbours.
 */
export function shortRunIds(ids: readonly string[]): string[] {
  const distinct = [...new Set(ids)].map((id) => ({ id, ...splitRunId(id) }));
  distinct.sort((a, b) =>
    a.chain < b.chain ? -1 : a.chain > b.chain ? 1 : a.base < b.base ? -1 : a.base > b.base ? 1 : 0,
  );
  const lengths = new Map(distinct.map((p) => [p.id, SHORT_ID_CHARS]));
  for (let k = 1; k < distinct.length; k++) {
    const [a, b] = [distinct[k - 1], distinct[k]];
    if (!a || !b || a.chain !== b.chain) continue;
    let shared = 0;
    while (shared < a.base.length && a.base[shared] === b.base[shared]) shared++;
    for (const p of [a, b]) lengths.set(p.id, Math.max(lengths.get(p.id) ?? 0, shared + 1));
  }
  const short = new Map(
    distinct.map((p) => {
      let n = Math.min(lengths.get(p.id) ?? SHORT_ID_CHARS, p.base.length);
      if (p.base[n - 1] === "-" && n < p.base.length) n++; // never end on a UUID's dash
      return [p.id, `${p.base.slice(0, n)}${p.chain}`];
    }),
  );
  return ids.map((id) => short.get(id) ?? id);
}

// ---------------------------------------------------------------------------------------------
// The table

/**
 * The table's header; its times are shown at `offsetMinutes` from UTC (the machine's offset now, for
 * every row alike, so that the header names the offset of each: `time (UTC+09:00)`, `time (UTC)`).
 */
export function tableHeader(offsetMinutes = 0): string[] {
  return [
    "id",
    `time (${offsetLabel(offsetMinutes)})`,
    "event",
    "task",
    "member",
    "hook",
    "outcome",
    "duration",
    "action",
    "first stderr line",
  ];
}

const TABLE_HEADER: readonly string[] = tableHeader(0);

/**
 * How the columns give way to a narrow terminal (text/table.ts): the widest of the free text
 * (action, first stderr line), a long task id or member name is cut first; the hook (whole or not at
 * all), then duration, then event, then member are left out when even that does not fit (120
 * columns leave out the hook, 80 also duration and event). The id (what `logs show` takes), time,
 * task and outcome always stay whole.
 */
const TABLE_COLUMNS: readonly ColumnSpec[] = [
  {},
  {},
  { drop: 3 },
  { min: 6 },
  { min: 8, drop: 4 },
  { drop: 1 },
  {},
  { right: true, drop: 2 },
  { min: 10 },
  { min: 12 },
];

/** Column widths `followLogs` starts from, before it has seen any row. */
export const FOLLOW_WIDTHS: readonly number[] = [SHORT_ID_CHARS, 19, 14, 4, 8, 20, 9, 8, 12];

/**
 * A decision record's word for its outcome: `allowed`, `denied` or `expired` (its `result.outcome`
 * is `passed`, `failed` or `error`, which `--outcome` matches); null for any other record.
 */
export function decisionWord(record: HookLogRecord): string | null {
  const decision = (record.decision as { decision?: unknown } | undefined)?.decision;
  return decision === "allow" ? "allowed" : decision === "deny" ? "denied" : decision === "expired" ? "expired" : null;
}

/**
 * A run's word in the table: its outcome, `skipped` when its matchers skipped it, for a shadow gate
 * what it said (`shadow: failed`): its enforced outcome is always a pass; and `passed (error)` for a
 * pass that let its error through (a Claude Code gate's non-blocking error: `result.nonBlocking`).
 */
export function runWord(result: RunResult): string {
  if (result.skipped !== undefined) return "skipped";
  if (result.shadow)
    return `shadow: ${outcomeWord(outcomeOf({ outcome: result.shadow.outcome, timedOut: result.timedOut }))}`;
  if (result.nonBlocking !== undefined && result.outcome === "passed") return NON_BLOCKING_WORD;
  return outcomeWord(outcomeOf(result));
}

/**
 * The cells of one table row: first the run id (`id`, its short form unless a longer one is needed
 * to tell it from another row's), then its time at `offsetMinutes` from UTC, last the first stderr
 * line, else the spawn error.
 */
export function rowCells(row: Row, id = shortRunId(row.record.result.runId), offsetMinutes = 0): string[] {
  const { invocation, result } = row.record;
  const taskId = taskIdOf(row.record);
  const actions = actionsText(row.record);
  const stderr =
    result.skipped !== undefined
      ? `(${firstLine(result.skipped)})`
      : firstLine(stderrReason(result.stderr)) || (result.error ? `(${firstLine(result.error)})` : "");
  return [
    oneLine(id),
    dateTimeAt(row.record.startedAt, offsetMinutes),
    invocation.event,
    taskId === null ? "-" : `#${oneLine(taskId)}`,
    invocation.memberName ? oneLine(invocation.memberName) : "-",
    oneLine(hookName(result)),
    decisionWord(row.record) ?? runWord(result),
    formatDuration(result.durationMs),
    triggerOf(row.record) === "hand" ? (actions === "-" ? HAND_MARK : `${HAND_MARK}; ${actions}`) : actions,
    stderr,
  ];
}

/** The widths that fit `rows` (by display width), at least `start`. */
export function columnWidths(rows: ReadonlyArray<readonly string[]>, start: readonly number[] = []): number[] {
  return naturalWidths(rows, TABLE_COLUMNS.length, start);
}

/** Where the columns go in `width` terminal columns; `shown` keeps the columns of a header printed before. */
export function tableLayout(widths: readonly number[], width: number, shown?: readonly boolean[]): TableLayout {
  return fitTable(widths, TABLE_COLUMNS, { width }, shown);
}

/** Cells cut and padded to the layout, two spaces apart; duration right-aligned. */
export function tableLine(cells: readonly string[], layout: TableLayout): string {
  return tableRow(cells, layout, TABLE_COLUMNS);
}

/** `(hook and duration left out to fit 80 columns: …)` when the layout left columns out; empty otherwise. */
export function leftOutNote(layout: TableLayout, width: number, json = true): string {
  return hiddenNote(
    hiddenColumns(layout).map((i) => TABLE_HEADER[i] ?? ""),
    layout,
    width,
    json,
  );
}

/**
 * The whole table, header first, rows in the order given, each id long enough to tell it from the
 * others, fitted to `width`; and the note on what it left out (`json`: the command has --json to offer).
 */
export function formatTable(
  rows: readonly Row[],
  opts: { width?: number; offsetMinutes?: number; json?: boolean } = {},
): { text: string; note: string } {
  const width = opts.width ?? Number.POSITIVE_INFINITY;
  const ids = shortRunIds(rows.map((r) => r.record.result.runId));
  const all = [tableHeader(opts.offsetMinutes), ...rows.map((row, i) => rowCells(row, ids[i], opts.offsetMinutes))];
  const layout = tableLayout(columnWidths(all), width);
  return { text: all.map((c) => `${tableLine(c, layout)}\n`).join(""), note: leftOutNote(layout, width, opts.json) };
}

/** One log as NDJSON: its file first, then the record as written. */
export function jsonLine(row: Row): string {
  return `${JSON.stringify({ file: row.file, ...row.record })}\n`;
}

// ---------------------------------------------------------------------------------------------
// One log in full

/** Lines of at most this many kept from each of stdout and stderr by `formatShow`. Everything is in the file. */
const SHOW_OUTPUT_LINES = 200;

/** One log, readably: context, command, exit, timing, policy, stdout and stderr. */
export function formatShow(row: Row): string {
  const { invocation, result, policy } = row.record;
  const out: string[] = [];
  // Every value on one line and shown as it is: a member's or hook's name with an escape or a
  // bidirectional control in it cannot act on the terminal or reorder the line.
  const field = (name: string, value: string): void => {
    out.push(`${(name ? `${name}:` : "").padEnd(14)}${oneLine(value)}`);
  };
  field("log", row.file);
  field("event", `${invocation.event}${row.record.retry ? " (a retry: this event key ran before)" : ""}`);
  if (triggerOf(row.record) === "hand") field("fired", "by hand (pi-teams-hooks run)");
  if (row.record.key) field("key", row.record.key);
  field("started", row.record.startedAt);
  field(
    "team",
    `${invocation.teamId} (task list ${invocation.taskListId}, style ${invocation.style}) ${invocation.teamDir}`,
  );
  field("member", invocation.memberName ?? "(unknown)");
  field("event time", invocation.timestamp ?? "(unknown)");
  const task = invocation.completedTask;
  if (task) {
    field("task", `#${task.id} ${oneLine(task.subject)}`);
    field("", `status ${task.status}, owner ${task.owner ?? "(none)"}, updated ${task.updatedAt}`);
    const description = task.description.trim();
    if (description) out.push(...indent(cutLines(description, 20)));
  } else {
    const taskId = taskIdOf(row.record);
    field("task", taskId === null ? "(none)" : `#${taskId} (its task file was gone when the hook ran)`);
  }
  out.push("");
  field("hook", result.hookPath ?? "(none)");
  if (result.command) field("command", shellLine(result.command));
  field("outcome", runWord(result));
  if (result.hookSettings) field("settings", oneLine(result.hookSettings));
  if (result.skipped !== undefined) field("skipped", `${oneLine(result.skipped)}: the gate did not run`);
  if (result.shadow) {
    const said = outcomeWord(outcomeOf({ outcome: result.shadow.outcome, timedOut: result.timedOut }));
    const deny = result.shadow.wouldDeny ? ", which would have denied" : "";
    field("shadow", `it said ${said}${deny}; a shadow gate is never enforced`);
  }
  if (result.nonBlocking) field("non-blocking", oneLine(result.nonBlocking));
  if (result.verdictUnread)
    field("verdict", `${oneLine(verdictNotRead(result.verdictUnread))} (the exit code decided)`);
  const exit = [
    result.exitCode === null ? "no exit code" : `exit code ${result.exitCode}`,
    ...(result.signal ? [`signal ${result.signal}`] : []),
    ...(result.timedOut ? ["timed out"] : []),
  ];
  if (decisionWord(row.record)) field("exit", "none: no hook ran, the held gate was decided");
  else if (result.http) field("answer", httpAnswer(result.http, result.timedOut));
  else field("exit", exit.join(", "));
  if (result.http?.missingSecrets?.length)
    field(
      "secrets",
      `not set: ${result.http.missingSecrets.join(", ")} (their headers were left out, or their {{secret.…}} in the body left empty)`,
    );
  if (result.error) field("error", `${oneLine(result.error)}${result.errorCode ? ` (${result.errorCode})` : ""}`);
  field(
    "duration",
    result.durationMs >= 1000
      ? `${formatDuration(result.durationMs)} (${Math.round(result.durationMs)} ms)`
      : formatDuration(result.durationMs),
  );
  field("run id", result.runId);
  const shown = row.record.shown;
  if (shown) field("shown", shownText(shown));
  if ((result.redactions ?? 0) > 0)
    field("redacted", `${result.redactions} secret(s) or credential(s) in what the hook said, replaced by [redacted]`);
  const deferral = row.record.deferral as Record<string, unknown> | undefined;
  if (deferral) {
    const ran = typeof deferral.runId === "string" ? deferral.runId : "(unknown)";
    field(
      "held",
      `run ${ran} until ${String(deferral.expiresAt)}${typeof deferral.reason === "string" ? `: ${oneLine(deferral.reason)}` : ""}`,
    );
    field("", `decide: pi-teams-hooks decide --team-dir ${invocation.teamDir} ${ran} allow|deny`);
  }
  const decision = row.record.decision as Record<string, unknown> | undefined;
  if (decision) {
    const what = [
      decisionWord(row.record) ?? String(decision.decision),
      ...(typeof decision.code === "string" ? [`(${decision.code})`] : []),
    ].join(" ");
    const by = decision.decision === "expired" ? "" : ` by ${String(decision.by)}`;
    const waited = typeof decision.waitedMs === "number" ? `, held ${formatSpan(decision.waitedMs)}` : "";
    field(
      "decision",
      `${what}${by} at ${String(decision.at)}${waited}${typeof decision.reason === "string" ? `: ${oneLine(decision.reason)}` : ""}`,
    );
    field(
      "deferred",
      `run ${String(decision.deferredRunId)}${typeof decision.deferredLog === "string" ? `, log ${decision.deferredLog}` : ""}`,
    );
  }
  if (result.leftoverProcesses > 0)
    field(
      "leftovers",
      `${result.leftoverProcesses} process(es) of the hook were still running after it and were killed`,
    );
  if (result.contextTruncated)
    field("context", "an environment value was shortened to fit (stdin and the context file were complete)");
  out.push("");
  if (policy) {
    const p = policy as Record<string, unknown>;
    const text = (v: unknown): string | null =>
      typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? String(v) : null;
    const settings = [
      text(p.failureAction) ?? "(unknown action)",
      ...(text(p.maxReopensPerTask) !== null ? [`max reopens ${text(p.maxReopensPerTask)}`] : []),
      ...(text(p.followupOwner) !== null ? [`follow-up owner ${text(p.followupOwner)}`] : []),
    ];
    field("policy", settings.join(", "));
    if (text(p.summary)) field("summary", oneLine(text(p.summary) ?? ""));
    const actions = policyActions(row.record);
    field("actions", actions.length > 0 ? actions.join(", ") : "none");
    if (text(p.followupTaskId)) field("follow-up", `#${text(p.followupTaskId)}`);
    if (p.alreadyApplied === true) field("", "(already applied by an earlier run of this event: nothing done again)");
    if (Array.isArray(p.errors)) for (const e of p.errors) field("policy error", oneLine(String(e)));
  } else {
    field("policy", "not applied (reported only)");
  }
  // A handler has no output streams: its answer's body is kept where a file's stdout goes.
  if (result.http) out.push("", ...outputBlock("response body", result.stdout, result.stdoutDroppedBytes));
  else
    out.push(
      "",
      ...outputBlock("stdout", result.stdout, result.stdoutDroppedBytes),
      "",
      ...outputBlock("stderr", result.stderr, result.stderrDroppedBytes),
    );
  return `${out.join("\n")}\n`;
}

/**
 * `task.id, task.metadata.files (projection); 212 bytes, sha256 3f2a…`: what a hook was shown when it was not the whole
 * document.
 */
function shownText(shown: NonNullable<Row["record"]["shown"]>): string {
  const fields =
    shown.projection === undefined
      ? []
      : [
          shown.projection.length > 0
            ? `${shown.projection.join(", ")} (projection)`
            : "identity fields only (projection)",
        ];
  const content = shown.confidential
    ? ["no description, no metadata, the subject replaced by the id (confidential)"]
    : [];
  return `${[...fields, ...content].join("; ")}; ${shown.bytes} bytes, sha256 ${shown.sha256.slice(0, 12)}…`;
}

const BODY_WORDS: Readonly<Record<string, string>> = {
  verdict: "a verdict",
  empty: "empty (allows)",
  malformed: "not a verdict (allows)",
};

/** `HTTP 200 OK, body: a verdict; signed`, `no answer (timed out); unsigned`. */
function httpAnswer(http: NonNullable<RunResult["http"]>, timedOut: boolean): string {
  const answer =
    http.status === null
      ? `no answer${timedOut ? " (timed out)" : ""}`
      : `HTTP ${http.status}${http.statusText ? ` ${oneLine(http.statusText)}` : ""}`;
  const body = http.body ? `, body: ${BODY_WORDS[http.body] ?? oneLine(http.body)}` : "";
  const late = http.status !== null && timedOut ? " (its body timed out)" : "";
  const resent = http.resent ? "; sent again on a new connection (the kept-alive one was found closed)" : "";
  return `${answer}${body}${late}; ${http.signed ? "signed" : "unsigned"}${resent}`;
}

function outputBlock(name: string, text: string, dropped: number): string[] {
  const lost = dropped > 0 ? `, ${dropped} more bytes were not captured` : "";
  const body = text.replace(/\s+$/, "");
  if (body === "") return [`${name}: (empty${lost})`];
  const lines = body.split(/\r\n|\n|\r/);
  return [
    `${name} (${lines.length} line${lines.length === 1 ? "" : "s"}${lost}):`,
    ...indent(cutLines(body, SHOW_OUTPUT_LINES), "  │ "),
  ];
}

function cutLines(text: string, max: number): string[] {
  const lines = text.split(/\r\n|\n|\r/).map((l) => visible(l.replace(CONTROL, "")));
  return lines.length <= max ? lines : [...lines.slice(0, max), `… ${lines.length - max} more lines (in the log file)`];
}

function indent(lines: readonly string[], prefix = "  "): string[] {
  return lines.map((l) => `${prefix}${l}`.trimEnd());
}

/** The argv as one shell-like line, for reading. */
function shellLine(argv: readonly string[]): string {
  return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", `'\\''`)}'`)).join(" ");
}
