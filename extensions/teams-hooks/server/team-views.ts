/**
 * The two read-only views of a team the task API answers (docs/remote-gates.md, "Gate readiness and
 * runs"): its gate readiness (`GET …/gates`, gates:read), from doctor/readiness.ts, which reads the
 * chains as `config` does and checks each file as `doctor` does; and its runs (`GET …/runs`,
 * logs:read), filtered with the `logs` filters (logs/filter.ts `parseFilterText`) and paged as the
 * dashboard pages them (dashboard/runs.ts: 50 a page, newest first, the cursor of the last row).
 * A confidential team's runs keep their lifecycle: what a gate said (its summary, its code, its first
 * stderr line) is left out, as in a task's status.
 */
import { firstLine, hookName, policyActions } from "../logs/format.js";
import { type FilterText, parseFilterText } from "../logs/filter.js";
import { outcomeOf, taskIdOf, triggerOf } from "../logs/record.js";
import { type TeamReadiness, teamReadiness } from "../doctor/readiness.js";
import { type BindingsView, bindingsView } from "../doctor/bindings-view.js";
import { type TeamSetup, resolveTeamSetup } from "../team/setup.js";
import { isHooksError } from "../contract/errors.js";
import { type RunRow, cursorOf, cursorText, findRuns, parseCursor } from "../dashboard/runs.js";
import type { Problem } from "../settings/problems.js";
import { ApiError, listProblems, problemLines } from "./answers.js";
import type { LogIndex } from "../logs/log-index.js";
import { NAME_CHARS, SUMMARY_CHARS, endOf } from "./task-status.js";
import { cutText } from "../logs/shown.js";

/** The team's readiness, with its name first. */
export async function gatesView(
  team: string,
  teamDir: string,
  env: Readonly<Record<string, string | undefined>>,
): Promise<{ team: string } & TeamReadiness & { bindings: BindingsView }> {
  let setup: TeamSetup;
  try {
    setup = await resolveTeamSetup({ teamDir, env, processCwd: teamDir });
  } catch (error) {
    // PI_TEAMS_HOOKS_DIR naming a folder that is not there (in serve's environment): the team's files, not a fault.
    if (isHooksError(error) && error.code === "E_HOOKS_DIR") {
      throw new ApiError("unavailable", `the team's gates cannot be read: ${error.message}`);
    }
    throw error;
  }
  // Beside the gate files: the bindings added over the API, with their trust (a new one waits for the lead).
  const bindings = bindingsView(teamDir, setup.hooksDir, setup.settings.handlers, env);
  return { team, ...(await teamReadiness(setup, env)), bindings };
}

/** The query fields the runs route reads: the filters of `logs`, and the page's cursor. */
const RUN_QUERY = ["event", "outcome", "task", "member", "hook", "since", "trigger", "before"] as const;

/** One run as the API lists it. */
interface RunView {
  runId: string;
  /** The log's file name in hook-logs/ (`logs show` takes it, or the run id). */
  log: string;
  event: string;
  taskId: string | null;
  member: string | null;
  /** The gate's file name, or `http:<name>`: what `hook=` matches. */
  hook: string;
  outcome: string;
  errorKind: string | null;
  exitCode: number | null;
  /** The verdict's code; null without one, and for a confidential team. */
  code: string | null;
  /** What the policy step wrote, on the run that decided its event; null otherwise and for a confidential team. */
  summary: string | null;
  /** Its stderr's first line that holds something (at most 180 characters); null when none, or confidential. */
  stderr: string | null;
  /** What the policy step did (`reopened (1/3)`, `follow-up #2 for ada`); empty when nothing. */
  actions: string[];
  /** `leader`, or `hand` (`pi-teams-hooks run`). */
  trigger: string;
  durationMs: number;
  startedAt: string;
  endedAt: string | null;
  /** This run's place in the pages: `before=<cursor>` asks for the runs older than it. */
  cursor: string;
}

interface RunsPage {
  team: string;
  /** Newest first, at most 50 (the dashboard's page). */
  runs: RunView[];
  /** The next page's URL (older runs), relative; null when there are none. */
  next: string | null;
  /** Log files that could not be read and are left out (`pi-teams-hooks logs` names them). */
  unreadable: number;
}

/** A page of the team's runs for `query`; 400 `invalid_request` for a field it does not know or cannot read. */
export async function runsPage(
  team: string,
  teamDir: string,
  query: URLSearchParams,
  opts: { nowMs: number; confidential: boolean; index: LogIndex },
): Promise<RunsPage> {
  const problems: Problem[] = [];
  const problem = (field: string, text: string): void =>
    void problems.push({ kind: "request_field", path: field, message: `${field}: ${text}` });
  const fields: FilterText = {};
  for (const name of new Set(query.keys())) {
    if (!(RUN_QUERY as readonly string[]).includes(name)) {
      problem(name.slice(0, 100), `unknown field (fields: ${RUN_QUERY.join(", ")})`);
      continue;
    }
    if (query.getAll(name).length > 1) problem(name, "given more than once");
  }
  for (const name of RUN_QUERY) {
    const value = query.get(name);
    if (value !== null && name !== "before") fields[name] = value;
  }
  const beforeText = query.get("before");
  const before = beforeText === null ? null : parseCursor(beforeText);
  if (beforeText !== null && (before === null || before.team !== team)) {
    problem("before", "not a cursor of this team's runs (give the cursor of a run, or next as answered)");
  }
  const parsed = parseFilterText(fields, opts.nowMs);
  for (const p of parsed.problems) problem(p.field, p.text);
  if (problems.length > 0) {
    const listed = listProblems(problems);
    throw new ApiError("invalid_request", `the runs query: ${problemLines(listed)}`, { problems: listed });
  }
  let unreadable = 0;
  const found = await findRuns(
    opts.index,
    [{ name: team, dir: teamDir }],
    parsed.filter,
    before,
    () => void (unreadable += 1),
  );
  const runs = found.rows.map((r) => runView(r, opts.confidential));
  const last = found.rows.at(-1);
  let next: string | null = null;
  if (found.more && last) {
    const params = new URLSearchParams();
    for (const name of RUN_QUERY) {
      const value = query.get(name);
      if (name !== "before" && value !== null) params.set(name, value);
    }
    params.set("before", cursorText(cursorOf(last)));
    next = `/api/v1/teams/${encodeURIComponent(team)}/runs?${params.toString()}`;
  }
  return { team, runs, next, unreadable };
}

/**
 * One run as the API lists it. Every field is bounded here, whatever the log says (any agent of the
 * team can write one): ids, names and codes to `NAME_CHARS`, the summary to `SUMMARY_CHARS`, at most
 * `MAX_ACTIONS` actions; a time a date cannot hold is null, the duration stays as written.
 */
function runView(r: RunRow, confidential: boolean): RunView {
  const { record, name } = r.row;
  const { result } = record;
  const started = Date.parse(record.startedAt);
  const summary = record.policy?.summary;
  const stderr = firstLine(result.stderr, 180);
  const short = (value: string): string => cutText(value, NAME_CHARS);
  const taskId = taskIdOf(record);
  const member = record.invocation.memberName;
  const exitCode = Number.isSafeInteger(result.exitCode) ? result.exitCode : null;
  return {
    runId: short(result.runId),
    log: short(name),
    event: short(record.invocation.event),
    taskId: taskId === null ? null : short(taskId),
    member: member === undefined ? null : short(member),
    hook: short(hookName(result)),
    outcome: outcomeOf(result),
    errorKind: result.errorKind === undefined ? null : short(result.errorKind),
    exitCode,
    code: confidential || result.verdict?.code === undefined ? null : short(result.verdict.code),
    summary: confidential || typeof summary !== "string" ? null : cutText(summary, SUMMARY_CHARS),
    stderr: confidential || stderr === "" ? null : stderr,
    actions: policyActions(record)
      .slice(0, MAX_ACTIONS)
      .map((a) => cutText(a, NAME_CHARS)),
    trigger: triggerOf(record),
    durationMs: result.durationMs,
    startedAt: Number.isNaN(started) ? short(record.startedAt) : new Date(started).toISOString(),
    endedAt: Number.isNaN(started) ? null : endOf(started, result.durationMs),
    cursor: cursorText(cursorOf(r)),
  };
}

/** Actions of one run an answer lists (the policy step takes a few). */
const MAX_ACTIONS = 20;
