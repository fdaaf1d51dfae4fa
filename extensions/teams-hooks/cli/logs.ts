/**
 * `pi-teams-hooks logs [show <id> | stats | prune]`: the hook logs of a team, as a table, NDJSON, one
 * log in full, stats, or pruned. Parses flags and prints; the logs/ modules do the work.
 */
import { type CliIo, type ParsedArgs, str, wholeNumber } from "./io.js";
import { formFlags } from "./commands.js";
import { HooksError } from "../contract/errors.js";
import { DURATION_FORMS } from "../text/duration.js";
import { didYouMean } from "../text/suggest.js";
import { type HookLogProblem, listHookLogNames, readHookLog } from "../logs/hook-log.js";
import { type LogFilter, impossibleDate, parseFilterText, parseTimeBound } from "../logs/filter.js";
import {
  FOLLOW_WIDTHS,
  MIN_ID_PREFIX,
  columnWidths,
  formatShow,
  formatTable,
  jsonLine,
  leftOutNote,
  oneLine,
  rowCells,
  shortRunIds,
  tableHeader,
  tableLayout,
  tableLine,
} from "../logs/format.js";
import { type LogPick, MAX_LISTED, pickNewest, pickRun, tableTime } from "../logs/find.js";
import type { LogOutcome } from "../logs/record.js";
import { computeStats, formatStats, statsJsonLine, statsSample } from "../logs/stats.js";
import { type LogRow, pruneLogs, queryLogs, streamLogs } from "../logs/query.js";
import { hookLogsDir, resolveTeamDirFlags } from "../team/paths.js";
import { isoOffset, localOffsetMinutes, terminalWidth } from "../text/terminal.js";
import type { TableLayout } from "../text/table.js";

const SUBCOMMANDS = ["list", "show", "stats", "prune"] as const;
type Subcommand = (typeof SUBCOMMANDS)[number];

/** The flags each subcommand takes, as the command table has them; any other is a usage error naming it. */
const ACCEPTS: Readonly<Record<Subcommand, readonly string[]>> = {
  list: formFlags("logs", ""),
  show: formFlags("logs", "show"),
  stats: formFlags("logs", "stats"),
  prune: formFlags("logs", "prune"),
};

const DEFAULT_LIMIT = 50;
/** What `logs stats` says when it found nothing to count and runs by hand may be why. */
const HAND_RUNS_LEFT_OUT = "runs by hand (pi-teams-hooks run) are left out: --include-hand-runs counts them";
/** `--json` is written in chunks of about this many characters (UTF-16: twice as many bytes). */
const JSON_CHUNK_CHARS = 16 * 1024;

export async function logsCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const [first, ...rest] = args.positionals;
  const sub: Subcommand =
    first === undefined
      ? "list"
      : isSubcommand(first)
        ? first
        : usage(
            `unknown subcommand "${first}"${didYouMean(first, SUBCOMMANDS)} (logs, logs show <id>, logs stats, logs prune)`,
          );
  const v = args.values;
  for (const [flag, value] of Object.entries(v)) {
    if (value === undefined || flag === "help" || ACCEPTS[sub].includes(flag)) continue;
    const where = (Object.keys(ACCEPTS) as Subcommand[]).filter((s) => ACCEPTS[s].includes(flag)).map(commandName);
    usage(`--${flag} does not apply to ${commandName(sub)}${where.length > 0 ? ` (only to ${where.join(", ")})` : ""}`);
  }
  if (sub !== "show" && rest.length > 0) {
    usage(`unexpected argument "${rest[0] ?? ""}"`);
  }

  const now = Date.now();
  // Times are shown, and read from --since, at the machine's offset now (logs/format.ts `tableHeader`).
  const offset = localOffsetMinutes(now);
  // Flags first, so that a bad flag is reported before a missing team dir.
  const filter = sub === "list" || sub === "stats" ? parseFilter(v, now, offset) : {};
  const selector = sub === "show" ? showSelector(rest, v) : null;
  const limitFlag = wholeNumber(v.limit, "--limit", sub === "list" ? DEFAULT_LIMIT : 0, 0);
  const limit = limitFlag === 0 ? undefined : limitFlag;
  const teamDir = await resolveTeamDirFlags({
    teamDir: str(v["team-dir"]),
    team: str(v.team),
    env: io.env,
    cwd: io.cwd,
  });
  const json = v.json === true;
  const onProblem = (problem: HookLogProblem): void => io.stderr(`warning: ${problem.message}\n`);

  switch (sub) {
    case "list":
      return list(teamDir, { filter, limit, json, follow: v.follow === true, onProblem, offset }, io);
    case "show":
      return show(teamDir, selector ?? { last: {} }, json, onProblem, io, offset);
    case "stats": {
      // Runs by hand (`run`) are not the team's gates at work: left out unless asked for, by the flag or by --trigger.
      const handLeftOut = v["include-hand-runs"] !== true && filter.triggers === undefined;
      const counted: LogFilter = handLeftOut ? { ...filter, triggers: ["leader"] } : filter;
      const query = { filter: counted, limit, onProblem };
      const { rows } = await queryLogs(teamDir, query, (row) => statsSample(row.record));
      const stats = computeStats(rows);
      const leftOut = handLeftOut ? `; ${HAND_RUNS_LEFT_OUT}` : "";
      if (json) io.stdout(stats.map(statsJsonLine).join(""));
      else if (stats.length === 0) {
        io.stdout(`no hook logs${describeFilter(filter)} in ${hookLogsDir(teamDir)}${leftOut}\n`);
      } else {
        const table = formatStats(stats, terminalWidth(io));
        io.stdout(table.text);
        if (table.note) io.stderr(`${table.note}\n`);
      }
      return 0;
    }
    case "prune":
      return prune(teamDir, v, now, json, io);
  }
}

async function list(
  teamDir: string,
  opts: {
    filter: LogFilter;
    limit: number | undefined;
    json: boolean;
    follow: boolean;
    onProblem: (p: HookLogProblem) => void;
    offset: number;
  },
  io: CliIo,
): Promise<number> {
  const { json, follow } = opts;
  // Names listed before the query, so that a log landing during it is printed by the follow, not lost.
  const seen = follow ? await listHookLogNames(teamDir) : [];
  const query = {
    filter: opts.filter,
    limit: opts.limit,
    onProblem: opts.onProblem,
  };
  const shown: string[] = [];
  let widths: number[] = []; // the table's, which follow keeps widening
  let layout: TableLayout | null = null; // its columns, which follow keeps
  const width = terminalWidth(io);
  let runIds: string[] = []; // the table's, so that a new row's id is told from theirs
  if (json) {
    // Each line goes out as soon as its place is known (nothing holds 10,000 lines), in chunks: one
    // write per chunk, not per line. Joined, not concatenated: node encodes a string built by `+=`
    // several times slower. Small: strings past V8's 128 KB regular-object limit made joining and
    // writing 10,000 lines 8 times slower on the bench machine (docs/logs.md, "Performance").
    let pending: string[] = [];
    let size = 0;
    const project = (row: LogRow): { name: string; line: string } => ({ name: row.name, line: jsonLine(row) });
    await streamLogs(teamDir, query, project, ({ name, line }) => {
      if (follow) shown.push(name);
      pending.push(line);
      size += line.length;
      if (size >= JSON_CHUNK_CHARS) {
        io.stdout(pending.join(""));
        pending = [];
        size = 0;
      }
    });
    if (pending.length > 0) io.stdout(pending.join(""));
  } else {
    // Each match is kept as its table cells, not as its whole record.
    const result = await queryLogs(teamDir, query, (row) => ({
      name: row.name,
      runId: row.record.result.runId,
      cells: rowCells(row, undefined, opts.offset),
    }));
    runIds = result.rows.map((r) => r.runId);
    shortRunIds(runIds).forEach((id, i) => result.rows[i]?.cells.splice(0, 1, oneLine(id)));
    const header = tableHeader(opts.offset);
    widths = columnWidths([header, ...result.rows.map((r) => r.cells)], follow ? FOLLOW_WIDTHS : []);
    for (const r of result.rows) shown.push(r.name);
    if (result.rows.length > 0 || follow) {
      const fitted = tableLayout(widths, width);
      layout = fitted;
      io.stdout([header, ...result.rows.map((r) => r.cells)].map((cells) => `${tableLine(cells, fitted)}\n`).join(""));
      const note = leftOutNote(fitted, width);
      if (note) io.stderr(`${note}\n`);
    } else {
      const none =
        result.total === 0 ? "no hook logs" : `none of ${result.total} hook logs match${describeFilter(opts.filter)}`;
      io.stdout(`${none} in ${hookLogsDir(teamDir)}\n`);
    }
    if (result.truncated) {
      io.stderr(
        `(the newest ${result.rows.length} matching logs are shown; older ones may match: --limit N shows more, --limit 0 all)\n`,
      );
    }
  }
  if (!follow) return 0;

  io.stderr(`following ${hookLogsDir(teamDir)}: new logs appear below (Ctrl-C to stop)\n`);
  const printRow = (row: LogRow): void => {
    if (json) {
      io.stdout(jsonLine(row));
      return;
    }
    runIds.push(row.record.result.runId);
    const cells = rowCells(row, shortRunIds(runIds).at(-1), opts.offset);
    widths = columnWidths([cells], widths);
    io.stdout(`${tableLine(cells, tableLayout(widths, width, layout?.shown))}\n`);
  };
  const { followLogs } = await import("../logs/follow.js"); // only --follow loads the watcher
  await followLogs(teamDir, {
    filter: opts.filter,
    seen: [...seen, ...shown],
    onRow: printRow,
    onProblem: opts.onProblem,
    onWarning: (message) => io.stderr(`warning: ${message}\n`),
    stop: io.stopSignal,
  });
  return 0;
}

/** What `logs show` was asked for: a run by what the user typed, or the newest run a filter keeps. */
type ShowSelector = { id: string } | { last: LogFilter };

/**
 * `show <id>`, `show last`, `show last --failed --task N` (or the flags alone), and a time as the table
 * prints it, quoted or as two words (`show 2026-12-04 19:00:53`).
 */
function showSelector(rest: readonly string[], v: ParsedArgs["values"]): ShowSelector {
  const task = str(v.task)?.replace(/^#/, "");
  const failed = v.failed === true;
  const last: LogFilter = {
    taskId: task === undefined ? undefined : nonEmpty(task, "--task"),
    ...(failed ? { outcomes: FAILED } : {}),
  };
  const [first, second, third] = rest;
  if (first === undefined) {
    if (task !== undefined || failed) return { last };
    usage(
      "logs show needs a run: its id (the first column of logs), last, --task N, a time as logs prints it, or the log's file name",
    );
  }
  const twoWords = second !== undefined && tableTime(`${first} ${second}`) !== null;
  const extra = twoWords ? third : second;
  if (extra !== undefined) usage(`unexpected argument "${extra}"`);
  if (first === "last") return { last };
  if (task !== undefined || failed)
    usage(
      `--task and --failed pick the newest matching run: give them alone or after last (logs show last ${failed ? "--failed" : `--task ${task}`}), not with "${first}"`,
    );
  return { id: twoWords ? `${first} ${second}` : first };
}

/** `--failed`: every outcome but a pass and a held gate (a denied decision is a failure; an expired one an error). */
const FAILED: readonly LogOutcome[] = ["failed", "timed_out", "error"];

async function show(
  teamDir: string,
  selector: ShowSelector,
  json: boolean,
  onProblem: (p: HookLogProblem) => void,
  io: CliIo,
  offset: number,
): Promise<number> {
  const found: LogPick =
    "id" in selector
      ? await pickRun(teamDir, selector.id, onProblem, offset)
      : await pickNewest(teamDir, selector.last, onProblem);
  if (found.kind === "none") {
    const what =
      "id" in selector ? `no hook log matches "${selector.id}"` : `no hook log${describeFilter(selector.last)}`;
    const short =
      "id" in selector && /^[0-9a-f]{1,3}$/i.test(selector.id)
        ? `give ${MIN_ID_PREFIX} characters of a run id at least; `
        : "";
    const hint = "id" in selector ? ` (${short}run ids are the first column of pi-teams-hooks logs)` : "";
    io.stderr(`pi-teams-hooks logs show: ${what} in ${hookLogsDir(teamDir)}${hint}\n`);
    return 2;
  }
  if (found.kind === "ambiguous") {
    const id = "id" in selector ? selector.id : "last";
    const more = found.more > 0 ? `… and ${found.more} more (the newest ${MAX_LISTED} are listed)\n` : "";
    // Fitted to the terminal like the logs table; its ids are never cut, and they are what is picked by.
    const table = formatTable(found.rows, { width: terminalWidth(io), offsetMinutes: offset });
    io.stderr(
      `pi-teams-hooks logs show: "${id}" matches ${found.count} runs, newest first:\n${table.text}${more}pick one by its id: pi-teams-hooks logs show <id>\n`,
    );
    return 2;
  }
  const read = await readHookLog(found.entry.file);
  if (!read.ok) {
    io.stderr(`pi-teams-hooks logs show: ${read.problem.message}\n`);
    return 1;
  }
  const row = { file: found.entry.file, name: found.entry.name, record: read.record };
  io.stdout(json ? jsonLine(row) : formatShow(row));
  return 0;
}

async function prune(teamDir: string, v: ParsedArgs["values"], now: number, json: boolean, io: CliIo): Promise<number> {
  const keepFlag = str(v.keep);
  const olderFlag = str(v["older-than"]);
  if (keepFlag === undefined && olderFlag === undefined)
    usage("logs prune needs --keep N or --older-than AGE (or both)");
  const keep = keepFlag === undefined ? undefined : wholeNumber(keepFlag, "--keep", 0, 0);
  const beforeMs =
    olderFlag === undefined ? undefined : timeFlag(olderFlag, "--older-than", now, localOffsetMinutes(now));
  const dryRun = v["dry-run"] === true;
  const verb = dryRun ? "would remove" : "removed";
  const result = await pruneLogs(
    teamDir,
    { keep, beforeMs },
    {
      dryRun,
      onRemoved: (entry) =>
        io.stdout(json ? `${JSON.stringify({ file: entry.file, removed: !dryRun })}\n` : `${verb} ${entry.name}\n`),
    },
  );
  for (const failure of result.failed) io.stderr(`warning: ${failure.message}\n`);
  if (!json) {
    const foreign = result.foreign > 0 ? `; ${result.foreign} other .json file(s) left alone` : "";
    io.stdout(
      `${verb} ${result.removed.length} hook log(s), ${dryRun ? "would keep" : "kept"} ${result.kept} in ${hookLogsDir(teamDir)}${foreign}${dryRun ? " (dry run: nothing removed)" : ""}\n`,
    );
  }
  return result.failed.length > 0 ? 1 : 0;
}

function parseFilter(v: ParsedArgs["values"], now: number, offset: number): LogFilter {
  const fields = {
    event: str(v.event),
    outcome: str(v.outcome),
    task: str(v.task),
    member: str(v.member),
    hook: str(v.hook),
    since: str(v.since),
    trigger: str(v.trigger),
  };
  const { filter, problems } = parseFilterText(fields, now, isoOffset(offset));
  const [first] = problems;
  return first ? usage(`--${first.field} ${first.text}`) : filter;
}

function timeFlag(value: string, flag: string, now: number, offset: number): number {
  const ms = parseTimeBound(value, now, isoOffset(offset));
  const impossible = impossibleDate(value);
  if (impossible !== null) return usage(`${flag} "${value}" is not a date: ${impossible}`);
  return (
    ms ??
    usage(
      `${flag} "${value}" must be an age (${DURATION_FORMS}) or an ISO 8601 time (2026-03-01 or 2026-03-01T09:00:00Z)`,
    )
  );
}

function describeFilter(filter: LogFilter): string {
  const parts = [
    ...(filter.events ? [`event ${filter.events.join("|")}`] : []),
    ...(filter.taskId !== undefined ? [`task #${filter.taskId}`] : []),
    ...(filter.member !== undefined ? [`member ${filter.member}`] : []),
    ...(filter.hook !== undefined ? [`hook ${filter.hook}`] : []),
    ...(filter.outcomes ? [`outcome ${filter.outcomes.join("|")}`] : []),
    ...(filter.sinceMs !== undefined ? [`since ${new Date(filter.sinceMs).toISOString()}`] : []),
    ...(filter.triggers ? [`trigger ${filter.triggers.join("|")}`] : []),
  ];
  return parts.length > 0 ? ` (${parts.join(", ")})` : "";
}

function nonEmpty(value: string, flag: string): string {
  return value.trim() === "" ? usage(`${flag} must not be empty`) : value;
}

function isSubcommand(value: string): value is Subcommand {
  return (SUBCOMMANDS as readonly string[]).includes(value);
}

function commandName(sub: Subcommand): string {
  return sub === "list" ? "logs" : `logs ${sub}`;
}

function usage(message: string): never {
  throw new HooksError("E_USAGE", message);
}
