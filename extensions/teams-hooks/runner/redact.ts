/**
 * Keeps the secret values an HTTP handler sent (its secret headers, its signing key) out of what is
 * recorded of the receiver's answer (runner/http.ts): the body kept as `stdout`, the first line of a
 * failed answer, the reason phrase, a redirect's `Location`, a verdict's reason and message.
 *
 * Two ways this can go wrong, and what is done about each:
 * - a leak: a receiver rarely echoes a header byte for byte. A debug endpoint answers the request's
 *   headers as JSON, and JSON encoders escape: `"` and `\` always, `/` as `\/` (PHP's default), every
 *   non-ASCII character as `\uXXXX` (Python's default); a query string percent-encodes. So each
 *   value is looked for in each of those spellings too.
 * - mangling: a value is replaced wherever it occurs, but a short one (under SHORT_SECRET_CHARS) only
 *   where it stands alone, not inside a run of letters and digits: a 1-character "secret" would
 *   otherwise turn every `t` of a task's subject into `[redacted]`, while such a value protects
 *   nothing anyway. Only text that came from the receiver is redacted; our own words (the status
 *   code, the URL) are never touched.
 */

export const REDACTED = "[redacted]";
/** A value shorter than this is redacted only where it is not part of a longer word. */
export const SHORT_SECRET_CHARS = 8;

/** A function that replaces every spelling of every value in `secrets` with `[redacted]`. */
export function secretRedactor(secrets: readonly string[]): (text: string) => string {
  const forms = new Set<string>();
  for (const value of secrets) if (value !== "") for (const form of spellings(value)) forms.add(form);
  if (forms.size === 0) return (text) => text;
  // Longest first: a value inside another goes with it, whole.
  const ordered = [...forms].sort((a, b) => b.length - a.length);
  const replacers = ordered.map((form): ((text: string) => string) => {
    if (form.length >= SHORT_SECRET_CHARS) return (text) => (text.includes(form) ? text.replaceAll(form, REDACTED) : text);
    const alone = new RegExp(`(?<![A-Za-z0-9])${escapeRegExp(form)}(?![A-Za-z0-9])`, "g");
    return (text) => (text.includes(form) ? text.replace(alone, REDACTED) : text);
  });
  return (text) => replacers.reduce((out, replace) => replace(out), text);
}

/** The ways a receiver may write `value` back: as sent, JSON-escaped (three encoders' ways), percent-encoded. */
function spellings(value: string): string[] {
  const json = JSON.stringify(value).slice(1, -1);
  const asciiJson = json.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  return [value, json, json.replaceAll("/", "\\/"), asciiJson, asciiJson.replaceAll("/", "\\/"), encodeURIComponent(value)];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
