/**
 * One pi-teams-hooks leader per team dir: `hook-state/leader.lock`, created with O_EXCL and holding
 * `{ pid, createdAt, label }` like every lock of the team dir, held for the leader's whole life. Two
 * leaders would run every gate twice. A lock whose process is gone (a SIGKILL) is taken over.
 */
import fs from "node:fs/promises";
import path from "node:path";
import { HooksError, describeError, errnoCode } from "../contract/errors.js";
import { MAX_TEAM_FILE_BYTES, readRegularFile } from "./json-file.js";
import { leaderStateDir } from "./paths.js";

export interface LeaderLock {
  file: string;
  release(): Promise<void>;
}

export async function acquireLeaderLock(teamDir: string): Promise<LeaderLock> {
  const file = path.join(leaderStateDir(teamDir), "leader.lock");
  await fs.mkdir(path.dirname(file), { recursive: true });
  const content = JSON.stringify({ pid: process.pid, createdAt: new Date().toISOString(), label: "pi-teams-hooks watch" });
  for (let attempt = 0; attempt < 40; attempt++) {
    try {
      await fs.writeFile(file, content, { flag: "wx" });
      let released = false;
      return {
        file,
        async release() {
          if (released) return;
          released = true;
          await fs.rm(file, { force: true });
        },
      };
    } catch (error) {
      if (errnoCode(error) !== "EEXIST") throw new HooksError("E_TEAM_DIR", `${file}: cannot create the leader lock: ${describeError(error)}`, { cause: error });
    }
    const holder = await readHolder(file);
    if (holder === null && (await ageMs(file)) < 5_000) {
      // Just created by a leader starting at this very moment, not written yet: give it a moment.
      await new Promise((resolve) => setTimeout(resolve, 200));
      continue;
    }
    if (holder !== null && holder !== process.pid && isAlive(holder)) {
      throw new HooksError(
        "E_USAGE",
        `another leader (pid ${holder}) is already watching ${teamDir}; stop it first (or, if no such process exists, remove ${file})`,
      );
    }
    // Stale (its process is gone): rename it away first so that only one contender takes it over.
    const aside = `${file}.stale.${process.pid}.${Date.now()}`;
    await fs.rename(file, aside).then(
      () => fs.rm(aside, { force: true }),
      () => {}, // another contender renamed it first: try again
    );
  }
  throw new HooksError("E_TEAM_DIR", `${file}: could not take over a stale leader lock`);
}

/** The pid in the lock; null when there is none to read (a FIFO or a device in its place included: never a wait). */
async function readHolder(file: string): Promise<number | null> {
  const read = readRegularFile(file, { maxBytes: MAX_TEAM_FILE_BYTES });
  if (!read.ok) return null; // gone or unreadable: treated as stale
  try {
    const parsed = JSON.parse(read.text) as { pid?: unknown };
    return typeof parsed.pid === "number" && Number.isInteger(parsed.pid) ? parsed.pid : null;
  } catch {
    return null; // half-written: treated as stale (a leader writes it in one call)
  }
}

async function ageMs(file: string): Promise<number> {
  try {
    return Date.now() - (await fs.stat(file)).mtimeMs;
  } catch {
    return Number.POSITIVE_INFINITY; // gone: the next attempt creates it
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errnoCode(error) === "EPERM";
  }
}
