/**
 * Reading and writing the JSON files of the team directory. Reads parse at the boundary and return a
 * Result: bad content (missing, unreadable, not JSON, not the schema) is data, never an exception.
 * Writes are atomic: a unique `<file>.tmp.<pid>.<ms>` sibling, then `rename` over the file, so a reader
 * (another process included) sees the old file or the new one, never half of one.
 *
 * The file operations are synchronous behind async signatures: these are small local files, and each
 * asynchronous call is a thread-pool round trip that costs several times the work here (the leader
 * does a dozen of them per event; docs/performance.md). An fsync, when asked for, is synchronous too.
 */
import { randomBytes } from "node:crypto";
import {
  type Stats,
  chmodSync,
  closeSync,
  constants as fsConstants,
  fchmodSync,
  fstatSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import path from "node:path";
import type { z } from "zod";
import { HooksError, describeError, describeValue, errnoCode } from "../contract/errors.js";
import {
  type LeftOutParts,
  SHORT_READ_FROM_BYTES,
  hasPartMarker,
  shortenFile,
  writeWithParts,
} from "./long-strings.js";

export type FileProblemKind = "missing" | "unreadable" | "not_regular" | "too_large" | "invalid_json" | "invalid";

/** Why a file could not be used. `message` names the file, and the field when there is one. */
export interface FileProblem {
  kind: FileProblemKind;
  file: string;
  /** The first offending field as a path (`status`, `blocks[1]`, `metadata.result`); absent for whole-file problems. */
  field?: string;
  message: string;
}

/**
 * `raw` is the parsed JSON before the schema touched it: zod rebuilds objects with the schema's keys
 * first, so a rewrite that wants to keep the file's key order (and anything the schema dropped)
 * starts from `raw`.
 */
export type ReadResult<T> =
  | { ok: true; value: T; raw: unknown; parts?: LeftOutParts }
  | { ok: false; problem: FileProblem };

/** How a JSON file is read. */
interface JsonReadOptions {
  maxBytes?: number;
  /**
   * `short`: a file over 1 MiB is parsed with each long string cut to its head and a marker
   * (team/long-strings.ts); `keep`, with `parts` in the result for a rewrite (`writeJsonAtomic`'s
   * `parts`), else the left-out bytes are let go at once. Absent: the file is parsed whole.
   */
  longStrings?: "short" | "keep";
}

/** Reads `file` and checks it against `schema`. Never throws for anything found on disk. */
export async function readJsonFile<S extends z.ZodType>(
  file: string,
  schema: S,
  options: JsonReadOptions = {},
): Promise<ReadResult<z.output<S>>> {
  const read = await readJsonValue(file, options);
  if (!read.ok) return read;
  const checked = checkSchema(read.raw, schema, file);
  return checked.ok && read.parts ? { ...checked, parts: read.parts } : checked;
}

/** Reads `file` as any JSON value (no schema): for callers that check fields one by one. */
export async function readJsonValue(file: string, options: JsonReadOptions = {}): Promise<ReadResult<unknown>> {
  const maxBytes = options.maxBytes ?? MAX_TEAM_FILE_BYTES;
  const short = options.longStrings !== undefined;
  const read = onRegularFile(file, maxBytes, (fd, stat) => readJsonText(fd, file, stat, maxBytes, short));
  if (!read.ok) return { ok: false, problem: read.problem };
  const parsed = parseJsonText(read.value.text, file);
  if (!parsed.ok) return parsed;
  const parts = options.longStrings === "keep" ? read.value.parts : undefined;
  return parts && parts.ranges.length > 0
    ? { ok: true, value: parsed.raw, raw: parsed.raw, parts }
    : { ok: true, value: parsed.raw, raw: parsed.raw };
}

/**
 * The JSON text of the open regular file `fd`: whole, or with `short` and 1 MiB or more, read in
 * chunks with its long strings cut (team/long-strings.ts). Null when it holds more than `maxBytes`.
 */
export function readJsonText(
  fd: number,
  file: string,
  stat: Stats,
  maxBytes: number,
  short = true,
): { text: string; parts?: LeftOutParts } | null {
  if (short && stat.size >= SHORT_READ_FROM_BYTES) return shortenFile(fd, file, stat, maxBytes);
  const bytes = readPrefix(fd, stat.size + 1, maxBytes + 1);
  return bytes.length > maxBytes ? null : { text: bytes.toString("utf8") };
}

/**
 * The largest task, inbox, config or state file read: far beyond any real one (a task is a few KB, an
 * inbox of thousands of messages a few MB), and small enough that a file gone wild cannot take the
 * leader's memory with it.
 */
export const MAX_TEAM_FILE_BYTES = 64 * 1024 * 1024;

/**
 * How a file that others write is opened for reading. O_NONBLOCK: opening a FIFO then returns at once
 * instead of waiting for a writer (and a wait in a synchronous open cannot even be interrupted by a
 * signal's handler); on a regular file it changes nothing. O_NOCTTY: a terminal device planted in the
 * team dir never becomes the leader's controlling terminal.
 */
export const READ_FLAGS = fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOCTTY;

/** `stat` on a failure: the file's, when it was found but refused (not regular, too large). */
type TextRead = { ok: true; text: string; stat: Stats } | { ok: false; problem: FileProblem; stat?: Stats };

/**
 * Reads `file` whole if it is a regular file (symlinks followed) of at most `maxBytes`. A FIFO, a
 * socket, a device or a directory is refused unread (`not_regular`, naming what it is), and so is a
 * file over the cap (`too_large`): no read ever blocks, and none reads more than `maxBytes + 1` bytes,
 * whatever sits at the path. Never throws for anything on disk.
 */
export function readRegularFile(file: string, options: { maxBytes: number }): TextRead {
  const read = readRegularBytes(file, options);
  return read.ok ? { ok: true, text: read.bytes.toString("utf8"), stat: read.stat } : read;
}

/** `readRegularFile` as bytes: for content that is hashed or may not be text (a gate file). */
export function readRegularBytes(
  file: string,
  options: { maxBytes: number },
): { ok: true; bytes: Buffer; stat: Stats } | { ok: false; problem: FileProblem; stat?: Stats } {
  const read = onRegularFile(file, options.maxBytes, (fd, stat) => {
    const bytes = readPrefix(fd, stat.size + 1, options.maxBytes + 1);
    return bytes.length > options.maxBytes ? null : bytes;
  });
  return read.ok ? { ok: true, bytes: read.value, stat: read.stat } : read;
}

/**
 * `read(fd, stat)` on `file` opened without blocking, if it is a regular file (symlinks followed) of
 * at most `maxBytes`: a FIFO, a socket, a device or a directory is refused unread (`not_regular`), and
 * so is a file over the cap (`too_large`; `read` returns null for one that grew past it). Never throws
 * for anything on disk.
 */
function onRegularFile<T>(
  file: string,
  maxBytes: number,
  read: (fd: number, stat: Stats) => T | null,
): { ok: true; value: T; stat: Stats } | { ok: false; problem: FileProblem; stat?: Stats } {
  let fd: number;
  try {
    fd = openSync(file, READ_FLAGS);
  } catch (error) {
    return openFailure(file, error);
  }
  try {
    const stat = fstatSync(fd);
    const refused = irregularFileProblem(file, stat, maxBytes);
    if (refused) return { ok: false, problem: refused, stat };
    const value = read(fd, stat);
    return value === null
      ? { ok: false, problem: tooLargeProblem(file, null, maxBytes), stat }
      : { ok: true, value, stat };
  } catch (error) {
    return readFailure(file, error);
  } finally {
    closeSync(fd);
  }
}

/**
 * Why a file that `stat` describes is not read: not a regular file, or over `maxBytes`; null when it
 * may be. For readers that keep their own open and read (leader/sources.ts on the hot path of a scan).
 */
export function irregularFileProblem(file: string, stat: Stats, maxBytes: number): FileProblem | null {
  if (!stat.isFile()) return notRegular(file, stat);
  if (stat.size > maxBytes) return tooLargeProblem(file, stat.size, maxBytes);
  return null;
}

/**
 * What an open that failed means. ENXIO is what opening a socket gives (and a device with nothing
 * behind it): a stat says which, so the message names it like any other file that is not regular.
 */
function openFailure(file: string, error: unknown): { ok: false; problem: FileProblem; stat?: Stats } {
  if (errnoCode(error) === "ENXIO") {
    try {
      const stat = statSync(file);
      if (!stat.isFile()) return { ok: false, problem: notRegular(file, stat), stat };
    } catch {
      /* gone or unreadable since the open: the open's own error says enough */
    }
  }
  return readFailure(file, error);
}

/** A problem's message without the `<file>: ` it starts with, for a message that names the file its own way. */
export function problemDetail(problem: FileProblem): string {
  const prefix = `${problem.file}: `;
  return problem.message.startsWith(prefix) ? problem.message.slice(prefix.length) : problem.message;
}

/** What a file that is not a regular file is, for messages (`fifo`, `socket`, `character device`, …). */
export function fileKind(info: Stats): string {
  if (info.isFIFO()) return "fifo";
  if (info.isSocket()) return "socket";
  if (info.isCharacterDevice()) return "character device";
  if (info.isBlockDevice()) return "block device";
  if (info.isDirectory()) return "directory";
  return "special file";
}

function notRegular(file: string, stat: Stats): FileProblem {
  return { kind: "not_regular", file, message: `${file}: not a regular file (${fileKind(stat)})` };
}

/** `size` null: the file grew past the cap while it was read. */
export function tooLargeProblem(file: string, size: number | null, maxBytes: number): FileProblem {
  const what = size === null ? "grew past" : `${size} bytes, over`;
  return {
    kind: "too_large",
    file,
    message: `${file}: too large (${what} the limit of ${formatBytes(maxBytes)} for this file)`,
  };
}

/** `64 MiB`, `64 KiB`, `1000 bytes`. */
function formatBytes(bytes: number): string {
  const MiB = 1024 * 1024;
  if (bytes >= MiB && bytes % MiB === 0) return `${bytes / MiB} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

/**
 * Up to `limit` bytes of the regular file `fd` from its start, in as few reads as the file allows:
 * the first asks for `expected` bytes (its fstat size plus one, to see the end at once); a file still
 * growing is read on, never past `limit`.
 */
function readPrefix(fd: number, expected: number, limit: number): Buffer {
  let buffer = Buffer.allocUnsafe(Math.max(1, Math.min(expected, limit)));
  let length = 0;
  for (;;) {
    if (length === buffer.length) {
      if (buffer.length >= limit) break;
      const grown = Buffer.allocUnsafe(Math.min(buffer.length * 2, limit));
      buffer.copy(grown, 0, 0, length);
      buffer = grown;
    }
    const read = readSync(fd, buffer, length, buffer.length - length, length);
    if (read === 0) break;
    length += read;
  }
  return buffer.subarray(0, length);
}

/** Parses JSON text from `file` (named in the message). An empty file is invalid JSON too. */
export function parseJsonText(
  text: string,
  file: string,
): { ok: true; raw: unknown } | { ok: false; problem: FileProblem } {
  if (text.trim() === "") return problem("invalid_json", file, `${file}: empty file, expected JSON`);
  try {
    return { ok: true, raw: JSON.parse(text) as unknown };
  } catch (error) {
    return problem("invalid_json", file, `${file}: invalid JSON (${describeError(error)})`);
  }
}

/** Checks an already parsed value; the message lists each issue as `field: what was expected, got <value>`. */
export function checkSchema<S extends z.ZodType>(raw: unknown, schema: S, file: string): ReadResult<z.output<S>> {
  const result = schema.safeParse(raw);
  if (result.success) return { ok: true, value: result.data, raw };
  const issues = result.error.issues;
  const details = issues.slice(0, 5).map((issue) => {
    const field = formatFieldPath(issue.path);
    return `${field ? `${field}: ` : ""}${describeIssue(issue, valueAt(raw, issue.path))}`;
  });
  if (issues.length > 5) details.push(`and ${issues.length - 5} more`);
  const first = issues[0];
  const field = first ? formatFieldPath(first.path) : "";
  return {
    ok: false,
    problem: { kind: "invalid", file, ...(field ? { field } : {}), message: `${file}: ${details.join("; ")}` },
  };
}

/** `["metadata", "result"]` → `metadata.result`; `["blocks", 1]` → `blocks[1]`. */
function formatFieldPath(segments: readonly PropertyKey[]): string {
  let out = "";
  for (const segment of segments) {
    if (typeof segment === "number") out += `[${segment}]`;
    else out += out === "" ? String(segment) : `.${String(segment)}`;
  }
  return out;
}

function valueAt(root: unknown, segments: readonly PropertyKey[]): unknown {
  let node = root;
  for (const segment of segments) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<PropertyKey, unknown>)[segment];
  }
  return node;
}

type Issue = z.core.$ZodIssue;

/**
 * `expected string, got 42` / `missing, expected string` / `expected "a" | "b", got "c"`: zod's words are too generic.
 */
function describeIssue(issue: Issue, value: unknown): string {
  const expected =
    issue.code === "invalid_type"
      ? issue.expected
      : issue.code === "invalid_value"
        ? issue.values.map((v) => JSON.stringify(v)).join(" | ")
        : null;
  if (expected === null) return `${issue.message}, got ${describeValue(value)}`;
  return value === undefined ? `missing, expected ${expected}` : `expected ${expected}, got ${describeValue(value)}`;
}

function readFailure(file: string, error: unknown): { ok: false; problem: FileProblem } {
  const code = errnoCode(error);
  if (code === "ENOENT") return problem("missing", file, `${file}: file not found`);
  return problem("unreadable", file, `${file}: cannot read (${code ?? describeError(error)})`);
}

function problem(kind: FileProblemKind, file: string, message: string): { ok: false; problem: FileProblem } {
  return { ok: false, problem: { kind, file, message } };
}

interface WriteOptions {
  /** 2-space indentation (the team-dir format). Default true. */
  pretty?: boolean;
  /** fsync the file before the rename and the directory after it, for durability across a power cut. Default false. */
  fsync?: boolean;
  /**
   * The file's permission bits, whatever the umask (e.g. 0o600 for a file of secrets). Default: 0o666 less the umask.
   */
  mode?: number;
  /**
   * A file of the team's shared folders (a task, an inbox, `.highwatermark`): when its folder is
   * group-writable, the file is made group-readable and group-writable too, whatever the umask. A
   * leader under its own Unix user (docs/security.md, "A leader under its own user") rewrites files
   * that the agents' user writes after it, and not always by rename: pi-agent-teams writes
   * `.highwatermark` in place. Files of a folder without group write keep the umask's bits.
   */
  shared?: boolean;
}

/**
 * Writes `data` as JSON + newline to `file` atomically. Throws `E_IO` when the disk refuses. `parts`:
 * the parts a short read of the file left out (`ReadResult.parts`), put back where their markers are;
 * a value that holds a marker is never written without them (it would lose the rest of its text).
 */
export async function writeJsonAtomic(
  file: string,
  data: unknown,
  options: WriteOptions & { parts?: LeftOutParts } = {},
): Promise<void> {
  const json = options.pretty === false ? JSON.stringify(data) : JSON.stringify(data, null, 2);
  if (json === undefined) throw new HooksError("E_INTERNAL", `${file}: refusing to write a value that is not JSON`);
  if (options.parts !== undefined && options.parts.ranges.length > 0) {
    writeAtomicSync(file, options.parts, options, `${json}\n`);
    return;
  }
  refuseReadInPart(file, json);
  writeAtomicSync(file, `${json}\n`, options);
}

/**
 * Throws when JSON text about to be written to `file` holds a part marker: a value read short, which only
 * `writeWithParts` may write (written as it is, it would lose the rest of its text).
 */
export function refuseReadInPart(file: string, json: string): void {
  if (hasPartMarker(json))
    throw new HooksError("E_INTERNAL", `${file}: refusing to write a value read in part (a long text's head only)`);
}

/** Writes `text` to `file` atomically (tmp sibling, then rename). The tmp file is removed on failure. */
export async function writeTextAtomic(file: string, text: string, options: TextWriteOptions = {}): Promise<void> {
  writeAtomicSync(file, text, options);
}

/** `writeTextAtomic` of bytes already encoded, given in pieces (written one after the other). */
export function writeBytesAtomic(file: string, pieces: readonly Buffer[], options: TextWriteOptions = {}): void {
  writeAtomicSync(file, pieces, options);
}

type TextWriteOptions = Pick<WriteOptions, "fsync" | "mode" | "shared">;

/** `content`: the text or its bytes, or the parts a short read left out, then put back in `json`. */
function writeAtomicSync(
  file: string,
  content: string | readonly Buffer[] | LeftOutParts,
  options: TextWriteOptions,
  json = "",
): void {
  const { fd, tmp } = openUniqueTmp(file, options.mode);
  try {
    try {
      // The open's mode is masked by the umask: set the bits before any content is in the file.
      if (options.mode !== undefined) fchmodSync(fd, options.mode);
      else if (options.shared) shareWithGroup(fd, path.dirname(file));
      if (typeof content === "string") writeAll(fd, content);
      else if (isPieces(content)) for (const piece of content) writeBytes(fd, piece);
      else writeWithParts(json, content, (bytes) => writeBytes(fd, bytes));
      if (options.fsync) fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
  } catch (error) {
    try {
      unlinkSync(tmp); // best effort: the write already failed, report that
    } catch {
      /* gone already */
    }
    throw new HooksError("E_IO", `cannot write ${file}: ${describeError(error)}`, { cause: error });
  }
  if (options.fsync) syncDir(path.dirname(file));
}

function isPieces(content: readonly Buffer[] | LeftOutParts): content is readonly Buffer[] {
  return Array.isArray(content);
}

/**
 * Adds group read and write to the open file `fd` when `dir`, its folder, is group-writable (`WriteOptions.shared`).
 */
function shareWithGroup(fd: number, dir: string): void {
  if ((statSync(dir).mode & GROUP_WRITE) === 0) return;
  const mode = fstatSync(fd).mode & 0o7777;
  if ((mode & GROUP_RW) !== GROUP_RW) fchmodSync(fd, mode | GROUP_RW);
}

const GROUP_WRITE = 0o020;
const GROUP_RW = 0o060;

/** Writes all of `text` to `fd` (writeSync may write less than asked; a full disk then throws ENOSPC). */
export function writeAll(fd: number, text: string): void {
  writeBytes(fd, Buffer.from(text, "utf8"));
}

function writeBytes(fd: number, bytes: Buffer): void {
  let offset = 0;
  while (offset < bytes.length) offset += writeSync(fd, bytes, offset, bytes.length - offset);
}

let tmpCounter = 0;

/**
 * Creates the tmp file with O_EXCL: `<file>.tmp.<pid>.<ms>`, or with a counter and random suffix when
 * that name is taken (two writes of one file in the same millisecond, or a leftover from a crash).
 */
function openUniqueTmp(file: string, mode = 0o666): { fd: number; tmp: string } {
  const base = `${file}.tmp.${process.pid}.${Date.now()}`;
  for (let attempt = 0; attempt < 20; attempt++) {
    const tmp = attempt === 0 ? base : `${base}.${++tmpCounter}${randomBytes(3).toString("hex")}`;
    try {
      return { fd: openSync(tmp, "wx", mode), tmp };
    } catch (error) {
      if (errnoCode(error) === "EEXIST") continue;
      throw new HooksError("E_IO", `cannot write ${file}: ${describeError(error)}`, { cause: error });
    }
  }
  throw new HooksError("E_IO", `cannot write ${file}: no free temporary file name next to it`);
}

function syncDir(dir: string): void {
  try {
    const fd = openSync(dir, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    /* some file systems refuse fsync on a directory; the rename itself has already happened */
  }
}

/**
 * Creates `dir` (and the folders between) inside `root`, which must exist already: a team dir that
 * another process deleted (a team runtime cleaning up) is never created again by a write of ours.
 * Throws `E_IO` naming `root` when it is gone.
 *
 * `shared`: a folder of the team's (`tasks/<list>/`, `mailboxes/<namespace>/inboxes/`): each folder
 * created in a group-writable folder gets that folder's group bits, whatever the umask, so that when
 * the team's folders are group-writable, those the leader makes are too (the kernel already gives
 * them the group, and the setgid bit, of a setgid parent). Never for the leader's own `hook-state/`
 * and `hook-logs/`, which no other user may write.
 */
export function mkdirUnder(root: string, dir: string, options: { shared?: boolean } = {}): void {
  try {
    if (!statSync(root).isDirectory()) throw new Error("not a directory");
  } catch (error) {
    throw new HooksError("E_IO", `cannot write in ${root}: it is gone (${errnoCode(error) ?? describeError(error)})`, {
      cause: error,
    });
  }
  try {
    makeFolders(dir, options);
  } catch (error) {
    throw new HooksError("E_IO", `cannot create ${dir}: ${describeError(error)}`, { cause: error });
  }
  // A folder of the team's replaced by a link (`mailboxes/<ns>/inboxes` → the hooks dir) would have the
  // leader write where the agents point: never through a link below the team dir.
  const relative = path.relative(root, dir);
  if (relative.startsWith("..") || path.isAbsolute(relative)) return;
  let at = root;
  for (const part of relative.split(path.sep).filter((p) => p !== "")) {
    at = path.join(at, part);
    if (lstatSync(at).isSymbolicLink())
      throw new HooksError(
        "E_IO",
        `cannot write in ${dir}: ${at} is a symbolic link, and the leader writes in the team's own folders only`,
      );
  }
}

/** `mkdir -p dir`, and with `shared` the group bits of `mkdirUnder`'s `shared`. Throws the system's error. */
export function makeFolders(dir: string, options: { shared?: boolean } = {}): void {
  const first = mkdirSync(dir, { recursive: true });
  if (options.shared && first !== undefined) shareCreatedFolders(path.resolve(first), path.resolve(dir));
}

/**
 * Each folder from `first` (the first one mkdir created; those below it are ours too, as `first` did
 * not exist) down to `last`, parent first, made in a group-writable folder: gets that folder's group
 * bits.
 */
function shareCreatedFolders(first: string, last: string): void {
  const created = [first];
  for (let at = last; at !== first && at.startsWith(`${first}${path.sep}`); at = path.dirname(at))
    created.splice(1, 0, at);
  for (const folder of created) {
    const parentGroup = statSync(path.dirname(folder)).mode & 0o070;
    if ((parentGroup & GROUP_WRITE) === 0) continue;
    const mode = statSync(folder).mode & 0o7777;
    if ((mode & parentGroup) !== parentGroup) chmodSync(folder, mode | parentGroup);
  }
}
