/**
 * What `/gates` and the leader's tool show: the status (team dir, each event's gates with their trust
 * state, the effective policy with where each value came from, the last outcomes), the recent
 * failures, and any CLI command run in-process against the followed team, its output captured.
 */
import path from "node:path";
import { main } from "../cli/main.js";
import { settingsRows } from "../cli/io.js";
import { HOOK_EVENTS, type HookEventName } from "../contract/contract.js";
import { describeError } from "../contract/errors.js";
import { queryLogs } from "../logs/query.js";
import { outcomeOf } from "../logs/record.js";
import { hookName, policyActions } from "../logs/format.js";
import { discoverChains, gateName } from "../gates/chain.js";
import { checkChainTrust } from "../trust/trust.js";
import { readTrustInForce, trustFile } from "../trust/trust-store.js";
import { readHolds } from "../holds/holds-view.js";
import { describeLeaderStatus, leaderStatus } from "../team/leader-lock.js";
import { resolveTeamSetup, type TeamSetup } from "../team/setup.js";
import { describeFailure } from "../text/messages.js";
import type { GateStatus } from "./gates.js";

type Env = Readonly<Record<string, string | undefined>>;

interface Captured {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Columns for the tables of commands run inside pi: what they print is read by the model (a tool's
 * answer) and shown by pi, which wraps long lines itself, so a table cut to 80 columns would only hide
 * the hook and the reason.
 */
const PI_COLUMNS = "1000";

/** Runs `pi-teams-hooks <argv>` in this process, as the command line would, and keeps what it printed. */
export async function runCli(
  argv: readonly string[],
  env: Env,
  cwd: string,
  opts: { approval?: string } = {},
): Promise<Captured> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, {
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
    env: { ...env, COLUMNS: PI_COLUMNS },
    cwd,
    isTTY: false,
    stopSignal: new Promise<string>(() => {}), // nothing here runs until a signal (no --follow, no watch)
    approval: opts.approval,
  });
  return { code, stdout, stderr };
}

const PHASE_WORDS: Readonly<Record<GateStatus["phase"], string>> = {
  off: "off",
  waiting: "waiting",
  starting: "starting",
  watching: "watching",
  failed: "not running",
};

/** `/gates status`: everything a lead asks first, in one text. */
export async function statusText(status: GateStatus, teamDir: string | null, env: Env, cwd: string): Promise<string> {
  const lines = [`quality gates: ${PHASE_WORDS[status.phase]} — ${status.detail}`];
  if (!teamDir) return `${lines.join("\n")}\n`;
  lines.push(`team dir: ${teamDir}${status.how ? ` (${status.how})` : ""}`);
  lines.push(`leader: ${describeLeaderStatus(await leaderStatus(teamDir))}`);
  let setup = status.setup;
  if (!setup) {
    try {
      setup = await resolveTeamSetup({ teamDir, env, processCwd: cwd });
    } catch (error) {
      lines.push(`(no settings to show: ${describeError(error)})`);
      return `${lines.join("\n")}\n`;
    }
  }
  lines.push(`hooks dir: ${setup.hooksDir} (${setup.hooksDirSource}); team layer: ${setup.teamHooksDir}`);
  lines.push("gates:", ...(await gateLines(setup)));
  const { holds } = await readHolds(teamDir);
  if (holds.length > 0) {
    // What the lead is to act on first: events held, not failed, until the gate can judge them.
    lines.push(`held, not failed (${holds.length}):`);
    for (const h of holds)
      lines.push(
        `  ${h.taskId ? `#${h.taskId}` : h.key} ${h.member ?? "-"} ${h.hook ?? "?"} ${h.cause === "approval" ? "waits for approval" : "waits for a retry"}: ${h.reason}`,
      );
  }
  lines.push("policy:", settingsRows(setup.settings).trimEnd());
  const last = await runCli(["logs", "--team-dir", teamDir, "--limit", "5"], env, cwd);
  lines.push("last 5 outcomes:", (last.stdout.trim() || last.stderr.trim() || "(none yet)").replace(/^/gm, "  "));
  return `${lines.join("\n")}\n`;
}

/** One line per gate of each event: its name, its layer, and whether the leader would run it. */
async function gateLines(setup: TeamSetup): Promise<string[]> {
  const { teamDir } = setup.identity;
  const read = readTrustInForce(teamDir);
  const record =
    read.state === "ok" ? read.record : read.state === "invalid" ? { version: 1 as const, gates: {} } : null;
  const layers = { global: path.resolve(setup.hooksDir), team: path.resolve(setup.teamHooksDir) };
  const out: string[] = [];
  const width = Math.max(...HOOK_EVENTS.map((e) => e.length));
  for (const { event, chain } of await discoverChains(setup.hooksDir, setup.teamHooksDir, setup.settings.handlers)) {
    const check = checkChainTrust(chain, event, layers, {
      record,
      allowInsecure: false,
      uid: process.getuid?.() ?? null,
      participation: setup.settings.events[event].participation.value,
    });
    if (chain.hooks.length === 0) out.push(`  ${event.padEnd(width)}  none`);
    for (const hook of chain.hooks) {
      const problem = check.problems.find((p) => p.path === hook.hook.hookPath);
      const state = problem
        ? `NOT RUN: ${problem.reason}`
        : record
          ? "trusted"
          : `trusted when the leader first starts (${trustFile(teamDir)})`;
      out.push(
        `  ${event.padEnd(width)}  ${hook.kind === "v1" ? path.basename(hook.hook.hookPath) : gateName(hook, event as HookEventName)} (${hook.layer})  ${state}`,
      );
    }
    for (const removed of check.problems.filter((p) => !chain.hooks.some((h) => h.hook.hookPath === p.path))) {
      out.push(`  ${event.padEnd(width)}  ${removed.reason}`);
    }
  }
  if (read.state === "invalid") out.push(`  (${read.problem}: every gate is untrusted until trust is recorded again)`);
  return out;
}

interface FailureItem {
  log: string;
  time: string;
  event: string;
  task: string | null;
  member: string | null;
  hook: string;
  outcome: string;
  summary: string;
  actions: string[];
}

/** The newest failed, timed-out or erroring runs, newest first, each with its log's name and summary. */
export async function recentFailures(
  teamDir: string,
  limit: number,
  timeoutMs: number,
): Promise<{ items: FailureItem[]; problems: string[] }> {
  const problems: string[] = [];
  const { rows } = await queryLogs(teamDir, {
    filter: { outcomes: ["failed", "timed_out", "error"] },
    limit,
    onProblem: (p) => problems.push(`${p.file}: ${p.message}`),
  });
  const items = rows.reverse().map(({ file, record }) => ({
    log: path.basename(file),
    time: record.startedAt,
    event: record.invocation.event,
    task: record.invocation.completedTask?.id ?? null,
    member: record.invocation.memberName ?? null,
    hook: hookName(record.result),
    outcome: outcomeOf(record.result),
    summary:
      typeof record.policy?.summary === "string" ? record.policy.summary : describeFailure(record.result, timeoutMs),
    actions: policyActions(record),
  }));
  return { items, problems };
}

export function failuresText(items: readonly FailureItem[]): string {
  if (items.length === 0) return "no failed gate runs in hook-logs/\n";
  return items
    .map((f) => {
      const what = f.task ? `${f.event} #${f.task}` : f.event;
      const actions = f.actions.length ? ` → ${f.actions.join(", ")}` : "";
      return `${f.time} ${what}${f.member ? ` ${f.member}` : ""} ${f.hook} ${f.outcome}: ${f.summary}${actions} (log ${f.log})\n`;
    })
    .join("");
}
