#!/usr/bin/env node
// How fast does the leader notice a completed task and start its hook, next to the reference design
// (poll the task folder every 700 ms), measured in the same run on the same machine.
//
//   npm run build && node bench/latency.mjs            # full run: about 3 minutes when the machine is
//                                                       # idle, 5–6 under heavy load (load average 7+)
//   node bench/latency.mjs --quick                      # fewer samples, 1–3 minutes
//   options: --samples N (leader events per list, 200) --baseline-samples N (60; each costs ~0.7 s) --burst N (500)
//            --big N (tasks in the large list, 10000) --json FILE (all figures as JSON)
//            --bin PATH (another build's bin.js, to try a fix) --node-arg ARG (repeatable, e.g.
//            --node-arg=--max-semi-space-size=2, passed to node before the leader's bin)
//            --other PATH (repeatable: another build's bin.js whose bursts run right after this build's,
//            in the same run, so that hooks/s and leader CPU per event compare under the same load, and
//            whose leader takes events in turns with this build's on a small list: latency under one load)
//
// What is measured (docs/performance.md explains it in full):
// - latency: a worker's atomic rename of a completed task → the first action of its hook (a bash
//   `printf "$EPOCHREALTIME"`), both on CLOCK_REALTIME (lib/clock.mjs). One event at a time: the next
//   rename waits until the previous event's `event` line (log and gate metadata written). The leader
//   is the real CLI (`watch --json`) in a child process, so the figures include everything it does.
// - throughput: N completions renamed at once; hooks per second until the last event line (its log
//   file exists by then; the bench counts the files to be sure), at --concurrency 1 and 2, each next
//   to a ceiling: this process spawning the same hook BURST times, 1 (2) at a time, with no leader work.
// - floor: this process spawning the same hook directly (spawn → first action), at the start and the
//   end of the run: what a bare bash spawn costs on the machine at that moment.
// - startup: spawn → `watching` line (events are taken from then on) and spawn → `ready` line (the
//   start-up scan, which runs in the background, is done) with the large list (half of it completed
//   history, which a first start records as a baseline), then a restart on the same dir; VmRSS/VmHWM
//   from /proc/<pid>/status once the scan is done.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { calibrate, msBetween, parseEpochRealtime, realNs } from "./lib/clock.mjs";
import { cpuSecondsOf, cpuTimesOf, leaderCpuTimes, memoryOf, shebangFlags, startNdjson } from "./lib/proc.mjs";
import { ms, ratio, sleep, summarize, table } from "./lib/stats.mjs";
import {
  fillTasks,
  makeStampHook,
  makeTeam,
  makeTempRoot,
  removeQuietly,
  stageTaskWrite,
  stampsCwd,
  stampsFiles,
  task,
} from "./lib/team.mjs";
import { benchArgs } from "./lib/args.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const POLLER = path.join(here, "lib/poll-baseline.mjs");

const { values: opt } = benchArgs(import.meta.url, {
  options: {
    bin: { type: "string" },
    "node-arg": { type: "string", multiple: true, default: [] },
    other: { type: "string", multiple: true, default: [] },
    quick: { type: "boolean", default: false },
    samples: { type: "string" },
    "baseline-samples": { type: "string" },
    burst: { type: "string" },
    big: { type: "string" },
    json: { type: "string" },
    "turns-only": { type: "boolean", default: false },
  },
});
const BIN = path.resolve(opt.bin ?? path.join(here, "../dist/teams-hooks/bin.js"));
// The node flags the bin's shebang gives it (`#!/usr/bin/env -S node --flag`): the leader runs here as
// it runs when a user starts `pi-teams-hooks watch`. --node-arg adds to them (to try a flag).
const NODE_ARGS = [...shebangFlags(BIN), ...opt["node-arg"]];
/**
 * Other builds, each with its own shebang's flags: their bursts are measured after this build's, and
 * their latency on a small list in turns with this build's (`measureInterleaved`).
 */
const OTHERS = opt.other.map((file) => {
  const bin = path.resolve(file);
  return { bin, nodeArgs: [...shebangFlags(bin), ...opt["node-arg"]] };
});
const SAMPLES = Number(opt.samples ?? (opt.quick ? 40 : 200));
const BASELINE_SAMPLES = Number(opt["baseline-samples"] ?? (opt.quick ? 20 : 60));
const BURST = Number(opt.burst ?? (opt.quick ? 200 : 500));
const BIG = Number(opt.big ?? 10_000);
const SMALL = 10;
const WARMUP = 5;
const POLL_MS = 700;
const EVENT_TIMEOUT_MS = 15_000;
const FLOOR_SAMPLES = opt.quick ? 20 : 60;
const IDLE_MS = opt.quick ? 6_000 : 11_000; // covers one (two) reconcile scans, every 5 s

const TARGETS = { medianMs: 15, p99Ms: 50, ceilingRatioC2: 0.6, readyMs: 500, rssMB: 80 };

for (const file of [BIN, ...OTHERS.map((o) => o.bin)]) {
  if (!existsSync(file)) {
    console.error(`${file} is missing: run \`npm run build\` first`);
    process.exit(2);
  }
}

const root = makeTempRoot("bench-latency-");
const { hooksDir, hook } = makeStampHook(root);
const results = {
  machine: machine(),
  leader: { bin: BIN, nodeArgs: NODE_ARGS },
  others: OTHERS,
  options: { SAMPLES, BASELINE_SAMPLES, BURST, BIG, SMALL, WARMUP, POLL_MS },
  latency: {},
  throughput: {},
  startup: {},
  floor: {},
  drift: [],
};

/** Every leader and poller started, so that none outlives the bench, whatever happens. */
const started = new Set();

/** Leader or baseline poller on one team dir, with its own stamps file. */
function startWatcher(kind, team, stampsFile, extra = [], build = { bin: BIN, nodeArgs: NODE_ARGS }) {
  const env = { ...process.env, BENCH_STAMPS: stampsFile, LC_ALL: "C" };
  const args =
    kind === "leader"
      ? [...build.nodeArgs, build.bin, "watch", "--team-dir", team.teamDir, "--hooks-dir", hooksDir, "--json", ...extra]
      : [POLLER, team.tasksDir, hook, String(POLL_MS)];
  // A sandboxed gate stamps into its working directory, the leader's (lib/team.mjs makeStampHook).
  const proc = startNdjson(args, { env, cwd: stampsCwd(stampsFile) });
  started.add(proc);
  return proc;
}

function readStamps(stampsFile) {
  const byTimestamp = new Map();
  for (const file of stampsFiles(stampsFile)) {
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, "utf8").split("\n")) {
      if (!line.trim()) continue;
      const [stamp, timestamp] = line.split(" ");
      if (!byTimestamp.has(timestamp)) byTimestamp.set(timestamp, parseEpochRealtime(stamp));
    }
  }
  return byTimestamp;
}

/**
 * Re-anchors the bench clock (lib/clock.mjs) before each sample, so that a step of the wall clock
 * (this VM's clock is adjusted by a few milliseconds now and then) cannot skew the samples after it.
 */
function recalibrate() {
  const drift = calibrate();
  if (drift !== null) results.drift.push(drift);
}

let stampSeq = 0;
/**
 * A fresh, unique completion time: now, as a worker stamps it (a first start takes a file changed
 * during its start-up scan for history if its event is stamped over a minute before the start,
 * docs/ledger.md "The first start"), one millisecond later than the last if the clock has not moved.
 */
const nextCompletedAt = () => new Date((stampSeq = Math.max(stampSeq + 1, Date.now()))).toISOString();

/**
 * One event at a time: wait a random gap (so renames fall at random phases of any periodic work),
 * rename a completed task into place, wait until its event line. Returns the per-event records.
 */
async function sequentialRun(proc, team, ids, gapMs) {
  const records = [];
  for (const id of ids) {
    await sleep(Math.random() * gapMs);
    recalibrate();
    const completedAt = nextCompletedAt();
    const commit = stageTaskWrite(team, task(id, { completedAt }));
    const renameNs = realNs(); // just before the rename: nothing can notice it earlier
    commit();
    const key = `task_completed:${id}:${completedAt}`;
    try {
      const line = await proc.waitFor((l) => l.type === "event" && l.key === key, EVENT_TIMEOUT_MS, key);
      records.push({ id, completedAt, renameNs, eventNs: line.receivedNs, outcome: line.outcome });
    } catch {
      records.push({ id, completedAt, renameNs, eventNs: null, outcome: "lost" });
    }
  }
  return records;
}

function latencyFigures(records, stampsFile, proc) {
  const stamps = readStamps(stampsFile);
  const toHook = [];
  const handled = [];
  let lost = 0;
  let notPassed = 0;
  for (const r of records) {
    const stamp = stamps.get(r.completedAt);
    if (r.eventNs === null || stamp === undefined) {
      lost += 1;
      continue;
    }
    if (r.outcome !== "passed") notPassed += 1;
    toHook.push(msBetween(r.renameNs, stamp));
    handled.push(msBetween(r.renameNs, r.eventNs));
  }
  const repeated = [...proc.byKey.values()].filter((n) => n > 1).length;
  return {
    toHook: summarize(toHook),
    handled: summarize(handled),
    lost,
    repeated,
    notPassed,
    raw: toHook.map((v) => Number(v.toFixed(3))),
  };
}

async function measureLatency(label, team, kind, ids, warmupIds, count) {
  recalibrate();
  const stampsFile = path.join(root, `stamps-${label}-${kind}.txt`);
  const t0 = realNs();
  const proc = startWatcher(kind, team, stampsFile);
  const watching = await proc.waitFor((l) => l.type === "watching", 60_000, "watching");
  const readyMs = msBetween(t0, watching.receivedNs);
  // The leader takes events from `watching`; its start-up scan ends with `ready` (the poll baseline has none).
  const scanned = kind === "leader" ? await proc.waitFor((l) => l.type === "ready", 60_000, "ready") : null;
  const scannedMs = scanned ? msBetween(t0, scanned.receivedNs) : null;
  const leaderStartupMs = scanned?.startupMs ?? null;
  const memReady = memoryOf(proc.pid);
  const gap = kind === "leader" ? 20 : POLL_MS;
  await sequentialRun(proc, team, warmupIds, gap);
  const cpu0 = leaderCpuTimes(proc.pid);
  const records = await sequentialRun(proc, team, ids.slice(0, count), gap);
  const cpu1 = leaderCpuTimes(proc.pid);
  const memAfter = memoryOf(proc.pid);
  await proc.stop();
  const figures = latencyFigures(records, stampsFile, proc);
  const cpuMsPerEvent = (1000 * (cpu1.self - cpu0.self)) / count;
  const helperCpuMsPerEvent = (1000 * (cpu1.helper - cpu0.helper)) / count;
  const out = {
    ...figures,
    readyMs,
    scannedMs,
    leaderStartupMs,
    memReady,
    memAfter,
    cpuMsPerEvent,
    helperCpuMsPerEvent,
  };
  results.latency[`${label}/${kind}`] = out;
  progress(
    `${label.padEnd(6)} ${kind.padEnd(8)} median ${ms(figures.toHook.median, 2)}  p99 ${ms(figures.toHook.p99, 2)}  (n=${figures.toHook.n}, lost ${figures.lost}, repeated ${figures.repeated}; ${kind} CPU ${cpuMsPerEvent.toFixed(1)} ms/event)`,
  );
  return out;
}

/** Startup to `watching`, and memory, of a leader on `team`; stops it again. */
async function measureStartup(label, team) {
  const stampsFile = path.join(root, `stamps-startup-${label}.txt`);
  const t0 = realNs();
  const proc = startWatcher("leader", team, stampsFile);
  const watching = await proc.waitFor((l) => l.type === "watching", 60_000, "watching");
  const ready = await proc.waitFor((l) => l.type === "ready", 60_000, "ready");
  const out = {
    wallMs: msBetween(t0, watching.receivedNs),
    scannedMs: msBetween(t0, ready.receivedNs),
    leaderMs: ready.startupMs,
    tasks: ready.tasks,
    baseline: ready.baseline,
    mem: memoryOf(proc.pid),
  };
  // Idle cost: CPU seconds (all threads) while nothing happens but the reconcile scan (every 5 s).
  const cpu0 = cpuSecondsOf(proc.pid);
  const idle0 = realNs();
  await sleep(IDLE_MS);
  out.idleCpuPercent = (100 * (cpuSecondsOf(proc.pid) - cpu0)) / (msBetween(idle0, realNs()) / 1000);
  out.idleMem = memoryOf(proc.pid);
  await proc.stop();
  results.startup[label] = out;
  progress(
    `startup ${label}: ${ms(out.wallMs)} to watching, ${ms(out.scannedMs)} to ready (scan done; leader's own figure ${out.leaderMs} ms), RSS ${out.mem.rssMB.toFixed(1)} MB, peak ${out.mem.hwmMB.toFixed(1)} MB; idle CPU ${out.idleCpuPercent.toFixed(1)} % over ${IDLE_MS / 1000} s`,
  );
  return out;
}

/**
 * The floor on this machine right now: this (small) process spawns the same hook with bash and waits
 * for it, one at a time; spawn call → the hook's first action. Measured at the start and at the end
 * of the run, so the other figures can be read against what a bare spawn costs at the time.
 */
async function measureFloor(label, count) {
  const stampsFile = path.join(root, `stamps-floor-${label}.txt`);
  const starts = [];
  for (let i = 0; i < count; i++) {
    await sleep(Math.random() * 20);
    recalibrate();
    const stamp = nextCompletedAt();
    const t0 = realNs();
    const child = spawn("bash", [hook], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, BENCH_STAMPS: stampsFile, PI_TEAMS_EVENT_TIMESTAMP: stamp, LC_ALL: "C" },
    });
    child.stdin.end();
    child.stdout.resume();
    child.stderr.resume();
    await new Promise((resolve) => child.once("close", resolve));
    starts.push({ stamp, t0 });
  }
  const stamps = readStamps(stampsFile);
  const samples = starts.filter((s) => stamps.has(s.stamp)).map((s) => msBetween(s.t0, stamps.get(s.stamp)));
  const out = summarize(samples);
  results.floor[label] = out;
  progress(
    `floor (${label}): bare spawn → hook's first action median ${ms(out.median, 2)}  p99 ${ms(out.p99, 2)}  (n=${out.n})`,
  );
  return out;
}

/**
 * The ceiling for a burst on this machine right now: this process (no leader work at all) spawning the
 * same hook the same way (bash, its own process group, piped stdio, the context on stdin), `concurrency`
 * at a time, BURST times. What the leader reaches is read against this.
 */
async function measureSpawnCeiling(concurrency) {
  const stampsFile = path.join(root, `stamps-ceiling-c${concurrency}.txt`);
  const env = { ...process.env, BENCH_STAMPS: stampsFile, LC_ALL: "C" };
  const input = JSON.stringify(task(1, { completedAt: nextCompletedAt() }));
  let next = 0;
  const cpu0 = cpuTimesOf(process.pid);
  const t0 = realNs();
  const one = () =>
    new Promise((resolve) => {
      const child = spawn("bash", [hook], {
        stdio: ["pipe", "pipe", "pipe"],
        detached: true,
        env: { ...env, PI_TEAMS_EVENT_TIMESTAMP: String(next) },
      });
      child.stdin.on("error", () => {});
      child.stdin.end(input);
      child.stdout.resume();
      child.stderr.resume();
      child.once("close", resolve);
    });
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < BURST) {
        next += 1;
        await one();
      }
    }),
  );
  const seconds = msBetween(t0, realNs()) / 1000;
  const cpu1 = cpuTimesOf(process.pid);
  const out = {
    concurrency,
    hooksPerSecond: BURST / seconds,
    seconds,
    parentCpuMsPerHook: (1000 * (cpu1.self - cpu0.self)) / BURST,
    hookCpuMsPerEvent: (1000 * (cpu1.children - cpu0.children)) / BURST,
  };
  results.throughput[`ceiling-c${concurrency}`] = out;
  progress(
    `spawn ceiling c${concurrency}: ${out.hooksPerSecond.toFixed(1)} hooks/s (bench process CPU ${out.parentCpuMsPerHook.toFixed(1)} ms/hook, hook CPU ${out.hookCpuMsPerEvent.toFixed(1)} ms)`,
  );
  return out;
}

/** A burst of BURST completions on a fresh list; `other` is the index of an --other build (this build when absent). */
async function measureThroughput(concurrency, other) {
  const label = other === undefined ? `c${concurrency}` : `other${other + 1}-c${concurrency}`;
  const team = makeTeam(root, `burst-${label}`);
  fillTasks(team, BURST);
  const stampsFile = path.join(root, `stamps-burst-${label}.txt`);
  const proc = startWatcher(
    "leader",
    team,
    stampsFile,
    ["--concurrency", String(concurrency)],
    other === undefined ? undefined : OTHERS[other],
  );
  await proc.waitFor((l) => l.type === "watching", 60_000, "watching");
  const commits = [];
  for (let id = 1; id <= BURST; id++) commits.push(stageTaskWrite(team, task(id, { completedAt: nextCompletedAt() })));
  const cpu0 = leaderCpuTimes(proc.pid);
  const t0 = realNs();
  for (const commit of commits) commit();
  const writtenNs = realNs();
  let lastNs = null;
  try {
    await proc.waitFor(() => proc.byKey.size >= BURST, 120_000, `${BURST} events`);
    lastNs = proc.lines.filter((l) => l.type === "event").at(-1).receivedNs;
  } catch (error) {
    progress(`throughput ${label}: ${error.message.split(";")[0]}`);
  }
  const cpu1 = leaderCpuTimes(proc.pid);
  await sleep(200); // anything extra (a repeat) would show up now
  await proc.stop();
  const logs = readdirSync(path.join(team.teamDir, "hook-logs")).filter((n) => n.endsWith(".json")).length;
  const seconds = lastNs === null ? NaN : msBetween(t0, lastNs) / 1000;
  const out = {
    concurrency,
    events: proc.byKey.size,
    repeated: [...proc.byKey.values()].filter((n) => n > 1).length,
    logs,
    hooksRan: readStamps(stampsFile).size,
    writeMs: msBetween(t0, writtenNs),
    seconds,
    hooksPerSecond: BURST / seconds,
    // CPU per event, less sensitive to other load than wall time: the leader's own, and its hooks'.
    leaderCpuMsPerEvent: (1000 * (cpu1.self - cpu0.self)) / BURST,
    // An older build's spawn helper (spawnHelperOf) forks its hooks: its CPU is that leader's work done elsewhere.
    helperCpuMsPerEvent: (1000 * (cpu1.helper - cpu0.helper)) / BURST,
    hookCpuMsPerEvent: (1000 * (cpu1.children - cpu0.children)) / BURST,
  };
  results.throughput[label] = out;
  progress(
    `throughput ${label}: ${out.hooksPerSecond.toFixed(1)} hooks/s (${out.events} events, ${out.logs} logs, ${out.repeated} repeated, ${seconds.toFixed(2)} s; CPU per event: leader ${out.leaderCpuMsPerEvent.toFixed(1)} ms, an older build's spawn helper ${out.helperCpuMsPerEvent.toFixed(1)} ms, hook ${out.hookCpuMsPerEvent.toFixed(1)} ms)`,
  );
  removeQuietly(team.teamDir);
  return out;
}

/**
 * This build's latency next to another's under the same load: a leader of each on a small list of
 * its own, both running, and events handed to them in turns (which goes first in a pair is random),
 * one at a time as in `measureLatency`. Whatever else the machine does falls on both alike, so the
 * difference of the medians (and the median of the pairs' differences) says what the build changed.
 */
async function measureInterleaved(other) {
  const label = `pair${other + 1}`;
  const sides = [undefined, OTHERS[other]].map((build, i) => {
    const team = makeTeam(root, `${label}-${i}`);
    fillTasks(team, SMALL);
    const stampsFile = path.join(root, `stamps-${label}-${i}.txt`);
    return { team, stampsFile, proc: startWatcher("leader", team, stampsFile, [], build), records: [] };
  });
  for (const side of sides) await side.proc.waitFor((l) => l.type === "ready", 60_000, "ready");
  const ids = cycle(WARMUP + SAMPLES, SMALL);
  for (const [n, id] of ids.entries()) {
    const order = Math.random() < 0.5 ? [0, 1] : [1, 0];
    for (const i of order) {
      const records = await sequentialRun(sides[i].proc, sides[i].team, [id], 20);
      if (n >= WARMUP) sides[i].records.push(...records);
    }
  }
  for (const side of sides) await side.proc.stop();
  const [mine, theirs] = sides.map((side) => latencyFigures(side.records, side.stampsFile, side.proc));
  const diffs = [];
  for (let k = 0; k < mine.raw.length && k < theirs.raw.length; k++) diffs.push(mine.raw[k] - theirs.raw[k]);
  const pairDiff = summarize(diffs).median;
  const out = {
    this: mine,
    other: theirs,
    medianDiffMs: mine.toHook.median - theirs.toHook.median,
    pairDiffMedianMs: pairDiff,
  };
  results.latency[label] = out;
  progress(
    `interleaved with other build ${other + 1}: this median ${ms(mine.toHook.median, 2)} p99 ${ms(mine.toHook.p99, 2)}, other median ${ms(theirs.toHook.median, 2)} p99 ${ms(theirs.toHook.p99, 2)}; difference of medians ${out.medianDiffMs.toFixed(2)} ms, median of the pairs' differences ${pairDiff.toFixed(2)} ms (n=${mine.toHook.n}/${theirs.toHook.n}, lost ${mine.lost}/${theirs.lost}, repeated ${mine.repeated}/${theirs.repeated})`,
  );
  return out;
}

function progress(text) {
  process.stderr.write(`  ${text}\n`);
}

function machine() {
  const cpus = os.cpus();
  return {
    node: process.version,
    nproc: os.availableParallelism?.() ?? cpus.length,
    cpu: cpus[0]?.model ?? "unknown",
    memGB: Number((os.totalmem() / 2 ** 30).toFixed(1)),
    kernel: os.release(),
    fs: "tmpdir " + os.tmpdir(),
    load: os.loadavg()[0],
  };
}

const range = (from, count) => Array.from({ length: count }, (_, i) => from + i);
const cycle = (count, size) => Array.from({ length: count }, (_, i) => (i % size) + 1);

try {
  const m = results.machine;
  console.log(
    `pi-teams-hooks latency bench — node ${m.node}, ${m.nproc} CPUs (${m.cpu}), ${m.memGB} GB, load ${m.load.toFixed(2)}, ${os.tmpdir()}`,
  );
  console.log(`leader: node ${[...NODE_ARGS, path.relative(process.cwd(), BIN) || BIN].join(" ")} watch --json`);
  console.log(
    `${SAMPLES} leader events per list (+${WARMUP} warm-up), ${BASELINE_SAMPLES} for the ${POLL_MS} ms poll baseline, burst ${BURST}, large list ${BIG}\n`,
  );

  await measureFloor("start", FLOOR_SAMPLES);
  if (opt["turns-only"]) {
    if (OTHERS.length === 0) throw new Error("--turns-only needs --other BIN");
    for (let i = 0; i < OTHERS.length; i++) await measureInterleaved(i);
    await measureFloor("end", FLOOR_SAMPLES);
    process.exitCode = 0;
  } else {
    // Small list: 10 pending tasks, completed over and over (each time with a new completedAt: a new event).
    const small = makeTeam(root, "small");
    fillTasks(small, SMALL);
    await measureLatency("small", small, "leader", cycle(SAMPLES, SMALL), cycle(WARMUP, SMALL), SAMPLES);
    await measureLatency(
      "small",
      small,
      "poll700",
      cycle(BASELINE_SAMPLES, SMALL),
      cycle(WARMUP, SMALL).slice(0, 2),
      BASELINE_SAMPLES,
    );

    // Large list: half of it completed history (a first start records it as a baseline), half pending.
    const big = makeTeam(root, "big");
    const history = Math.floor(BIG / 2);
    fillTasks(big, BIG, { completed: history });
    const bigIds = range(history + 1, BIG - history);
    const leaderIds = bigIds.slice(WARMUP, WARMUP + SAMPLES);
    const bigLeader = await measureLatency("large", big, "leader", leaderIds, bigIds.slice(0, WARMUP), SAMPLES);
    results.startup.first = {
      wallMs: bigLeader.readyMs,
      scannedMs: bigLeader.scannedMs,
      leaderMs: bigLeader.leaderStartupMs,
      mem: bigLeader.memReady,
      memAfterEvents: bigLeader.memAfter,
    };
    progress(
      `startup first start: ${ms(bigLeader.readyMs)} to watching, ${ms(bigLeader.scannedMs)} to ready (scan done), RSS ${bigLeader.memReady.rssMB.toFixed(1)} MB (peak ${bigLeader.memReady.hwmMB.toFixed(1)}); after ${SAMPLES} events RSS ${bigLeader.memAfter.rssMB.toFixed(1)} MB (peak ${bigLeader.memAfter.hwmMB.toFixed(1)})`,
    );
    await measureStartup("restart", big);
    const pollIds = bigIds.slice(WARMUP + SAMPLES + 2);
    await measureLatency(
      "large",
      big,
      "poll700",
      pollIds,
      bigIds.slice(WARMUP + SAMPLES, WARMUP + SAMPLES + 2),
      BASELINE_SAMPLES,
    );

    await measureSpawnCeiling(1);
    await measureThroughput(1);
    await measureSpawnCeiling(2);
    await measureThroughput(2);
    for (let i = 0; i < OTHERS.length; i++) await measureThroughput(2, i);
    for (let i = 0; i < OTHERS.length; i++) await measureInterleaved(i);
    await measureFloor("end", FLOOR_SAMPLES);
  }

  results.machine.loadAfter = os.loadavg()[0];
  if (opt["turns-only"]) reportTurns();
  else report();
  if (opt.json)
    writeFileSync(opt.json, `${JSON.stringify(results, (_key, v) => (typeof v === "bigint" ? String(v) : v), 2)}\n`);
} finally {
  await Promise.all([...started].map((proc) => proc.stop("SIGTERM", 5_000)));
  removeQuietly(root);
}

/** The interleaved latency of this build and each other, one row per build and pair. */
function reportTurns() {
  const rows = [
    [
      "rename → hook's first action, in turns",
      "median",
      "p99",
      "n",
      "lost",
      "repeated",
      "this − other (medians / pairs)",
    ],
  ];
  for (const [i, o] of OTHERS.entries()) {
    const pair = results.latency[`pair${i + 1}`];
    if (!pair) continue;
    const diff = `${pair.medianDiffMs.toFixed(2)} / ${pair.pairDiffMedianMs.toFixed(2)} ms`;
    rows.push([
      `this build (pair ${i + 1})`,
      ms(pair.this.toHook.median, 2),
      ms(pair.this.toHook.p99, 2),
      pair.this.toHook.n,
      pair.this.lost,
      pair.this.repeated,
      diff,
    ]);
    rows.push([
      `other build ${i + 1}: ${path.basename(path.dirname(path.dirname(path.dirname(o.bin))))}`,
      ms(pair.other.toHook.median, 2),
      ms(pair.other.toHook.p99, 2),
      pair.other.toHook.n,
      pair.other.lost,
      pair.other.repeated,
      "",
    ]);
  }
  for (const label of ["start", "end"]) {
    const f = results.floor[label];
    rows.push([`floor: bare spawn of the hook (${label} of run)`, ms(f.median, 2), ms(f.p99, 2), f.n, 0, "", ""]);
  }
  console.log(table(rows));
  console.log(
    `\nload average (1 min): ${results.machine.load.toFixed(2)} at start, ${results.machine.loadAfter.toFixed(2)} at end`,
  );
}

function report() {
  const L = results.latency;
  const rows = [["rename → hook's first action", "median", "p99", "max", "n", "lost", "vs poll 700 ms (median / p99)"]];
  for (const size of ["small", "large"]) {
    const label = size === "small" ? `${SMALL} tasks` : `${BIG.toLocaleString("en")} tasks`;
    const lead = L[`${size}/leader`];
    const poll = L[`${size}/poll700`];
    rows.push([
      `leader, ${label}`,
      ms(lead.toHook.median, 2),
      ms(lead.toHook.p99, 2),
      ms(lead.toHook.max, 1),
      lead.toHook.n,
      lead.lost,
      `${ratio(lead.toHook.median, poll.toHook.median)} / ${ratio(lead.toHook.p99, poll.toHook.p99)}`,
    ]);
    rows.push([
      `poll 700 ms, ${label}`,
      ms(poll.toHook.median, 2),
      ms(poll.toHook.p99, 2),
      ms(poll.toHook.max, 1),
      poll.toHook.n,
      poll.lost,
      "1.00×",
    ]);
  }
  for (const label of ["start", "end"]) {
    const f = results.floor[label];
    rows.push([
      `floor: bare spawn of the hook (${label} of run)`,
      ms(f.median, 2),
      ms(f.p99, 2),
      ms(f.max, 1),
      f.n,
      0,
      "",
    ]);
  }
  console.log(table(rows));
  const floor = (results.floor.start.median + results.floor.end.median) / 2;
  console.log(
    `leader above the floor (median − mean of the two floor medians, ${ms(floor, 1)}): ${SMALL} tasks +${ms(L["small/leader"].toHook.median - floor, 1)}, ${BIG.toLocaleString("en")} tasks +${ms(L["large/leader"].toHook.median - floor, 1)}`,
  );
  console.log("");
  const rows2 = [
    [
      "rename → event handled (hook ran, gate metadata, log, ledger)",
      "median",
      "p99",
      "leader CPU/event",
      "old helper CPU/event",
    ],
  ];
  for (const size of ["small", "large"]) {
    const lead = L[`${size}/leader`];
    rows2.push([
      `leader, ${size === "small" ? SMALL : BIG.toLocaleString("en")} tasks`,
      ms(lead.handled.median, 2),
      ms(lead.handled.p99, 2),
      ms(lead.cpuMsPerEvent),
      ms(lead.helperCpuMsPerEvent),
    ]);
  }
  console.log(table(rows2));
  console.log("");
  const T = results.throughput;
  for (const [i] of OTHERS.entries()) {
    const pair = L[`pair${i + 1}`];
    if (!pair) continue;
    console.log(
      `latency in turns with other build ${i + 1} (small list): this ${ms(pair.this.toHook.median, 2)}, other ${ms(pair.other.toHook.median, 2)}; this − other: ${pair.medianDiffMs.toFixed(2)} ms (medians), ${pair.pairDiffMedianMs.toFixed(2)} ms (median of the pairs)`,
    );
  }
  console.log(
    table([
      [
        `burst of ${BURST} completions`,
        "hooks/s",
        "vs ceiling",
        "seconds",
        "events",
        "logs",
        "repeated",
        "parent CPU/event",
        "old helper CPU/event",
        "hook CPU/event",
      ],
      ...["c1", "c2"].flatMap((c) => {
        const ceiling = T[`ceiling-${c}`];
        return [
          [
            `leader --concurrency ${T[c].concurrency}`,
            T[c].hooksPerSecond.toFixed(1),
            `${(T[c].hooksPerSecond / ceiling.hooksPerSecond).toFixed(2)}×`,
            T[c].seconds.toFixed(2),
            T[c].events,
            T[c].logs,
            T[c].repeated,
            ms(T[c].leaderCpuMsPerEvent),
            ms(T[c].helperCpuMsPerEvent),
            ms(T[c].hookCpuMsPerEvent),
          ],
          [
            `ceiling: bare spawns, ${ceiling.concurrency} at a time`,
            ceiling.hooksPerSecond.toFixed(1),
            "1.00×",
            ceiling.seconds.toFixed(2),
            BURST,
            "",
            "",
            ms(ceiling.parentCpuMsPerHook),
            "",
            ms(ceiling.hookCpuMsPerEvent),
          ],
        ];
      }),
      ...OTHERS.map((_other, i) => {
        const t = T[`other${i + 1}-c2`];
        return [
          `other build ${i + 1} --concurrency 2`,
          t.hooksPerSecond.toFixed(1),
          `${(t.hooksPerSecond / T["ceiling-c2"].hooksPerSecond).toFixed(2)}×`,
          t.seconds.toFixed(2),
          t.events,
          t.logs,
          t.repeated,
          ms(t.leaderCpuMsPerEvent),
          ms(t.helperCpuMsPerEvent),
          ms(t.hookCpuMsPerEvent),
        ];
      }),
    ]),
  );
  for (const [i, o] of OTHERS.entries()) {
    const t = T[`other${i + 1}-c2`];
    const withHelper = (x) => x.leaderCpuMsPerEvent + x.helperCpuMsPerEvent;
    console.log(
      `other build ${i + 1}: ${o.bin}; this build's leader CPU per event at --concurrency 2 is ${(T.c2.leaderCpuMsPerEvent / t.leaderCpuMsPerEvent).toFixed(2)}× its, ${(withHelper(T.c2) / withHelper(t)).toFixed(2)}× with each one's spawn helper`,
    );
  }
  console.log("");
  const S = results.startup;
  const pollBig = L["large/poll700"];
  console.log(
    table([
      [
        `startup, ${BIG.toLocaleString("en")} tasks`,
        "to watching (events taken)",
        "to ready (start-up scan done)",
        "RSS at ready",
        "peak RSS (VmHWM)",
      ],
      [
        `leader, first start (${Math.floor(BIG / 2).toLocaleString("en")} keys baselined)`,
        ms(S.first.wallMs, 0),
        ms(S.first.scannedMs, 0),
        `${S.first.mem.rssMB.toFixed(1)} MB`,
        `${S.first.mem.hwmMB.toFixed(1)} MB`,
      ],
      [
        `leader, after ${SAMPLES} events`,
        "",
        "",
        `${S.first.memAfterEvents.rssMB.toFixed(1)} MB`,
        `${S.first.memAfterEvents.hwmMB.toFixed(1)} MB`,
      ],
      [
        "leader, restart (ledger present)",
        ms(S.restart.wallMs, 0),
        ms(S.restart.scannedMs, 0),
        `${S.restart.mem.rssMB.toFixed(1)} MB`,
        `${S.restart.mem.hwmMB.toFixed(1)} MB`,
      ],
      [
        "poll 700 ms (first scan)",
        ms(pollBig.readyMs, 0),
        "",
        `${pollBig.memAfter.rssMB.toFixed(1)} MB`,
        `${pollBig.memAfter.hwmMB.toFixed(1)} MB`,
      ],
    ]),
  );
  console.log(
    `leader idle with ${BIG.toLocaleString("en")} tasks (reconcile scan every 5 s): ${S.restart.idleCpuPercent.toFixed(1)} % of one CPU over ${IDLE_MS / 1000} s`,
  );
  console.log("");

  const worstReady = Math.max(S.first.wallMs, S.restart.wallMs);
  const worstHwm = Math.max(S.first.memAfterEvents.hwmMB, S.restart.mem.hwmMB);
  const checks = [
    [
      `median ≤ ${TARGETS.medianMs} ms, ${SMALL} tasks`,
      L["small/leader"].toHook.median <= TARGETS.medianMs,
      ms(L["small/leader"].toHook.median, 2),
    ],
    [
      `median ≤ ${TARGETS.medianMs} ms, ${BIG} tasks`,
      L["large/leader"].toHook.median <= TARGETS.medianMs,
      ms(L["large/leader"].toHook.median, 2),
    ],
    [
      `p99 ≤ ${TARGETS.p99Ms} ms, ${SMALL} tasks`,
      L["small/leader"].toHook.p99 <= TARGETS.p99Ms,
      ms(L["small/leader"].toHook.p99, 2),
    ],
    [
      `p99 ≤ ${TARGETS.p99Ms} ms, ${BIG} tasks`,
      L["large/leader"].toHook.p99 <= TARGETS.p99Ms,
      ms(L["large/leader"].toHook.p99, 2),
    ],
    // A ratio to the bare-spawn ceiling of this same run: machines differ threefold in what a spawn costs.
    [
      `≥ ${TARGETS.ceilingRatioC2}× the bare-spawn ceiling at --concurrency 2`,
      T.c2.hooksPerSecond / T["ceiling-c2"].hooksPerSecond >= TARGETS.ceilingRatioC2,
      `${T.c2.hooksPerSecond.toFixed(1)} hooks/s, ${(T.c2.hooksPerSecond / T["ceiling-c2"].hooksPerSecond).toFixed(2)}× of ${T["ceiling-c2"].hooksPerSecond.toFixed(1)} /s`,
    ],
    [
      `ready ≤ ${TARGETS.readyMs} ms, ${BIG} tasks (worst start, to watching)`,
      worstReady <= TARGETS.readyMs,
      ms(worstReady, 0),
    ],
    [
      `  … and start-up scan done (worst start, to ready)`,
      Math.max(S.first.scannedMs, S.restart.scannedMs) <= TARGETS.readyMs,
      ms(Math.max(S.first.scannedMs, S.restart.scannedMs), 0),
    ],
    [`RSS ≤ ${TARGETS.rssMB} MB, ${BIG} tasks (peak VmHWM)`, worstHwm <= TARGETS.rssMB, `${worstHwm.toFixed(1)} MB`],
    [
      "no event lost or repeated",
      ["small/leader", "large/leader"].every((k) => L[k].lost === 0 && L[k].repeated === 0) &&
        T.c1.repeated === 0 &&
        T.c2.repeated === 0 &&
        T.c1.logs === BURST &&
        T.c2.logs === BURST,
      "",
    ],
  ];
  console.log(
    table([
      ["target", "result", "measured"],
      ...checks.map(([name, ok, value]) => [name, ok ? "met" : "MISSED", value]),
    ]),
  );
  const drift = results.drift.length ? Math.max(...results.drift.map(Math.abs)) / 1000 : 0;
  console.log(
    `\nload average (1 min): ${results.machine.load.toFixed(2)} at start, ${results.machine.loadAfter.toFixed(2)} at end — other work on the machine shows up in these figures`,
  );
  const steps = results.drift.filter((d) => Math.abs(d) > 100_000).length;
  console.log(
    `clock: hrtime re-anchored to CLOCK_REALTIME before each sample; largest change between anchors ${drift.toFixed(1)} µs (${steps} of ${results.drift.length} over 100 µs)`,
  );
  results.targets = Object.fromEntries(checks.map(([name, ok, value]) => [name, { met: ok, value }]));
}
