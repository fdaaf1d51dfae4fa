/**
 * Before any test file starts, once per run: builds `dist/` if it is not current (build.ts), then
 * gives the run a temp folder and a home of its own, which every process the tests start inherits
 * (vitest starts its workers after this, with this environment):
 *
 * - `TMPDIR`: a folder of the run's own (on a RAM file system when the machine has one: fastTempDir),
 *   removed whole at the end: nothing of the run is left in the TMPDIR it was started with, whatever
 *   a test forgot.
 * - `HOME` and the XDG folders (`XDG_STATE_HOME`, where the leader keeps its approved trust records and
 *   its runs, `XDG_CONFIG_HOME`, `XDG_DATA_HOME`, `XDG_CACHE_HOME`) inside it, and npm's cache too;
 *   `XDG_RUNTIME_DIR` unset (the runs go to the state folder, which setup.ts makes per worker):
 *   nothing is written under the account's own home or runtime folder.
 *
 * At the end it checks that the run left nothing behind: no process started with the run's TMPDIR
 * still alive (killed, and named), and no Unix user or group of the two-users test (`pta…`, `ptl…`,
 * `ptg…`, named for this run: TEST_RUN_ACCOUNTS) left. Either fails the run. A build that fails stops the run here, with
 * the compiler's output, before a test times out waiting for it.
 *
 * A run that was killed (Ctrl-C twice, SIGKILL) never reaches that end: its folder names the run's process
 * (`owner`), and the next run's set-up removes the folder of a run of the same user whose process is gone, with
 * what that run left (its processes, and as root the two-users test's accounts whose homes are in it).
 */
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  statfsSync,
  writeFileSync,
} from "node:fs";
import { randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { buildIfStale } from "./build.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The hash of the sources `dist/` was built from in this run's global set-up. */
    distBuiltFrom: string;
  }
}

/** statfs's f_type of a tmpfs (linux/magic.h). */
const TMPFS_MAGIC = 0x01021994;
/** Room the suite needs at its peak (a 40 MB task, hooks that print past the caps, 10,000 logs), with margin. */
const ROOM_BYTES = 2 * 1024 ** 3;
const PREFIX = "pi-teams-hooks-tests-";

/**
 * The tests write and remove tens of thousands of small files (task lists of 10,000, a log per run,
 * a context file per hook) and the leader fsyncs its ledger per event: on a disk file system that is a
 * large share of the suite's CPU (creating a file where many were just removed is dear on ext4). So,
 * unless TMPDIR is set, the run's temp folder is in /dev/shm when that is a tmpfs with room; else in
 * os.tmpdir() (TMPDIR, else /tmp). Mode 1777 like /tmp: a leader under its own user writes there too.
 */
function runTempDir(): string {
  const inShm = (): string | undefined => {
    if (process.env.TMPDIR) return undefined;
    try {
      const shm = "/dev/shm";
      const fs = statfsSync(shm);
      if (fs.type !== TMPFS_MAGIC || fs.bavail * fs.bsize < ROOM_BYTES) return undefined;
      if ((statSync(shm).mode & 0o1777) !== 0o1777) return undefined;
      return mkdtempSync(path.join(shm, PREFIX));
    } catch {
      return undefined;
    }
  };
  const dir = inShm() ?? mkdtempSync(path.join(os.tmpdir(), PREFIX));
  chmodSync(dir, 0o1777);
  writeFileSync(path.join(dir, "owner"), processId(process.pid) ?? "");
  return dir;
}

/** A process as `pid start-time` (/proc/<pid>/stat's 22nd field): a pid comes round again, the pair does not. */
function processId(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return `${pid} ${stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]}`;
  } catch {
    return null;
  }
}

/**
 * The folders of runs that were killed before their end (their `owner` process is gone), in /dev/shm and the temp
 * dir this run started with (`parents`): each removed with what it left, its processes ended, and as root the
 * two-users test's accounts whose homes are in it. Only this user's own folders: /dev/shm and /tmp are every
 * user's, and another's run (or a folder named so by anyone) is not this run's to end, nor can it be removed.
 */
export function removeKilledRuns(parents: readonly string[] = ["/dev/shm", os.tmpdir()]): void {
  for (const parent of new Set(parents)) {
    let names: string[];
    try {
      names = readdirSync(parent).filter((name) => name.startsWith(PREFIX));
    } catch {
      continue;
    }
    for (const name of names) {
      const dir = path.join(parent, name);
      let owner: string;
      try {
        const st = lstatSync(dir);
        if (!st.isDirectory() || st.uid !== process.getuid?.()) continue;
        owner = readFileSync(path.join(dir, "owner"), "utf8").trim();
      } catch {
        continue; // not a run that names its process: left alone
      }
      if (owner === "" || processId(Number(owner.split(" ")[0])) === owner) continue;
      killAll(processesOfRun(dir).map((p) => p.pid));
      if (process.getuid?.() === 0) removeAccountsUnder(dir);
      try {
        rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
      } catch {
        // A file of another user's in it (a leader under its own user wrote there): left, not this run's failure.
      }
    }
  }
}

/** SIGKILL to each of `pids` (one gone meanwhile is skipped). */
function killAll(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* gone */
    }
  }
}

/** The processes whose real user is `uid`. */
function processesOfUser(uid: number): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${name}/status`, "utf8"))?.[1]) === uid)
        found.push(Number(name));
    } catch {
      /* gone */
    }
  }
  return found;
}

/** The two-users test's users whose home lies in `dir`, and their run's group (`ptg` with the same digits). */
function removeAccountsUnder(dir: string): void {
  let passwd = "";
  try {
    passwd = readFileSync("/etc/passwd", "utf8");
  } catch {
    return;
  }
  const suffixes = new Set<string>();
  for (const line of passwd.split("\n")) {
    const [name = "", , uid = "", , , home = ""] = line.split(":");
    if (!/^pt[al][0-9a-f]{6}$/.test(name) || !home.startsWith(`${dir}/`)) continue;
    // The account is the test's alone: every process of it goes first (userdel refuses a user that runs one).
    killAll(processesOfUser(Number(uid)));
    spawnSync("userdel", [name], { stdio: "ignore" });
    suffixes.add(name.slice(3));
  }
  for (const suffix of suffixes)
    for (const name of testAccounts(suffix)) {
      const [kind, account = ""] = name.split(" ");
      spawnSync(kind === "user" ? "userdel" : "groupdel", [account], { stdio: "ignore" });
    }
}

/**
 * The six hex digits the two-users test names its users and group with in this run (`pta<hex>`, `ptl<hex>`,
 * `ptg<hex>`): set here, so that the check at the end looks for this run's accounts only (another run on the
 * machine may have its own at the time).
 */
// Not a PI_TEAMS_ name: the tests that list what a gate is given of those see only the contract's.
export const TEST_RUN_ACCOUNTS = "TEAMS_HOOKS_TEST_ACCOUNTS";

/** Accounts of the two-users test named `pt[agl]<suffix>`, as /etc/passwd and /etc/group list them. */
export function testAccounts(suffix: string): string[] {
  const names: string[] = [];
  for (const file of ["/etc/passwd", "/etc/group"]) {
    let text = "";
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n")) {
      const name = line.split(":")[0] ?? "";
      if (/^pt[agl]/.test(name) && name.slice(3) === suffix)
        names.push(`${path.basename(file) === "passwd" ? "user" : "group"} ${name}`);
    }
  }
  return names;
}

/** Live processes (not this one, nor vitest's workers) started with `TMPDIR=<dir>`: what the run left running. */
function processesOfRun(dir: string): Array<{ pid: number; cmdline: string }> {
  const needle = Buffer.from(`\0TMPDIR=${dir}\0`);
  const found: Array<{ pid: number; cmdline: string }> = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const environ = Buffer.concat([Buffer.from([0]), readFileSync(`/proc/${name}/environ`), Buffer.from([0])]);
      if (!environ.includes(needle)) continue;
      const status = readFileSync(`/proc/${name}/status`, "utf8");
      if (/^State:\s+Z/m.test(status)) continue; // ended, not yet reaped
      const parent = Number(/^PPid:\s+(\d+)/m.exec(status)?.[1]);
      const cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8").replaceAll("\0", " ").trim();
      if (parent === process.pid && /vitest/.test(cmdline)) continue; // a worker of this run, ending
      found.push({ pid: Number(name), cmdline });
    } catch {
      /* ended meanwhile, or not ours to read */
    }
  }
  return found;
}

/**
 * Once per run, not per project: vitest calls the set-up once for each project, in one process, each time as a new
 * module (so the mark is kept on globalThis, as build.ts keeps its build).
 */
const ONCE = Symbol.for("pi-teams-hooks.test-run-dir");

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const shared = globalThis as unknown as Record<symbol, { lockDir: string } | undefined>;
  const first = shared[ONCE] === undefined;
  // The build's lock is in the temp dir the run started with (another run's build takes the same), and the
  // build runs in the run's own home (npm writes its logs there).
  const once = (shared[ONCE] ??= { lockDir: os.tmpdir() });
  const teardown = first ? isolate() : undefined;
  try {
    project.provide("distBuiltFrom", await buildIfStale({ lockDir: once.lockDir }));
  } catch (error) {
    // No test runs: what the set-up made goes now.
    await teardown?.().catch(() => undefined);
    throw error;
  }
  // `vitest` in watch mode runs the set-up once: a rerun after an edit builds again first.
  project.onTestsRerun(async () =>
    project.provide("distBuiltFrom", await buildIfStale({ again: true, lockDir: once.lockDir })),
  );
  return teardown;
}

/** The run's temp folder, home and XDG folders, set in this process's environment; returns the check at the end. */
function isolate(): () => Promise<void> {
  removeKilledRuns();
  const accounts = randomBytes(3).toString("hex");
  const dir = runTempDir();
  const home = path.join(dir, "home");
  mkdirSync(home, { mode: 0o700 });
  const env: Record<string, string> = {
    TMPDIR: dir,
    HOME: home,
    XDG_STATE_HOME: path.join(home, ".local", "state"),
    XDG_CONFIG_HOME: path.join(home, ".config"),
    XDG_DATA_HOME: path.join(home, ".local", "share"),
    XDG_CACHE_HOME: path.join(home, ".cache"),
    npm_config_cache: path.join(home, ".npm"),
    npm_config_update_notifier: "false",
    [TEST_RUN_ACCOUNTS]: accounts,
  };
  Object.assign(process.env, env);
  delete process.env.XDG_RUNTIME_DIR;
  return async () => {
    const problems: string[] = [];
    // A process that ends with the worker that started it (a served team worker ends when its stdin closes) is
    // given a few seconds to; what is still there then was left behind.
    let left = processesOfRun(dir);
    for (const until = Date.now() + 5_000; left.length > 0 && Date.now() < until; left = processesOfRun(dir))
      await new Promise((resolve) => setTimeout(resolve, 50));
    killAll(left.map((p) => p.pid));
    if (left.length > 0) {
      const named = left.map((p) => `${p.pid} ${p.cmdline}`).join("; ");
      problems.push(`processes left running by the tests (killed): ${named}`);
    }
    const remaining = testAccounts(accounts);
    if (remaining.length > 0) problems.push(`Unix accounts left by the tests: ${remaining.join(", ")}`);
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    if (problems.length > 0) {
      // vitest only prints an error of the teardown: the run fails through its exit code.
      process.exitCode = 1;
      throw new Error(problems.join("\n"));
    }
  };
}
