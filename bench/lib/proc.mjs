// Child processes that speak NDJSON on stdout (the leader with --json, and the baseline poller), and
// what /proc says about them.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, readdirSync, readlinkSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import { realNs } from "./clock.mjs";

/**
 * Starts `node <args>` and collects its JSON lines. `waitFor(pred, ms)` resolves with the first line
 * (already seen or still to come) matching `pred`; each line carries `receivedNs` (bench clock).
 */
export function startNdjson(args, { env = process.env, cwd } = {}) {
  const startedNs = realNs();
  const child = spawn(process.execPath, args, { env, cwd, stdio: ["ignore", "pipe", "pipe"] });
  const lines = [];
  const byKey = new Map();
  const waiters = new Set();
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
    if (stderr.length > 200_000) stderr = stderr.slice(-100_000);
  });
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  createInterface({ input: child.stdout }).on("line", (text) => {
    const receivedNs = realNs();
    let line;
    try {
      line = JSON.parse(text);
    } catch {
      return; // not ours (a stray human line)
    }
    line.receivedNs = receivedNs;
    lines.push(line);
    if (line.type === "event" && typeof line.key === "string") byKey.set(line.key, (byKey.get(line.key) ?? 0) + 1);
    for (const w of waiters) {
      if (w.pred(line)) {
        waiters.delete(w);
        clearTimeout(w.timer);
        w.resolve(line);
      }
    }
  });

  function waitFor(pred, timeoutMs, what = "a line") {
    const seen = lines.find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const w = { pred, resolve };
      w.timer = setTimeout(() => {
        waiters.delete(w);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; stderr: ${stderr.slice(-2000)}`));
      }, timeoutMs);
      waiters.add(w);
      exited.then(({ code, signal }) => {
        if (!waiters.has(w)) return;
        waiters.delete(w);
        clearTimeout(w.timer);
        reject(
          new Error(`process exited (${code ?? signal}) while waiting for ${what}; stderr: ${stderr.slice(-2000)}`),
        );
      });
    });
  }

  async function stop(signal = "SIGINT", graceMs = 10_000) {
    if (child.exitCode !== null || child.signalCode !== null) return exited;
    child.kill(signal);
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    const result = await exited;
    clearTimeout(timer);
    return result;
  }

  return { child, pid: child.pid, startedNs, lines, byKey, waitFor, stop, exited, stderr: () => stderr };
}

/**
 * The node flags a bin's shebang gives it (`#!/usr/bin/env -S node --flag`): a bench runs the leader
 * as it runs when a user starts `pi-teams-hooks watch`.
 */
export function shebangFlags(file) {
  if (!existsSync(file)) return [];
  const first = readFileSync(file, "utf8").split("\n", 1)[0];
  const words = first.startsWith("#!") ? first.slice(2).trim().split(/\s+/) : [];
  const at = words.findIndex((w) => path.basename(w) === "node");
  return at < 0 ? [] : words.slice(at + 1);
}

/** VmRSS and VmHWM of a process, in MB (MiB), from /proc/<pid>/status. */
export function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
  return { rssMB: kb("VmRSS") / 1024, hwmMB: kb("VmHWM") / 1024 };
}

/** How many inotify watches a process holds (the `inotify wd:` lines of its inotify fds' fdinfo). */
export function inotifyWatchesOf(pid) {
  let watches = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue;
    }
    if (target !== "anon_inode:inotify") continue;
    try {
      watches += readFileSync(`/proc/${pid}/fdinfo/${fd}`, "utf8")
        .split("\n")
        .filter((l) => l.startsWith("inotify wd:")).length;
    } catch {
      // fd closed meanwhile
    }
  }
  return watches;
}

/** CPU time (user + system, all threads) a process has used so far, in seconds, from /proc/<pid>/stat. */
export function cpuSecondsOf(pid) {
  return cpuTimesOf(pid).self;
}

/** CPU seconds of a process itself and of its waited-for children (cutime + cstime: its hooks). */
export function cpuTimesOf(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields[0] is field 3 (state): utime is field 14, stime 15, cutime 16, cstime 17.
  const f = (n) => Number(fields[n - 3]);
  return { self: (f(14) + f(15)) / CLK_TCK, children: (f(16) + f(17)) / CLK_TCK };
}

const CLK_TCK = 100; // sysconf(_SC_CLK_TCK) on Linux x86-64

/**
 * CPU time a process has used so far, in ms, to the nanosecond: the sum of its live threads' run time
 * (`/proc/<pid>/task/<tid>/schedstat`), for the short spans /proc/<pid>/stat's 10 ms ticks cannot tell apart.
 */
export function cpuMsOf(pid) {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
    } catch {
      // the thread ended meanwhile
    }
  }
  return ns / 1e6;
}

/**
 * The pid of the spawn helper of a leader of an older build (a child running `spawner.py`: builds
 * before hooks were started from Node directly), or undefined. Kept so that a bench run against such a
 * build (`--other`) counts the CPU that build spent starting hooks in another process.
 */
export function spawnHelperOf(pid) {
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid && readFileSync(`/proc/${name}/cmdline`, "utf8").includes("spawner.py")) return Number(name);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

/**
 * CPU seconds of a leader, of an older build's spawn helper (spawnHelperOf: 0 for this build), and of
 * the hooks (waited for by the leader or that helper).
 */
export function leaderCpuTimes(pid) {
  const leader = cpuTimesOf(pid);
  const helperPid = spawnHelperOf(pid);
  let helper = { self: 0, children: 0 };
  try {
    if (helperPid !== undefined) helper = cpuTimesOf(helperPid);
  } catch {
    // ended meanwhile
  }
  return { self: leader.self, helper: helper.self, children: leader.children + helper.children };
}
