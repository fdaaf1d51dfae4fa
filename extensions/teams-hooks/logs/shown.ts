/**
 * A log as a server may hold and send it: any agent of a team can write a file into `hook-logs/`, so
 * what `serve` reads from one is bounded before it is kept, whatever the file says. Every string is
 * cut to `SHOWN_STRING_CHARS` (a mark says so), every array to `SHOWN_ITEMS` items, every object to
 * `SHOWN_ITEMS` fields, nesting to `SHOWN_DEPTH` levels; a number stays as written (a duration of
 * `1e300` is shown as what it is, and whoever does arithmetic with it checks the result). A log this
 * project wrote is never cut by it: the writer keeps each stream to 12,000 characters and the whole
 * log within 1 MiB (logs/hook-log.ts). Pure.
 */
import type { HookLogRecord } from "./hook-log.js";

/** Characters a string of a log keeps when shown (a stream of a log this project wrote has at most 12,000). */
const SHOWN_STRING_CHARS = 16_000;
/** Items an array keeps, fields an object keeps. */
const SHOWN_ITEMS = 200;
/** Characters a field's name keeps. */
const SHOWN_KEY_CHARS = 256;
/** Levels of objects and arrays kept; deeper ones are replaced by a note. */
const SHOWN_DEPTH = 12;
/** What ends a string that was cut. */
export const CUT_MARK = "… [cut]";

/** `record` with every part bounded as the module says; the same object when nothing had to change. */
export function shownRecord(record: HookLogRecord): HookLogRecord {
  return bounded(record, 0) as HookLogRecord;
}

/** `text` cut to `max` characters (a mark included), never splitting a surrogate pair. */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = Math.max(0, max - CUT_MARK.length);
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}${CUT_MARK}`;
}

function bounded(value: unknown, depth: number): unknown {
  if (typeof value === "string") return cutText(value, SHOWN_STRING_CHARS);
  if (value === null || typeof value !== "object") return value;
  if (depth >= SHOWN_DEPTH) return "[nested too deep]";
  if (Array.isArray(value)) {
    let changed = value.length > SHOWN_ITEMS;
    const items = value.slice(0, SHOWN_ITEMS).map((item) => {
      const b = bounded(item, depth + 1);
      if (b !== item) changed = true;
      return b;
    });
    return changed ? items : value;
  }
  const entries = Object.entries(value);
  let changed = entries.length > SHOWN_ITEMS;
  const kept: Array<[string, unknown]> = [];
  for (const [key, item] of entries.slice(0, SHOWN_ITEMS)) {
    const b = bounded(item, depth + 1);
    if (b !== item) changed = true;
    const name = cutText(key, SHOWN_KEY_CHARS);
    if (name !== key) changed = true;
    kept.push([name, b]);
  }
  return changed ? Object.fromEntries(kept) : value;
}

/**
 * `value` with every absolute path under `root` written relative to it, in every string it holds
 * (`/srv/teams/alpha/hooks/lint.sh: no #! line` → `alpha/hooks/lint.sh: no #! line`), and `root`
 * alone as `.`: what a remote reader is shown, who has no business knowing where the server keeps
 * its teams. Paths outside `root` stay as they are.
 */
export function relativeTo<T>(value: T, root: string): T {
  const prefix = root.endsWith("/") ? root : `${root}/`;
  const bare = prefix.slice(0, -1);
  const rewrite = (text: string): string =>
    text.includes(bare)
      ? text
          .split(prefix)
          .join("")
          .replace(new RegExp(`${escapeRegExp(bare)}(?![\\w.-])`, "g"), ".")
      : text;
  const walk = (node: unknown, depth: number): unknown => {
    if (typeof node === "string") return rewrite(node);
    if (node === null || typeof node !== "object" || depth > SHOWN_DEPTH + 2) return node;
    if (Array.isArray(node)) return node.map((item) => walk(item, depth + 1));
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v, depth + 1)]));
  };
  return walk(value, 0) as T;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
