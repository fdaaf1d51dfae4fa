/**
 * A gate's own settings, on one comment line near the top of its file (docs/writing-hooks.md,
 * "Per-hook settings"):
 *
 *   # pi-teams-hooks: timeout=300s members=impl-*,qa owner=* subject=*api* labels=backend mode=shadow
 *   // pi-teams-hooks: format=claude            (the same line in JavaScript)
 *
 * The line lives in the gate's content, so the content hash that trust keeps covers it: nobody changes
 * how a trusted gate is run without the change being refused like any other edit. A line that cannot
 * be read whole (an unknown key, a bad value, a key twice, a second settings line) stops the gate: it
 * does not run, and the run is a closed error naming the key and the line, because a gate run with
 * settings it did not ask for would judge what its author never meant it to.
 *
 * Matchers (`members`, `owner`, `subject`, `labels`, `paths`) choose the events a gate judges; a gate
 * whose matchers do not match is skipped, and its log says which matcher did not.
 */
import { CLAUDE_EVENT_NAMES } from "../contract/claude.js";
import type { HookEventName } from "../contract/contract.js";
import { MAX_TIMEOUT_MS } from "./options.js";

/** The line is looked for in the file's first this many lines… */
export const SETTINGS_LINE_WINDOW = 10;

const MARKER = /^\s*(?:#|\/\/)\s*pi-teams-hooks:(.*)$/;

export const HOOK_MODES = ["enforce", "shadow"] as const;
export type HookMode = (typeof HOOK_MODES)[number];
export const HOOK_FORMATS = ["v1", "claude"] as const;
export type HookFormat = (typeof HOOK_FORMATS)[number];
export const MATCHER_KEYS = ["members", "owner", "subject", "labels", "paths"] as const;
export type MatcherKey = (typeof MATCHER_KEYS)[number];
const KEYS = ["timeout", ...MATCHER_KEYS, "mode", "format"] as const;

/** What a settings line says; only the keys it gives. */
export interface HookSettings {
  /** The line's number in the file (1-based). */
  line: number;
  timeoutMs?: number;
  mode?: HookMode;
  format?: HookFormat;
  /** Each matcher's globs, as written. */
  match?: Partial<Record<MatcherKey, string[]>>;
}

export type HookSettingsRead = { ok: true; settings: HookSettings | null } | { ok: false; error: string };

/** Parses the settings line of a gate's text (its head is enough); `name` is what errors call the file. */
export function parseHookSettings(text: string, event: HookEventName, name: string): HookSettingsRead {
  const lines = text.split("\n", SETTINGS_LINE_WINDOW);
  let found: { line: number; body: string } | null = null;
  for (const [index, raw] of lines.entries()) {
    const match = MARKER.exec(raw.replace(/\r$/, ""));
    if (!match) continue;
    if (found) return { ok: false, error: `${name}:${index + 1}: a second pi-teams-hooks: line (the first is line ${found.line}); give every setting on one line` };
    found = { line: index + 1, body: match[1] ?? "" };
  }
  if (!found) return { ok: true, settings: null };
  const where = `${name}:${found.line}`;
  const tokens = splitTokens(found.body);
  if (typeof tokens === "string") return { ok: false, error: `${where}: ${tokens}` };
  const settings: HookSettings = { line: found.line };
  const seen = new Set<string>();
  for (const token of tokens) {
    const eq = token.indexOf("=");
    const key = eq < 0 ? token : token.slice(0, eq);
    const value = eq < 0 ? "" : token.slice(eq + 1);
    if (!(KEYS as readonly string[]).includes(key)) return { ok: false, error: `${where}: unknown setting "${key}" (settings: ${KEYS.join(", ")})` };
    if (eq < 0 || value === "") return { ok: false, error: `${where}: ${key} has no value (${key}=…)` };
    if (seen.has(key)) return { ok: false, error: `${where}: ${key} is given twice` };
    seen.add(key);
    const problem = setValue(settings, key as (typeof KEYS)[number], value, event);
    if (problem) return { ok: false, error: `${where}: ${key}=${value}: ${problem}` };
  }
  return { ok: true, settings };
}

/** Splits on blanks; a value may be double-quoted to hold blanks (`subject="fix *"`). A string: why not. */
function splitTokens(body: string): string[] | string {
  const tokens: string[] = [];
  let current = "";
  let quoted = false;
  let started = false;
  for (const char of body.trim()) {
    if (char === '"') {
      quoted = !quoted;
      started = true;
    } else if (!quoted && /\s/.test(char)) {
      if (started) tokens.push(current);
      current = "";
      started = false;
    } else {
      current += char;
      started = true;
    }
  }
  if (quoted) return "a double quote is not closed";
  if (started) tokens.push(current);
  return tokens;
}

function setValue(settings: HookSettings, key: (typeof KEYS)[number], value: string, event: HookEventName): string | null {
  switch (key) {
    case "timeout": {
      const ms = parseDuration(value);
      if (ms === null) return "expected a duration such as 90s, 5m, 1500ms or 2h";
      if (ms < 1 || ms > MAX_TIMEOUT_MS) return `out of range: 1ms to ${MAX_TIMEOUT_MS}ms, as for the global timeout`;
      settings.timeoutMs = ms;
      return null;
    }
    case "mode":
      if (!(HOOK_MODES as readonly string[]).includes(value)) return `expected ${HOOK_MODES.join(" or ")}`;
      settings.mode = value as HookMode;
      return null;
    case "format":
      if (!(HOOK_FORMATS as readonly string[]).includes(value)) return `expected ${HOOK_FORMATS.join(" or ")}`;
      if (value === "claude" && !CLAUDE_EVENT_NAMES[event]) return `Claude Code has no event for ${event} (format=claude is for on_task_completed, as TaskCompleted, and on_idle, as TeammateIdle)`;
      settings.format = value as HookFormat;
      return null;
    default: {
      const globs = value.split(",").map((g) => g.trim());
      if (globs.some((g) => g === "")) return "an empty glob in the list (globs are separated by commas)";
      settings.match = { ...settings.match, [key]: globs };
      return null;
    }
  }
}

/** `90s`, `5m`, `1500ms`, `2h`, or a bare number of seconds; null when it is none of these. */
export function parseDuration(text: string): number | null {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text);
  if (!match) return null;
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[match[2] ?? "s"] ?? 1_000;
  return Math.round(Number(match[1]) * unit);
}

/** What the matchers look at: the event's member, and the task as the gate would see it. */
export interface MatchFacts {
  member: string | null;
  task: { owner?: string | null; subject?: string; metadata?: Record<string, unknown> } | null;
}

/**
 * Why the gate's matchers do not match this event (one line), or null when they all do. All the
 * matchers given must match; a matcher matches when any of its globs does. `subject` ignores case.
 * `paths` judges only what it can see: a task whose worker recorded no `metadata.files` is run
 * (the gate cannot know what changed, and skipping it would switch it off in silence).
 */
export function unmatched(match: HookSettings["match"], facts: MatchFacts): string | null {
  if (!match) return null;
  const task = facts.task;
  for (const key of MATCHER_KEYS) {
    const globs = match[key];
    if (!globs) continue;
    const shown = `${key}=${globs.join(",")}`;
    switch (key) {
      case "members":
        if (facts.member === null) return `${shown}: the event has no member`;
        if (!anyGlob(globs, facts.member)) return `${shown}: member ${facts.member} does not match`;
        break;
      case "owner": {
        const owner = task?.owner ?? null;
        if (!owner) return `${shown}: ${task ? "the task has no owner" : "the event has no task"}`;
        if (!anyGlob(globs, owner)) return `${shown}: owner ${owner} does not match`;
        break;
      }
      case "subject": {
        if (!task) return `${shown}: the event has no task`;
        const subject = task.subject ?? "";
        if (!anyGlob(globs, subject.toLowerCase(), (g) => g.toLowerCase())) return `${shown}: the subject does not match`;
        break;
      }
      case "labels": {
        if (!task) return `${shown}: the event has no task`;
        const labels = stringList(task.metadata?.labels);
        if (labels.length === 0) return `${shown}: the task has no metadata.labels`;
        if (!labels.some((label) => anyGlob(globs, label))) return `${shown}: labels ${labels.join(",")} do not match`;
        break;
      }
      case "paths": {
        if (!task) return `${shown}: the event has no task`;
        const recorded = task.metadata?.files;
        if (recorded === undefined || recorded === null) break; // not recorded: run (see above)
        const files = stringList(recorded);
        if (!files.some((file) => anyGlob(globs, file, undefined, true))) return `${shown}: none of the ${files.length} file(s) in metadata.files match`;
        break;
      }
    }
  }
  return null;
}

/** A list of strings from an array (non-strings dropped) or one comma-separated string. */
function stringList(value: unknown): string[] {
  if (typeof value === "string") return value.split(",").map((s) => s.trim()).filter(Boolean);
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === "string");
  return [];
}

function anyGlob(globs: readonly string[], text: string, fold?: (glob: string) => string, pathLike = false): boolean {
  return globs.some((glob) => globRegExp(fold ? fold(glob) : glob, pathLike).test(text));
}

const globCache = new Map<string, RegExp>();

/**
 * A glob as a regular expression: `*` any run of characters, `?` one, `[abc]` a class. For paths
 * (`pathLike`), `*` and `?` stay inside one folder, `**` crosses folders (`src/**` matches every file
 * under src), and a glob without a `/` matches a file's base name (`*.ts` matches `src/a.ts`).
 */
export function globRegExp(glob: string, pathLike = false): RegExp {
  const key = `${pathLike ? "p" : "n"}:${glob}`;
  const cached = globCache.get(key);
  if (cached) return cached;
  const one = pathLike ? "[^/]" : ".";
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const char = glob.charAt(i);
    if (char === "*" && glob.charAt(i + 1) === "*" && pathLike) {
      const slash = glob.charAt(i + 2) === "/";
      out += slash ? "(?:.*/)?" : ".*";
      i += slash ? 2 : 1;
    } else if (char === "*") out += `${one}*`;
    else if (char === "?") out += one;
    else if (char === "[") {
      const end = glob.indexOf("]", i + 1);
      if (end > i + 1) {
        const body = glob.slice(i + 1, end).replace(/^!/, "^").replace(/\\/g, "\\\\");
        out += `[${body}]`;
        i = end;
      } else out += "\\[";
    } else out += char.replace(/[.+^${}()|\\\]]/g, "\\$&");
  }
  const anchored = pathLike && !glob.includes("/") ? `^(?:.*/)?${out}$` : `^${out}$`;
  const regexp = new RegExp(anchored, "s");
  if (globCache.size > 1_000) globCache.clear();
  globCache.set(key, regexp);
  return regexp;
}

/** The settings as one line for people (`doctor`, the logs): `timeout=300s members=impl-* mode=shadow`. */
export function describeSettings(settings: HookSettings): string {
  const parts: string[] = [];
  if (settings.timeoutMs !== undefined) parts.push(`timeout=${settings.timeoutMs % 1000 === 0 ? `${settings.timeoutMs / 1000}s` : `${settings.timeoutMs}ms`}`);
  for (const key of MATCHER_KEYS) {
    const globs = settings.match?.[key];
    if (globs) parts.push(`${key}=${globs.join(",")}`);
  }
  if (settings.mode) parts.push(`mode=${settings.mode}`);
  if (settings.format) parts.push(`format=${settings.format}`);
  return parts.join(" ");
}
