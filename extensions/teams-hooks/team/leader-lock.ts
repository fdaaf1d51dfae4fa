/**
 * One pi-teams-hooks leader per team dir: `hook-state/leader.lock`, created with O_EXCL and holding
 * `{ pid, createdAt, label }` like every lock of the team dir, held for the leader's whole life. Two
 * leaders would run every gate twice. A stale lock is taken over, by the one rule of team/lock.ts
 * (`staleReason`: its process is gone, or it has no readable pid and is over 60 s old), and so is a
 * lock of this very process left by a leader it ran before. The one
 * other holder is `pi-teams-hooks decide` while no leader runs: it takes the lock for the moment it
 * applies a decision (a decision is applied only by the lock's holder), and a leader starting then
 * waits for it. A holder moves the lock's mtime every LEADER_HEARTBEAT_MS (the heartbeat), so that
 * `leaderStatus` can tell a leader at work from a lock left behind; taking a lock over still goes by
 * the pid alone (the lock protocol's rule), never by the heartbeat.
 */
import fs from "node:fs/promises";
import path from "node:path";
import { HooksError, describeError, unreachable } from "../contract/errors.js";
import { MAX_TEAM_FILE_BYTES, readRegularFile } from "./json-file.js";
import { STALE_UNREADABLE_LOCK_MS, createLockFile, parseLockHolder, staleReason, takeOverJudged } from "./lock.js";
import { leaderStateDir } from "./paths.js";

export interface LeaderLock {
  file: string;
  release(): Promise<void>;
}

/**
 * The label of a holder that keeps the lock only for a moment (`pi-teams-hooks decide` applying a
 * decision while no leader runs): a leader starting meanwhile waits for it instead of refusing.
 */
export const BRIEF_HOLDER = "pi-teams-hooks decide";
/** How long a starting leader waits for a brief holder (an application is a few locked writes). */
const BRIEF_WAIT_MS = 30_000;

/** Looks, 200 ms apart, at a leader lock without a readable pid before refusing to start. */
const UNREADABLE_WAITS = 10;

/** The lock, or who holds it (a live process). */
type LeaderLockTry = { ok: true; lock: LeaderLock } | { ok: false; pid: number; label: string | null };

/** The leader lock, for the leader's whole life; throws E_USAGE naming the live leader that holds it. */
export async function acquireLeaderLock(teamDir: string): Promise<LeaderLock> {
  const deadline = Date.now() + BRIEF_WAIT_MS;
  for (;;) {
    const got = await tryLeaderLock(teamDir);
    if (got.ok) return got.lock;
    if (got.label === BRIEF_HOLDER && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      continue;
    }
    const file = path.join(leaderStateDir(teamDir), "leader.lock");
    // Not a usage error: the command was right, the team dir is taken (exit 2, and no --help hint).
    throw new HooksError(
      "E_TEAM_DIR",
      `another leader (pid ${got.pid}) is already watching ${teamDir}; stop it first (or, if no such process exists, remove ${file})`,
    );
  }
}

/**
 * Takes the leader lock unless a live process holds it (a stale one, of a dead pid, is taken over).
 * `label` says who holds it (a leader, or a brief holder: BRIEF_HOLDER).
 */
export async function tryLeaderLock(teamDir: string, label = "pi-teams-hooks watch"): Promise<LeaderLockTry> {
  const file = path.join(leaderStateDir(teamDir), "leader.lock");
  await fs.mkdir(path.dirname(file), { recursive: true });
  const content = JSON.stringify({ pid: process.pid, createdAt: new Date().toISOString(), label });
  let unreadableWaits = 0;
  for (let attempt = 0; attempt < 40; attempt++) {
    let created: boolean;
    try {
      created = createLockFile(file, content);
    } catch (error) {
      throw new HooksError("E_TEAM_DIR", `${file}: cannot create the leader lock: ${describeError(error)}`, {
        cause: error,
      });
    }
    if (created) {
      let released = false;
      // The heartbeat: the lock's mtime, moved while its holder lives and its event loop turns (leaderStatus).
      const beat = setInterval(() => {
        const now = new Date();
        // Gone (the team dir removed): the leader puts it back, or stops; nothing to do here.
        fs.utimes(file, now, now).catch(() => undefined);
      }, LEADER_HEARTBEAT_MS);
      beat.unref();
      return {
        ok: true,
        lock: {
          file,
          async release() {
            if (released) return;
            released = true;
            clearInterval(beat);
            await fs.rm(file, { force: true });
          },
        },
      };
    }
    const seen = readLockText(file);
    const holder = parseLockHolder(seen ?? "");
    const age = await ageMs(file);
    const judged = staleReason(holder, age);
    if (holder.pid === null && judged.staleReason === null) {
      // Written by something whose content says no pid (or, by another runtime, being written this very
      // moment): respected until the lock protocol calls it stale.
      if (++unreadableWaits >= UNREADABLE_WAITS) throw unreadableLock(file, age);
      await new Promise((resolve) => setTimeout(resolve, 200));
      continue;
    }
    // Our own pid is a leader this process ran before (the pi extension starts one per session) unless
    // we are the brief holder: then it is a leader running in this very process, which applies itself.
    if (holder.pid !== null && (holder.pid !== process.pid || label === BRIEF_HOLDER) && judged.staleReason === null) {
      return { ok: false, pid: holder.pid, label: holder.label };
    }
    // Stale: moved away under the lock protocol's takeover guard, and only if it is still the lock
    // judged, so that of two contenders (a restarted leader and a `decide` that applies a decision) the
    // second never moves away the lock the first has just created.
    if (!(await takeOverJudged(file, seen ?? ""))) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new HooksError("E_TEAM_DIR", `${file}: could not take over a stale leader lock`);
}

/** How often a holder of the leader lock moves its mtime. */
const LEADER_HEARTBEAT_MS = 5_000;
/** A lock whose heartbeat is older than this is stale even if its pid lives (a hung leader, or a reused pid). */
const LEADER_STALE_MS = 30_000;

/**
 * Whether a leader holds the team: `running` (its process lives and its heartbeat is recent),
 * `stale` (a lock is there, but its process is gone or its heartbeat stopped: no leader runs the
 * gates, and the next leader takes the lock over), or `none`.
 */
export interface LeaderStatus {
  state: "running" | "stale" | "none";
  file: string;
  pid: number | null;
  label: string | null;
  /** When the lock was taken (its `createdAt`). */
  since: string | null;
  /** How long ago the lock's mtime last moved; null without a lock. */
  heartbeatAgeMs: number | null;
  /** For `stale`: why. */
  reason: string | null;
}

/** The team's leader lock as a status, for doctor, `/gates status` and the dashboard. */
export async function leaderStatus(teamDir: string, now: number = Date.now()): Promise<LeaderStatus> {
  const file = path.join(leaderStateDir(teamDir), "leader.lock");
  const none: LeaderStatus = {
    state: "none",
    file,
    pid: null,
    label: null,
    since: null,
    heartbeatAgeMs: null,
    reason: null,
  };
  const text = readLockText(file);
  if (text === null) return none;
  const holder = parseLockHolder(text);
  const age = await ageMs(file, now);
  if (!Number.isFinite(age)) return none; // gone between the read and the stat: released
  const heartbeatAgeMs = Math.max(0, age);
  const base = { file, pid: holder.pid, label: holder.label, since: createdAtOf(text), heartbeatAgeMs };
  const judged = staleReason(holder, heartbeatAgeMs);
  if (holder.pid !== null && judged.holderAlive === false)
    return { ...base, state: "stale", reason: `process ${holder.pid} is gone` };
  if (heartbeatAgeMs > LEADER_STALE_MS)
    return { ...base, state: "stale", reason: `no heartbeat for ${Math.round(heartbeatAgeMs / 1000)} s` };
  return { ...base, state: "running", reason: null };
}

/** One line for people: `running (pid 42, since …, heartbeat 2 s ago)`, `stale: …`, `none: …`. */
export function describeLeaderStatus(status: LeaderStatus): string {
  const beat = status.heartbeatAgeMs === null ? "" : `, heartbeat ${Math.round(status.heartbeatAgeMs / 1000)} s ago`;
  const label = status.label ? `, ${status.label}` : "";
  const since = status.since ? `, since ${status.since}` : "";
  const who = `pid ${status.pid ?? "?"}${label}${since}${beat}`;
  switch (status.state) {
    case "running":
      return `running (${who})`;
    case "stale":
      return `stale (${who}): ${status.reason ?? "stale"}; no leader runs the gates, and the next one takes the lock over (${status.file})`;
    case "none":
      return "none: no leader watches this team, so no gate runs (pi-teams-hooks watch)";
    default:
      return unreachable(status.state);
  }
}

function createdAtOf(text: string): string | null {
  try {
    const value = (JSON.parse(text) as { createdAt?: unknown }).createdAt;
    return typeof value === "string" ? value : null;
  } catch {
    return null; // not JSON: parseLockHolder has said what it could
  }
}

function unreadableLock(file: string, ageMs: number): HooksError {
  const rule = `it is taken over once ${STALE_UNREADABLE_LOCK_MS / 1000} s old`;
  const fix = "if no leader or decide runs, remove it";
  const age = `${Math.round(ageMs / 1000)} s old`;
  return new HooksError("E_TEAM_DIR", `${file}: holds no readable pid and is ${age}: ${rule}; ${fix}`);
}

/** The lock's text; null when it cannot be read (gone, or a FIFO or a device in its place: never a wait). */
function readLockText(file: string): string | null {
  const read = readRegularFile(file, { maxBytes: MAX_TEAM_FILE_BYTES });
  return read.ok ? read.text : null;
}

async function ageMs(file: string, now: number = Date.now()): Promise<number> {
  try {
    return now - (await fs.stat(file)).mtimeMs;
  } catch {
    return Number.POSITIVE_INFINITY; // gone: the next attempt creates it
  }
}
