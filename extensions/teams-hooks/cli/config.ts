/**
 * `pi-teams-hooks policy get|set` and `pi-teams-hooks config`. `policy` shows the settings the leader
 * would apply (failure policy, timeout, failure modes, limits) with where each came from, and writes
 * config.json `hooks` under the config lock (team/config-file.ts `updateHooksConfig`). `config` shows all of
 * it for a given command line, after every event's whole chain with each gate's trust state
 * (doctor/config-view.ts gathers it; this module prints it).
 */
import path from "node:path";
import type { z } from "zod";
import { type CliIo, type FlagValue, type ParsedArgs, settingsRows, str, teamSetupInput } from "./io.js";
import { formFlags } from "./commands.js";
import { HOOK_EVENTS, type HookEventName } from "../contract/contract.js";
import { HooksError } from "../contract/errors.js";
import { type ConfigView, type GateView, inspectConfig } from "../doctor/config-view.js";
import {
  FAILURE_MODES,
  FailureModeSettingSchema,
  limitFlagSchema,
  resolveSettings,
  settingsReport,
  type EventPoint,
  type FailureMode,
  type LimitName,
} from "../settings/team-settings.js";
import { SETTING_EXPECTED, invalidFlagValue } from "../text/messages.js";
import {
  FailureActionSettingSchema,
  FollowupOwnerSettingSchema,
  MaxReopensSettingSchema,
  type EffectivePolicy,
} from "../settings/options.js";
import { LIMIT_NAMES, SETTINGS, rangeText, showSetting } from "../settings/table.js";
import { loadTeamConfig, updateHooksConfig } from "../team/config-file.js";
import { resolveTeamDirFlags } from "../team/paths.js";
import { resolveTeamSetup } from "../team/setup.js";
import { terminalWidth } from "../text/terminal.js";

/** What `policy set` writes, and `--reset` removes. */
const WRITTEN = [
  "failureAction",
  "maxReopensPerTask",
  "followupOwner",
  "failureMode",
  "limits",
] as const satisfies ReadonlyArray<keyof EffectivePolicy | "failureMode" | "limits">;
/** What only `policy set` takes (the command table's), for a `policy get` given one. */
const SET_FLAGS = formFlags("policy", "set").filter((flag) => !formFlags("policy", "get").includes(flag));

export async function policyCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const v = args.values;
  const [action = "get", ...extra] = args.positionals;
  if (extra.length > 0) throw new HooksError("E_USAGE", `unexpected argument "${extra[0]}"`);
  if (action !== "get" && action !== "set") throw new HooksError("E_USAGE", `unknown action "${action}" (get or set)`);
  const teamDir = await resolveTeamDirFlags({
    teamDir: str(v["team-dir"]),
    team: str(v.team),
    env: io.env,
    cwd: io.cwd,
  });

  let written: string | null = null;
  if (action === "get") {
    const misplaced = SET_FLAGS.find((flag) => v[flag] !== undefined);
    if (misplaced) throw new HooksError("E_USAGE", `--${misplaced} only applies to "policy set"`);
  } else {
    const patch = parseSetFlags(v);
    let changed: string[] = [];
    const result = await updateHooksConfig(
      teamDir,
      (hooks) => {
        const next = patchFor(hooks, patch);
        changed = Object.entries(next).map(([key, value]) =>
          value === undefined ? `${key} removed` : `${key} = ${JSON.stringify(value)}`,
        );
        return next;
      },
      { label: "pi-teams-hooks policy set" },
    );
    if (!result.ok) throw new HooksError("E_CONFIG", result.problem.message);
    written = result.file;
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
    const out = {
      teamDir,
      configFile: config.file,
      written: written ?? undefined,
      policy: values,
      ...rest,
      warnings,
    };
    io.stdout(`${JSON.stringify(out)}\n`);
  } else {
    const title = action === "set" ? "effective policy now" : `effective policy of ${teamDir}`;
    io.stdout(`${title}:\n${settingsRows(settings, terminalWidth(io))}`);
  }
  return 0;
}

/** What the flags of `policy set` ask for, every value checked before anything is written. */
interface SetRequest {
  reset: boolean;
  top: Record<string, unknown>;
  /** `--failure-mode` in the order given: a mode for every event (`event` null), or for one. */
  modes: Array<{ event: HookEventName | null; mode: FailureMode }>;
  limits: Partial<Record<LimitName, number>>;
}

function parseSetFlags(v: Record<string, FlagValue>): SetRequest {
  const request: SetRequest = { reset: v.reset === true, top: {}, modes: [], limits: {} };
  // The failure policy: each flag of `policy set` writes its setting's field of the `hooks` block.
  const policy = [
    ["failureAction", FailureActionSettingSchema],
    ["maxReopensPerTask", MaxReopensSettingSchema],
    ["followupOwner", FollowupOwnerSettingSchema],
  ] as const;
  for (const [name, schema] of policy) {
    const flag = SETTINGS[name].setFlag;
    const raw = str(v[flag.slice(2)]);
    if (raw !== undefined)
      request.top[name] = parseFlag(schema as z.ZodType<unknown, unknown>, raw, flag, SETTING_EXPECTED[name]);
  }
  const modes = v["failure-mode"];
  for (const raw of Array.isArray(modes) ? modes : modes === undefined ? [] : [modes])
    request.modes.push(parseMode(String(raw)));
  for (const name of LIMIT_NAMES) {
    const { setFlag, field } = SETTINGS[name];
    const raw = str(v[setFlag.slice(2)]);
    if (raw === undefined) continue;
    const expected = `a whole number from ${rangeText(name)}`;
    request.limits[name] = parseFlag(limitFlagSchema(name), raw, `${setFlag} (${field})`, expected) as number;
  }
  if (
    !request.reset &&
    Object.keys(request.top).length === 0 &&
    request.modes.length === 0 &&
    Object.keys(request.limits).length === 0
  ) {
    throw new HooksError(
      "E_USAGE",
      `nothing to set: give ${SET_FLAGS.filter((f) => f !== "reset")
        .map((f) => `--${f}`)
        .join(", ")}, or --reset`,
    );
  }
  return request;
}

const MODE_EXPECTED = `${FAILURE_MODES.join(" or ")} for every event, or EVENT=${FAILURE_MODES.join("|")} for one (EVENT: ${HOOK_EVENTS.join(", ")})`;

/** `open`, `closed`, or `EVENT=open|closed`. */
function parseMode(raw: string): { event: HookEventName | null; mode: FailureMode } {
  const at = raw.indexOf("=");
  const event = at < 0 ? null : raw.slice(0, at).trim();
  const mode = FailureModeSettingSchema.safeParse(at < 0 ? raw : raw.slice(at + 1));
  const known = event === null || (HOOK_EVENTS as readonly string[]).includes(event);
  if (!mode.success || !known)
    throw new HooksError("E_USAGE", invalidFlagValue("--failure-mode (hooks.failureMode)", raw, MODE_EXPECTED));
  return { event: event as HookEventName | null, mode: mode.data };
}

/**
 * The keys to write, given the block as it is under the lock: `--reset` first removes every setting
 * `policy set` writes, then the flags set theirs. A mode for one event keeps the others' (a mode for
 * every event becomes one per event); a limit keeps the other limits. A nested value that is not what
 * the schema allows is refused, never overwritten in part.
 */
function patchFor(current: Readonly<Record<string, unknown>>, request: SetRequest): Record<string, unknown> {
  const patch: Record<string, unknown> = request.reset
    ? Object.fromEntries(WRITTEN.map((key) => [key, undefined]))
    : {};
  Object.assign(patch, request.top);
  if (request.modes.length > 0) {
    let value: unknown = request.reset ? undefined : current.failureMode;
    for (const { event, mode } of request.modes) {
      if (event === null) value = mode;
      else value = { ...modesOf(value, current.failureMode), [event]: mode };
    }
    patch.failureMode = value;
  }
  if (Object.keys(request.limits).length > 0) {
    const limits = request.reset ? undefined : current.limits;
    if (limits !== undefined && limits !== null && (typeof limits !== "object" || Array.isArray(limits))) {
      throw new HooksError(
        "E_CONFIG",
        `config.json hooks.limits is ${JSON.stringify(limits)}, not an object: fix it first (nothing written)`,
      );
    }
    patch.limits = { ...(limits ?? {}), ...request.limits };
  }
  return patch;
}

/** A `failureMode` value as one mode per event. */
function modesOf(value: unknown, written: unknown): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value === "string") {
    const mode = FailureModeSettingSchema.safeParse(value);
    if (mode.success) return Object.fromEntries(HOOK_EVENTS.map((e) => [e, mode.data]));
  } else if (typeof value === "object" && !Array.isArray(value)) {
    return { ...(value as Record<string, unknown>) };
  }
  throw new HooksError(
    "E_CONFIG",
    `config.json hooks.failureMode is ${JSON.stringify(written)}, not ${MODE_EXPECTED}: fix it first, or set every event with --failure-mode open|closed (nothing written)`,
  );
}

function parseFlag<T>(schema: z.ZodType<T, unknown>, raw: string, flag: string, expected: string): T {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new HooksError("E_USAGE", invalidFlagValue(flag, raw, expected));
  return parsed.data;
}

// ---------------------------------------------------------------------------------------------
// config

export async function configCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const v = args.values;
  if (args.positionals.length > 0) throw new HooksError("E_USAGE", `unexpected argument "${args.positionals[0]}"`);
  const setup = await resolveTeamSetup(teamSetupInput(v, io));
  const view = await inspectConfig(setup);
  // `--timeout 90s` reaches the settings as milliseconds: name the flag the user gave.
  if (str(v.timeout) !== undefined) view.settings.timeoutMs = { ...view.settings.timeoutMs, origin: "--timeout" };
  // The block's problems are part of the view; the other warnings (environment values, config.json identity fields) go
  // to stderr.
  const warnings = setup.warnings.filter((w) => !view.block.problems.includes(w));
  for (const warning of warnings) io.stderr(`warning: ${warning}\n`);
  io.stdout(v.json ? `${JSON.stringify({ ...view, warnings }, null, 2)}\n` : renderConfig(view, terminalWidth(io)));
  return view.block.valid ? 0 : 1;
}

const TRUST_WORDS: Readonly<Record<GateView["trust"], string>> = {
  trusted: "trusted",
  changed: "CHANGED",
  new: "NEW",
  missing: "MISSING",
  no_record: "no record",
};
/** A skipped file by its path in its layer; a binding that cannot run (`http:ci`, `binding:lint`) as it is named. */
function skippedName(file: string, layerDir: string): string {
  return path.isAbsolute(file) ? path.relative(layerDir, file) || file : file;
}

const KIND_WORDS: Readonly<Record<GateView["kind"], string>> = {
  v1: "file",
  chain: ".d file",
  http: "http",
  binding: "binding",
};

/**
 * The human view: where things are, each event's chain in run order, then every setting with its origin (the settings
 * rows fit `columns`).
 */
function renderConfig(view: ConfigView, columns = Number.POSITIVE_INFINITY): string {
  const row = (name: string, value: string, origin = ""): string =>
    `  ${name.padEnd(27)} ${origin ? `${value.padEnd(16)} ${origin}` : value}\n`;
  const record = view.trustRecord;
  let out = `pi-teams-hooks config: ${view.teamDir}\n`;
  out += row("config file", view.configFile);
  out += row("task list", view.taskListId);
  out += row("lead", view.leadName);
  out += row("hooks dir", view.hooksDir.value, view.hooksDir.origin);
  out += row("team layer", view.teamHooksDir);
  out += row("hooks' working directory", view.cwd);
  const recordState =
    record.state === "ok"
      ? `${record.gates} gate(s)`
      : record.state === "none"
        ? "none yet: the leader's first start trusts the gates it finds"
        : `${record.problem ?? "invalid"}: every gate is untrusted`;
  out += row("trust record", `${record.file} (${recordState})`);

  out += `\nGates, in run order (trust: as pi-teams-hooks trust compares them)\n`;
  const all = HOOK_EVENTS.flatMap((event) => [...view.events[event].gates, ...view.events[event].missing]);
  const width = Math.max(0, ...all.map((g) => g.name.length));
  for (const event of HOOK_EVENTS) {
    const { gates, missing, dropped, skipped } = view.events[event];
    out += `  ${event}${gates.length === 0 ? ": none" : ""}\n`;
    const declared = pointLine(view.settings.events[event as HookEventName]);
    if (declared) out += `       hook point: ${declared}\n`;
    const line = (mark: string, g: GateView): string => {
      const detail = [g.trustDetail, g.kind === "http" || g.kind === "binding" ? g.command.join(" ") : null]
        .filter((x) => x)
        .join("; ");
      let text = `    ${mark.padStart(2)} ${g.name.padEnd(width)}  ${g.layer.padEnd(6)} ${KIND_WORDS[g.kind].padEnd(7)} ${TRUST_WORDS[g.trust]}${detail ? ` (${detail})` : ""}\n`;
      if (!g.enabled) {
        const off = g.kind === "binding" ? "the binding's settings.enabled" : "hooks.handlers[].enabled";
        text += `       disabled: skipped at every event (${off}: false; no approval needed)\n`;
      }
      if (g.settings) text += `       settings: ${g.settings}\n`;
      if (g.settingsError)
        text += `       settings line refused: ${g.settingsError} (the gate does not run; its events are held: hook_settings)\n`;
      if (g.insecure)
        text +=
          `       insecure: ${g.insecure}` +
          (view.settings.allowInsecureHooks.value ? " (runs: --allow-insecure-hooks)" : " (refused: insecure_hook)") +
          "\n";
      return text;
    };
    for (const [index, gate] of gates.entries()) out += line(`${index + 1}.`, gate);
    for (const gate of missing) out += line("-", gate);
    for (const d of dropped) out += `     dropped by the team: ${d.path} (${d.detail}; optional: no approval needed)\n`;
    for (const skip of skipped)
      out += `     skipped ${skippedName(skip.path, skip.layer === "team" ? view.teamHooksDir : view.hooksDir.value)} (${skip.layer}): ${skip.reason}\n`;
  }
  if (view.bindings.bindings.length > 0 || view.bindings.problem) {
    out += `\nBindings (added over the task API: ${view.bindings.file})\n`;
    if (view.bindings.problem) out += `  REFUSED: ${view.bindings.problem}\n`;
    for (const b of view.bindings.bindings) {
      const by = b.createdBy ? `, by ${b.createdBy}` : "";
      const why = b.problem
        ? `: ${b.problem}`
        : b.trust === "new"
          ? ": waits for the lead's approval (pi-teams-hooks trust)"
          : "";
      const names = b.file === null ? `handler ${b.handler}` : `file ${b.path ?? b.file}`;
      out += `  ${b.gate}  ${names}; ${b.events.join(", ")}${by}  ${b.trust === "trusted" ? "trusted" : b.trust.toUpperCase()}${why}\n`;
    }
  }
  // A handler of several events is one gate.
  const untrusted = new Set(
    all.filter((g) => g.trust === "changed" || g.trust === "new" || g.trust === "missing").map((g) => g.path),
  ).size;
  if (untrusted > 0) {
    out += view.settings.trustChanges.value
      ? `  ${untrusted} gate(s) not as trusted: they run as they are now (--trust-changes)\n`
      : `  ${untrusted} gate(s) not as trusted: their events are held until approved: pi-teams-hooks trust --team-dir ${view.teamDir}\n`;
  }

  const s = view.settings;
  out += `\nSettings (flag > config.json "hooks" > environment > default)\n`;
  out += settingsRows(s, columns);
  for (const name of ["trustChanges", "allowInsecureHooks"] as const)
    out += row(SETTINGS[name].label, showSetting(name, s[name].value), s[name].origin);
  const block = view.block;
  const from = block.from === "none" ? "no hooks block" : path.basename(view.configFile);
  out += row(
    "hooks block",
    block.valid ? "valid" : "REFUSED",
    block.valid ? from : `${block.problems.length} problem(s):`,
  );
  for (const problem of block.problems) out += `    ${problem}\n`;
  return out;
}

/** What a hook point declares of its own (`hooks.events.<event>`), one clause each; "" when nothing. */
function pointLine(point: EventPoint | undefined): string {
  if (!point) return "";
  const parts: string[] = [];
  if (point.modes.source === "config") parts.push(`modes ${point.modes.value.join(", ")}`);
  if (point.participation.source === "config") parts.push(`participation ${point.participation.value}`);
  if (!point.modes.value.includes("transform")) parts.push("no transform: a patch writes nothing");
  else if (point.writableFields.origin.includes("hooks.events."))
    parts.push(`writable ${point.writableFields.value.join(", ") || "none"}`);
  if (point.projection.origin.includes("hooks.events."))
    parts.push(`projection of ${Object.keys(point.projection.value).join(", ")}`);
  for (const [name, limit] of Object.entries(point.limits))
    if (limit.origin.includes("hooks.events.")) parts.push(`${name} ${limit.value}`);
  return parts.length > 0 ? `${parts.join("; ")} (config.json hooks.events)` : "";
}
