/**
 * A gate's own settings, on one comment line near the top of its file (docs/writing-hooks.md,
 * "Per-hook settings"):
 *
 *   # pi-teams-hooks: timeout=300s members=impl-*,qa owner=* subject=*api* labels=backend mode=shadow
 *   # pi-teams-hooks: required=false            (an optional gate: a team may drop it, see trust/trust.ts)
 *   # pi-teams-hooks: verdict=exit              (the exit status alone decides: no result file, no stdout verdict)
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
import { didYouMean } from "../text/suggest.js";
import { CLAUDE_EVENT_NAMES } from "../contract/claude.js";
import { parseDuration as parseDurationText } from "../text/duration.js";
import { type HookEventName, truncateText } from "../contract/contract.js";
import { MAX_TIMEOUT_MS } from "./table.js";

/** The line is looked for in the file's first this many lines… */
const SETTINGS_LINE_WINDOW = 10;

const MARKER = /^\s*(?:#|\/\/)\s*pi-teams-hooks:(.*)$/;

const HOOK_MODES = ["enforce", "shadow"] as const;
type HookMode = (typeof HOOK_MODES)[number];
const HOOK_FORMATS = ["v1", "claude"] as const;
export type HookFormat = (typeof HOOK_FORMATS)[number];
const MATCHER_KEYS = ["members", "owner", "subject", "labels", "paths"] as const;
type MatcherKey = (typeof MATCHER_KEYS)[number];
/**
 * `auto`: sandboxed where this machine can (else run as the leader runs, said at start and in each log);
 * `required`: held where it cannot; `off`: never (a weakening, approved like any edit of the gate).
 */
export const SANDBOX_MODES = ["auto", "required", "off"] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];
/**
 * The hook contract versions a gate may ask for with `contract=` (docs/hook-contract.md, "The life of a
 * version"): version 1 only, today; the key is read so that a gate written for a later version is
 * refused (and held) rather than handed a document it did not ask for.
 */
const SUPPORTED_CONTRACT_VERSIONS = [1] as const;
/**
 * `any` (the default): a verdict in the result file or on stdout's last line decides, else the exit status;
 * `exit`: the exit status alone, for a gate whose children (the agents' tests) could write a verdict.
 */
export const VERDICT_SOURCES = ["any", "exit"] as const;
export type VerdictSource = (typeof VERDICT_SOURCES)[number];
const KEYS = [
  "timeout",
  ...MATCHER_KEYS,
  "mode",
  "format",
  "required",
  "sandbox",
  "sandbox-write",
  "env",
  "run-as",
  "contract",
  "verdict",
] as const;

/** What a settings line says; only the keys it gives. */
export interface HookSettings {
  /** The line's number in the file (1-based). */
  line: number;
  timeoutMs?: number;
  mode?: HookMode;
  format?: HookFormat;
  /** Each matcher's globs, as written. */
  match?: Partial<Record<MatcherKey, string[]>>;
  /**
   * `required=false`: an optional gate, which a team may switch off or replace through its own layer
   * without an approval (trust/trust.ts); absent or `true`: required (the default).
   */
  required?: boolean;
  /** `sandbox=`: how the gate is sandboxed (runner/sandbox.ts); absent: the team's `hooks.sandbox`. */
  sandbox?: SandboxMode;
  /**
   * `sandbox-write=`: more writable paths than the working directory, absolute, or under the team dir
   * (`$PI_TEAMS_TEAM_DIR/…`) or the leader's home (`~/…`).
   */
  sandboxWrite?: string[];
  /** `env=`: names of the leader's environment variables the gate gets besides PATH and HOME. */
  env?: string[];
  /** `contract=`: the hook contract version the gate asks for (only 1 is supported). */
  contract?: (typeof SUPPORTED_CONTRACT_VERSIONS)[number];
  /**
   * `run-as=`: a user of its own the gate runs as (runner/run-as.ts): a leader running as root switches
   * to it itself; another leader through `sudo`, where a sudoers rule lets it (docs/security.md).
   */
  runAs?: string;
  /**
   * `verdict=exit`: the run is judged by the gate's exit status alone; the leader offers no result file and
   * reads no verdict (docs/hook-contract.md, "A gate judged by its exit status alone").
   */
  verdict?: VerdictSource;
}

/**
 * A settings line read: the settings (null: none), and `notes` on lines that look meant as one but are
 * not read (past line 10, another case, another comment form): a gate that runs with settings its
 * author did not mean, in silence, is what they are for. Or the error that stops the gate.
 */
export type HookSettingsRead =
  | { ok: true; settings: HookSettings | null; notes?: string[] }
  | { ok: false; error: string };

/** What a settings line looks like to a reader, whatever its case or comment form. */
const LOOKS_LIKE = /pi-teams-hooks\s*:/i;

/** Parses the settings line of a gate's text (its head is enough); `name` is what errors call the file. */
export function parseHookSettings(text: string, event: HookEventName, name: string): HookSettingsRead {
  const lines = text.split("\n", SETTINGS_LINE_WINDOW);
  let found: { line: number; body: string } | null = null;
  for (const [index, raw] of lines.entries()) {
    const match = MARKER.exec(raw.replace(/\r$/, ""));
    if (!match) continue;
    if (found)
      return {
        ok: false,
        error: `${name}:${index + 1}: a second pi-teams-hooks: line (the first is line ${found.line}); give every setting on one line`,
      };
    found = { line: index + 1, body: match[1] ?? "" };
  }
  const notes = unreadLines(text, found?.line ?? null, name);
  const withNotes = notes.length > 0 ? { notes } : {};
  if (!found) return { ok: true, settings: null, ...withNotes };
  const where = `${name}:${found.line}`;
  const tokens = splitTokens(found.body);
  if (typeof tokens === "string") return { ok: false, error: `${where}: ${tokens}` };
  const settings: HookSettings = { line: found.line };
  const seen = new Set<string>();
  for (const token of tokens) {
    const eq = token.indexOf("=");
    const key = eq < 0 ? token : token.slice(0, eq);
    const value = eq < 0 ? "" : token.slice(eq + 1);
    if (!(KEYS as readonly string[]).includes(key)) {
      return {
        ok: false,
        error: `${where}: unknown setting "${key}"${didYouMean(key, KEYS, 2)} (settings: ${KEYS.join(", ")})`,
      };
    }
    if (eq < 0 || value === "") return { ok: false, error: `${where}: ${key} has no value (${key}=…)` };
    if (seen.has(key)) return { ok: false, error: `${where}: ${key} is given twice` };
    seen.add(key);
    const problem = setValue(settings, key as (typeof KEYS)[number], value, event);
    if (problem) return { ok: false, error: `${where}: ${key}=${value}: ${problem}` };
  }
  if (settings.verdict === "exit" && settings.format === "claude")
    return {
      ok: false,
      error: `${where}: verdict=exit with format=claude: a Claude Code gate answers on stdout, which verdict=exit does not read`,
    };
  return { ok: true, settings, ...withNotes };
}

/** The lines of `text` that look like a settings line but are not the one read, each said once. */
function unreadLines(text: string, read: number | null, name: string): string[] {
  const notes: string[] = [];
  for (const [index, raw] of text.split("\n").entries()) {
    if (index + 1 === read || !LOOKS_LIKE.test(raw)) continue;
    const why =
      index >= SETTINGS_LINE_WINDOW
        ? `it is past line ${SETTINGS_LINE_WINDOW}`
        : "only a line that starts `# pi-teams-hooks:` or `// pi-teams-hooks:`, in lower case, is read";
    // Quoted in a string or an echo of the gate's own code is common too: said, never an error.
    notes.push(`${name}:${index + 1}: looks like a settings line, but is not read (${why})`);
  }
  return notes;
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

function setValue(
  settings: HookSettings,
  key: (typeof KEYS)[number],
  value: string,
  event: HookEventName,
): string | null {
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
    case "required":
      if (value !== "true" && value !== "false") return "expected true or false";
      settings.required = value === "true";
      return null;
    case "sandbox":
      if (!(SANDBOX_MODES as readonly string[]).includes(value)) return `expected ${SANDBOX_MODES.join(", ")}`;
      settings.sandbox = value as SandboxMode;
      return null;
    case "sandbox-write": {
      const paths = value.split(",").map((p) => p.trim());
      for (const p of paths) {
        if (
          !(
            p.startsWith("/") ||
            p.startsWith("~/") ||
            p.startsWith("$PI_TEAMS_TEAM_DIR/") ||
            p === "$PI_TEAMS_TEAM_DIR"
          )
        )
          return `${p || "an empty path"}: expected an absolute path, ~/… or $PI_TEAMS_TEAM_DIR/…`;
        if (p.split("/").includes("..")) return `${p}: no .. in a writable path`;
      }
      settings.sandboxWrite = paths;
      return null;
    }
    case "contract": {
      const version = SUPPORTED_CONTRACT_VERSIONS.find((v) => String(v) === value);
      if (version === undefined)
        return `not a hook contract version this pi-teams-hooks supports (supported: ${SUPPORTED_CONTRACT_VERSIONS.join(", ")})`;
      settings.contract = version;
      return null;
    }
    case "verdict":
      if (!(VERDICT_SOURCES as readonly string[]).includes(value)) return `expected ${VERDICT_SOURCES.join(" or ")}`;
      settings.verdict = value as VerdictSource;
      return null;
    case "run-as":
      if (!/^[a-z_][a-z0-9_-]{0,31}$/.test(value)) return "expected a user name (lower case letters, digits, _ and -)";
      settings.runAs = value;
      return null;
    case "env": {
      const names = value.split(",").map((n) => n.trim());
      const bad = names.find((n) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(n));
      if (bad !== undefined) return `${bad || "an empty name"}: expected variable names separated by commas`;
      settings.env = names;
      return null;
    }
    case "format":
      if (!(HOOK_FORMATS as readonly string[]).includes(value)) return `expected ${HOOK_FORMATS.join(" or ")}`;
      if (value === "claude" && !CLAUDE_EVENT_NAMES[event])
        return `Claude Code has no event for ${event} (format=claude is for on_task_completed, as TaskCompleted, and on_idle, as TeammateIdle)`;
      settings.format = value as HookFormat;
      return null;
    default: {
      const globs = value.split(",").map((g) => g.trim());
      if (globs.some((g) => g === "")) return "an empty glob in the list (globs are separated by commas)";
      for (const glob of globs) {
        // subject is matched without regard to case: its globs are checked as they will be used.
        const compiled = compileGlob(key === "subject" ? glob.toLowerCase() : glob);
        if (typeof compiled === "string") return compiled;
      }
      settings.match = { ...settings.match, [key]: globs };
      return null;
    }
  }
}

/** `90s`, `5m`, `1500ms`, `2h`, `1d12h`, or a bare number of seconds; null when it is none of these. */
export function parseDuration(text: string): number | null {
  return parseDurationText(text, { bare: "s" });
}

/** What the matchers look at: the event's member, and the task as the gate would see it. */
interface MatchFacts {
  member: string | null;
  task: { owner?: string | null; subject?: string; metadata?: Record<string, unknown> } | null;
}

/**
 * Why the gate's matchers do not match this event (one line), or null when they all do. All the
 * matchers given must match; a matcher matches when any of its globs does. `subject` ignores case.
 * `paths` judges only what it can see: a task whose worker recorded no `metadata.files` (or an empty
 * or unusable one) is run: the gate cannot know what changed, and skipping it would switch it off in
 * silence. Matchers read the task, which the agents write: they route work, they guard nothing.
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
        if (!anyGlob(globs, facts.member)) return `${shown}: member ${said(facts.member)} does not match`;
        break;
      case "owner": {
        const owner = task?.owner ?? null;
        if (!owner) return `${shown}: ${task ? "the task has no owner" : "the event has no task"}`;
        if (!anyGlob(globs, owner)) return `${shown}: owner ${said(owner)} does not match`;
        break;
      }
      case "subject": {
        if (!task) return `${shown}: the event has no task`;
        const subject = task.subject ?? "";
        if (!anyGlob(globs, subject, true)) return `${shown}: the subject does not match`;
        break;
      }
      case "labels": {
        if (!task) return `${shown}: the event has no task`;
        const labels = stringList(task.metadata?.labels);
        if (labels.length === 0) return `${shown}: the task has no metadata.labels`;
        if (!labels.some((label) => anyGlob(globs, label)))
          return `${shown}: labels ${said(labels.join(","))} do not match`;
        break;
      }
      case "paths": {
        if (!task) return `${shown}: the event has no task`;
        // Nothing usable recorded (absent, empty, not a list of names): run (see above).
        const files = stringList(task.metadata?.files);
        if (files.length === 0) break;
        if (!files.some((file) => anyGlob(globs, file, false, true)))
          return `${shown}: none of the ${files.length} file(s) in metadata.files match`;
        break;
      }
    }
  }
  return null;
}

/** A value the task's writer chose, as a reason quotes it: one line, at most 80 characters. */
function said(value: string): string {
  // eslint-disable-next-line no-control-regex
  return truncateText(value.replace(/[\u0000-\u001f\u007f-\u009f]+/g, " "), 80);
}

/** A list of strings from an array (non-strings dropped) or one comma-separated string. */
function stringList(value: unknown): string[] {
  if (typeof value === "string")
    return value
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === "string");
  return [];
}

function anyGlob(globs: readonly string[], text: string, fold = false, pathLike = false): boolean {
  return globs.some((glob) => globMatches(glob, text, { fold, pathLike }));
}

/**
 * Whether `glob` matches all of `text`: `fold` ignores case, `pathLike` matches a file path (see
 * matchPath). A glob that is not one (compileGlob says why) matches nothing; the settings line that
 * holds it is refused before any match.
 */
export function globMatches(glob: string, text: string, opts: { fold?: boolean; pathLike?: boolean } = {}): boolean {
  const compiled = compileGlob(opts.fold ? glob.toLowerCase() : glob);
  if (typeof compiled === "string") return false;
  const subject = opts.fold ? text.toLowerCase() : text;
  return opts.pathLike ? matchPath(compiled, glob.includes("/"), subject) : matchTokens(compiled.whole, [...subject]);
}

/** One character of a glob: a literal, `?`, `*`, or a class `[a-z]` / `[!a-z]`. */
type Token =
  | { kind: "char"; char: string }
  | { kind: "one" }
  | { kind: "star" }
  | { kind: "class"; negate: boolean; ranges: Array<[number, number]> };

/** A glob read once: as a whole, and for paths by `/`-separated segment (`**` a segment of its own). */
interface CompiledGlob {
  whole: Token[];
  segments: Array<Token[] | "**">;
}

const globCache = new Map<string, CompiledGlob | string>();

/**
 * Reads a glob: `*` any run of characters, `?` one (a code point), `[abc]`, `[a-z]`, `[!a-z]` one of
 * (or none of) a class; any other character is itself, and a `[` with no `]` after it is a literal.
 * A string: why the glob is not one (a range written backwards). Matching never builds a regular
 * expression: the text matched is the task's, which the agents write, and a backtracking regular
 * expression can take minutes on a long subject; these matchers are linear in the text per glob.
 */
function compileGlob(glob: string): CompiledGlob | string {
  const cached = globCache.get(glob);
  if (cached !== undefined) return cached;
  const tokens = tokenize([...glob]);
  let compiled: CompiledGlob | string;
  if (typeof tokens === "string") compiled = tokens;
  else {
    const segments = glob
      .split("/")
      .map((segment) => (segment === "**" ? ("**" as const) : (tokenize([...segment]) as Token[])));
    compiled = { whole: tokens, segments };
  }
  if (globCache.size > 1_000) globCache.clear();
  globCache.set(glob, compiled);
  return compiled;
}

function tokenize(chars: string[]): Token[] | string {
  const tokens: Token[] = [];
  for (let i = 0; i < chars.length; i++) {
    const char = chars[i] ?? "";
    if (char === "*") {
      if (tokens[tokens.length - 1]?.kind !== "star") tokens.push({ kind: "star" }); // ** outside a path segment is *
    } else if (char === "?") tokens.push({ kind: "one" });
    else if (char === "[" && chars.indexOf("]", i + 2) > i) {
      const end = chars.indexOf("]", i + 2);
      const body = chars.slice(i + 1, end);
      const negate = body[0] === "!";
      const members = negate ? body.slice(1) : body;
      const ranges: Array<[number, number]> = [];
      for (let j = 0; j < members.length; j++) {
        const from = (members[j] ?? "").codePointAt(0) ?? 0;
        if (members[j + 1] === "-" && j + 2 < members.length) {
          const to = (members[j + 2] ?? "").codePointAt(0) ?? 0;
          if (to < from) return `[${body.join("")}]: the range ${members[j]}-${members[j + 2]} is written backwards`;
          ranges.push([from, to]);
          j += 2;
        } else ranges.push([from, from]);
      }
      tokens.push({ kind: "class", negate, ranges });
      i = end;
    } else tokens.push({ kind: "char", char });
  }
  return tokens;
}

function matchesOne(token: Token, char: string): boolean {
  switch (token.kind) {
    case "char":
      return token.char === char;
    case "one":
    case "star":
      return true;
    case "class": {
      const code = char.codePointAt(0) ?? -1;
      return token.ranges.some(([from, to]) => code >= from && code <= to) !== token.negate;
    }
  }
}

/** Whether `tokens` match all of `text` (code points). */
function matchTokens(tokens: readonly Token[], text: readonly string[]): boolean {
  return wildcardMatch(tokens, text, (token) => token.kind === "star", matchesOne);
}

/**
 * A file path against a glob: by `/`-separated segment, `*` and `?` inside one, `**` (a segment of
 * its own) any number of segments. A glob without a `/` matches the base name. A leading `./` of the
 * path is dropped.
 */
function matchPath(glob: CompiledGlob, hasSlash: boolean, file: string): boolean {
  const parts = file.replace(/^(\.\/)+/, "").split("/");
  if (!hasSlash) return matchTokens(glob.whole, [...(parts[parts.length - 1] ?? "")]);
  return wildcardMatch(
    glob.segments,
    parts,
    (seg) => seg === "**",
    (seg, part) => seg !== "**" && matchTokens(seg, [...part]),
  );
}

/**
 * The classic two-pointer wildcard match, for characters and for path segments alike: at a mismatch
 * it goes back to the last star and lets it take one more item, never further, so it takes time in
 * proportion to pattern × text at worst, and never backtracks without bound.
 */
function wildcardMatch<P, T>(
  pattern: readonly P[],
  text: readonly T[],
  isStar: (p: P) => boolean,
  one: (p: P, t: T) => boolean,
): boolean {
  let t = 0;
  let p = 0;
  let starAt = -1;
  let starText = 0;
  while (t < text.length) {
    const item = pattern[p];
    if (item !== undefined && isStar(item)) {
      starAt = p++;
      starText = t;
    } else if (item !== undefined && one(item, text[t] as T)) {
      p++;
      t++;
    } else if (starAt >= 0) {
      p = starAt + 1;
      t = ++starText;
    } else return false;
  }
  while (p < pattern.length && isStar(pattern[p] as P)) p++;
  return p === pattern.length;
}

/** The settings as one line for people (`doctor`, the logs): `timeout=300s members=impl-* mode=shadow`. */
export function describeSettings(settings: HookSettings): string {
  const parts: string[] = [];
  if (settings.timeoutMs !== undefined)
    parts.push(
      `timeout=${settings.timeoutMs % 1000 === 0 ? `${settings.timeoutMs / 1000}s` : `${settings.timeoutMs}ms`}`,
    );
  for (const key of MATCHER_KEYS) {
    const globs = settings.match?.[key];
    if (globs) parts.push(`${key}=${globs.join(",")}`);
  }
  if (settings.mode) parts.push(`mode=${settings.mode}`);
  if (settings.format) parts.push(`format=${settings.format}`);
  if (settings.required !== undefined) parts.push(`required=${settings.required}`);
  if (settings.sandbox) parts.push(`sandbox=${settings.sandbox}`);
  if (settings.sandboxWrite) parts.push(`sandbox-write=${settings.sandboxWrite.join(",")}`);
  if (settings.env) parts.push(`env=${settings.env.join(",")}`);
  if (settings.runAs) parts.push(`run-as=${settings.runAs}`);
  if (settings.contract !== undefined) parts.push(`contract=${settings.contract}`);
  if (settings.verdict) parts.push(`verdict=${settings.verdict}`);
  return parts.join(" ");
}
