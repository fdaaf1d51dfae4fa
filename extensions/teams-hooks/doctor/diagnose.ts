/**
 * `doctor` as a library: every check a person would make before trusting a team's gates, returned as
 * data (`DoctorReport`), never printed. For each event, which file would run and why, and each
 * candidate skipped or shadowed and why; the event's whole chain (the `on_<event>.d/` files of the
 * global dir and of the team layer `<teamDir>/hooks`) in order, and each file of it skipped and why; whether the chosen
 * file can really start (shebang, CRLF, interpreter on PATH); the team dir, config, task list and leader inbox, read
 * with the same readers the leader uses; who besides the leader's user could change the gates and the leader's state
 * (doctor/access.ts); the effective policy with the source of each value; lock files left behind. doctor runs nothing:
 * every check reads files.
 *
 * Levels: `error` — something that stops a gate from running (the CLI exits 1); `warn` — worth
 * fixing, gates still run; `info` — a fact; `ok` — checked and fine. The hook checks live in
 * doctor/hooks.ts; this module adds the team, policy and lock checks and assembles the report.
 */
import { importChecks, sandboxChecks } from "./sandbox-checks.js";
import { constants as fsConstants, type Dirent } from "node:fs";
import { readdir } from "node:fs/promises";
import path from "node:path";
import { discoverChains, teamHooksDir } from "../gates/chain.js";
import type { TeamIdentity } from "../contract/team-files.js";
import { can, diagnoseEvent, diagnoseHooksDir, diagnoseTeamLayer, type EventHookReport } from "./hooks.js";
import { statOrNull, type Check, type CheckLevel } from "./gate-checks.js";
import { errnoCode } from "../contract/errors.js";
import { readInbox } from "../team/mailbox.js";
import { inspectLock, type LockHolder } from "../team/lock.js";
import { describeLeaderStatus, leaderStatus, type LeaderStatus } from "../team/leader-lock.js";
import { resolveSettings, settingsReport, type SettingsReport } from "../settings/team-settings.js";
import { resolveHooksDir, tasksDir } from "../team/paths.js";
import { readAllTasks } from "../team/tasks.js";
import { loadTeamConfig, type LoadedTeamConfig } from "../team/config-file.js";
import { checkChainTrust } from "../trust/trust.js";
import { readTrustInForce } from "../trust/trust-store.js";
import { readHolds } from "../holds/holds-view.js";
import { isHandlerGate } from "../gates/chain.js";
import { diagnoseHandlers } from "./handler-checks.js";
import { diagnosePrivacy } from "./privacy-checks.js";
import { diagnoseAccess, type AccessReport } from "./access.js";
import type { Problem, ProblemKind } from "../settings/problems.js";

export type { CandidateReport, ChainHookReport, ChainReport, EventHookReport } from "./hooks.js";
export type { Check, CheckLevel } from "./gate-checks.js";
export type { HandlerReport } from "./handler-checks.js";
export type { AccessEntry, AccessOther, AccessReport, AccessRole } from "./access.js";

/**
 * The settings in force (with where each came from: `config.json hooks.failureAction`, `PI_TEAMS_…`, `default`) and
 * their warnings.
 */
interface PolicyReport extends SettingsReport {
  checks: Check[];
}

interface LockReport {
  file: string;
  holder: LockHolder;
  ageMs: number;
  holderAlive: boolean | null;
  stale: boolean;
  staleReason: string | null;
}

export interface DoctorReport {
  teamDir: string;
  hooksDir: { dir: string; source: "flag" | "env" | "default"; checks: Check[] };
  /** The team's own hooks layer, `<teamDir>/hooks`; no checks when it does not exist. */
  teamHooksDir: { dir: string; checks: Check[] };
  hooks: EventHookReport[];
  team: { identity: TeamIdentity | null; checks: Check[] };
  policy: PolicyReport;
  locks: { found: LockReport[]; checks: Check[] };
  /** Whether a leader holds the team (its lock and heartbeat); null when the team dir is not one. */
  leader: LeaderStatus | null;
  /**
   * Who besides the leader's user (the user doctor runs as) could change the gates, hook-state/,
   * hook-logs/ or the approved trust record (doctor/access.ts); null when the team dir cannot be read.
   */
  access: AccessReport | null;
  errors: number;
  warnings: number;
  /** Every warning and error above as data, `{ kind, path, message }` (settings/problems.ts), in report order. */
  problems: Problem[];
}

interface DoctorInput {
  /** The team dir, absolute or relative to `cwd`. */
  teamDir: string;
  /** `--hooks-dir` as given (relative to `cwd`), or undefined. */
  hooksDir?: string | undefined;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  now?: number;
}

/** A leader running is as it should be; none is worth a note; a stale lock means the gates stopped. */
const LEADER_LEVEL: Readonly<Record<LeaderStatus["state"], CheckLevel>> = {
  running: "ok",
  none: "info",
  stale: "warn",
};

/** A lock held this long by a live process makes other writers give up (team/lock.ts waits 10 s). */
const LONG_HELD_LOCK_MS = 10_000;

/** Runs every check. Never throws for anything found on disk. */
export async function diagnose(input: DoctorInput): Promise<DoctorReport> {
  const teamDir = path.resolve(input.cwd, input.teamDir);
  const team = await diagnoseTeam(teamDir);
  const config = await loadTeamConfig(teamDir);
  const hooks = resolveHooksDir({ flag: input.hooksDir, teamDir, env: input.env, cwd: input.cwd });
  const teamLayer = teamHooksDir(teamDir);
  const policy = diagnosePolicy(config, input.env, config.warnings);
  const chains = await discoverChains(hooks.dir, teamLayer, policy.handlers);
  policy.checks.push(...diagnosePrivacy(policy, input.env, chains));
  const teamHooks = chains.some(({ chain }) => chain.hooks.some((h) => h.layer === "team"));
  const { checks: hooksDirChecks, usable: dirUsable } = await diagnoseHooksDir(hooks.dir, hooks.source, teamHooks);
  const teamLayerChecks = await diagnoseTeamLayer(teamLayer, hooks.dir);
  const events: EventHookReport[] = [];
  // Handlers' trust state (doctor/handler-checks.ts); an unreadable record trusts nothing, as in the leader.
  const trust = readTrustInForce(teamDir, input.env);
  const record =
    trust.state === "ok" ? trust.record : trust.state === "invalid" ? { version: 1 as const, gates: {} } : null;
  const layers = { global: path.resolve(hooks.dir), team: path.resolve(teamLayer) };
  for (const { event, chain } of chains) {
    const report = await diagnoseEvent(hooks.dir, event, input.env, input.cwd, dirUsable, chain, teamLayer);
    const checked = record
      ? checkChainTrust(chain, event, layers, {
          record,
          allowInsecure: true,
          uid: null,
          participation: policy.events[event].participation.value,
        })
      : null;
    const handlers = diagnoseHandlers(event, chain, input.env, checked, teamDir, config.identity.teamId);
    for (const hook of report.chain.hooks) {
      const found = handlers.reports.get(hook.name);
      if (hook.kind === "http" && found) hook.handler = found;
    }
    report.chain.checks.push(...handlers.checks);
    // A file gate that will not run as it is (handlers are said by doctor/handler-checks.ts): an error,
    // as for the leader.
    report.chain.checks.push(...untrustedFileGates(checked?.problems ?? [], teamDir));
    report.chain.checks.push(...sandboxChecks(event, chain, policy.sandbox.value));
    for (const d of checked?.dropped ?? []) {
      const why = `optional (required=false in the trusted gate), so ${event} runs without it; no approval needed`;
      report.chain.checks.push({
        level: "info",
        message: `${d.path}: dropped by the team (${d.detail}): ${why}`,
        file: d.path,
      });
    }
    events.push(report);
  }
  const nothingAnywhere = events.every(
    (e) =>
      e.candidates.every((c) => c.status === "absent") && e.chain.hooks.length === 0 && e.chain.skipped.length === 0,
  );
  if (dirUsable && nothingAnywhere) {
    hooksDirChecks.push({
      level: "warn",
      message: `no hook in ${hooks.dir}: no gate runs for any event (pi-teams-hooks init copies the examples)`,
    });
  }
  const locks = team.ok ? await diagnoseLocks(teamDir, input.now ?? Date.now()) : { found: [], checks: [] };
  if (team.ok) team.checks.push(...(await heldEventChecks(teamDir)));
  const leader = team.ok ? await leaderStatus(teamDir, input.now ?? Date.now()) : null;
  if (leader)
    team.checks.push({
      level: LEADER_LEVEL[leader.state],
      message: `leader: ${describeLeaderStatus(leader)}`,
      file: leader.file,
      // A stale leader lock is a lock left behind: `doctor --json` gives it as one.
      kind: "lock",
    });
  const hooksDir = path.resolve(input.cwd, hooks.dir);
  const access = team.ok
    ? diagnoseAccess({ teamDir, hooksDir, teamLayer, taskListId: team.identity.taskListId, env: input.env })
    : null;
  // Where a gate's imports would come from a folder another user can write: the Access section says it.
  const imports = chains.flatMap(({ chain }) => importChecks(chain));
  if (access && imports.length > 0) access.checks = [...access.checks.filter((c) => c.level !== "ok"), ...imports];
  else
    for (const e of events) e.chain.checks.push(...imports.filter((c) => e.chain.hooks.some((h) => h.path === c.file)));

  const all = [
    ...hooksDirChecks,
    ...teamLayerChecks,
    ...events.flatMap((e) => [...e.checks, ...e.chain.checks]),
    ...team.checks,
    ...(access?.checks ?? []),
    ...policy.checks,
    ...locks.checks,
  ];
  return {
    teamDir,
    hooksDir: { dir: hooks.dir, source: hooks.source, checks: hooksDirChecks },
    teamHooksDir: { dir: teamLayer, checks: teamLayerChecks },
    hooks: events,
    team: { identity: team.ok ? team.identity : null, checks: team.checks },
    policy,
    locks,
    leader,
    access,
    errors: all.filter((c) => c.level === "error").length,
    warnings: all.filter((c) => c.level === "warn").length,
    problems: [
      ...problemsOf(hooksDirChecks, "hooks_dir"),
      ...problemsOf(teamLayerChecks, "hooks_dir"),
      ...events.flatMap((e) => problemsOf([...e.checks, ...e.chain.checks], "gate_unusable")),
      ...problemsOf(team.checks, "team_files"),
      ...problemsOf(access?.checks ?? [], "access"),
      ...problemsOf(policy.checks, "setting_ignored"),
      ...problemsOf(locks.checks, "lock"),
    ],
  };
}

/**
 * The warnings and errors of one section of the report as problems: a check's own kind when it has
 * one, else the section's; its path, else the file or field it names, else "".
 */
/**
 * The file gates of an event that will not run as they are: new or changed since they were trusted
 * (`untrusted_hook`), or trusted and gone or not executable (`gate_missing`). Insecure gates are said by
 * the access checks.
 */
function untrustedFileGates(
  problems: readonly { kind: string; path: string; reason: string }[],
  teamDir: string,
): Check[] {
  const approve = (gate: string): string => `pi-teams-hooks trust --team-dir ${teamDir} ${gate}`;
  return problems
    .filter((p) => !isHandlerGate(p.path) && p.kind !== "insecure_hook")
    .map((p) =>
      p.kind === "untrusted_hook"
        ? {
            level: "error" as const,
            message: `${p.reason}: it does not run, and its events are held (untrusted_hook) until the team lead approves it: ${approve(p.path)}`,
            file: p.path,
            kind: "gate_untrusted" as const,
            path: p.path,
          }
        : {
            level: "error" as const,
            message: `${p.reason}: its events are held (${p.kind}) until the team lead approves: ${approve(p.path)}`,
            file: p.path,
            kind: "gate_missing" as const,
            path: p.path,
          },
    );
}

/** The events the leader last said it holds (hook-state/holds.json): each a gate that did not judge the work. */
async function heldEventChecks(teamDir: string): Promise<Check[]> {
  const { holds, problem } = await readHolds(teamDir);
  const checks: Check[] = holds.map((h) => {
    const what = `${h.event}${h.taskId ? ` #${h.taskId}` : ""}${h.hook ? ` ${h.hook}` : ""}`;
    return {
      level: "error",
      message: `held since ${h.since}: ${what} did not run its gate (${h.kind ?? h.cause}): ${h.reason}`,
      kind:
        h.kind === "untrusted_hook" ? "gate_untrusted" : h.kind === "gate_missing" ? "gate_missing" : "gate_unusable",
      path: h.hook ?? h.key,
    };
  });
  if (problem)
    checks.push({ level: "warn", message: `the leader's list of held events: ${problem}`, kind: "team_files" });
  return checks;
}

function problemsOf(checks: readonly Check[], section: ProblemKind): Problem[] {
  return checks
    .filter((c) => c.level === "warn" || c.level === "error")
    .map((c) => ({ kind: c.kind ?? section, path: c.path ?? c.file ?? c.field ?? "", message: c.message }));
}

// ---------------------------------------------------------------------------------------------
// Team dir

async function diagnoseTeam(
  teamDir: string,
): Promise<{ ok: true; identity: TeamIdentity; checks: Check[] } | { ok: false; checks: Check[] }> {
  const info = await statOrNull(teamDir);
  if (!info)
    return { ok: false, checks: [{ level: "error", message: `team dir ${teamDir} does not exist`, file: teamDir }] };
  if (!info.isDirectory())
    return {
      ok: false,
      checks: [{ level: "error", message: `team dir ${teamDir} is not a directory`, file: teamDir }],
    };
  if (!(await can(teamDir, fsConstants.R_OK | fsConstants.X_OK))) {
    return {
      ok: false,
      checks: [{ level: "error", message: `team dir ${teamDir} cannot be read (permission denied)`, file: teamDir }],
    };
  }
  const checks: Check[] = [];
  if (await can(teamDir, fsConstants.W_OK))
    checks.push({ level: "ok", message: `team dir ${teamDir}: readable and writable` });
  else
    checks.push({
      level: "error",
      message: `team dir ${teamDir} is not writable: the leader cannot write its ledger, locks or hook logs`,
      file: teamDir,
    });

  const config = await loadTeamConfig(teamDir);
  const id = config.identity;
  const summary = `team ${id.teamId}, task list ${id.taskListId}, lead ${id.leadName}, style ${id.style}`;
  if (!config.exists)
    checks.push({ level: "info", message: `no config.json: defaults apply (${summary})`, file: config.file });
  else if (config.warnings.length === 0)
    checks.push({ level: "ok", message: `config.json: ${summary}`, file: config.file });
  for (const warning of config.warnings) {
    const kind = warning === config.fileWarning ? "config_unreadable" : "config_field";
    checks.push({ level: "warn", message: warning, file: config.file, kind });
  }

  checks.push(...(await diagnoseTasks(teamDir, id.taskListId)));
  checks.push(...(await diagnoseInbox(teamDir, id.leadName)));
  return { ok: true, identity: id, checks };
}

async function diagnoseTasks(teamDir: string, taskListId: string): Promise<Check[]> {
  const dir = tasksDir(teamDir, taskListId);
  const info = await statOrNull(dir);
  if (!info) {
    const others = (await readdir(path.join(teamDir, "tasks")).catch(() => [] as string[])).filter(
      (n) => !n.startsWith("."),
    );
    if (others.length > 0) {
      return [
        {
          level: "warn",
          message: `no task list ${dir}, but tasks/ holds ${others.join(", ")}: is taskListId "${taskListId}" right? (config.json taskListId, or --task-list)`,
          file: dir,
        },
      ];
    }
    return [
      { level: "info", message: `no task list yet (${dir}): nothing to gate until a task is created`, file: dir },
    ];
  }
  let tasks: Awaited<ReturnType<typeof readAllTasks>>;
  try {
    tasks = await readAllTasks(teamDir, taskListId);
  } catch (error) {
    return [
      {
        level: "error",
        message: `cannot read the task list ${dir} (${errnoCode(error) ?? "error"}): no task event is seen`,
        file: dir,
      },
    ];
  }
  const count = (status: string): number => tasks.tasks.filter((t) => t.status === status).length;
  const checks: Check[] = [
    {
      level: "ok",
      message: `task list ${dir}: ${tasks.tasks.length} task(s) (${count("pending")} pending, ${count("in_progress")} in progress, ${count("completed")} completed)`,
    },
  ];
  for (const problem of tasks.problems) {
    checks.push({
      level: "warn",
      message: `${problem.message} — not a task, skipped by the leader`,
      file: problem.file,
      field: problem.field || undefined,
    });
  }
  return checks;
}

async function diagnoseInbox(teamDir: string, leadName: string): Promise<Check[]> {
  const read = await readInbox(teamDir, "team", leadName);
  if (!read.ok) {
    const { file, field, message } = read.problem;
    return [
      {
        level: "error",
        message: `${message}: the leader cannot see idle notifications`,
        file,
        field: field || undefined,
      },
    ];
  }
  if (!read.exists)
    return [
      {
        level: "info",
        message: `no leader inbox yet (${read.file}): created when a member first reports idle`,
        file: read.file,
      },
    ];
  const unread = read.messages.filter((m) => !m.message.read).length;
  const checks: Check[] = [
    { level: "ok", message: `leader inbox ${read.file}: ${read.messages.length} message(s), ${unread} unread` },
  ];
  for (const problem of read.skipped) {
    checks.push({
      level: "warn",
      message: `${problem.message} — not a message, skipped`,
      file: problem.file,
      field: problem.field || undefined,
    });
  }
  return checks;
}

// ---------------------------------------------------------------------------------------------
// Policy

/**
 * Every setting `watch` would apply without flags, computed as the leader computes it
 * (settings/team-settings.ts resolveSettings), and where each came from; a refused `hooks` block is one
 * warning per problem. `shownAlready`: warnings the team checks give (an unusable config.json), not
 * repeated here.
 */
function diagnosePolicy(
  config: Pick<LoadedTeamConfig, "hooks" | "noHooks" | "file">,
  env: DoctorInput["env"],
  shownAlready: readonly string[] = [],
): PolicyReport {
  const settings = resolveSettings({ hooks: config.hooks, noBlock: config.noHooks, file: config.file, env });
  const checks = settings.problems
    .filter((p) => !shownAlready.includes(p.message))
    .map((p): Check => ({ level: "warn", message: p.message, file: config.file, kind: p.kind, path: p.path }));
  return { ...settingsReport(settings), checks };
}

// ---------------------------------------------------------------------------------------------
// Locks

async function diagnoseLocks(teamDir: string, now: number): Promise<{ found: LockReport[]; checks: Check[] }> {
  const found: LockReport[] = [];
  const checks: Check[] = [];
  for (const file of await findLockFiles(teamDir)) {
    if (/\.stale\.[^/]*\.lock$/.test(file)) {
      checks.push({
        level: "info",
        message: `${file}: left over from a stale-lock takeover; inert, safe to delete`,
        file,
      });
      continue;
    }
    let lock: Awaited<ReturnType<typeof inspectLock>>;
    try {
      lock = await inspectLock(file.slice(0, -".lock".length), now);
    } catch (error) {
      checks.push({ level: "warn", message: `${file}: cannot read (${errnoCode(error) ?? "error"})`, file });
      continue;
    }
    if (!lock.held) continue; // released since the listing
    found.push({
      file,
      holder: lock.holder,
      ageMs: lock.ageMs,
      holderAlive: lock.holderAlive,
      stale: lock.stale,
      staleReason: lock.staleReason,
    });
    const who =
      lock.holder.pid === null
        ? "no readable pid"
        : `pid ${lock.holder.pid}${lock.holder.label ? ` (${lock.holder.label})` : ""}`;
    const age = `${Math.round(lock.ageMs / 1000)} s old`;
    if (lock.stale) {
      checks.push({
        level: "warn",
        message: `stale lock ${file}: ${lock.staleReason ?? "stale"}; the next writer takes it over (or: rm -f '${file}')`,
        file,
      });
    } else if (lock.ageMs > LONG_HELD_LOCK_MS) {
      checks.push({
        level: "warn",
        message: `lock ${file} held by ${who}, ${age}: other writers give up after 10 s`,
        file,
      });
    } else {
      checks.push({ level: "info", message: `lock ${file} held by ${who}, ${age}`, file });
    }
  }
  if (checks.length === 0) checks.push({ level: "ok", message: "no lock files left behind" });
  return { found, checks };
}

/** Every `*.lock` under the team dir (symlinks not followed, a few levels deep: the layout is shallow). */
async function findLockFiles(root: string, depth = 0): Promise<string[]> {
  let entries: Dirent[];
  try {
    entries = await readdir(root, { withFileTypes: true });
  } catch {
    return []; // unreadable or gone: the team checks above report what matters
  }
  const out: string[] = [];
  for (const entry of entries) {
    const full = path.join(root, entry.name);
    if (entry.isDirectory() && depth < 6 && entry.name !== "node_modules")
      out.push(...(await findLockFiles(full, depth + 1)));
    else if (entry.isFile() && entry.name.endsWith(".lock")) out.push(full);
  }
  return out.sort();
}
