/**
 * The lock protocol of the team directory (docs/team-dir.md, "Writing the same files at the same
 * time"), shared with workers and other leaders: `<file>.lock` created with O_EXCL, holding
 * `{ pid, createdAt, label? }`, removed after. Not reentrant: a nested `withLock` on the same file in
 * the same process waits for itself and times out.
 *
 * When a lock is stale is decided here alone (`staleReason`), for every lock of the team dir, the
 * leader lock (team/leader-lock.ts) included: its pid is gone, or it has no readable pid and was
 * last modified more than STALE_UNREADABLE_LOCK_MS ago.
 *
 * Stale takeover. Judging a lock stale and moving it away are two steps, and between them another
 * contender may already have taken the stale lock over and created a fresh one, which a plain
 * rename would then steal. So takeovers are serialised by a guard, `<file>.takeover.lock` (O_EXCL
 * too): only its holder re-reads the lock and, if it is still the very file judged stale (same inode,
 * same content), renames it away and deletes it. A new lock can only appear once the path is empty,
 * so the guard closes the race among processes that follow this protocol.
 *
 * The file operations are synchronous (only the wait between attempts is not): a lock is taken and
 * released around every write the leader makes, and each asynchronous call is a thread-pool round trip
 * that costs more than the work. A lock file appears with its holder in it (createLockFile), never
 * empty: a crash cannot leave a lock that only ages out.
 */
import { closeSync, linkSync, openSync, renameSync, unlinkSync, writeSync } from "node:fs";
import { HooksError, describeError, errnoCode } from "../contract/errors.js";
import { problemDetail, readRegularFile } from "./json-file.js";

export const DEFAULT_LOCK_TIMEOUT_MS = 10_000;
/**
 * A lock without a readable pid is stale once it is this old (since its last change), whoever judges
 * it and however long they wait: the protocol's number, which other runtimes use too. Such a lock is
 * one being written (empty for a moment), one whose writer died before filling it in, or one written
 * by a runtime whose content this reader cannot read; in the last case the holder may well be alive
 * and inside its critical section, so a shorter age (a contender's half wait, a few seconds) could
 * break a write in progress. Contenders time out meanwhile (E_LOCK_TIMEOUT) and try again later.
 */
export const STALE_UNREADABLE_LOCK_MS = 60_000;

interface LockOptions {
  /** Written into the lock file, so a human (or `doctor`) can see who holds it. */
  label?: string;
  /** Give up after this long with `E_LOCK_TIMEOUT`. Default 10 s. */
  timeoutMs?: number;
}

/**
 * What the lock file says. Every field may be unreadable: other runtimes write it too, and the pid is
 * read from the JSON this project writes or from a bare decimal number (`12345\n`, as a plain pid file).
 */
export interface LockHolder {
  pid: number | null;
  createdAt: string | null;
  label: string | null;
}

/** A snapshot of a lock for diagnostics. */
type LockInspection =
  | { held: false; lockFile: string }
  | {
      held: true;
      lockFile: string;
      holder: LockHolder;
      /** Since the lock file was last modified. */
      ageMs: number;
      /** `null` when the pid is unknown. */
      holderAlive: boolean | null;
      stale: boolean;
      /** Why it is stale, for messages. */
      staleReason: string | null;
    };

function lockFileFor(file: string): string {
  return `${file}.lock`;
}

/** Runs `fn` while holding `<file>.lock`; the lock is removed afterwards, also when `fn` throws. */
export async function withLock<T>(file: string, fn: () => Promise<T> | T, options: LockOptions = {}): Promise<T> {
  const lockFile = lockFileFor(file);
  const token = await acquire(file, options);
  let failed = false;
  try {
    return await fn();
  } catch (error) {
    failed = true;
    throw error;
  } finally {
    try {
      await release(lockFile, token);
    } catch (error) {
      // Never hide fn's own error behind a cleanup error; otherwise a lock left behind must be loud.
      // biome-ignore lint/correctness/noUnsafeFinally: a release that fails after fn succeeded is this call's error.
      if (!failed) throw error;
    }
  }
}

/** Reads the lock of `file` without touching it. */
export async function inspectLock(file: string, now: number = Date.now()): Promise<LockInspection> {
  const lockFile = lockFileFor(file);
  const seen = readLock(lockFile);
  if (!seen) return { held: false, lockFile };
  const verdict = judge(seen, now);
  return { held: true, lockFile, holder: seen.holder, ...verdict, stale: verdict.staleReason !== null };
}

/** Identifies our own lock file at release, so that we never remove a lock someone else now holds. */
interface Token {
  pid: number;
  createdAt: string;
}

async function acquire(file: string, options: LockOptions): Promise<Token> {
  const lockFile = lockFileFor(file);
  const timeoutMs = options.timeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  const deadline = Date.now() + timeoutMs;
  let attempt = 0;
  let last: SeenLock | null = null;
  for (;;) {
    const token = tryCreate(lockFile, options.label);
    if (token) return token;
    const seen = readLock(lockFile);
    if (!seen) continue; // released between our open and our read: try again at once
    last = seen;
    // After a takeover, straight back to O_EXCL: clearing the way did not lock anything.
    if (judge(seen).staleReason !== null && (await takeOver(file, seen))) continue;
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw timeoutError(lockFile, timeoutMs, last);
    await sleep(Math.min(remaining, backoff(attempt++)));
  }
}

/** One attempt. Returns null when the lock exists; throws for anything else (a missing folder, EACCES). */
function tryCreate(lockFile: string, label: string | undefined): Token | null {
  const token: Token = { pid: process.pid, createdAt: new Date().toISOString() };
  const text = JSON.stringify(label === undefined ? token : { ...token, label });
  return createLockFile(lockFile, text) ? token : null;
}

let tempSeq = 0;

/**
 * Creates `lockFile` holding `text`, exclusively: false when it exists. The file appears with its
 * content or not at all: the text goes to a temp file of ours (`<lock>.tmp.<pid>.<ms>.<n>`, a name every
 * reader of the team dir skips), which is then hard-linked to the lock's name, an exclusive create as
 * O_EXCL is. Created with O_EXCL and written after, a lock would be empty for a moment, and a holder
 * killed then (SIGKILL, the OOM killer; on a busy machine a process can wait for a CPU right there)
 * would leave a lock without a pid, which blocks the file for STALE_UNREADABLE_LOCK_MS. A file system
 * without hard links gets the O_EXCL create and write.
 */
export function createLockFile(lockFile: string, text: string): boolean {
  const tmp = `${lockFile}.tmp.${process.pid}.${Date.now()}.${++tempSeq}`;
  try {
    writeNew(tmp, text);
  } catch (error) {
    throw new HooksError("E_IO", `cannot create lock ${lockFile}: ${describeError(error)}`, { cause: error });
  }
  try {
    linkSync(tmp, lockFile);
    return true;
  } catch (error) {
    const code = errnoCode(error);
    if (code === "EEXIST") return false;
    if (code === "EPERM" || code === "ENOTSUP" || code === "EOPNOTSUPP" || code === "ENOSYS") {
      return createExclusive(lockFile, text);
    }
    throw new HooksError("E_IO", `cannot create lock ${lockFile}: ${describeError(error)}`, { cause: error });
  } finally {
    unlinkQuietly(tmp);
  }
}

/** Creates `file` (O_EXCL) holding `text`; a file this call created and could not fill is removed. */
function writeNew(file: string, text: string): void {
  const fd = openSync(file, "wx");
  try {
    writeSync(fd, text);
  } catch (error) {
    unlinkQuietly(file); // ours, half-written: nobody else may own it
    throw error;
  } finally {
    closeSync(fd);
  }
}

/** O_EXCL, then the text: where hard links cannot be made. */
function createExclusive(lockFile: string, text: string): boolean {
  try {
    writeNew(lockFile, text);
    return true;
  } catch (error) {
    if (errnoCode(error) === "EEXIST") return false;
    throw new HooksError("E_IO", `cannot create lock ${lockFile}: ${describeError(error)}`, { cause: error });
  }
}

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    /* gone already, or not ours to remove: nothing more to do */
  }
}

async function release(lockFile: string, token: Token): Promise<void> {
  const seen = readLock(lockFile);
  // Gone, or taken over because someone judged us stale (pid reuse, a paused process): not ours to remove.
  if (!seen || seen.holder.pid !== token.pid || seen.holder.createdAt !== token.createdAt) return;
  try {
    unlinkSync(lockFile);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return;
    throw new HooksError("E_IO", `cannot remove lock ${lockFile}: ${describeError(error)}`, { cause: error });
  }
}

interface SeenLock {
  holder: LockHolder;
  mtimeMs: number;
  ino: number;
  text: string;
  /** Why the lock was not read (`not a regular file (fifo)`): its holder then has no readable pid. */
  unread?: string;
}

/** A lock holds a pid, a time and a label: anything this big is not a lock, and is not read. */
const MAX_LOCK_BYTES = 64 * 1024;

/**
 * Reads a lock file; null when there is none. Unparsable content is a holder with no pid, and so is a
 * FIFO, a device or a file too large planted at the lock's name: read without blocking or reading
 * it whole, and judged by its age like any lock whose pid cannot be read.
 */
function readLock(lockFile: string): SeenLock | null {
  // one descriptor: content and inode of the same file
  const read = readRegularFile(lockFile, { maxBytes: MAX_LOCK_BYTES });
  if (read.ok) {
    return { holder: parseLockHolder(read.text), mtimeMs: read.stat.mtimeMs, ino: read.stat.ino, text: read.text };
  }
  if (read.problem.kind === "missing") return null;
  if (read.stat)
    return {
      holder: noHolder(),
      mtimeMs: read.stat.mtimeMs,
      ino: read.stat.ino,
      text: "",
      unread: problemDetail(read.problem),
    };
  throw new HooksError("E_IO", `cannot read lock ${lockFile}: ${problemDetail(read.problem)}`);
}

function noHolder(): LockHolder {
  return { pid: null, createdAt: null, label: null };
}

/** What a lock file's text says: `{ pid, createdAt, label }`, a bare pid, or nothing readable. */
export function parseLockHolder(text: string): LockHolder {
  const bare = /^\s*(\d{1,10})\s*$/.exec(text);
  if (bare) return { pid: validPid(Number(bare[1])), createdAt: null, label: null };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return noHolder(); // empty (being written) or foreign content
  }
  const record = value !== null && typeof value === "object" ? (value as Record<string, unknown>) : {};
  return {
    pid: typeof record.pid === "number" ? validPid(record.pid) : null,
    createdAt: typeof record.createdAt === "string" ? record.createdAt : null,
    label: typeof record.label === "string" ? record.label : null,
  };
}

/** A pid `kill(pid, 0)` can ask about: a positive 32-bit integer (0 and negatives name process groups). */
function validPid(pid: number): number | null {
  return Number.isInteger(pid) && pid > 0 && pid <= 0x7fffffff ? pid : null;
}

/**
 * The stale rule of every lock in the team dir: the reason `holder`'s lock, last changed `ageMs` ago, is
 * stale, or null when it must be respected. A lock naming a pid is stale exactly when that process is
 * gone, whatever its age (a live holder may hold a lock for long); one without a readable pid, once
 * older than STALE_UNREADABLE_LOCK_MS.
 */
export function staleReason(holder: LockHolder, ageMs: number): Staleness {
  if (holder.pid !== null) {
    const holderAlive = isAlive(holder.pid);
    return { holderAlive, staleReason: holderAlive ? null : `process ${holder.pid} is gone` };
  }
  const seconds = ageMs < 10_000 ? (ageMs / 1000).toFixed(1) : String(Math.round(ageMs / 1000));
  const stale = ageMs > STALE_UNREADABLE_LOCK_MS;
  return { holderAlive: null, staleReason: stale ? `no readable pid and ${seconds} s old` : null };
}

interface Staleness {
  /** Whether the pid lives; null when there is none to ask about. */
  holderAlive: boolean | null;
  /** Why the lock is stale, for messages; null when it must be respected. */
  staleReason: string | null;
}

/** Whether the holder lives, and the reason the lock is stale (null when it must be respected). */
function judge(seen: SeenLock, now: number = Date.now()): Staleness & { ageMs: number } {
  const ageMs = Math.max(0, now - seen.mtimeMs);
  return { ageMs, ...staleReason(seen.holder, ageMs) };
}

/** `kill(pid, 0)`: ESRCH means gone; EPERM means alive under another user. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errnoCode(error) !== "ESRCH";
  }
}

/**
 * Removes the stale lock `judged` under the takeover guard (see the top of the file). Returns false
 * when another contender holds the guard: the caller waits, then looks again.
 */
async function takeOver(file: string, judged: SeenLock): Promise<boolean> {
  const stillStale = (now: SeenLock): boolean =>
    now.ino === judged.ino && now.text === judged.text && judge(now).staleReason !== null;
  return takeOverIf(lockFileFor(file), lockFileFor(`${file}.takeover`), stillStale);
}

/**
 * For a lock kept by rules of its own (the leader lock, team/leader-lock.ts, which also takes over a
 * lock of its own pid left by an earlier leader in this process): moves `lockFile` away if it still
 * holds exactly `judgedText`, the content its caller judged stale, under a takeover guard
 * (`<name>.takeover.lock`), as withLock's takeovers are. false: another contender holds the guard.
 */
export async function takeOverJudged(lockFile: string, judgedText: string): Promise<boolean> {
  const guardFile = `${lockFile.replace(/\.lock$/, "")}.takeover.lock`;
  return takeOverIf(lockFile, guardFile, (now) => now.text === judgedText);
}

async function takeOverIf(
  lockFile: string,
  guardFile: string,
  stillStale: (now: SeenLock) => boolean,
): Promise<boolean> {
  const guard = tryCreate(guardFile, "stale lock takeover");
  if (!guard) {
    const seen = readLock(guardFile);
    // A contender died in the middle of a takeover (rare): clear its guard the plain way.
    if (seen && judge(seen).staleReason !== null) await moveAway(guardFile);
    return false;
  }
  try {
    const now = readLock(lockFile);
    if (now && stillStale(now)) await moveAway(lockFile);
  } finally {
    await release(guardFile, guard);
  }
  return true;
}

/** Renames a lock to a unique name, then deletes it: of several movers, exactly one succeeds. */
async function moveAway(lockFile: string): Promise<void> {
  const aside = `${lockFile}.stale.${process.pid}.${Date.now()}.${Math.random().toString(36).slice(2, 8)}.lock`;
  try {
    renameSync(lockFile, aside);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return; // someone else moved it first
    throw new HooksError("E_IO", `cannot take over stale lock ${lockFile}: ${describeError(error)}`, { cause: error });
  }
  unlinkQuietly(aside); // a leftover `*.stale.*.lock` is inert: nothing reads it
}

/** Exponential backoff with jitter: about 2–5 ms first, capped at 100 ms, so contenders spread out. */
function backoff(attempt: number): number {
  const ceiling = Math.min(100, 4 * 2 ** attempt);
  return Math.max(2, ceiling / 2 + Math.random() * (ceiling / 2 + 1));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function timeoutError(lockFile: string, timeoutMs: number, seen: SeenLock | null): HooksError {
  const holder = seen?.holder;
  const pid = holder?.pid ?? null;
  const detail = `${holder?.label ? ` (${holder.label})` : ""}${holder?.createdAt ? ` since ${holder.createdAt}` : ""}`;
  const who =
    pid !== null
      ? `held by pid ${pid}${detail}`
      : `held by an unknown process (no readable pid${seen?.unread ? `: ${seen.unread}` : ""})`;
  const fix =
    pid !== null
      ? `if process ${pid} is gone or stuck, remove the lock: rm -f '${lockFile}'`
      : `it is taken over once ${STALE_UNREADABLE_LOCK_MS / 1000} s old; if no team process is running, remove it: rm -f '${lockFile}'`;
  return new HooksError("E_LOCK_TIMEOUT", `Timeout after ${timeoutMs} ms acquiring lock ${lockFile}: ${who}; ${fix}`);
}
