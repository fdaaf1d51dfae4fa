/**
 * `pi-teams-hooks run <event>`: fire one event by hand, exactly as the leader would, and report it.
 * `pi-teams-hooks decide <run id> allow|deny`: settle a held gate by hand, as the task API would.
 * (One module for the two commands that act on one event by hand: cli/ keeps a module per concern.)
 */
import { sandboxNotice } from "../runner/sandbox.js";
import { HOOK_EVENTS, type HookEventName, HookEventNameSchema, isTaskEvent } from "../contract/contract.js";
import type { RunResult } from "../contract/hook-run.js";
import {
  type CliIo,
  type ParsedArgs,
  RunningLine,
  heldDetail,
  personApproval,
  runtimeOf,
  str,
  teamSetupInput,
  warnBeforeRunning,
} from "./io.js";
import { alsoOnSpawn } from "../runner/runtime.js";
import { HooksError, unreachable } from "../contract/errors.js";
import {
  type DecideResult,
  type DecisionInput,
  appliedUnderText,
  decideDeferral,
  decisionProblem,
} from "../event/deferral-decision.js";
import { deferralRunIds, deferralsDir, readDeferral } from "../deferrals/record.js";
import { checkDeferral, ledgerHoldOf } from "../event/deferral-check.js";
import { noteToLead } from "./trust-command.js";
import { sentId } from "../team/sent-log.js";
import type { TeamIdentity } from "../contract/team-files.js";
import { eventKey, taskEvent } from "../contract/events.js";
import { readHookLog } from "../logs/hook-log.js";
import { invokeEvent, type InvokeOutcome } from "../event/invoke.js";
import { didYouMean } from "../text/suggest.js";
import {
  droppedGateText,
  eventLabel,
  formatDuration,
  missingSecretWarning,
  nonBlockingPass,
  verdictNotRead,
  unsafeName,
} from "../text/messages.js";
import { isSafeName, sanitizeName, taskFile } from "../team/paths.js";
import { readTask } from "../team/tasks.js";
import { resolveTeamSetup } from "../team/setup.js";
import { readTrustInForce, trustedBy } from "../trust/trust-store.js";
import type { TrustRecord } from "../trust/trust.js";
import { MIN_ID_PREFIX, shortRunId } from "../logs/format.js";
import { settingsRedactor } from "../runner/redact.js";
import { canRedraw, terminalWidth } from "../text/terminal.js";

export async function runCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const v = args.values;
  const [eventArg, ...extra] = args.positionals;
  if (eventArg === undefined) throw new HooksError("E_USAGE", `missing <event> (one of ${HOOK_EVENTS.join(", ")})`);
  if (extra.length > 0) throw new HooksError("E_USAGE", `unexpected argument "${extra[0]}"`);
  const parsedEvent = HookEventNameSchema.safeParse(eventArg);
  if (!parsedEvent.success)
    throw new HooksError(
      "E_USAGE",
      `unknown event "${eventArg}"${didYouMean(eventArg, HOOK_EVENTS)} (one of ${HOOK_EVENTS.join(", ")})`,
    );
  const event: HookEventName = parsedEvent.data;

  const taskId = str(v.task);
  if (isTaskEvent(event) && taskId === undefined) throw new HooksError("E_USAGE", `--task is required for ${event}`);
  if (!isTaskEvent(event) && taskId !== undefined) throw new HooksError("E_USAGE", "--task does not apply to idle");
  const timestamp = str(v.timestamp);
  if (timestamp !== undefined && Number.isNaN(Date.parse(timestamp))) {
    throw new HooksError("E_USAGE", `--timestamp "${timestamp}" is not an ISO 8601 time (e.g. 2026-12-02T10:00:00Z)`);
  }
  const member = str(v.member);
  if (member !== undefined && member.trim() === "") throw new HooksError("E_USAGE", "--member must not be empty");
  // Refused, not mapped: `--task a/b` would run (and apply the policy to) task a-b.
  if (taskId !== undefined && !isSafeName(taskId))
    throw new HooksError("E_USAGE", `--task ${unsafeName(taskId, sanitizeName(taskId))}`);
  if (member !== undefined && !isSafeName(member))
    throw new HooksError("E_USAGE", `--member ${unsafeName(member, sanitizeName(member))}`);

  const setup = await resolveTeamSetup(teamSetupInput(v, io));
  await warnBeforeRunning(setup, io, false);
  // The leader says it at its start; `run` before it fires.
  const sandbox = sandboxNotice(setup.settings.sandbox);
  if (sandbox.level === "warn") io.stderr(`warning: ${sandbox.message}\n`);

  let key = eventKey(event, member ?? "unknown", timestamp ?? new Date().toISOString());
  let eventMember = member ?? null;
  if (taskId !== undefined) {
    const file = taskFile(setup.identity.teamDir, setup.identity.taskListId, taskId);
    const read = await readTask(file);
    if (!read.ok) {
      const why = read.problem.kind === "missing" ? `${file}: no such task file` : read.problem.message;
      throw new HooksError("E_TASK", `--task ${taskId}: ${why}`);
    }
    // The key the leader would give this event, so that --apply-policy stays idempotent per event.
    const fromFile = taskEvent(read.value);
    if (event === "task_started" && v["apply-policy"] && fromFile?.event !== event) {
      // Nothing to put back, and no member whose claim it was: a message "denied your claim" would be untrue.
      throw new HooksError(
        "E_TASK",
        `--task ${taskId}: the task holds no claim (it is ${read.value.status}${read.value.owner ? "" : " without an owner"}): --apply-policy has nothing to put back; run without it to try the gate`,
      );
    }
    key = fromFile?.event === event ? fromFile.key : eventKey(event, taskId, timestamp ?? read.value.updatedAt);
    // Without --member, the member the leader gives this event: the task's owner (contract/events.ts
    // taskEvent), so that a gate's members= matcher judges a hand run as it would judge the leader's.
    eventMember ??= fromFile?.event === event ? fromFile.member : (read.value.owner ?? null);
  }

  // On a terminal, a hook that takes a while says so on stderr (stdout stays the report alone).
  const progress = canRedraw({ isTTY: io.stderrIsTTY === true, env: io.env })
    ? new RunningLine(io.stderr, { width: terminalWidth(io), afterMs: 1000 })
    : null;
  progress?.started("run", eventLabel(event, taskId ?? null));
  let outcome = await invokeEvent({
    setup,
    event,
    key,
    trigger: "hand",
    taskId: taskId ?? null,
    member: eventMember,
    timestamp: timestamp ?? null,
    applyPolicy: v["apply-policy"] === true,
    env: io.env,
    trust: {
      record: trustRecord(setup.identity.teamDir, io),
      // An optional gate the team dropped is no problem, but worth a line: the event runs without it.
      onCheck: (check) => {
        for (const d of check.dropped) io.stderr(`${droppedGateText(d.path, d.detail)}\n`);
      },
    },
    runtime: progress ? alsoOnSpawn(runtimeOf(io), ({ hook }) => progress.started("run", hook)) : runtimeOf(io),
  }).finally(() => progress?.close());
  if (outcome.pending?.stage === "remediation") {
    // By hand there is no leader to try again later: the log says what was not applied, and the exit code fails.
    io.stderr("warning: the policy was not applied; run this command again once the problem below is fixed\n");
    outcome = await outcome.pending.abandon();
  }
  if (outcome.pending)
    throw new HooksError("E_IO", `the hook ran, but its log could not be written: ${outcome.pending.error}`);
  for (const problem of outcome.problems) io.stderr(`warning: ${problem}\n`);
  for (const r of outcome.runs) {
    if (r.hook.kind !== "http" || !r.hook.handler) continue;
    for (const variable of r.result.http?.missingSecrets ?? [])
      io.stderr(`warning: ${missingSecretWarning(r.hook.name, variable, r.hook.handler)}\n`);
  }

  if (v.json) {
    io.stdout(`${await jsonReport(outcome, event, setup.hooksDir)}\n`);
  } else {
    io.stdout(`${humanLine(outcome, event, taskId ?? null, setup.hooksDir)}\n`);
    if (outcome.runs.length > 1)
      for (const r of outcome.runs)
        io.stdout(
          `  ${r.hook.layer} ${r.hook.name}: ${verdictWord(r.result)} in ${formatDuration(r.result.durationMs)} (run ${shortRunId(r.result.runId)})\n`,
        );
    if (!outcome.result) for (const c of outcome.chain.skipped) io.stdout(`  skipped ${c.path}: ${c.reason}\n`);
    if (outcome.deferral)
      io.stdout(
        `  held: decide with pi-teams-hooks decide --team-dir ${setup.identity.teamDir} ${outcome.deferral.runId} allow|deny\n`,
      );
    else if (outcome.counted?.state === "held" && outcome.counted.cause === "deferral")
      io.stdout("  not held: without --apply-policy nothing is recorded\n");
    if (observeOnlyFailure(event, outcome.counted))
      io.stdout(`  ${event} is observe-only: the failure is reported and logged, nothing is enforced (exit 0)\n`);
  }
  if (outcome.policyApplied === false) return 1;
  // idle enforces nothing: its hook's failure is said (above, and in the log), and the command succeeds.
  if (observeOnlyFailure(event, outcome.counted)) return 0;
  // 3: held (the gate answered defer): neither a pass nor a failure yet.
  switch (outcome.counted?.state) {
    case undefined:
    case "passed":
      return 0;
    case "held":
      return 3;
    default:
      return 1;
  }
}

/** A failure of an event whose gate enforces nothing (idle: a failure is only reported). */
function observeOnlyFailure(event: HookEventName, counted: InvokeOutcome["counted"]): boolean {
  return !isTaskEvent(event) && counted?.state === "failed";
}

/** Exit codes of `decide` beyond the shared ones: a decision refused (decided otherwise before, or expired). */
const DECIDE_REFUSED = 1;
/** …and a decision the person at the terminal did not confirm. */
const DECIDE_DECLINED = 1;

/**
 * `api:<key name>` is who decided through the task API with that key (server/routes.ts sets it, and
 * docs/security.md tells a team to look for decisions that are not `api:<its key>`): no shell takes it.
 */
function isApiName(by: string): boolean {
  return by.trim().toLowerCase().startsWith("api:");
}

/** `source`: the flag or variable that gave the name. */
function reservedByMessage(by: string, source: string): string {
  return `${source} ${JSON.stringify(by)}: names that start with api: are the task API's keys, set by serve for a decision made with that key; give your own name, or decide through the API with the key`;
}

/**
 * What the person is asked to decide: the held event and gate as the gate held them (event/deferral-check.ts: the
 * file is the agents' to write), or the run id alone when there is no such deferral yet (decideDeferral waits for one
 * in flight) or no gate held it.
 */
async function heldLabel(teamDir: string, runId: string): Promise<string> {
  const found = await readDeferral(teamDir, runId);
  if (!found?.ok) return `run ${runId}`;
  const check = await checkDeferral(found.value, { ledger: ledgerHoldOf(teamDir, runId), teamDir });
  if (check.kind === "refused") return `run ${runId}`;
  const held = check.reference;
  return `${eventLabel(held.event, held.taskId)} ${held.hook.name}, run ${runId}`;
}

function noDeferral(teamDir: string, runId: string): HooksError {
  return new HooksError(
    "E_TASK",
    `no deferral with run id ${JSON.stringify(runId)} in ${deferralsDir(teamDir)} (held gates: pi-teams-hooks logs --team-dir ${teamDir} --outcome deferred)`,
  );
}

/**
 * Each decision by hand to the lead's inbox, once per run id, saying who and how (at a terminal, or
 * without one with --yes), as `trust` tells each approval: the decision's own log says only the name.
 */
async function tellLeadDecided(identity: TeamIdentity, runId: string, what: string, io: CliIo): Promise<void> {
  const error = await noteToLead(
    runtimeOf(io),
    identity,
    sentId("decided", runId, identity.leadName),
    `pi-teams-hooks decide: held gate decided: ${what}`,
  );
  if (error) io.stderr(`warning: ${error}\n`);
}

/**
 * The held run that `given` names: itself, or the one deferral whose run id starts with it (the short id
 * of the `logs` table and `watch` lines). Several: a usage error listing them. None: `given` as it is,
 * for decideDeferral to answer "no deferral".
 */
async function wholeRunId(teamDir: string, given: string): Promise<string> {
  if (given.length < MIN_ID_PREFIX) return given;
  const ids = await deferralRunIds(teamDir, given);
  if (ids.length > 1)
    throw new HooksError(
      "E_USAGE",
      `run id "${given}" matches ${ids.length} held runs: ${ids.join(", ")}; give more of it`,
    );
  return ids[0] ?? given;
}

/**
 * `decide`: a person's decision on a held gate, in steps: the decision read from the arguments, the
 * held run found, the person asked (or `--yes`), the decision recorded and applied (event/deferral-decision.ts),
 * the lead told, the answer said.
 */
export async function decideCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const v = args.values;
  const { given, input } = decisionOfArgs(args, io);
  const setup = await resolveTeamSetup(teamSetupInput(v, io));
  for (const warning of setup.warnings) io.stderr(`warning: ${warning}\n`);
  const { teamDir } = setup.identity;
  const runId = await wholeRunId(teamDir, given);
  const what = await heldLabel(teamDir, runId);
  const { decision, by } = input;
  const asked = await personApproval(io, v.yes === true, `Decide ${decision} for ${what}, as ${by}? [y/N] `);
  if (asked.kind === "no_terminal")
    throw new HooksError(
      "E_USAGE",
      "deciding a held gate is a person's act: run decide at a terminal (it asks), or give --yes to decide without one (said in its output and to the lead's inbox)",
    );
  if (asked.kind === "declined") {
    io.stdout(`not decided: ${what} stays held\n`);
    return DECIDE_DECLINED;
  }
  const how = asked.how;
  const answer = await decideDeferral(teamDir, runId, input, {
    env: io.env,
    runtime: runtimeOf(io),
    waitForLeaderMs: 10_000,
    warn: (message) => io.stderr(`warning: ${message}\n`),
    settings: { setup, redact: settingsRedactor(io.env, setup.settings, setup.hooksDir) },
  });
  if (answer.kind === "recorded" || answer.kind === "applied")
    // `by` is a name the decider gave; who ran the command (user, host, pid) is said beside it, as trust says it.
    await tellLeadDecided(
      setup.identity,
      runId,
      `${decision} for ${what}, by ${by}, run by ${trustedBy(`pi-teams-hooks decide, ${how}`)}`,
      io,
    );
  if (v.json) io.stdout(`${JSON.stringify({ runId, decidedHow: how, ...answer })}\n`);
  return sayDecided(answer, { teamDir, runId, decision, by, how, json: v.json === true }, io);
}

/** The run id as given and the decision of `decide`'s arguments, checked; a usage error names the flag. */
function decisionOfArgs(args: ParsedArgs, io: CliIo): { given: string; input: DecisionInput } {
  const v = args.values;
  const [given, decisionArg, ...extra] = args.positionals;
  if (given === undefined || decisionArg === undefined)
    throw new HooksError("E_USAGE", "usage: decide --team-dir DIR <run id> allow|deny");
  if (extra.length > 0) throw new HooksError("E_USAGE", `unexpected argument "${extra[0]}"`);
  const decision = decisionArg.trim().toLowerCase();
  if (decision !== "allow" && decision !== "deny")
    throw new HooksError("E_USAGE", `"${decisionArg}" is not a decision: allow or deny`);
  const byFlag = str(v.by);
  const by = byFlag ?? (io.env.USER || io.env.LOGNAME || "pi-teams-hooks decide");
  if (isApiName(by))
    throw new HooksError(
      "E_USAGE",
      reservedByMessage(by, byFlag !== undefined ? "--by" : io.env.USER ? "$USER" : "$LOGNAME"),
    );
  const input: DecisionInput = {
    decision,
    by,
    ...optional("code", str(v.code)),
    ...optional("reason", str(v.reason)),
    ...optional("message", str(v.message)),
  };
  // The problem names the field; the flag that carries it is named the same.
  const problem = decisionProblem(input);
  if (problem) throw new HooksError("E_USAGE", `--${problem}`);
  return { given, input };
}

/** What `decide` says of the answer (nothing more with --json, which printed it), and its exit code. */
function sayDecided(
  answer: DecideResult,
  d: { teamDir: string; runId: string; decision: string; by: string; how: string; json: boolean },
  io: CliIo,
): number {
  const { runId, decision, by, how } = d;
  switch (answer.kind) {
    case "invalid":
      // The problem names the field; the flag that carries it is named the same.
      throw new HooksError("E_USAGE", `--${answer.problem}`);
    case "unknown":
      if (answer.problem) throw new HooksError("E_TASK", answer.problem);
      throw noDeferral(d.teamDir, runId);
    case "conflict": {
      const e = answer.existing;
      if (!d.json)
        io.stderr(
          `pi-teams-hooks decide: run ${runId} was decided before: ${e.decision}${e.code ? ` (${e.code})` : ""}${e.reason ? ` "${e.reason}"` : ""} by ${e.by} at ${e.at}; a deferral is decided once\n`,
        );
      return DECIDE_REFUSED;
    }
    case "expired":
      if (!d.json)
        io.stderr(
          `pi-teams-hooks decide: run ${runId} expired at ${answer.expiresAt} (hooks.deferTimeoutMs): its gate failed as defer_expired\n`,
        );
      return DECIDE_REFUSED;
    case "recorded": {
      const held = answer.deferral;
      if (!d.json) {
        io.stdout(`${eventLabel(held.event, held.taskId)} ${held.hook.name}: ${decision} recorded for run ${runId}`);
        io.stdout(answer.problem ? "; not applied yet\n" : "; the running leader applies it\n");
        if (held.settings)
          io.stdout(`  it is applied under the settings in force when its gate held it (${held.deferredAt})\n`);
        io.stdout(`  decided by ${by}, ${how}\n`);
      }
      if (answer.problem)
        io.stderr(
          `warning: ${answer.problem}; the decision stays recorded: the next start of the leader, or this command again, applies it\n`,
        );
      return answer.problem ? 1 : 0;
    }
    case "applied": {
      const held = answer.deferral;
      const actions =
        answer.actions.length > 0 && answer.actions.join("") !== "none" ? ` → ${answer.actions.join(", ")}` : "";
      if (!d.json)
        io.stdout(
          `${eventLabel(held.event, held.taskId)} ${held.hook.name}: ${decision} applied for run ${runId}${actions}\n  decided by ${by}, ${how}\n${answer.appliedUnder ? `  applied ${appliedUnderText(answer.appliedUnder)}\n` : ""}${answer.logFile ? `  log: ${answer.logFile}\n` : ""}`,
        );
      return 0;
    }
    default:
      return unreachable(answer);
  }
}

function optional<K extends string>(key: K, value: string | undefined): Partial<Record<K, string>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, string>);
}

/**
 * The team's trust record, as the leader holds it: none yet (no leader has started and nobody ran
 * `trust`) compares nothing; an unreadable one trusts nothing.
 */
function trustRecord(teamDir: string, io: CliIo): TrustRecord | null {
  const read = readTrustInForce(teamDir, io.env);
  if (read.state === "ok") return read.record;
  if (read.state === "none") return null;
  io.stderr(
    `warning: ${read.problem}: every gate is untrusted until the team lead records trust again: pi-teams-hooks trust --team-dir ${teamDir} --all\n`,
  );
  return { version: 1, gates: {} };
}

/**
 * `task_completed #3 on_task_completed.sh failed in 1.2s: exit code 1 • npm ERR! Test failed (run 4a739620)`: the
 * deciding run's short id last.
 */
function humanLine(outcome: InvokeOutcome, event: HookEventName, taskId: string | null, hooksDir: string): string {
  const label = eventLabel(event, taskId);
  if (!outcome.result || !outcome.hook) {
    const dirProblem = outcome.chain.v1.global.dirProblem;
    return `${label}: no hook in ${hooksDir} — nothing ran${dirProblem ? ` (${dirProblem.replaceAll("_", " ")})` : ""}`;
  }
  const r = outcome.result;
  const hook = outcome.runs.length > 1 ? `${outcome.hook.name} (${outcome.runs.length} hooks)` : outcome.hook.name;
  // A pass that let an error through says it, as the leader's line does.
  const verdict = outcome.nonBlocking === undefined ? verdictWord(r) : nonBlockingPass(outcome.nonBlocking);
  // A gate skipped or on trial passes, but says why: "passed" alone would hide that nothing judged the task.
  const passDetail = outcome.noGateInForce === true ? `: ${outcome.summary}` : "";
  const otherDetail = r.outcome === "deferred" ? heldDetail(outcome.summary) : `: ${outcome.summary}`;
  const detail = r.outcome === "passed" ? passDetail : otherDetail;
  const actions =
    outcome.actions.length > 0 && outcome.actions.join("") !== "none" ? ` → ${outcome.actions.join(", ")}` : "";
  const unread = r.verdictUnread === undefined ? "" : ` • ${verdictNotRead(r.verdictUnread)}`;
  return `${label} ${hook} ${verdict} in ${formatDuration(r.durationMs)}${detail}${actions} (run ${shortRunId(r.runId)})${unread}`;
}

function verdictWord(r: RunResult): string {
  if (r.skipped !== undefined) return "skipped";
  if (r.shadow) return `passed (shadow: ${r.shadow.wouldDeny ? "would have denied" : "allowed"})`;
  if (r.nonBlocking !== undefined) return "passed (non-blocking error)";
  return r.outcome === "passed" ? "passed" : r.timedOut ? "timed out" : r.outcome === "error" ? "error" : r.outcome;
}

async function jsonReport(outcome: InvokeOutcome, event: HookEventName, hooksDir: string): Promise<string> {
  if (!outcome.logFile) {
    return JSON.stringify({
      event,
      ran: false,
      hooksDir,
      candidates: outcome.chain.v1.global.candidates,
      skipped: outcome.chain.skipped,
    });
  }
  const read = await readHookLog(outcome.logFile);
  // A chain's record is its deciding run's; `runIds` names every run of it, in order.
  const runIds = outcome.runs.length > 1 ? { runIds: outcome.runs.map((r) => r.result.runId) } : {};
  return JSON.stringify(
    read.ok
      ? { ...read.record, logFile: outcome.logFile, ...runIds }
      : { event, ran: true, logFile: outcome.logFile, result: outcome.result, ...runIds },
  );
}
