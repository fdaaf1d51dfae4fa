/**
 * `pi-teams-hooks watch`: the leader as a command. Prints what it found at startup, a line starting
 * with `watching` once events are being taken, then one line (or one JSON object) per event.
 */
import {
  type CliIo,
  type ParsedArgs,
  RunningLine,
  eventLine,
  runtimeOf,
  str,
  teamSetupInput,
  wholeNumber,
  wantsColour,
  warnBeforeRunning,
} from "./io.js";
import { chainEntries, chainProblems, chainSummary } from "../doctor/config-view.js";
import { handlerEnabled, handlerGateName } from "../settings/handlers.js";
import { settingValues, settingsReport } from "../settings/team-settings.js";
import path from "node:path";
import { HooksError, unreachable } from "../contract/errors.js";
import { Leader } from "../leader/leader.js";
import type { InboxMode, LeaderNotice, WhyNotice } from "../leader/notices.js";
import { formatDuration } from "../text/messages.js";
import { resolveTeamSetup, type TeamSetup } from "../team/setup.js";
import { canRedraw, localClock, terminalWidth, zoneLabel, zoneName } from "../text/terminal.js";
import { allHandlers } from "../gates/global-handlers.js";

const INBOX_MODES: readonly InboxMode[] = ["observe", "consume", "off"];

export async function watchCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const v = args.values;
  if (args.positionals.length > 0) throw new HooksError("E_USAGE", `unexpected argument "${args.positionals[0]}"`);
  const inbox = (str(v.inbox) ?? "observe") as InboxMode;
  if (!INBOX_MODES.includes(inbox))
    throw new HooksError("E_USAGE", `--inbox "${String(v.inbox)}" must be one of ${INBOX_MODES.join(", ")}`);
  const concurrency = wholeNumber(v.concurrency, "--concurrency", 1, 1);
  const reconcileMs = wholeNumber(v["reconcile-ms"], "--reconcile-ms", 5000, 50);
  const pollIntervalMs = wholeNumber(v["poll-interval-ms"], "--poll-interval-ms", 250, 10);
  const json = v.json === true;

  const setup = await resolveTeamSetup(teamSetupInput(v, io));
  const colour = !json && wantsColour(io);
  // The "still running" line only on a terminal: FORCE_COLOR through a pipe colours, never redraws.
  const status =
    !json && canRedraw(io) ? new RunningLine(io.stdout, { width: terminalWidth(io), afterMs: 2000 }) : null;
  /** `line` may be a function: what only people read is not worked out for --json. */
  const emit = (object: Record<string, unknown>, line: string | (() => string)): void => {
    const text = json ? `${JSON.stringify(object)}\n` : `${typeof line === "string" ? line : line()}\n`;
    if (status) status.print(text);
    else io.stdout(text);
  };
  await warnBeforeRunning(setup, io, true);

  const leader = new Leader({
    setup,
    env: io.env,
    concurrency,
    inbox,
    reconcileMs,
    poll: v.poll === true,
    pollIntervalMs,
    catchUp: v["catch-up"] === true,
    verbose: v.verbose === true,
    runtime: runtimeOf(io),
    reloadSetup: (lastValidHooks) => resolveTeamSetup({ ...teamSetupInput(v, io), lastValidHooks }),
    report: (notice) => {
      if (status && notice.kind === "started")
        status.started(notice.key, notice.taskId ? `${notice.event} #${notice.taskId}` : notice.event);
      if (status && notice.kind === "event") status.finished(notice.report.key);
      onNotice(notice, io, emit, setup, colour);
    },
  });
  await leader.start();

  const scope = `${setup.identity.teamDir} (task list ${setup.identity.taskListId}, inbox ${inbox === "off" ? "off" : `${setup.identity.leadName} ${inbox}`})`;
  emit(
    {
      type: "watching",
      teamDir: setup.identity.teamDir,
      taskListId: setup.identity.taskListId,
      inbox,
      hooksDir: setup.hooksDir,
    },
    () => `watching ${scope}${v.once ? " once" : ""}; times are local (${zoneLabel(Date.now(), zoneName(io.env))})`,
  );

  if (v.once) {
    // A signal ends --once too (a cron job's time limit): stop taking events, as watch does, rather
    // than run everything still queued. test/e2e/watch-signals.test.ts "--once: SIGTERM …".
    const signal = await Promise.race([leader.idle().then(() => null), io.stopSignal]);
    if (signal !== null && !json) io.stderr(`${signal}: stopping after running hooks finish…\n`);
  } else {
    const signal = await io.stopSignal;
    if (!json) io.stderr(`${signal}: stopping after running hooks finish…\n`);
  }
  await leader.stop();
  status?.close();
  return 0;
}

function onNotice(
  notice: LeaderNotice,
  io: CliIo,
  emit: (o: Record<string, unknown>, line: string) => void,
  setup: TeamSetup,
  colour: boolean,
): void {
  switch (notice.kind) {
    case "config":
      emit(
        {
          type: "config",
          valid: notice.valid,
          ...policyObject(notice.setup),
          failureModes: settingValues(notice.setup.settings.failureModes),
          limits: settingValues(notice.setup.settings.limits),
        },
        `config.json ${reloadWord(notice.valid, notice.setup.settings.block.from === "kept")}: ${policyLine(notice.setup)}`,
      );
      return;
    case "hooks":
      emit(
        {
          type: "hooks_dir",
          hooksDir: setup.hooksDir,
          hooksDirSource: setup.hooksDirSource,
          teamHooksDir: setup.teamHooksDir,
        },
        `hooks dir: ${setup.hooksDir} (${setup.hooksDirSource}); team layer: ${setup.teamHooksDir}`,
      );
      // Each event's whole chain in run order (pi-teams-hooks config shows each gate's trust and settings).
      for (const { event, chain } of notice.hooks) {
        const entries = chainEntries(chain, event);
        const skipped = chainProblems(chain);
        const v1 = entries.find((e) => e.kind === "v1");
        emit(
          { type: "hook", event, hook: v1?.path ?? null, chain: entries, skipped },
          `hook ${event}: ${chainSummary(entries)}${skipped.length ? ` (skipped ${skipped.join("; ")})` : ""}`,
        );
      }
      // The handlers run after the files of their events (gates/chain.ts): one line each, URL and events.
      for (const h of allHandlers(setup.hooksDir, setup.settings.handlers)) {
        const gate = handlerGateName(h.name);
        const off = handlerEnabled(h) ? {} : { enabled: false };
        const held = h.answer === "held" ? " (held until a decision comes back)" : "";
        const note = `${held}${handlerEnabled(h) ? "" : " (disabled: skipped, and logged)"}`;
        const text = `handler ${gate}: ${h.events.join(", ")} → ${h.method ?? "POST"} ${h.url}${note}`;
        emit({ type: "handler", name: gate, events: h.events, url: h.url, ...off }, text);
      }
      emit({ type: "policy", ...policyObject(setup) }, policyLine(setup));
      return;
    case "warning":
      io.stderr(`warning: ${notice.message}\n`);
      return;
    case "info":
      emit({ type: "info", message: notice.message }, notice.message);
      return;
    case "event":
      emit({ type: "event", ...notice.report }, eventLine(notice.report, colour, localClock));
      return;
    case "recovered":
      emit(
        { type: "recovered", key: notice.key, how: notice.how },
        `recovered ${notice.key}: ${RECOVERED_HOW[notice.how]}`,
      );
      return;
    case "ready":
      emit(
        {
          type: "ready",
          tasks: notice.tasks,
          baseline: notice.baseline,
          queued: notice.queued,
          startupMs: notice.startupMs,
        },
        `scanned ${notice.tasks} task(s) in ${formatDuration(notice.startupMs)}: ${notice.baseline} recorded as baseline, ${notice.queued} to run`,
      );
      return;
    case "stopped":
      emit(
        { type: "stopped", dropped: notice.dropped },
        `stopped${notice.dropped ? ` (${notice.dropped} queued event(s) left for the next start)` : ""}`,
      );
      return;
    case "why":
      emit({ type: "verbose", ...whyObject(notice) }, whyLine(notice, setup.identity.teamDir));
      return;
    case "started":
      return;
  }
}

/** `--verbose --json`: the notice as a line, without its `kind` (the line's `type` is `verbose`). */
/** What a restarted leader did with an event it found begun: `recovered KEY: …`. */
const RECOVERED_HOW: Readonly<Record<"logged" | "retry" | "deferred" | "held", string>> = {
  logged: "its log exists, marked done",
  deferred: "its log says its gate is held, kept deferred",
  held: "its log says its gate could not judge the work, held again",
  retry: "interrupted, running it again",
};

/** What became of a changed config.json: `config.json reloaded: …`. */
function reloadWord(valid: boolean, kept: boolean): string {
  if (valid) return "reloaded";
  return kept ? "refused (the last valid hooks block stays)" : "refused (defaults and the environment apply)";
}

function whyObject(notice: WhyNotice): Omit<WhyNotice, "kind"> {
  const { kind: _kind, ...rest } = notice;
  return rest;
}

/**
 * `--verbose`: `tasks/alpha/3.json: already in the ledger (key task_completed:3:…, done)`, the file
 * shown from the team dir.
 */
function whyLine(n: WhyNotice, teamDir: string): string {
  const where = n.file ? path.relative(teamDir, n.file) : n.taskId ? `#${n.taskId}` : "-";
  const key = n.key ?? "";
  const more = n.detail ? `: ${n.detail}` : "";
  switch (n.reason) {
    case "baseline":
      return `${where}: baseline (present at start-up; key ${key}): recorded as history, not run (--catch-up runs it)`;
    case "in_ledger":
      return `${where}: already in the ledger (key ${key}${n.detail ? `, ${n.detail}` : ""})`;
    case "queued":
      return `${where}: already queued or running (key ${key})`;
    case "same_signature":
      return `${where}: same signature as last seen${more}`;
    case "not_task_file":
      return `${where}: not a task file${more}`;
    case "invalid_task":
      return `${where}: not a task${more}`;
    case "gone":
      return `${where}: deleted`;
    case "no_event":
      return `${where}: no event${more}`;
    case "claim_seen":
      return `${where}: claim seen before (key ${key})${more}`;
    case "no_gate":
      return `${where}: no gate for ${n.event ?? "the event"}${more}`;
    case "matcher_skipped":
      return `${where}: ${n.hook ?? "a gate"} skipped${more}`;
    case "new_event":
      return `${where}: new event ${key}`;
    case "superseded":
      return `${where}: ${key} superseded${more}`;
    case "report_not_in_file":
      return `${where}: ${n.detail ?? "a reported task event the task file does not show"}`;
    default:
      return unreachable(n.reason);
  }
}

function policyObject({ settings }: TeamSetup): Record<string, unknown> {
  const { timeoutMs, sweep, exitCodes } = settings;
  return {
    policy: settings.values,
    sources: settingsReport(settings).sources,
    timeoutMs: timeoutMs.value,
    timeoutSource: timeoutMs.source,
    sweep: sweep.value,
    sweepSource: sweep.source,
    exitCodes: exitCodes.value,
    exitCodesSource: exitCodes.source,
  };
}

function policyLine({ settings }: TeamSetup): string {
  const { values: policy, timeoutMs, sweep, exitCodes } = settings;
  const { sources } = settingsReport(settings);
  const onErrors = Object.entries(settings.failureModes)
    .map(([event, mode]) => `${event} ${mode.value}`)
    .join(" / ");
  const parts = [
    `failure action ${policy.failureAction} (${sources.failureAction})`,
    `max reopens ${policy.maxReopensPerTask} (${sources.maxReopensPerTask})`,
    `follow-up owner ${policy.followupOwner} (${sources.followupOwner})`,
    `timeout ${timeoutMs.value}ms (${timeoutMs.source})`,
    `on hook errors ${onErrors}`,
    `setsid sweep ${sweep.value} (${sweep.source})`,
  ];
  // Said only when it is not contract v1's meaning, so that the usual line stays as it was.
  if (exitCodes.value === "strict") parts.push(`exit codes strict (${exitCodes.source})`);
  return `policy: ${parts.join(", ")}`;
}
