/**
 * `pi-teams-hooks policy get|set`: the settings the leader would apply (failure policy, timeout, failure
 * modes, limits) with where each came from, and writing `config.json` `hooks` under the config lock
 * (team/config.ts `updateHooksConfig`).
 */
import type { z } from "zod";
import { type CliIo, type FlagValue, type ParsedArgs, settingsRows, str } from "./io.js";
import { terminalWidth } from "../text/terminal.js";
import { HooksError } from "../contract/errors.js";
import { resolveSettings, settingsReport } from "../settings/hooks-config.js";
import { SETTING_EXPECTED, invalidFlagValue } from "../text/messages.js";
import { FailureActionSettingSchema, FollowupOwnerSettingSchema, MaxReopensSettingSchema, SETTING_FLAGS, type EffectivePolicy } from "../settings/options.js";
import { loadTeamConfig, updateHooksConfig } from "../team/config.js";
import { resolveTeamDirFlags } from "../team/paths.js";

const SETTINGS = ["failureAction", "maxReopensPerTask", "followupOwner"] as const satisfies ReadonlyArray<keyof EffectivePolicy>;
const SET_FLAGS = ["failure-action", "max-reopens", "followup-owner", "reset"] as const;

export async function policyCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const v = args.values;
  const [action = "get", ...extra] = args.positionals;
  if (extra.length > 0) throw new HooksError("E_USAGE", `unexpected argument "${extra[0]}"`);
  if (action !== "get" && action !== "set") throw new HooksError("E_USAGE", `unknown action "${action}" (get or set)`);
  const teamDir = await resolveTeamDirFlags({ teamDir: str(v["team-dir"]), team: str(v.team), env: io.env, cwd: io.cwd });

  let written: string | null = null;
  if (action === "get") {
    const misplaced = SET_FLAGS.find((flag) => v[flag] !== undefined);
    if (misplaced) throw new HooksError("E_USAGE", `--${misplaced} only applies to "policy set"`);
  } else {
    const patch = parseSetFlags(v);
    const result = await updateHooksConfig(teamDir, patch, { label: "pi-teams-hooks policy set" });
    if (!result.ok) throw new HooksError("E_CONFIG", result.problem.message);
    written = result.file;
    const changed = Object.entries(patch).map(([key, value]) => (value === undefined ? `${key} removed` : `${key} = ${JSON.stringify(value)}`));
    if (!v.json) io.stdout(`${result.created ? "created" : "updated"} ${result.file}: ${changed.join(", ")}\n`);
  }

  const config = await loadTeamConfig(teamDir);
  // What the leader would apply (no flags: `watch` without policy flags), computed as it computes it.
  const settings = resolveSettings({ hooks: config.hooks, noBlock: config.noHooks, file: config.file, env: io.env });
  const warnings = [...config.warnings.filter((w) => w !== config.fileWarning), ...settings.warnings];
  for (const warning of warnings) io.stderr(`warning: ${warning}\n`);
  const report = settingsReport(settings);
  if (v.json) {
    const { values, ...rest } = report;
    io.stdout(`${JSON.stringify({ teamDir, configFile: config.file, ...(written ? { written } : {}), policy: values, ...rest, warnings })}\n`);
  } else {
    io.stdout(`${action === "set" ? "effective policy now" : `effective policy of ${teamDir}`}:\n${settingsRows(report, terminalWidth(io))}`);
  }
  return 0;
}

/** The `hooks` keys to write; `--reset` first removes all three, then the flags given set theirs. */
function parseSetFlags(v: Record<string, FlagValue>): Record<string, unknown> {
  const patch: Record<string, unknown> = v.reset === true ? Object.fromEntries(SETTINGS.map((key) => [key, undefined])) : {};
  const action = str(v["failure-action"]);
  const reopens = str(v["max-reopens"]);
  const owner = str(v["followup-owner"]);
  if (action === undefined && reopens === undefined && owner === undefined && v.reset !== true) {
    throw new HooksError("E_USAGE", "nothing to set: give --failure-action, --max-reopens, --followup-owner, or --reset");
  }
  if (action !== undefined) patch.failureAction = parseFlag(FailureActionSettingSchema, action, SETTING_FLAGS.failureAction, SETTING_EXPECTED.failureAction);
  if (reopens !== undefined) patch.maxReopensPerTask = parseFlag(MaxReopensSettingSchema, reopens, SETTING_FLAGS.maxReopens, SETTING_EXPECTED.maxReopensPerTask);
  if (owner !== undefined) patch.followupOwner = parseFlag(FollowupOwnerSettingSchema, owner, SETTING_FLAGS.followupOwner, SETTING_EXPECTED.followupOwner);
  return patch;
}

function parseFlag<T>(schema: z.ZodType<T, unknown>, raw: string, flag: string, expected: string): T {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new HooksError("E_USAGE", invalidFlagValue(flag, raw, expected));
  return parsed.data;
}
