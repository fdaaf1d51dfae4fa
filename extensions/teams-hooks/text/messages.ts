/**
 * Human-facing text: warnings, summary lines, help. Library modules report through an injected `log`
 * and build their words here, so wording lives in one place. Add functions in your own section.
 */
import type { HookEventName } from "../contract/contract.js";
import { templateSecretVariables } from "../contract/request-template.js";

/** `tasks/main/3.json: status: expected …, got "done" — task skipped` */
export function fileProblem(file: string, field: string, problem: string, consequence: string): string {
  return `${file}: ${field ? `${field}: ` : ""}${problem} — ${consequence}`;
}

/**
 * `"a/b" is not a safe name (only A-Z, a-z, 0-9, _ and - are: it would share the file of "a-b")`.
 * `fileName`: what the name becomes as a file name (team/paths.ts sanitizeName).
 */
export function unsafeName(value: string, fileName: string): string {
  const shares = value === "" ? "it is empty" : `it would share the file of ${JSON.stringify(fileName)}`;
  return `${JSON.stringify(value)} is not a safe name (only A-Z, a-z, 0-9, _ and - are: ${shares})`;
}

export function eventLabel(event: HookEventName, taskId: string | null | undefined): string {
  return taskId ? `${event} #${taskId}` : event;
}

/** `1.2s` above a second, else `340ms`. */
export function formatDuration(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)}s` : `${Math.round(ms)}ms`;
}

// =============================================================================================
// Section: failure policy and settings (used by settings/options.ts and policy/decide.ts)
// Keep this section's helpers prefixed (`policy…`) so that other sections cannot collide with them.
import { FAILURE_ACTIONS, FOLLOWUP_OWNERS } from "../contract/team-files.js";
import { QUOTED_OUTPUT_BEGIN, QUOTED_OUTPUT_END, truncateText } from "../contract/contract.js";
import type { FailureAction, FollowupOwner } from "../contract/team-files.js";
import type { RunResult } from "../contract/hook-run.js";
import { unreachable } from "../contract/errors.js";

/** What each setting accepts, as quoted in flag errors and warnings. */
export const SETTING_EXPECTED = Object.freeze({
  failureAction: `one of ${FAILURE_ACTIONS.join(", ")}`,
  followupOwner: `one of ${FOLLOWUP_OWNERS.join(", ")}`,
  maxReopensPerTask: "a whole number ≥ 0 (0 = never reopen)",
  createTaskOnFailure: "1 (create a follow-up task) or 0",
  timeoutMs: "a whole number of milliseconds from 1 to 2147483647",
});

/** `--max-reopens: "3abc" is not valid; expected a whole number ≥ 0 (0 = never reopen)` */
export function invalidFlagValue(flag: string, value: unknown, expected: string): string {
  return `${flag}: ${policyShowValue(value)} is not valid; expected ${expected}`;
}

/**
 * `config.json: hooks.failureAction: "rework" is not valid (expected one of …) — ignored, using "warn" (default)`.
 * `file` is the config file or the variable name; `field` is empty for a variable.
 */
export function invalidSettingValue(
  file: string,
  field: string,
  value: unknown,
  expected: string,
  fallback: { value: unknown; from: string },
): string {
  const from = fallback.from === "default" ? "(default)" : `from ${fallback.from}`;
  return fileProblem(
    file,
    field,
    `${policyShowValue(value)} is not valid (expected ${expected})`,
    `ignored, using ${policyShowValue(fallback.value)} ${from}`,
  );
}

/** `config.json: hooks: expected an object, got "reopen" — ignored, the environment and defaults apply` */
export function settingNotAnObject(file: string, field: string, value: unknown): string {
  return fileProblem(
    file,
    field,
    `expected an object, got ${policyShowValue(value)}`,
    "ignored, the environment and defaults apply",
  );
}

/** A value as quoted in a message: strings in JSON quotes, anything long cut. */
function policyShowValue(value: unknown): string {
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (typeof value === "string") return JSON.stringify(truncateText(value, 80));
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch {
    /* a cycle or a BigInt: String() below still names the value */
  }
  return truncateText(json ?? String(value), 80);
}

/** The gate summary of a pass: `passed in 1234ms`. */
export function gatePassedSummary(durationMs: number): string {
  return `passed in ${Math.round(durationMs)}ms`;
}

/**
 * A pass that let an error through (a Claude Code gate's non-blocking error, an error under failure
 * mode open), as the watch and run lines and the pi notification say it:
 * `passed (non-blocking error: exit code 1 • linter crashed)`.
 */
export function nonBlockingPass(error: string): string {
  return `passed (non-blocking error: ${error})`;
}

/**
 * A last line of stdout that looked like a verdict and was not read (`result.verdictUnread`), as the run and watch
 * lines and `logs show` say it: `a verdict-like line was not read: not JSON (…): {"decision": "deny", …`.
 */
export function verdictNotRead(detail: string): string {
  // One line whatever the gate printed: its control characters (a terminal's escapes among them) are blanks here.
  return `a verdict-like line was not read: ${detail.replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ")}`;
}

/** The summary of a held gate that a decision allowed: `allowed by api:ci: pipeline 8812 green`. */
export function decisionAllowedSummary(by: string, reason: string | undefined): string {
  return `allowed by ${by}${reason ? `: ${reason}` : ""}`;
}

/** A span of time for people: `340ms`, `4.2s`, `12m 5s`, `3h 20m`, `2d 4h`. */
export function formatSpan(ms: number): string {
  if (ms < 60_000) return formatDuration(ms);
  const s = Math.floor(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86_400)}d ${Math.floor((s % 86_400) / 3600)}h`;
}

/** Why a held gate failed: no decision came before its deadline. */
export function deferExpiredText(deferredAt: string, expiresAt: string): string {
  const held = Date.parse(expiresAt) - Date.parse(deferredAt);
  return `no decision within ${Number.isNaN(held) ? "the deferral's time" : formatSpan(held)} (hooks.deferTimeoutMs): held since ${deferredAt}, expired at ${expiresAt}`;
}

/** The summary of a held gate: `deferred (ci.pending): waiting for CI`, or `deferred` without a reason. */
export function deferredSummary(
  verdict: Pick<NonNullable<RunResult["verdict"]>, "code" | "reason"> | undefined,
): string {
  const code = verdict?.code ? ` (${verdict.code})` : "";
  return verdict?.reason ? `deferred${code}: ${verdict.reason}` : `deferred${code}`;
}

/** An optional global gate the team dropped (trust/trust.ts), as the leader and `run` say it. */
export function droppedGateText(gate: string, detail: string): string {
  const why = "it is optional (required=false in the trusted gate), so its events run without it; no approval needed";
  return `gate ${gate} dropped by the team (${detail}): ${why}`;
}

/** The longest first stderr line a failure summary keeps (characters, `…` included). */
const SUMMARY_STDERR_LINE_CHARS = 180;

/** How a refused gate's error says who approves its change, and with which command (event/chain-run.ts). */
export const APPROVAL_HINT = "; the team lead approves a change with: ";

/**
 * A failure summary as the team reads it (task metadata, a follow-up task, a member's message): the
 * approval command a refused gate's error names is left out. It is for the team lead, who sees it in
 * the leader's output and in the log; an agent told it would only be invited to approve its own gate.
 */
export function forTheTeam(summary: string): string {
  const at = summary.indexOf(APPROVAL_HINT);
  if (at < 0) return summary;
  const end = summary.indexOf(" • ", at);
  return `${summary.slice(0, at)}; only the team lead can approve the change${end < 0 ? "" : summary.slice(end)}`;
}

/**
 * The one-line failure summary, as pi-agent-teams writes it (docs/decisions/team-dir-facts.md): the
 * spawn error, `timeout after <ms>ms`, `exit code <n>` — or `killed by <signal>` when
 * there is no exit code and the signal was not our timeout's — and the first non-empty stderr line
 * (colour codes removed, cut to 180 characters), joined with ` • `.
 */
export function describeFailure(
  result: Pick<RunResult, "error" | "timedOut" | "exitCode" | "signal" | "stderr" | "verdict" | "http"> &
    Partial<Pick<RunResult, "errorCode">>,
  timeoutMs: number,
): string {
  const parts: string[] = [];
  const verdict = result.verdict;
  if (verdict?.decision === "deny") {
    // The gate said why itself: its verdict's code, reason and message are the summary
    // (contract/verdict.ts).
    parts.push(`denied${verdict.code ? ` (${verdict.code})` : ""}`);
    if (verdict.reason) parts.push(verdict.reason);
    const message = verdict.message ? policyFirstLine(verdict.message) : "";
    if (message) parts.push(truncateText(message, SUMMARY_STDERR_LINE_CHARS));
    return parts.join(" • ");
  }
  const spawnError = result.error ? policyFirstLine(result.error) : "";
  if (spawnError) parts.push(spawnError);
  // A handler's error says its own timeout (hooks.handlers[].timeoutMs), not the run's.
  // A gate with a timeout of its own says it in its error already (event/chain-run.ts).
  if (result.timedOut && !result.http && !spawnError.startsWith("timeout after"))
    parts.push(`timeout after ${timeoutMs}ms`);
  if (result.exitCode !== null) parts.push(`exit code ${result.exitCode}`);
  else if (result.signal && !result.timedOut) parts.push(`killed by ${result.signal}`);
  // Node's stack of a module it could not find starts with a line of its own internals: the error says it all.
  // So for a gate that does not parse: its error names the file and line, which its stderr repeats.
  const said = result.errorCode === "ERR_MODULE_NOT_FOUND" || result.errorCode === "E_GATE_SYNTAX";
  const stderrLine = said ? "" : stderrReason(result.stderr);
  if (stderrLine) parts.push(truncateText(stderrLine, SUMMARY_STDERR_LINE_CHARS));
  return parts.length > 0 ? parts.join(" • ") : "failed";
}

/**
 * A handler's secret that was not in the environment when its request went out: the header left
 * out, the request unsigned, or its `{{secret.…}}` in the body left empty. Names the variable, never
 * a value.
 */
export function missingSecretWarning(
  gate: string,
  variable: string,
  handler: {
    secretHeaders?: Readonly<Record<string, string>> | undefined;
    signingSecretEnv?: string | undefined;
    body?: unknown;
  },
): string {
  const headers = Object.entries(handler.secretHeaders ?? {})
    .filter(([, v]) => v === variable)
    .map(([h]) => h);
  const what = [
    ...(headers.length > 0 ? [`header ${headers.join(", ")} left out`] : []),
    ...(handler.signingSecretEnv === variable ? ["requests unsigned (no X-Pi-Teams-Signature)"] : []),
    ...(templateSecretVariables(handler.body).includes(variable)
      ? [`{{secret.${variable}}} left empty in the body`]
      : []),
  ];
  return `handler ${gate}: environment variable ${variable} is not set: ${what.join(", ") || "its value is missing"}; the receiver may refuse the request (set ${variable} in the leader's environment)`;
}

/** ANSI escape sequences (colours, cursor moves; an OSC whole) and other control characters but tab, C1 too. */
const POLICY_CONTROL =
  /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|\u009b[0-9;?]*[ -/]*[@-~]|\u001b[@-_]|[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** The first line of `text` that holds something once colour codes and blanks are removed. */
/** Node's report of an uncaught error thrown in its own code (a loader's, as tsx's): `node:internal/modules/run_main:123`. */
const NODE_INTERNAL_HEADER = /^node:internal\/\S+:\d+$/;
/** The line an error's report starts with: `SyntaxError: …`, `Error [ERR_X]: …`, `TypeError: …`. */
const ERROR_LINE = /^(?:[A-Z][\w.]*)?(?:Error|Exception)\b[^:]*:/;
/** A location Node prints above the source line: `/path/gate.ts:3`, `file:///path/gate.mjs:3:10`. */
const LOCATION_LINE = /^(file:\/\/)?\/\S+:\d+(:\d+)?$/;

/**
 * The line of a gate's stderr a summary quotes: its first that holds something, but where that is Node's report of an
 * error thrown in its own code (`node:internal/modules/run_main:123`: what tsx's errors, a .ts gate's syntax error
 * among them, start with), which names nothing of the gate: the error's own line there, with the line after it when
 * it ends with a colon (`Error: Transform failed with 1 error: /hooks/on_task_completed.ts:3:10: ERROR: …`), and
 * the gate's file and line when Node printed them above it.
 */
export function stderrReason(stderr: string): string {
  const first = policyFirstLine(stderr);
  if (!NODE_INTERNAL_HEADER.test(first)) return first;
  const lines = stderr
    .split(/\r\n|\n|\r/)
    .map((line) => line.replace(POLICY_CONTROL, "").trim())
    .filter((line) => line !== "");
  const at = lines.findIndex((line) => ERROR_LINE.test(line));
  if (at < 0) return first;
  const next = lines[at + 1] ?? "";
  let said = lines[at] ?? first;
  if (said.endsWith(":") && next !== "" && !next.startsWith("at ")) said = `${said} ${next}`;
  const where = lines.slice(1, at).find((line) => LOCATION_LINE.test(line));
  return where !== undefined && !said.includes(where) ? `${where}: ${said}` : said;
}

function policyFirstLine(text: string): string {
  for (const line of text.split(/\r\n|\n|\r/)) {
    const clean = line.replace(POLICY_CONTROL, "").trim();
    if (clean) return clean;
  }
  return "";
}

/**
 * Why a reopen (or a follow-up) was not made: the budget of the task's tree is spent (max 0: there is
 * none). `root`: the tree's root; `taskId`: the task that failed.
 */
export function budgetSpentReason(spent: number, max: number, root: string, taskId: string): string {
  if (max === 0) return "reopening is off (max reopens per task is 0)";
  const whose = root === taskId ? `task #${root}` : `task #${root} and its follow-ups`;
  return `the gate budget of ${whose} is spent (${spent} of ${max} reopens and follow-ups)`;
}

/** Why a reopen was not done although the policy asks for it (a retry reading what the first attempt recorded). */
export function reopenSuppressedReason(count: number, max: number): string {
  if (max === 0) return "reopening is off (max reopens per task is 0)";
  return `already reopened ${count} ${count === 1 ? "time" : "times"} by the quality gate (max ${max} per task)`;
}

/** What happened to the source task of a failed `task_completed` gate, when the policy reopens. */
export type ReopenOutcome =
  | { kind: "reopened"; count: number; max: number }
  | { kind: "suppressed"; count: number; max: number; reason: string }
  | { kind: "not_completed"; status: string | null };

function reopenOutcomeSentence(taskId: string, outcome: ReopenOutcome): string {
  switch (outcome.kind) {
    case "reopened":
      return `Task #${taskId} was reopened (back to pending; reopen ${outcome.count} of ${outcome.max}).`;
    case "suppressed":
      return `Task #${taskId} was not reopened: ${outcome.reason}.`;
    case "not_completed":
      return outcome.status
        ? `Task #${taskId} was not reopened: it is ${outcome.status} now.`
        : `Task #${taskId} was not reopened: its task file is gone.`;
    default:
      return unreachable(outcome);
  }
}

/** `Quality gate failed: on_task_completed (task #3)` */
export function followupSubject(hookName: string, taskId: string): string {
  return `Quality gate failed: ${hookName} (task #${taskId})`;
}

/** Everything a follow-up description and a nudge say about one failed gate. */
export interface GateFailureReport {
  event: "task_completed" | "task_failed";
  key: string;
  hookName: string;
  taskId: string;
  /** The source task's subject; null when its file is gone. */
  taskSubject: string | null;
  policy: { failureAction: FailureAction; maxReopensPerTask: number; followupOwner: FollowupOwner };
  summary: string;
  result: Pick<RunResult, "command" | "hookPath" | "stdout" | "stderr" | "stdoutDroppedBytes" | "stderrDroppedBytes">;
  reopen: ReopenOutcome | null;
  logFile: string | null;
  /** The tree's budget is spent: nothing more is made, and the lead decides (policy/gate-life.ts). */
  spent?: { root: string; spent: number; max: number };
}

/** Characters of stdout and of stderr a follow-up description keeps (head and tail). */
const FOLLOWUP_OUTPUT_CHARS = 2_500;

/**
 * The follow-up task's description: what failed, under which policy, the command, the source task, and
 * the hook's stdout and stderr (each cut to its first and last 1,250 characters), so that whoever picks
 * it up needs nothing else. Stays well below the 8,000 characters a hook's context document keeps.
 */
export function followupDescription(report: GateFailureReport): string {
  const { result } = report;
  const subject =
    report.taskSubject === null ? "(task file missing)" : `#${report.taskId} ${truncateText(report.taskSubject, 300)}`;
  const lines = [
    `The quality gate ${report.hookName} failed for task #${report.taskId}. Fix what it reports, then complete this task.`,
    "",
    `Hook: ${report.hookName} (event ${report.event})`,
    `Command: ${policyCommandLine(result.command, result.hookPath)}`,
    `Policy: ${report.policy.failureAction} (at most ${report.policy.maxReopensPerTask} reopens per task; follow-up owner: ${report.policy.followupOwner})`,
    `Original task: ${subject}`,
  ];
  if (report.reopen) lines.push(`Reopen: ${reopenOutcomeSentence(report.taskId, report.reopen)}`);
  lines.push(`Event key: ${report.key}`);
  if (report.logFile) lines.push(`Hook log: ${report.logFile}`);
  // Between the marker lines: the leader's quotation of the gate, which gates are not shown (contract.ts
  // workDescription). The failure summary quotes the gate's first stderr line, so it is inside too.
  lines.push("", QUOTED_OUTPUT_BEGIN, `Failure: ${report.summary}`, "");
  lines.push(...policyOutputBlock("stderr", result.stderr, result.stderrDroppedBytes));
  lines.push("", ...policyOutputBlock("stdout", result.stdout, result.stdoutDroppedBytes));
  lines.push(QUOTED_OUTPUT_END);
  return lines.join("\n");
}

/** The argv as one shell-like line (for reading, not for running). */
function policyCommandLine(command: readonly string[] | undefined, hookPath: string | undefined): string {
  if (command && command.length > 0) {
    return truncateText(
      command.map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`)).join(" "),
      500,
    );
  }
  return hookPath ? truncateText(hookPath, 500) : "(unknown)";
}

function policyOutputBlock(name: string, text: string, droppedBytes: number): string[] {
  const notCaptured = droppedBytes > 0 ? ` (${droppedBytes} more bytes were not captured; see the hook log)` : "";
  if (text.trim() === "") return [`${name}: (empty)${notCaptured}`];
  const body = policyExcerpt(text.replace(/\s+$/, ""), FOLLOWUP_OUTPUT_CHARS);
  let fence = "```";
  while (body.includes(fence)) fence += "`";
  return [`${name}${notCaptured}:`, fence, body, fence];
}

/** `text` if it fits in `limit` characters, else its head and tail around a note of what was left out. */
function policyExcerpt(text: string, limit: number): string {
  if (text.length <= limit) return text;
  let headEnd = Math.floor(limit / 2);
  let tailStart = text.length - (limit - headEnd);
  // Never split a surrogate pair: move each cut outward by one unit when it would.
  if (/[\uD800-\uDBFF]/.test(text.charAt(headEnd - 1))) headEnd -= 1;
  if (/[\uDC00-\uDFFF]/.test(text.charAt(tailStart))) tailStart += 1;
  return `${text.slice(0, headEnd)}\n… ${tailStart - headEnd} characters left out …\n${text.slice(tailStart)}`;
}

/**
 * The message the task's owner (else the member) gets after a failed gate: what failed, what was
 * reopened or created, and a request to fix it and carry on. `followup` is the created task, once known.
 */
export function gateNudgeText(
  report: GateFailureReport,
  followup: { id: string; owner: string | null } | null,
): string {
  const subject = report.taskSubject === null ? "" : ` "${truncateText(report.taskSubject, 120)}"`;
  const lines = [`Quality gate ${report.hookName} failed for task #${report.taskId}${subject}: ${report.summary}`];
  if (report.reopen) lines.push(reopenOutcomeSentence(report.taskId, report.reopen));
  if (followup) {
    lines.push(
      `Follow-up task #${followup.id} was created${followup.owner ? ` for ${followup.owner}` : " (no owner)"}.`,
    );
  }
  if (report.spent) {
    // Nothing more is made for this tree: the work waits for a person, so no call to carry on alone.
    lines.push(
      `${capitalize(budgetSpentReason(report.spent.spent, report.spent.max, report.spent.root, report.taskId))}: the team lead decides what happens next. Please wait for the lead before you work on task #${report.taskId} again.`,
    );
    if (report.logFile) lines.push(`Hook log: ${report.logFile}`);
    return lines.join("\n");
  }
  lines.push(
    report.reopen?.kind === "reopened"
      ? `Please fix it and complete task #${report.taskId} again; the gate runs again then.`
      : "Please fix it and carry on.",
  );
  if (report.logFile) lines.push(`Hook log: ${report.logFile}`);
  // Last, on its own line: pi-agent-teams' remediation looks for this sentence in the member's nudge,
  // and an agent worker reads it as leave to fix the failure without waiting for a person.
  lines.push(GATE_NUDGE_REMEDIATE);
  return lines.join("\n");
}

/** The note to the lead when a tree's budget is spent (once per root): what failed and what is left to decide. */
export function budgetSpentText(
  report: GateFailureReport,
  budget: { root: string; spent: number; max: number },
): string {
  const subject = report.taskSubject === null ? "" : ` "${truncateText(report.taskSubject, 120)}"`;
  return [
    `pi-teams-hooks: quality gate ${report.hookName} failed again for task #${report.taskId}${subject}: ${report.summary}`,
    `${capitalize(budgetSpentReason(budget.spent, budget.max, budget.root, report.taskId))}: no more reopens or follow-ups are made for it, and its workers were asked to wait for you.`,
    `Decide what happens next: fix the gate or the work, reopen or reassign the task by hand, or raise hooks.maxReopensPerTask.`,
    ...(report.logFile ? [`Hook log: ${report.logFile}`] : []),
  ].join("\n");
}

/**
 * A gate whose own file does not parse (runner/syntax.ts; `where` is `<gate file>:<line>: <message>`): the
 * run's error and doctor's check say it alike.
 */
export function gateSyntaxMessage(where: string): string {
  return `does not parse: ${where}; its events are held until it is fixed`;
}

/** The one-line summary of a held event (task metadata, the watch line): `held: waiting for the team lead: …`. */
export function heldSummary(cause: "approval" | "fault", why: string): string {
  return cause === "approval"
    ? `held: waiting for the team lead: ${why}`
    : `held: pi-teams-hooks could not finish the gate (${why}); it runs again`;
}

/**
 * What the member whose event is held reads, once: the gate could not judge the work, which is not
 * theirs to fix; it runs again once the lead approves (or, for our own fault, by itself).
 */
export function heldNoteText(d: {
  hookName: string;
  taskId: string | null;
  cause: "approval" | "fault";
  logFile: string | null;
}): string {
  const what = d.taskId ? `task #${d.taskId}` : "your work";
  const lines = [
    d.cause === "approval"
      ? `Quality gate ${d.hookName} could not judge ${what}: the gate changed or cannot run, and only the team lead can approve it.`
      : `Quality gate ${d.hookName} could not judge ${what}: pi-teams-hooks itself failed while the gate ran.`,
    `Nothing for you to fix: ${what} waits, not counted as accepted, and the gate runs again ${d.cause === "approval" ? "once the lead approves" : "by itself"}. Carry on with other work.`,
  ];
  if (d.logFile) lines.push(`Hook log: ${d.logFile}`);
  return lines.join("\n");
}

/** The note to the lead when an event is held (once per gate and reason): what holds it, and what to do. */
export function heldLeadText(
  h: {
    cause: "approval" | "fault";
    hook: string | null;
    taskId: string | null;
    key: string;
    reason: string;
    kind?: string | null;
  },
  teamDir: string,
): string {
  const what = h.taskId ? `task #${h.taskId}` : h.key;
  // A gate that cannot start (spawn) is not a trust matter: once it can, a restart runs what it holds.
  const trust = `pi-teams-hooks trust --team-dir ${teamDir}`;
  const then =
    h.kind === "spawn"
      ? `Once the gate can start, restart the leader (or approve a change: ${trust}); each event it holds then runs once.`
      : `Once the gate is as it should be, approve it (${trust}); every event it holds then runs once.`;
  return h.cause === "approval"
    ? [
        `pi-teams-hooks: quality gate ${h.hook ?? "?"} could not judge ${what}, and will not until you act: ${h.reason}`,
        "The event is held, not failed: the worker was told it waits, nothing was reopened or counted, and the task is not accepted meanwhile.",
        `${then} Other events this gate holds are not announced again.`,
      ].join("\n")
    : [
        `pi-teams-hooks: quality gate ${h.hook ?? "?"} was cut off by pi-teams-hooks' own fault while it judged ${what}: ${h.reason}`,
        "The event is held, not failed: nothing was reopened or counted; it runs again by itself, and at the next start of the leader.",
      ].join("\n");
}

function capitalize(text: string): string {
  return text ? `${text[0]?.toUpperCase() ?? ""}${text.slice(1)}` : text;
}

/** The last line of every gate nudge, word for word as pi-agent-teams has it. */
const GATE_NUDGE_REMEDIATE = "Please remediate automatically and continue without waiting for user intervention.";

/**
 * What the member whose claim a start gate denied reads (task namespace): which gate, why, and that
 * the task is back to pending without an owner — or, when the claim had moved on before the gate
 * answered (`putBack`), that nothing was put back. No call to carry on: the work is not admitted.
 */
export function startDeniedText(d: {
  hookName: string;
  taskId: string;
  summary: string;
  putBack: { status: string | null } | null;
  count: number | null;
  logFile: string | null;
}): string {
  const lines = [`Quality gate ${d.hookName} denied your claim of task #${d.taskId}: ${d.summary}`];
  if (d.putBack === null) {
    lines.push(
      `Task #${d.taskId} is back to pending without an owner${d.count !== null && d.count > 1 ? ` (its claims were denied ${d.count} times)` : ""}. Please stop working on it; claim it again only once what the gate asks for is done.`,
    );
  } else {
    lines.push(
      `Task #${d.taskId} was not put back: ${d.putBack.status === null ? "its file is gone" : `it is ${d.putBack.status} now`}.`,
    );
  }
  if (d.logFile) lines.push(`Hook log: ${d.logFile}`);
  return lines.join("\n");
}
// End of section: failure policy and settings

/**
 * The note to the lead's inbox when the leader gave up applying the policy of one event: what could
 * not be written, that the event stays open, and how to finish it.
 */
/** To the lead: an event judged again because the leader's ledger and the task's gate record disagreed on it. */
export function recordsDisagreeText(
  event: { key: string; event: HookEventName; taskId: string | null },
  what: string,
  summary: string,
): string {
  return [
    `pi-teams-hooks judged ${eventLabel(event.event, event.taskId)} again: ${what}.`,
    "One of the two records was edited or lost (only the leader writes either), so the completion did not count as judged.",
    `Now: ${summary}`,
  ].join("\n");
}

/** To the lead: a first start found tasks whose gate records no ledger backs (hook-state/ deleted or rebuilt). */
export function ledgerLostText(teamDir: string, taskIds: readonly string[]): string {
  const shown = taskIds
    .slice(0, 20)
    .map((id) => `#${id}`)
    .join(", ");
  return [
    `pi-teams-hooks started on ${teamDir} with no ledger (hook-state/ deleted or rebuilt), while ${taskIds.length} task(s) carry the gate record of a leader that judged them: ${shown}${taskIds.length > 20 ? ", …" : ""}.`,
    "Their latest completions or failures are judged again now, not taken as history: the ledger that said what was judged is gone, and a task's own record is not enough.",
  ].join("\n");
}

export function policyGivenUpText(
  event: { key: string; event: HookEventName; taskId: string | null },
  error: string,
  how: string,
): string {
  return [
    `pi-teams-hooks could not apply the quality-gate policy of ${eventLabel(event.event, event.taskId)} (${event.key}): ${error}.`,
    "Nothing the policy asks for after that step was done (no reopen, follow-up or nudge that was not yet written).",
    `The event stays open and held: the leader keeps trying it until it is written (a stop leaves it to the next start), or: ${how}`,
  ].join("\n");
}
