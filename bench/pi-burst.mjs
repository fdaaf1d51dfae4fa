#!/usr/bin/env node
// What the in-process leader costs a pi session during a burst of gate events, next to the standalone
// leader doing the same work in the same run. Each round, in rotation:
//   - pi alone (RPC mode, `--offline`): its idle RSS and CPU, the reference for what the extension adds;
//   - pi with this extension and the gates on (`PI_TEAMS_GATES=1`, `PI_TEAMS_HOOKS_TEAM_DIR` a team
//     of --tasks pending tasks, a hook that is `exit 0`): idle for --idle-ms, then all the tasks
//     completed at once (temp file renamed over each task, as workers write), until every hook log has
//     landed;
//   - `node <shebang flags> dist/teams-hooks/bin.js watch --concurrency 1` (the in-pi leader's
//     concurrency) on an identical fresh team with the same hook: the same idle window and burst.
// Per leader: CPU seconds during the burst (all its threads, /proc/<pid>/stat; the hooks' own CPU is
// not in it), CPU ms per event, peak RSS during the burst (VmHWM, reset just before it) against the
// idle RSS; and the check that exactly --tasks hook logs landed for --tasks events, one per task.
//
//   npm run build && node bench/pi-burst.mjs [--rounds 3] [--tasks 200] [--idle-ms 3000] [--timeout-ms 120000]
//
// About 1.5–2 minutes with the defaults on 2 quiet CPUs, 3 under a load of 8. No model, no network.
// Needs `npm ci` (pi is a dev dependency) and `npm run build` (the extension and the bin load from dist/).
import "./lib/help.mjs";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { cleanEnv, makePiRoot, piVersion, requirePi, startPi } from "./lib/pi.mjs";
import { cpuTimesOf, leaderCpuTimes, memoryOf, shebangFlags, startNdjson } from "./lib/proc.mjs";
import { arg, percentile, ratio, sleep, table } from "./lib/stats.mjs";
import { fillTasks, makeTeam, removeQuietly, stageTaskWrite, task } from "./lib/team.mjs";

const repo = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const ROUNDS = Number(arg("rounds", 3));
const TASKS = Number(arg("tasks", 200));
const IDLE_MS = Number(arg("idle-ms", 3000));
const TIMEOUT_MS = Number(arg("timeout-ms", 120_000));
const SETTLE_MS = 1000; // after the last log: a repeated event would land now
const BIN = path.join(repo, "dist", "teams-hooks", "bin.js");
requirePi("bench/pi-burst.mjs");
if (!existsSync(BIN)) {
  console.error(`bench/pi-burst.mjs: ${BIN} is missing: run npm run build`);
  process.exit(2);
}
if (![ROUNDS, TASKS, IDLE_MS, TIMEOUT_MS].every((n) => Number.isInteger(n) && n > 0)) {
  console.error("bench/pi-burst.mjs: --rounds, --tasks, --idle-ms and --timeout-ms take whole numbers above 0");
  process.exit(2);
}

const { root, home, hooksDir } = makePiRoot("bench-pi-burst-");
const NODE_ARGS = shebangFlags(BIN);

let stampSeq = 0;
const nextCompletedAt = () => new Date((stampSeq = Math.max(stampSeq + 1, Date.now()))).toISOString();

/** The hook logs that have landed (temp files start with a dot), and how many tasks they name. */
function hookLogs(team) {
  let names;
  try {
    names = readdirSync(path.join(team.teamDir, "hook-logs")).filter((n) => n.endsWith(".json") && !n.startsWith("."));
  } catch {
    return { logs: 0, tasks: 0 };
  }
  return { logs: names.length, tasks: new Set(names.map((n) => /task-(\d+)\.json$/.exec(n)?.[1] ?? n)).size };
}

/** Resets a process's peak RSS (VmHWM) to its current RSS; false when the kernel does not let us. */
function resetPeak(pid) {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

/** A process's CPU (% of one CPU) over --idle-ms once start-up work has settled, and its RSS then. */
async function idleFigures(pid) {
  await sleep(300);
  const idle0 = cpuTimesOf(pid).self;
  await sleep(IDLE_MS);
  return { idleCpuPct: ((cpuTimesOf(pid).self - idle0) / (IDLE_MS / 1000)) * 100, idleRssMB: memoryOf(pid).rssMB };
}

/** Idle window, then the burst: the figures of one leader (pi's pid or the standalone's). */
async function idleThenBurst(pid, team, handled) {
  const out = await idleFigures(pid);

  const commits = [];
  for (let id = 1; id <= TASKS; id++) commits.push(stageTaskWrite(team, task(id, { completedAt: nextCompletedAt() })));
  const peakReset = resetPeak(pid);
  let sampledPeak = memoryOf(pid).rssMB;
  const cpu0 = leaderCpuTimes(pid);
  const t0 = performance.now();
  for (const commit of commits) commit();
  let landed = hookLogs(team);
  while (landed.logs < TASKS && performance.now() - t0 < TIMEOUT_MS) {
    await sleep(20);
    sampledPeak = Math.max(sampledPeak, memoryOf(pid).rssMB);
    landed = hookLogs(team);
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu1 = leaderCpuTimes(pid);
  const mem = memoryOf(pid);
  await sleep(SETTLE_MS);
  const after = hookLogs(team);
  const complete = landed.logs >= TASKS;
  return {
    ...out,
    seconds: complete ? seconds : NaN,
    eventsPerSecond: complete ? TASKS / seconds : NaN,
    cpuSeconds: cpu1.self - cpu0.self,
    cpuMsPerEvent: (1000 * (cpu1.self - cpu0.self)) / TASKS,
    hookCpuMsPerEvent: (1000 * (cpu1.children - cpu0.children)) / TASKS,
    peakRssMB: Math.max(sampledPeak, mem.rssMB, peakReset ? mem.hwmMB : 0),
    peakFrom: peakReset ? "VmHWM" : "sampled",
    logs: after.logs,
    tasksLogged: after.tasks,
    handled: handled(),
  };
}

async function piAlone() {
  const pi = startPi({ cwd: root, home });
  try {
    const id = pi.send({ type: "get_state" });
    await pi.waitFor("get_state response", (l) => l.type === "response" && l.id === id);
    return await idleFigures(pi.pid);
  } finally {
    await pi.stop();
  }
}

async function piWithGates(round) {
  const team = makeTeam(root, `r${round}-pi`);
  fillTasks(team, TASKS);
  const env = { PI_TEAMS_GATES: "1", PI_TEAMS_HOOKS_TEAM_DIR: team.teamDir, PI_TEAMS_HOOKS_DIR: hooksDir };
  const pi = startPi({ cwd: root, home, args: ["-e", repo], env });
  try {
    await pi.untilWatching();
    const from = pi.lines.length;
    // Each pass reaches the session as a notification: "Gate on_task_completed.sh passed for task #N (…)".
    const passes = () =>
      pi.lines
        .slice(from)
        .filter(
          (l) => l.line.type === "extension_ui_request" && /^Gate \S+ passed for task #/.test(String(l.line.message)),
        ).length;
    return await idleThenBurst(pi.pid, team, passes);
  } finally {
    await pi.stop();
    removeQuietly(team.teamDir);
  }
}

async function watchRun(round) {
  const team = makeTeam(root, `r${round}-watch`);
  fillTasks(team, TASKS);
  const proc = startNdjson(
    [...NODE_ARGS, BIN, "watch", "--team-dir", team.teamDir, "--hooks-dir", hooksDir, "--concurrency", "1", "--json"],
    { env: cleanEnv(), cwd: root },
  );
  try {
    await proc.waitFor((l) => l.type === "watching", 60_000, "watching");
    await proc.waitFor((l) => l.type === "ready", 60_000, "ready");
    return await idleThenBurst(proc.pid, team, () => proc.lines.filter((l) => l.type === "event").length);
  } finally {
    await proc.stop();
    removeQuietly(team.teamDir);
  }
}

const configs = [
  { name: "pi alone", run: piAlone },
  { name: "pi + extension, gates on", run: piWithGates },
  { name: "standalone watch --concurrency 1", run: watchRun },
];
const median = (xs) => percentile(xs.filter(Number.isFinite), 0.5);
const fmt = (v, unit, digits = 0) => (Number.isFinite(v) ? `${v.toFixed(digits)}${unit}` : "—");

const samples = configs.map(() => []);
const startedAt = performance.now();
console.log(
  `node ${process.version}; pi ${piVersion()}; ${os.availableParallelism?.() ?? os.cpus().length} CPUs; load ${os.loadavg()[0].toFixed(2)} at the start`,
);
console.log(
  `${ROUNDS} rounds, interleaved; idle ${IDLE_MS} ms, then a burst of ${TASKS} completions (hook: #!/bin/sh exit 0); standalone: node ${[...NODE_ARGS, path.relative(process.cwd(), BIN) || BIN].join(" ")} watch --concurrency 1`,
);
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < configs.length; k++) {
      const i = (round + k) % configs.length; // rotate which configuration goes first
      const r = await configs[i].run(round);
      samples[i].push(r);
      if (r.logs !== undefined) {
        process.stderr.write(
          `  round ${round + 1} ${configs[i].name}: ${fmt(r.seconds, " s", 2)}, CPU ${r.cpuSeconds.toFixed(2)} s (${r.cpuMsPerEvent.toFixed(1)} ms/event), RSS ${r.idleRssMB.toFixed(1)} → peak ${r.peakRssMB.toFixed(1)} MB (${r.peakFrom}); ${r.logs} logs for ${r.tasksLogged} tasks, ${r.handled} events\n`,
        );
      }
    }
  }
  const m = samples.map((rs) => Object.fromEntries(Object.keys(rs[0]).map((k) => [k, median(rs.map((r) => r[k]))])));
  const [alone, inPi, standalone] = m;
  console.log("");
  console.log(
    table([
      [
        "medians",
        "idle CPU",
        "RSS idle",
        "burst time",
        "events/s",
        "CPU in burst",
        "CPU/event",
        "peak RSS in burst",
        "peak − idle",
        "peak − pi alone idle",
      ],
      ...configs.map((c, i) => [
        c.name,
        fmt(m[i].idleCpuPct, " %", 1),
        fmt(m[i].idleRssMB, " MB", 1),
        fmt(m[i].seconds, " s", 2),
        fmt(m[i].eventsPerSecond, "", 1),
        fmt(m[i].cpuSeconds, " s", 2),
        fmt(m[i].cpuMsPerEvent, " ms", 1),
        fmt(m[i].peakRssMB, " MB", 1),
        fmt(m[i].peakRssMB - m[i].idleRssMB, " MB", 1),
        i === 1 ? fmt(m[i].peakRssMB - alone.idleRssMB, " MB", 1) : "",
      ]),
    ]),
  );
  console.log("");
  console.log(
    `in pi / standalone: CPU per event ${ratio(inPi.cpuMsPerEvent, standalone.cpuMsPerEvent)}, burst time ${ratio(inPi.seconds, standalone.seconds)}, peak − idle ${ratio(inPi.peakRssMB - inPi.idleRssMB, standalone.peakRssMB - standalone.idleRssMB)}`,
  );
  console.log(
    `the gates on add to pi's idle RSS: ${fmt(inPi.idleRssMB - alone.idleRssMB, " MB", 1)}; to its peak in the burst: ${fmt(inPi.peakRssMB - alone.idleRssMB, " MB", 1)} (the standalone leader's own peak: ${fmt(standalone.peakRssMB, " MB", 1)})`,
  );
  console.log(
    `hooks' own CPU per event (not in the figures above): in pi ${fmt(inPi.hookCpuMsPerEvent, " ms", 1)}, standalone ${fmt(standalone.hookCpuMsPerEvent, " ms", 1)}`,
  );
  const runs = samples.slice(1).flat();
  const exact = runs.every((r) => r.logs === TASKS && r.tasksLogged === TASKS && r.handled === TASKS);
  console.log(
    `every burst: ${TASKS} logs for ${TASKS} tasks and ${TASKS} events, nothing lost or repeated: ${exact ? "yes" : "NO"} (${runs.length} bursts)`,
  );
  console.log(
    `load ${os.loadavg()[0].toFixed(2)} at the end; ${((performance.now() - startedAt) / 1000).toFixed(0)} s in all`,
  );
  if (!exact) process.exitCode = 1;
} finally {
  removeQuietly(root);
}
