/**
 * Reading a large task file without holding its long description. A task may carry a description of
 * tens of megabytes (the team's files are capped at 64 MiB each); parsed whole, each such file costs
 * the leader several times its size at once (the bytes, the text, the parsed string, the text written
 * back). Nothing the leader does needs more of a description or a subject than its head: a gate sees
 * at most the contract's 8,000 and 1,000 characters, a note goes at the head of a description. So a
 * file of `SHORT_READ_FROM_BYTES` or more is read in chunks and parsed with its top-level description
 * and subject, when over `KEPT_STRING_BYTES`, cut to their heads, each followed by a marker that says
 * how much was left out (metadata is shown to gates as written, so it is read whole). A rewrite of the
 * file (a task's policy, under its lock) puts the left-out bytes back where the markers are, copied
 * from the file, which must still be the one read (same inode, size and time).
 *
 * The marker starts and ends with U+0000, carries a mark of this process that no one else knows (so
 * a task's own text, however like a marker, is never taken for one) and the index of the part it
 * stands for. `JSON.stringify` writes U+0000 as `\u0000`, which is how the marker is
 * found again in the text to write.
 */
import { randomBytes } from "node:crypto";
import { type Stats, closeSync, fstatSync, openSync, readSync } from "node:fs";
import { HooksError } from "../contract/errors.js";

/** Files smaller than this are parsed whole, as before. */
export const SHORT_READ_FROM_BYTES = 1024 * 1024;

/** The head kept of a long string, in bytes of its JSON text (well over the contract's 8,000 characters). */
export const KEPT_STRING_BYTES = 64 * 1024;

const CHUNK_BYTES = 1024 * 1024;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Bytes read past the head before it is cut: the longest escape (`\uXXXX`) fits in them. */
const SLACK = 8;

/** Where the parts left out of a file's long strings are: byte ranges of the file as it was read. */
export interface LeftOutParts {
  file: string;
  /** The file as read: a rewrite refuses a file that is not this one any more. */
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  /** `[start, end)` of each part, in the order of the markers' indexes. */
  ranges: Array<[number, number]>;
}

/**
 * This process's own mark, in every marker it writes: a task's text may hold anything, a marker-like
 * line included, and only a marker of this process is one (text that merely looks like it is written
 * back as it is, never refused or spliced).
 */
const PROCESS_MARK = randomBytes(8).toString("hex");

/**
 * Whether this process has made a marker yet: until it has, no text can hold one (the mark is its own), and
 * a write asks nothing (the search would read every byte of each team file written: an inbox grows).
 */
let markersMade = false;

/** What a string value cut by `shortenFile` ends with, as the parsed value holds it. */
function partMarker(index: number, leftOut: number): string {
  markersMade = true;
  return `\u0000pi-teams-hooks ${PROCESS_MARK}: ${leftOut} more bytes of this text are in the file, not read\u0000${index}\u0000`;
}

/** `partMarker` as JSON text writes it, with the index captured. */
const MARKER_IN_JSON = new RegExp(
  `\\\\u0000pi-teams-hooks ${PROCESS_MARK}: \\d+ more bytes of this text are in the file, not read\\\\u0000(\\d+)\\\\u0000`,
  "g",
);

/** True when JSON text holds a marker: a value read short, which only `writeWithParts` may write. */
export function hasPartMarker(json: string): boolean {
  // Every write of a team file asks: nothing to find before a marker was made, then the plain search first,
  // the pattern only when it may match.
  if (!markersMade || !json.includes(`\\u0000pi-teams-hooks ${PROCESS_MARK}: `)) return false;
  MARKER_IN_JSON.lastIndex = 0;
  return MARKER_IN_JSON.test(json);
}

/**
 * The JSON text of the open regular file `fd` (`stat` its fstat), read in chunks, with the top-level
 * `description` and `subject` cut to their heads and a marker when longer than `keep` bytes (every
 * other string is whole: a gate is shown a task's metadata as written); null when the file holds more than
 * `maxBytes`. Strings are found by their quotes: outside a string there is no quote, inside one a
 * quote is escaped. Text that is not JSON stays not JSON (the parse after this says where).
 */
export function shortenFile(
  fd: number,
  file: string,
  stat: Stats,
  maxBytes: number,
  keep = KEPT_STRING_BYTES,
): { text: string; parts: LeftOutParts } | null {
  const out: Buffer[] = [];
  const ranges: Array<[number, number]> = [];
  const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  let inString = false;
  let head: Buffer[] = [];
  let headLength = 0;
  let contentStart = 0; // file offset of the current string's first content byte
  let cutAt = -1; // file offset where the current string's left-out part starts; -1: not cut
  let backslashes = 0; // backslashes ending the string's content so far
  let offset = 0;
  // Where the scan is in the document: only the top-level object's `description` and `subject` are
  // cut (a gate is shown at most 8,000 and 1,000 characters of them); every other string is whole.
  let depth = 0;
  let lastMark = 0; // the last byte outside strings that is not white space
  let lastKey: string | null = null; // the last short string seen at the top level
  let cuttable = false;
  const structure = (bytes: Buffer) => {
    for (const byte of bytes) {
      if (byte === 0x7b || byte === 0x5b) depth++;
      else if (byte === 0x7d || byte === 0x5d) depth--;
      if (byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09) lastMark = byte;
    }
  };

  const content = (bytes: Buffer) => {
    if (cutAt >= 0 || bytes.length === 0) return;
    head.push(Buffer.from(bytes));
    headLength += bytes.length;
    if (!cuttable || headLength < keep + SLACK) return;
    const all = Buffer.concat(head);
    const cut = cutPoint(all, keep);
    out.push(all.subarray(0, cut));
    cutAt = contentStart + cut;
    head = [];
    headLength = 0;
  };
  const endString = (quoteAt: number) => {
    if (cutAt >= 0) {
      out.push(Buffer.from(JSON.stringify(partMarker(ranges.length, quoteAt - cutAt)).slice(1, -1), "utf8"));
      ranges.push([cutAt, quoteAt]);
    } else out.push(...head);
    lastKey = depth === 1 && cutAt < 0 && headLength <= 16 ? Buffer.concat(head).toString("utf8") : null;
    lastMark = QUOTE;
    out.push(Buffer.from('"'));
    inString = false;
    head = [];
    headLength = 0;
    cutAt = -1;
  };

  for (;;) {
    const read = readSync(fd, chunk, 0, CHUNK_BYTES, offset);
    if (read === 0) break;
    if (offset + read > maxBytes) return null;
    const bytes = chunk.subarray(0, read);
    let at = 0;
    while (at < read) {
      const quote = bytes.indexOf(QUOTE, at);
      if (!inString) {
        if (quote < 0) {
          structure(bytes.subarray(at));
          out.push(Buffer.from(bytes.subarray(at)));
          at = read;
          break;
        }
        structure(bytes.subarray(at, quote));
        out.push(Buffer.from(bytes.subarray(at, quote + 1)));
        cuttable = depth === 1 && lastMark === 0x3a /* : */ && (lastKey === "description" || lastKey === "subject");
        inString = true;
        contentStart = offset + quote + 1;
        backslashes = 0;
        at = quote + 1;
        continue;
      }
      const end = quote < 0 ? read : quote;
      let run = 0;
      while (end - run - 1 >= at && bytes[end - run - 1] === BACKSLASH) run++;
      const before = run === end - at ? backslashes + run : run;
      if (quote < 0) {
        content(bytes.subarray(at, read));
        backslashes = before;
        at = read;
      } else if (before % 2 === 1) {
        content(bytes.subarray(at, quote + 1)); // an escaped quote: still the string's content
        backslashes = 0;
        at = quote + 1;
      } else {
        content(bytes.subarray(at, quote));
        endString(offset + quote);
        at = quote + 1;
      }
    }
    offset += read;
  }
  if (inString) out.push(...head);
  const parts = { file, dev: stat.dev, ino: stat.ino, size: stat.size, mtimeMs: stat.mtimeMs, ranges };
  return { text: Buffer.concat(out).toString("utf8"), parts };
}

/** The last point at or before `limit` that is neither inside an escape nor inside a UTF-8 sequence. */
function cutPoint(bytes: Buffer, limit: number): number {
  let at = 0;
  let last = 0;
  while (at < limit) {
    last = at;
    at += bytes[at] === BACKSLASH ? (bytes[at + 1] === 0x75 /* u */ ? 6 : 2) : 1;
  }
  let cut = at === limit ? limit : last;
  while (cut > 0 && ((bytes[cut] ?? 0) & 0xc0) === 0x80) cut--;
  return cut;
}

/**
 * Writes `json` (JSON text of a value read with `shortenFile`) through `write`, each marker
 * replaced by the part it stands for, copied from `parts.file` in chunks. A marker whose string was
 * dropped is simply not there; a part follows its marker wherever the string's head went (a note put
 * before it, for example). Throws `E_IO` when the file is no longer the one read.
 */
export function writeWithParts(json: string, parts: LeftOutParts, write: (bytes: Buffer) => void): void {
  const source = openSync(parts.file, "r");
  try {
    const now = fstatSync(source);
    if (now.dev !== parts.dev || now.ino !== parts.ino || now.size !== parts.size || now.mtimeMs !== parts.mtimeMs)
      throw new HooksError("E_IO", `${parts.file} changed while it was rewritten: not written, to be tried again`);
    const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
    let at = 0;
    MARKER_IN_JSON.lastIndex = 0;
    for (let match = MARKER_IN_JSON.exec(json); match; match = MARKER_IN_JSON.exec(json)) {
      const range = parts.ranges[Number(match[1])];
      if (range === undefined) continue;
      write(Buffer.from(json.slice(at, match.index), "utf8"));
      for (let from = range[0]; from < range[1]; ) {
        const read = readSync(source, chunk, 0, Math.min(CHUNK_BYTES, range[1] - from), from);
        if (read === 0) throw new HooksError("E_IO", `${parts.file} ended early while it was rewritten`);
        write(chunk.subarray(0, read));
        from += read;
      }
      at = match.index + match[0].length;
    }
    write(Buffer.from(json.slice(at), "utf8"));
  } finally {
    closeSync(source);
  }
}
