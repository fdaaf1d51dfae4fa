/**
 * Redaction: secrets and credential-shaped strings replaced by `[redacted]` in what hooks say, before
 * anything of it is kept (docs/security.md, "Redaction"). What is redacted:
 * - the values of the environment variables a team names: its handlers' secret headers and signing
 *   keys, and `hooks.redactEnv` (settings/privacy.ts secretEnvNames), read from the leader's
 *   environment;
 * - common credential shapes, whoever's they are: PEM and PGP private key blocks, GitHub tokens (`ghp_`, `gho_`,
 *   `ghu_`, `ghs_`, `ghr_`, `github_pat_`), `sk-` API keys, AWS access key ids (`AKIA`, `ASIA`), JWTs, this project's
 *   task API keys (`pth_…`) and dashboard login tokens (`pthl_…`), and the value of an `Authorization:` (or
 *   `Proxy-Authorization:`) header.
 * Each replacement is counted: a run's log says how many (`result.redactions`).
 *
 * Two ways this can go wrong, and what is done about each:
 * - a leak: a secret rarely comes back byte for byte. A debug endpoint answers the request's headers
 *   as JSON, and JSON encoders escape: `"` and `\` always, `/` as `\/` (PHP's default), every
 *   non-ASCII character as `\uXXXX` (Python's default); a query string percent-encodes. So each
 *   value is looked for in each of those spellings too. Output kept up to a limit may end inside a
 *   secret: a cut text's last word is redacted when it begins like a credential or like a secret
 *   value (`redactCut`).
 * - mangling: a value is replaced wherever it occurs, but a short one (under SHORT_SECRET_CHARS) only
 *   where it stands alone, not inside a run of letters and digits: a 1-character "secret" would
 *   otherwise turn every `t` of a task's subject into `[redacted]`. A value under
 *   MIN_TEAM_SECRET_CHARS is not redacted from every hook's output at all (a flag like `1` protects
 *   nothing and would turn every `1` into `[redacted]`); only a handler's own answer is searched for
 *   its own secrets of any length (runner/http.ts). The shapes need their prefix at a word's start
 *   and a length no word has (`sk-` also needs a digit and a letter, so `sk-learn-…` slugs stay).
 *   Our own words (the status code, the URL, the exit code) are never passed through.
 *
 * Cost: every pattern is looked for only when its fixed prefix is in the text (`includes`, no regex),
 * so a clean 12,000-character output costs a few scans (docs/security.md has the figure).
 */
import type { RunResult } from "../contract/hook-run.js";
import type { HandlerDef } from "../settings/handlers.js";
import { resolveSettings } from "../settings/team-settings.js";
import { secretEnvNames } from "../settings/privacy.js";
import { loadTeamConfig } from "../team/config-file.js";
import { allHandlers } from "../gates/global-handlers.js";

export const REDACTED = "[redacted]";
/** A value shorter than this is redacted only where it is not part of a longer word. */
const SHORT_SECRET_CHARS = 8;
/** A team secret shorter than this is not looked for in every hook's output (see the top of the file). */
export const MIN_TEAM_SECRET_CHARS = 4;

/** A text with its secrets replaced, and how many replacements were made. */
interface Redacted {
  text: string;
  count: number;
}
export type Redactor = (text: string) => Redacted;

/** Redacts nothing. */
export const NO_REDACTION: Redactor = (text) => ({ text, count: 0 });

// ---------------------------------------------------------------------------------------------
// Secret values

/** A redactor of every spelling of every value in `secrets` (no shapes). */
export function secretRedactor(secrets: readonly string[]): Redactor {
  const forms = new Set<string>();
  for (const value of secrets) if (value !== "") for (const form of spellings(value)) forms.add(form);
  if (forms.size === 0) return NO_REDACTION;
  // Longest first: a value inside another goes with it, whole.
  const ordered = [...forms].sort((a, b) => b.length - a.length);
  const replacers = ordered.map((form): Redactor => {
    if (form.length >= SHORT_SECRET_CHARS) {
      return (text) => {
        if (!text.includes(form)) return { text, count: 0 };
        const parts = text.split(form);
        return { text: parts.join(REDACTED), count: parts.length - 1 };
      };
    }
    const alone = new RegExp(`(?<![A-Za-z0-9])${escapeRegExp(form)}(?![A-Za-z0-9])`, "g");
    return (text) => (text.includes(form) ? replaceCounting(text, alone, () => REDACTED) : { text, count: 0 });
  });
  return chain(replacers);
}

/**
 * The ways a receiver may write `value` back: as sent, JSON-escaped (the encoders' ways: `\/` as
 * PHP's, every non-ASCII character as Python's, `<`, `>` and `&` as `\u003c`… as Go's and Rails'),
 * percent-encoded.
 */
function spellings(value: string): string[] {
  const unicode = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
  const json = JSON.stringify(value).slice(1, -1);
  const asciiJson = json.replace(/[\u007f-\uffff]/g, unicode);
  const html = (text: string): string => text.replace(/[<>&\u2028\u2029]/g, unicode);
  return [
    value,
    json,
    json.replaceAll("/", "\\/"),
    asciiJson,
    asciiJson.replaceAll("/", "\\/"),
    html(json),
    html(asciiJson),
    encodeURIComponent(value),
  ];
}

// ---------------------------------------------------------------------------------------------
// Credential shapes

interface Shape {
  name: string;
  /** Looked for with a plain `includes` first; the regex runs only when one is there. */
  hints: readonly string[];
  pattern: RegExp;
  replace: (match: string, ...groups: string[]) => string;
}

const whole = (): string => REDACTED;

/** A line break inside a key block: a real one (then any indentation), or JSON-escaped. */
const KEY_LINE_BREAK = String.raw`(?:\r?\n|\\r\\n|\\n)[ \t]*`;
/** A value that looks like a token, not a word: 8 or more token characters, a digit or a symbol among them. */
const TOKEN_VALUE = "(?=[A-Za-z0-9._~+/=-]*[0-9+/=])[A-Za-z0-9._~+/=-]{8,}";

/** The credential shapes, each with the fixed text it cannot do without. */
const SHAPES: readonly Shape[] = [
  {
    name: "private key",
    hints: ["PRIVATE KEY-----", "PRIVATE KEY BLOCK-----"],
    // A PEM block (or a PGP one: `PRIVATE KEY BLOCK`) to its END line; when the text was cut inside it,
    // every base64 or header line that follows, whether the lines are indented, JSON-escaped (`\n`)
    // or joined by blanks (a shell's unquoted `echo $KEY`).
    pattern: new RegExp(
      `-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK)?-----(?:[\\s\\S]*?-----END \\1PRIVATE KEY\\2-----|(?:${KEY_LINE_BREAK}(?:[A-Za-z0-9+/=]+|[A-Za-z-]+: [^\\r\\n\\\\]*)?(?=[ \\t]*(?:${KEY_LINE_BREAK}|["']|$))|[ \\t]+(?:[A-Za-z0-9+/=]{16,}(?=[ \\t]|$)|[A-Za-z0-9+/=]+$))*)`,
      "g",
    ),
    replace: whole,
  },
  {
    name: "GitHub token",
    hints: ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
    pattern: /(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/g,
    replace: whole,
  },
  {
    name: "sk- key",
    hints: ["sk-"],
    pattern: /(?<![A-Za-z0-9_-])sk-(?=[A-Za-z0-9_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{20,}/g,
    replace: whole,
  },
  // This project's own task API keys and dashboard login tokens (server/keys.ts): the id stays (`keys list` shows it),
  // the secret goes.
  {
    name: "task API key",
    hints: ["pth_", "pthl_"],
    pattern: /(?<![A-Za-z0-9_])(pthl?_[0-9a-f]{12}_)[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g,
    replace: (_match, id = "") => `${id}${REDACTED}`,
  },
  {
    name: "AWS access key id",
    hints: ["AKIA", "ASIA"],
    pattern: /(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])/g,
    replace: whole,
  },
  {
    name: "JWT",
    hints: ["eyJ"],
    pattern: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g,
    replace: whole,
  },
  {
    name: "Authorization header",
    hints: ["uthorization", "UTHORIZATION"],
    // The header's name and its scheme stay (they say what was there). After a known scheme, the rest
    // of the value (to a quote, a backslash, a `]` or the line's end) goes; after any other scheme word,
    // a token-like value (8 or more characters, a digit or a symbol among them); without a scheme, such
    // a value alone, so that prose ("Authorization: required") stays. The name and the value may be
    // quoted, JSON-escaped (`\"Authorization\":\"Bearer …\"`) or in a list (Go's `Authorization:[Bearer …]`).
    pattern: new RegExp(
      `((?:proxy-)?authorization(?:\\\\?["'])?[ \\t]*[:=][ \\t]*(?:\\[[ \\t]*)?(?:\\\\?["'])?)(?:((?:bearer|basic|token|digest|negotiate|bot|aws4-hmac-sha256)[ \\t]+)(?!\\[redacted\\])[^"'\\r\\n\\\\\\]]+|([A-Za-z][A-Za-z0-9_-]*[ \\t]+)?${TOKEN_VALUE}(?=["'\\s,;}\\]\\\\]|$))`,
      "gim",
    ),
    replace: (_match, head = "", scheme = "", other = "") => `${head}${scheme}${other}${REDACTED}`,
  },
];

/** The credential shapes alone (no values): what every text of every team goes through. */
export const shapeRedactor: Redactor = (text) => {
  let out = text;
  let count = 0;
  for (const shape of SHAPES) {
    if (!shape.hints.some((hint) => out.includes(hint))) continue;
    const done = replaceCounting(out, shape.pattern, shape.replace);
    out = done.text;
    count += done.count;
  }
  return { text: out, count };
};

/** A credential's beginning at the very end of a text: what a cut may leave of one. */
const CREDENTIAL_TAIL =
  /(?<![A-Za-z0-9_-])(?:gh[pousr]_|github_pat_|sk-|AKIA|ASIA|eyJ|pthl?_[0-9a-f]{12}_|-----BEGIN [A-Z ]*PRIV)[A-Za-z0-9_.+/=-]*$/;

// ---------------------------------------------------------------------------------------------
// A team's redactor

/**
 * The redactor of a team's hook output: the values of `names` in `env` (each at least
 * MIN_TEAM_SECRET_CHARS long), then the credential shapes.
 */
export function teamRedactor(env: Readonly<Record<string, string | undefined>>, names: readonly string[]): Redactor {
  // A value read from a file often ends in a newline (a mounted secret) that whoever prints it drops: both are looked
  // for.
  const values = names
    .map((name) => env[name] ?? "")
    .flatMap((value) => (value.trim() === value ? [value] : [value, value.trim()]))
    .filter((value) => value.length >= MIN_TEAM_SECRET_CHARS);
  const redactor = chain([secretRedactor(values), shapeRedactor]);
  cutPrefixes.set(redactor, values);
  return redactor;
}

/**
 * The team redactor of the settings in force: its handlers' secrets (with `hooksDir`, the global
 * handlers' too) and `hooks.redactEnv`, read from `env`.
 */
export function settingsRedactor(
  env: Readonly<Record<string, string | undefined>>,
  settings: { handlers: readonly HandlerDef[]; redactEnv: { value: readonly string[] } },
  hooksDir?: string,
): Redactor {
  const handlers = hooksDir === undefined ? settings.handlers : allHandlers(hooksDir, settings.handlers);
  return teamRedactor(env, secretEnvNames(handlers, settings.redactEnv.value));
}

/**
 * The team redactor of the team in `teamDir` where no settings are at hand (the task API deciding a
 * held gate): its config.json's secrets and `hooks.redactEnv`, read from `env`; a config that cannot
 * be read still gets the credential shapes.
 */
export async function teamDirRedactor(
  teamDir: string,
  env: Readonly<Record<string, string | undefined>>,
): Promise<Redactor> {
  try {
    const config = await loadTeamConfig(teamDir);
    return settingsRedactor(
      env,
      resolveSettings({ hooks: config.hooks, noBlock: config.noHooks, file: config.file, env }),
    );
  } catch {
    return shapeRedactor; // the shapes need no config; the values of a config we cannot read are unknown
  }
}

/** The secret values a team redactor was built with (for `redactCut`), by redactor. */
const cutPrefixes = new WeakMap<Redactor, readonly string[]>();

/** The redactors applied one after the other, counts added. */
export function chain(redactors: readonly Redactor[]): Redactor {
  const active = redactors.filter((r) => r !== NO_REDACTION);
  if (active.length === 0) return NO_REDACTION;
  return (text) => {
    let out = text;
    let count = 0;
    for (const redact of active) {
      const done = redact(out);
      out = done.text;
      count += done.count;
    }
    return { text: out, count };
  };
}

/**
 * `redact` for a text kept up to a limit (`cut`: something followed and was dropped): also its end
 * when it is the beginning of a credential (a prefix and what follows it) or of one of the team's
 * secret values (its first MIN_TEAM_SECRET_CHARS characters at least), since the rest was cut off.
 */
export function redactCut(text: string, redact: Redactor, cut: boolean): Redacted {
  const done = redact(text);
  if (!cut) return done;
  let from = CREDENTIAL_TAIL.exec(done.text)?.index ?? -1;
  for (const value of cutPrefixes.get(redact) ?? []) {
    for (let n = Math.min(done.text.length, value.length - 1); n >= MIN_TEAM_SECRET_CHARS; n--) {
      if (done.text.endsWith(value.slice(0, n))) {
        from = from === -1 ? done.text.length - n : Math.min(from, done.text.length - n);
        break;
      }
    }
  }
  return from === -1 ? done : { text: done.text.slice(0, from) + REDACTED, count: done.count + 1 };
}

// ---------------------------------------------------------------------------------------------
// A run's result

/** The line a capture adds after a cut head (runner/run-hook.ts `withNote`). */
const CUT_NOTE = /\n… \(truncated, \d+ bytes omitted\)$/;

/**
 * A file hook's result with everything the hook said redacted: stdout and stderr (each knowing
 * whether it was cut), the verdict's code, reason and message, and an invalid verdict's description
 * (it may quote the hook); `redactions` adds what was replaced. Our own words (a spawn error, the
 * exit code) are left alone.
 */
export function redactRunResult(result: RunResult, redact: Redactor): RunResult {
  let count = 0;
  const text = (value: string): string => {
    const done = redact(value);
    count += done.count;
    return done.text;
  };
  const output = (value: string, dropped: number): string => {
    const note = dropped > 0 ? CUT_NOTE.exec(value) : null;
    const head = note ? value.slice(0, note.index) : value;
    const done = redactCut(head, redact, dropped > 0);
    count += done.count;
    return note ? done.text + note[0] : done.text;
  };
  const verdict = result.verdict;
  const out: RunResult = {
    ...result,
    stdout: output(result.stdout, result.stdoutDroppedBytes),
    stderr: output(result.stderr, result.stderrDroppedBytes),
    ...(verdict ? { verdict: redactVerdict(verdict, text) } : {}),
    ...(result.errorKind === "invalid_verdict" && result.error !== undefined ? { error: text(result.error) } : {}),
    // A Claude Code gate's non-blocking error quotes its stderr.
    ...(result.nonBlocking !== undefined ? { nonBlocking: text(result.nonBlocking) } : {}),
    // The unread verdict-like line is the gate's output.
    ...(result.verdictUnread !== undefined ? { verdictUnread: text(result.verdictUnread) } : {}),
  };
  return { ...out, redactions: (result.redactions ?? 0) + count };
}

/**
 * A verdict with every string it holds passed through `text`, but its `decision` and `source` (ours to
 * read): its code, reason, message, the strings of its patch, and any key the contract does not name
 * (a verdict may carry more, and it is kept in the log as given), their keys too.
 */
export function redactVerdict<T extends { decision: string }>(verdict: T, text: (value: string) => string): T {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(verdict)) {
    const ours = key === "decision" || key === "source";
    Object.defineProperty(out, ours ? key : text(key), {
      value: ours ? value : redactValue(value, text),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  // The same keys, strings for strings: the cast only restores the type the walk cannot follow.
  return out as T;
}

/**
 * A JSON value (a patch verdict's merge patch) with every string in it passed through `text`: a
 * patch is written into the task, so a secret in it would land on disk. Keys too, for the same
 * reason (a key that held a secret names `[redacted]`; two such keys in one object are one, the later
 * winning); a key like `__proto__` stays a plain own property.
 */
function redactValue(value: unknown, text: (value: string) => string): unknown {
  if (typeof value === "string") return text(value);
  if (Array.isArray(value)) return value.map((item) => redactValue(item, text));
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value))
    Object.defineProperty(out, text(key), {
      value: redactValue(item, text),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  return out;
}

/**
 * A verdict-like record (a decision from `decide` or the task API) with its code, reason and message
 * redacted, and how many replacements that took.
 */
export function redactFields<
  T extends { code?: string | undefined; reason?: string | undefined; message?: string | undefined },
>(record: T, redact: Redactor): { decision: T; count: number } {
  let count = 0;
  const out: T = { ...record };
  for (const field of ["code", "reason", "message"] as const) {
    const value = record[field];
    if (value === undefined) continue;
    const done = redact(value);
    count += done.count;
    out[field] = done.text as T[typeof field];
  }
  return { decision: out, count };
}

// ---------------------------------------------------------------------------------------------

function replaceCounting(
  text: string,
  pattern: RegExp,
  replace: (match: string, ...groups: string[]) => string,
): Redacted {
  let count = 0;
  const out = text.replace(pattern, (match: string, ...rest: unknown[]) => {
    count += 1;
    // The capture groups come first; the offset and the whole text after them.
    const groups = rest.slice(0, -2).map((g) => (typeof g === "string" ? g : ""));
    return replace(match, ...groups);
  });
  return { text: out, count };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
