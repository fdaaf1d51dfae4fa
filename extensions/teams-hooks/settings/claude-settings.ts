/**
 * A Claude Code settings file (`.claude/settings.json`) read as gates, for `init --from-claude`: each
 * command hook of `TaskCompleted` and `TeammateIdle` becomes a wrapper gate that runs its command
 * unchanged. Everything else in the file is said, not guessed at: hooks of another type (http,
 * prompt, agent) are skipped by name, a matcher on these two events is pointed out (Claude Code
 * ignores it, so do we), and the other events are listed as not mapped.
 *
 * Only the parts that become wrappers are checked, and checked strictly: a wrong type there is a
 * problem naming the file and its JSON path, and the caller writes nothing. The rest of the file
 * (other events, unknown keys, other Claude settings) is not ours to judge.
 *
 * Pure: the parsed JSON and the file's absolute path are arguments; cli/init.ts reads and writes.
 */
import { CLAUDE_GATE_EVENTS, type ClaudeGateEvent } from "../contract/claude.js";
import { HOOK_BASE_NAMES, type HookEventName } from "../contract/contract.js";
import { DEFAULT_TIMEOUT_MS } from "../contract/setting-defaults.js";
import { parseHookSettings } from "./hook-line.js";
import { describeValue } from "../contract/errors.js";
import { DEFAULT_LIMITS } from "./team-settings.js";
import { MAX_TIMEOUT_MS } from "./table.js";

/** What Claude Code gives a command hook that names no timeout. */
const CLAUDE_DEFAULT_TIMEOUT_S = 600;

/** The longest timeout a wrapper can carry: the runner's longest, in whole seconds (about 24 days). */
const MAX_TIMEOUT_S = Math.floor(MAX_TIMEOUT_MS / 1000);

/** One wrapper gate to write. */
export interface ClaudeWrapper {
  claudeEvent: ClaudeGateEvent;
  event: HookEventName;
  /** 1, 2, … per event, in file order across the matcher groups. */
  n: number;
  /** Under the hooks dir, `/`-separated: `on_task_completed.d/claude-1.sh`. */
  relPath: string;
  /** Where the hook sits in the settings file: `hooks.TaskCompleted[0].hooks[1]`. */
  field: string;
  command: string;
  /** Whole seconds; null: the hook gives none. */
  timeoutSeconds: number | null;
  /** The file's text: `#!` line, settings line, provenance line, the command. */
  content: string;
}

/**
 * Something in the file that does not become a wrapper, or does with a caveat. `field`: its JSON
 * path; `message`: the whole line for people (`skipped hooks.TaskCompleted[1].hooks[0]: …`).
 */
interface ClaudeNote {
  kind:
    | "skipped"
    | "ignored_matcher"
    | "async"
    | "timeout_rounded"
    | "no_timeout"
    | "over_deadline"
    | "not_mapped"
    | "hooks_disabled";
  field: string;
  message: string;
}

export type ClaudePlan =
  | { kind: "plan"; wrappers: ClaudeWrapper[]; notes: ClaudeNote[] }
  /** Each problem a full line: `<file>: hooks.TaskCompleted[0].hooks[1].command: expected a string, got 42`. */
  | { kind: "invalid"; problems: string[] };

/** The wrapper's settings line: the other half of the program reads `format` and `timeout` from it. */
export function claudeSettingsLine(timeoutSeconds: number | null): string {
  return `# pi-teams-hooks: format=claude${timeoutSeconds === null ? "" : ` timeout=${timeoutSeconds}s`}`;
}

/**
 * `on_task_completed.d/claude-1.sh`: the chain dir's name is computed as gates/chain.ts does, which settings/ may not
 * import.
 */
export function claudeWrapperPath(event: HookEventName, n: number): string {
  return `${HOOK_BASE_NAMES[event]}.d/claude-${n}.sh`;
}

/**
 * The wrappers and notes for `raw` (the parsed settings file), or every problem found. `file` is the
 * settings file's absolute path: it names the file in problems and in each wrapper's provenance line.
 */
export function planClaudeWrappers(raw: unknown, file: string): ClaudePlan {
  const problems: string[] = [];
  const wrappers: ClaudeWrapper[] = [];
  const notes: ClaudeNote[] = [];
  const problem = (field: string, expected: string, value: unknown): void => {
    problems.push(`${file}: ${field ? `${field}: ` : ""}expected ${expected}, got ${describeValue(value)}`);
  };

  if (!isObject(raw)) {
    problem("", "an object (Claude Code settings)", raw);
    return { kind: "invalid", problems };
  }
  if (raw.disableAllHooks === true) {
    notes.push({
      kind: "hooks_disabled",
      field: "disableAllHooks",
      message:
        "note: disableAllHooks is true: Claude Code runs none of these hooks; the wrappers are written all the same",
    });
  }
  const hooks = raw.hooks;
  if (hooks === undefined || hooks === null) return { kind: "plan", wrappers, notes };
  if (!isObject(hooks)) {
    problem("hooks", "an object (event name → matcher groups)", hooks);
    return { kind: "invalid", problems };
  }

  const unmapped = Object.keys(hooks).filter((name) => !isGateEvent(name));
  for (const claudeEvent of Object.keys(CLAUDE_GATE_EVENTS) as ClaudeGateEvent[]) {
    const groups = hooks[claudeEvent];
    if (groups === undefined || groups === null) continue;
    const groupsField = `hooks.${claudeEvent}`;
    if (!Array.isArray(groups)) {
      problem(groupsField, "an array of matcher groups", groups);
      continue;
    }
    const event = CLAUDE_GATE_EVENTS[claudeEvent];
    let n = 0;
    for (const [g, group] of groups.entries()) {
      const groupField = `${groupsField}[${g}]`;
      if (!isObject(group)) {
        problem(groupField, 'an object ({"hooks": [...]})', group);
        continue;
      }
      // "" and "*" match everything anyway: ignoring them changes nothing, so they are not worth a note.
      if (group.matcher !== undefined && group.matcher !== "" && group.matcher !== "*") {
        notes.push({
          kind: "ignored_matcher",
          field: `${groupField}.matcher`,
          message: `note: ${groupField}.matcher ${describeValue(group.matcher)} is ignored: ${claudeEvent} takes no matcher (Claude Code runs these hooks every time, and so do the wrappers)`,
        });
      }
      if (!Array.isArray(group.hooks)) {
        problem(`${groupField}.hooks`, "an array of hooks", group.hooks);
        continue;
      }
      for (const [h, hook] of group.hooks.entries()) {
        const field = `${groupField}.hooks[${h}]`;
        if (!isObject(hook)) {
          problem(field, 'an object ({"type": "command", "command": "..."})', hook);
          continue;
        }
        if (typeof hook.type !== "string") {
          problem(`${field}.type`, 'a string ("command", "http", "prompt" or "agent")', hook.type);
          continue;
        }
        if (hook.type !== "command") {
          notes.push({
            kind: "skipped",
            field,
            message: `skipped ${field}: type ${JSON.stringify(hook.type)} (only command hooks can run here)`,
          });
          continue;
        }
        const command = hook.command;
        if (typeof command !== "string") {
          problem(`${field}.command`, "a string", command);
          continue;
        }
        if (command.trim() === "") {
          // An empty script exits 0: the gate would pass every task without checking anything.
          problem(`${field}.command`, "a command, not blank", command);
          continue;
        }
        const timeout = timeoutOf(hook.timeout);
        if (timeout === "invalid") {
          problem(`${field}.timeout`, `a number of seconds, more than 0 and at most ${MAX_TIMEOUT_S}`, hook.timeout);
          continue;
        }
        if (timeout !== null && timeout !== hook.timeout) {
          notes.push({
            kind: "timeout_rounded",
            field: `${field}.timeout`,
            message: `note: ${field}.timeout ${String(hook.timeout)} is rounded up to ${timeout} s (a wrapper's timeout is in whole seconds)`,
          });
        }
        if (hook.async === true) {
          notes.push({
            kind: "async",
            field: `${field}.async`,
            message: `note: ${field}.async is true: Claude Code does not wait for this hook, but as a gate it is waited for, and its failure counts`,
          });
        }
        const relPath = claudeWrapperPath(event, n + 1);
        const content = wrapperText(claudeEvent, n + 1, file, command, timeout);
        // Read back as the runner reads it: a command whose own lines look like a second settings
        // line near the top would stop the gate from running at all.
        const readBack = parseHookSettings(content, event, relPath);
        if (!readBack.ok || readBack.settings?.format !== "claude") {
          problems.push(
            `${file}: ${field}.command: the wrapper would not run (${readBack.ok ? "its settings line is not read as format=claude" : readBack.error})`,
          );
          continue;
        }
        n += 1;
        wrappers.push({ claudeEvent, event, n, relPath, field, command, timeoutSeconds: timeout, content });
        if (timeout !== null && timeout * 1000 > DEFAULT_LIMITS.chainDeadlineMs) {
          notes.push({
            kind: "over_deadline",
            field: `${field}.timeout`,
            message: `note: ${relPath}: its timeout of ${timeout} s is longer than the chain deadline (${DEFAULT_LIMITS.chainDeadlineMs / 1000} s unless config.json hooks.limits.chainDeadlineMs says otherwise), which cuts it short`,
          });
        }
      }
    }
  }
  if (problems.length > 0) return { kind: "invalid", problems };
  const untimed = wrappers.filter((w) => w.timeoutSeconds === null);
  if (untimed.length > 0) {
    notes.push({
      kind: "no_timeout",
      field: "hooks",
      message: `note: ${untimed.map((w) => w.relPath).join(", ")}: no timeout in the settings, so the hook timeout in force applies (${DEFAULT_TIMEOUT_MS / 1000} s unless set; doctor shows it), where Claude Code would give ${CLAUDE_DEFAULT_TIMEOUT_S} s`,
    });
  }
  if (unmapped.length > 0) {
    notes.push({
      kind: "not_mapped",
      field: "hooks",
      message: `not mapped: ${unmapped.join(", ")} (only TaskCompleted and TeammateIdle become gates; the other events have no counterpart here)`,
    });
  }
  return { kind: "plan", wrappers, notes };
}

function wrapperText(
  claudeEvent: ClaudeGateEvent,
  n: number,
  file: string,
  command: string,
  timeout: number | null,
): string {
  // A newline in the path would end the comment and make the rest of the path a command line.
  const from = /[\r\n]/.test(file) ? JSON.stringify(file) : file;
  return [
    "#!/usr/bin/env bash",
    claudeSettingsLine(timeout),
    `# Claude Code's ${claudeEvent} hook ${n} from ${from}, run unchanged (written by pi-teams-hooks init --from-claude).`,
    command.endsWith("\n") ? command : `${command}\n`,
  ].join("\n");
}

/**
 * Whole seconds, rounded up (a 0.5 s timeout must not become none); null when absent; "invalid"
 * otherwise, a timeout longer than the runner can wait included: a settings line it cannot read
 * stops the gate from running at all.
 */
function timeoutOf(value: unknown): number | null | "invalid" {
  if (value === undefined || value === null) return null;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0 || Math.ceil(value) > MAX_TIMEOUT_S)
    return "invalid";
  return Math.ceil(value);
}

function isGateEvent(name: string): name is ClaudeGateEvent {
  return Object.hasOwn(CLAUDE_GATE_EVENTS, name);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
