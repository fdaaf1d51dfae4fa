/**
 * Claude Code's command-hook shape, for gates written for Claude Code's agent teams and run here
 * unchanged (`format=claude` on the gate's settings line; docs/writing-hooks.md, "Claude Code gates").
 *
 * In: the JSON Claude Code writes on a hook's stdin for `TaskCompleted` (`task_completed` here) and
 * `TeammateIdle` (`idle`): `session_id`, `cwd`, `hook_event_name`, then the task's `task_id`,
 * `task_subject`, `task_description`, and `teammate_name`, `team_name`. It is built from the
 * document the gate may see (a projection still applies), so it shows nothing the v1 document would
 * not. `session_id` is the team's id: this side has no Claude session, and the team is what one
 * session of a team would be.
 *
 * Out, as Claude Code reads it: exit 0 allows, unless stdout is JSON that says `"continue": false`
 * (its `stopReason` is the reason) or `"decision": "block"` (its `reason`); exit 2 denies with stderr
 * as the reason; any other exit code is a non-blocking error: logged, and the gate allows. A timeout,
 * a signal or a failed start stay errors of the run (the failure mode decides), as for every gate.
 */
import type { ContextDocument, HookEventName } from "./contract.js";
import type { RunResult } from "./hook-run.js";
import { capReason } from "./verdict.js";

/**
 * Claude Code's events that are gates here, and the event each is: both are "is the work done"
 * checks of a team (a task marked complete, a teammate about to go idle), and take no matcher.
 */
export const CLAUDE_GATE_EVENTS = Object.freeze({
  TaskCompleted: "task_completed",
  TeammateIdle: "idle",
} as const satisfies Record<string, HookEventName>);
export type ClaudeGateEvent = keyof typeof CLAUDE_GATE_EVENTS;

/** The same the other way round: our events Claude Code has an event for, by its name. */
export const CLAUDE_EVENT_NAMES: Partial<Record<HookEventName, ClaudeGateEvent>> = Object.freeze(
  Object.fromEntries(Object.entries(CLAUDE_GATE_EVENTS).map(([claude, ours]) => [ours, claude])),
);

/** The stdin of a Claude Code gate, from the v1 document it may see. */
export function claudeInput(doc: ContextDocument, cwd: string): Record<string, unknown> {
  const base = { session_id: doc.team.id, cwd, hook_event_name: CLAUDE_EVENT_NAMES[doc.event] ?? doc.event };
  if (doc.event === "idle") return { ...base, teammate_name: doc.member ?? "", team_name: doc.team.id };
  const task = doc.task;
  return {
    ...base,
    task_id: task?.id ?? "",
    task_subject: task?.subject ?? "",
    ...(task?.description ? { task_description: task.description } : {}),
    ...(doc.member || task?.owner ? { teammate_name: doc.member ?? task?.owner } : {}),
    team_name: doc.team.id,
  };
}

/**
 * A finished run of a Claude Code gate, judged as Claude Code judges it (see the header). `stdout`
 * is what it printed (the head the runner kept). A run that is already an error stays one.
 */
export function claudeResult(result: RunResult): RunResult {
  if (result.outcome === "error") return result;
  if (result.exitCode === 0) {
    const said = stdoutJson(result.stdout);
    if (said?.continue === false)
      return denied(result, "claude.stop", textOf(said.stopReason) ?? "the gate said continue: false");
    if (typeof said?.decision === "string" && said.decision.toLowerCase() === "block")
      return denied(result, "claude.block", textOf(said.reason) ?? "the gate said decision: block");
    return { ...result, outcome: "passed", verdict: { decision: "allow", source: "claude" } };
  }
  if (result.exitCode === 2)
    return denied(result, "claude.exit_2", textOf(result.stderr) ?? "exit code 2 (nothing on stderr)");
  const said = textOf(result.stderr);
  const why = `exit code ${result.exitCode ?? "none"} is a non-blocking error for a Claude Code gate: allowed${said ? ` (stderr: ${said})` : ""}`;
  return { ...result, outcome: "passed", nonBlocking: capReason(why) };
}

function denied(result: RunResult, code: string, reason: string): RunResult {
  return {
    ...result,
    outcome: "failed",
    verdict: { decision: "deny", code, reason: capReason(reason), source: "claude" },
  };
}

/** Stdout as one JSON object, when it is one (blanks around it allowed); else null. */
function stdoutJson(stdout: string): Record<string, unknown> | null {
  const text = stdout.trim();
  if (!text.startsWith("{")) return null;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/** Text as one line a reason may hold (control characters and runs of blanks become one space); null when blank. */
function textOf(value: unknown): string | null {
  if (typeof value !== "string") return null;
  // eslint-disable-next-line no-control-regex
  const line = value
    .replace(/[\u0000-\u001f\u007f-\u009f\s]+/g, " ")
    .replaceAll("\uFFFD", "?")
    .trim();
  return line === "" ? null : line;
}
