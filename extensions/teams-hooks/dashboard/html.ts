/**
 * HTML built so that nothing a hook, a task or a request wrote can become markup: `html` is a tagged
 * template whose every interpolated value is escaped unless it is itself `Html` made by `html`. Text
 * also loses what a page cannot show and a terminal would have acted on: ANSI escape sequences go,
 * other control characters (but tab and newline) become U+FFFD, and bidirectional controls are shown
 * as their code points (`<U+202E>`). Pure.
 */

const HTML_BRAND = Symbol("html");

/** Markup made by `html`: safe to put into a page as is. */
export interface Html {
  readonly [HTML_BRAND]: true;
  readonly text: string;
}

function make(text: string): Html {
  return { [HTML_BRAND]: true, text };
}

function isHtml(value: unknown): value is Html {
  return typeof value === "object" && value !== null && HTML_BRAND in value;
}

const ESCAPES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};
// CSI sequences (colours, cursor moves) and OSC sequences (titles, links) as terminals read them.
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?/g;
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;
/**
 * Characters that reorder or hide the text around them (bidirectional overrides, embeddings, isolates
 * and marks; line and paragraph separators): a right-to-left override in a log's name would show the
 * name backwards. Shown as their code point (`<U+202E>`), so that a reader sees they are there.
 */
const INVISIBLE = /[\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** `text` for an HTML text node or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return plainText(text).replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/**
 * `text` as a page shows it, before escaping: terminal escapes dropped, other control characters
 * U+FFFD, bidirectional controls as their code point (`<U+202E>`).
 */
export function plainText(text: string): string {
  return text
    .replace(ANSI, "")
    .replace(CONTROL, "\ufffd")
    .replace(INVISIBLE, (c) => `<U+${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}>`);
}

/**
 * `html\`<td>${cell}</td>\``: strings, numbers and everything else escaped; `Html` kept; arrays
 * joined (each item by the same rule); null, undefined and false left out.
 */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] ?? "";
  for (let i = 0; i < values.length; i++) out += piece(values[i]) + (strings[i + 1] ?? "");
  return make(out);
}

function piece(value: unknown): string {
  if (value === null || value === undefined || value === false) return "";
  if (isHtml(value)) return value.text;
  if (Array.isArray(value)) return value.map(piece).join("");
  return escapeHtml(String(value));
}

/** A query string from `params`, leaving out empty values: `?team=a&outcome=failed`, or "". */
export function queryString(params: Readonly<Record<string, string | undefined>>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== "") search.set(name, value);
  const text = search.toString();
  return text === "" ? "" : `?${text}`;
}

/** A URL path segment decoded; one that does not decode is kept as it is (it then matches nothing). */
export function pathSegment(raw: string | undefined): string {
  try {
    return decodeURIComponent(raw ?? "");
  } catch {
    return raw ?? "";
  }
}
