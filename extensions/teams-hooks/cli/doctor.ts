/**
 * `pi-teams-hooks doctor`: prints the checks of doctor/diagnose.ts in readable sections (or `--json`),
 * and exits 1 when one of them would stop a gate from running.
 */
import path from "node:path";
import { type CliIo, type ParsedArgs, paint, settingsRows, str, wantsColour } from "./io.js";
import { HOOK_BASE_NAMES } from "../contract/contract.js";
import { type Check, type CheckLevel, type DoctorReport, type EventHookReport, diagnose } from "../doctor/diagnose.js";
import { HooksError } from "../contract/errors.js";
import { requireDirectory, resolveTeamDirFlags } from "../team/paths.js";
import { terminalWidth } from "../text/terminal.js";
import { displayWidth, padEnd, truncate } from "../text/width.js";
import { reportInForce } from "../settings/team-settings.js";

export async function doctorCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const v = args.values;
  if (args.positionals.length > 0) throw new HooksError("E_USAGE", `unexpected argument "${args.positionals[0]}"`);
  // A path that is not there is exit 2, as for every command; a team dir that is there but wrong is
  // what the checks are for (exit 1).
  const teamDir = await resolveTeamDirFlags({
    teamDir: str(v["team-dir"]),
    team: str(v.team),
    env: io.env,
    cwd: io.cwd,
  });
  const hooksFlag = str(v["hooks-dir"]);
  if (hooksFlag !== undefined)
    await requireDirectory(
      path.resolve(io.cwd, hooksFlag),
      `--hooks-dir ${path.resolve(io.cwd, hooksFlag)}`,
      "E_HOOKS_DIR",
    );
  const report = await diagnose({ teamDir, hooksDir: str(v["hooks-dir"]), env: io.env, cwd: io.cwd });
  io.stdout(v.json ? `${JSON.stringify(report, null, 2)}\n` : renderReport(report, wantsColour(io), terminalWidth(io)));
  return report.errors > 0 ? 1 : 0;
}

const MARKS: Readonly<
  Record<CheckLevel, { unicode: string; ascii: string; colour: "green" | "dim" | "yellow" | "red" }>
> = {
  ok: { unicode: "✓", ascii: "ok  ", colour: "green" },
  info: { unicode: "·", ascii: "--  ", colour: "dim" },
  warn: { unicode: "!", ascii: "warn", colour: "yellow" },
  error: { unicode: "✗", ascii: "FAIL", colour: "red" },
};

/**
 * The human report: one section per concern, one line per check, worst first within an event. The
 * hook rows and the settings rows fit `width` (their commands, values and origins are cut with `…`);
 * a check's message is never cut (it says what to fix): the terminal wraps it.
 */
function renderReport(report: DoctorReport, colour: boolean, width = Number.POSITIVE_INFINITY): string {
  const mark = (level: CheckLevel): string =>
    colour ? paint(MARKS[level].unicode, MARKS[level].colour, true) : MARKS[level].ascii;
  const line = (check: Check, indent = "  "): string => `${indent}${mark(check.level)} ${check.message}\n`;
  const heading = (title: string): string => (colour ? `\u001b[1m${title}\u001b[0m\n` : `${title}\n`);
  let out = `pi-teams-hooks doctor: ${report.teamDir}\n\n`;

  out += heading("Hooks");
  for (const check of [...report.hooksDir.checks, ...report.teamHooksDir.checks]) out += line(check);
  for (const event of report.hooks) {
    if (!hasChain(event)) {
      // The v1 picture: one global file or none (the hooks dir unusable: said once above).
      if (event.checks.length === 0) continue;
      const chosen = event.hook ? `${path.basename(event.hook.path)}` : "no hook";
      out += `  ${event.event} (${HOOK_BASE_NAMES[event.event]}): ${chosen}\n`;
      for (const check of event.checks) out += line(check, "    ");
      continue;
    }
    const hooks = event.chain.hooks;
    out += `  ${event.event} (${HOOK_BASE_NAMES[event.event]}): ${hooks.length === 0 ? "no hook" : `${hooks.length} hook(s), in this order:`}\n`;
    const nameWidth = Math.max(...hooks.map((h) => displayWidth(h.name)));
    for (const [index, hook] of hooks.entries()) {
      const head = `    ${index + 1}. ${hook.layer.padEnd(6)} ${padEnd(hook.name, nameWidth)}  `;
      // The command gives way to a narrow terminal, down to 12 columns; the name never does.
      out += `${head}${truncate(hook.command.map(shellWord).join(" "), Math.max(12, width - displayWidth(head)))}\n`;
    }
    for (const check of [...event.checks, ...event.chain.checks]) out += line(check, "    ");
  }

  out += `\n${heading("Team")}`;
  for (const check of report.team.checks) out += line(check);

  if (report.access) {
    const user = report.access.leader.user;
    out += `\n${heading(`Access (who besides ${user}, the leader's user, can change the gates and its state)`)}`;
    for (const check of report.access.checks) out += line(check);
  }

  out += `\n${heading("Policy (config.json hooks > environment > default; flags of watch and run override)")}`;
  out += settingsRows(reportInForce(report.policy), width);
  for (const check of report.policy.checks) out += line(check);

  if (report.team.identity) {
    out += `\n${heading("Locks")}`;
    for (const check of report.locks.checks) out += line(check);
  }

  const verdict =
    report.errors > 0
      ? `${report.errors} error(s), ${report.warnings} warning(s): a gate would not run as configured`
      : report.warnings > 0
        ? `no errors, ${report.warnings} warning(s)`
        : "no problems found";
  return `${out}\n${verdict}\n`;
}

/** More than the global v1 file, or something about the chain worth saying. */
function hasChain(event: EventHookReport): boolean {
  return event.chain.checks.length > 0 || event.chain.hooks.some((h) => !(h.layer === "global" && h.kind === "v1"));
}

/** An argv word as a person would type it: quoted only when it needs to be. */
function shellWord(word: string): string {
  return /^[A-Za-z0-9_./=:@%+,-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}
