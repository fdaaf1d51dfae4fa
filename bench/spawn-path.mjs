#!/usr/bin/env node
// A task's write → its sandboxed gate's first instruction, and reopen throughput, for this build next to
// other builds (the previous release) and to the reference runner (pi-agent-teams' 700 ms poll loop), all
// in one run, taken in turns so that whatever else the machine does falls on every side alike; prints the
// figures and their ratios.
//
//   npm run build && node bench/spawn-path.mjs --other /tmp/prev/dist/teams-hooks/bin.js
//   options: --other PATH (repeatable: another build's bin.js) --samples N (events per side and list, 200)
//            --reference-samples N (60; each costs ~0.7 s) --big N (tasks in the large list, 10000)
//            --reopen-seconds S (each side's share of a reopen round, 10) --reopen-rounds N (4) --tasks N (20)
//            --no-standby-side (leave out this build with PI_TEAMS_HOOKS_STANDBY=off) --unsandboxed-side (add this
//            build with `hooks.sandbox: "off"`: what the sandbox costs) --tmpfs-runs-side (add this build with
//            XDG_RUNTIME_DIR on a tmpfs, /dev/shm: its runs folder off the disk) --only latency|reopen
//            --side NAME (repeatable: only the sides named: this, "this, standby off", "other 1"…)
//            --profile DIR (every leader runs with --cpu-prof, into DIR/<side>/) --json FILE
//
// Sides: this build (its gates sandboxed where the machine can, as a team gets by default), this build
// with its standbys off (the chain built at each event: forking the leader), each --other build, and
// for latency the reference poll loop. The gate stamps `$EPOCHREALTIME` as its first instruction into a
// file in its working directory (the leader's cwd, writable in the sandbox; an old build without the
// sandbox gets the same path through BENCH_STAMPS).
//
// - floor: this process spawning the same gate with bash, spawn → first instruction, once a round.
// - latency: leaders of every side running at once, one per list (10 tasks, and `--big` tasks with half of
//   them completed history); events handed out one at a time in rounds, each round in a random order of
//   the sides, so each sample of one side has neighbours of every other under the same load. The
//   reference takes one event every fourth round (its samples cost 0.7 s). p50/p99 of rename → first
//   instruction; lost and repeated events counted from the leaders' event lines.
// - reopen throughput: a gate that fails (no verdict, exit 1) with `hooks.failureAction: "reopen"`; a
//   worker (this process) completes again each task the leader reopened, as soon as the reopen is in
//   its file. Each round runs every side for `--reopen-seconds`, in a random order; failing completions
//   gated per second, and at the end every completion written has exactly one event line (none lost,
//   none repeated). Beside each, the CPU one failing completion cost: the leader's own (all its threads)
//   and its processes' (gates, standbys' chains), from /proc/<leader>/stat over the round.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { calibrate, msBetween, parseEpochRealtime, realNs } from "./lib/clock.mjs";
import { cpuTimesOf, shebangFlags, startNdjson } from "./lib/proc.mjs";
import { sleep, summarize } from "./lib/stats.mjs";
import { fillTasks, makeTeam, makeTempRoot, removeQuietly, stageTaskWrite, task } from "./lib/team.mjs";
import { updateTaskFile } from "../test/fixtures/workers/protocol.mjs";
import { benchArgs } from "./lib/args.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const POLLER = path.join(here, "lib/poll-baseline.mjs");

const { values: opt } = benchArgs(import.meta.url, {
  options: {
    other: { type: "string", multiple: true, default: [] },
    samples: { type: "string", default: "200" },
    "reference-samples": { type: "string", default: "60" },
    big: { type: "string", default: "10000" },
    "reopen-seconds": { type: "string", default: "10" },
    "reopen-rounds": { type: "string", default: "4" },
    tasks: { type: "string", default: "20" },
    "no-standby-side": { type: "boolean", default: false },
    "unsandboxed-side": { type: "boolean", default: false },
    "tmpfs-runs-side": { type: "boolean", default: false },
    only: { type: "string" },
    side: { type: "string", multiple: true, default: [] },
    profile: { type: "string" },
    json: { type: "string" },
  },
});
const SAMPLES = Number(opt.samples);
const REFERENCE_SAMPLES = Number(opt["reference-samples"]);
const BIG = Number(opt.big);
const SMALL = 10;
const WARMUP = 5;
const EVENT_TIMEOUT_MS = 20_000;
const REOPEN_MS = Number(opt["reopen-seconds"]) * 1000;
const REOPEN_ROUNDS = Number(opt["reopen-rounds"]);
const REOPEN_TASKS = Number(opt.tasks);

const THIS = path.resolve(here, "../dist/teams-hooks/bin.js");
// `--tmpfs-runs-side`: this build with its runs folder on a tmpfs, as `XDG_RUNTIME_DIR` gives it in a login session.
const runtimeDir = opt["tmpfs-runs-side"] ? mkdtempSync("/dev/shm/bench-spawn-path-runtime-") : null;
const allSides = [
  { name: "this", bin: THIS, env: {} },
  ...(opt["no-standby-side"] ? [] : [{ name: "this, standby off", bin: THIS, env: { PI_TEAMS_HOOKS_STANDBY: "off" } }]),
  ...(opt["unsandboxed-side"] ? [{ name: "this, sandbox off", bin: THIS, env: {}, hooks: { sandbox: "off" } }] : []),
  ...(runtimeDir ? [{ name: "this, runs on a tmpfs", bin: THIS, env: { XDG_RUNTIME_DIR: runtimeDir } }] : []),
  ...opt.other.map((file, i) => ({ name: `other ${i + 1}`, bin: path.resolve(file), env: {} })),
];
const sides = opt.side.length > 0 ? allSides.filter((s) => opt.side.includes(s.name)) : allSides;
if (!sides.some((s) => s.name === "this")) {
  console.error(
    `--side must name "this" (the figures are given against it); sides: ${allSides.map((s) => s.name).join(", ")}`,
  );
  process.exit(2);
}
for (const side of sides) {
  if (!existsSync(side.bin)) {
    console.error(`${side.bin} is missing: build it first (npm run build)`);
    process.exit(2);
  }
  side.nodeArgs = shebangFlags(side.bin);
  // A CPU profile per leader, written when it exits (node --cpu-prof), in a folder per side.
  if (opt.profile) {
    side.nodeArgs.push(
      "--cpu-prof",
      `--cpu-prof-dir=${path.resolve(opt.profile, side.name.replace(/[^A-Za-z0-9]+/g, "-"))}`,
    );
  }
}

const root = makeTempRoot("bench-spawn-path-");
const started = new Set();
const results = { load: [], latency: {}, reopen: {} };

function loadNow() {
  return os.loadavg()[0];
}

/** A hooks dir with `on_task_completed.sh`: its first instruction stamps the clock, then it exits `code`. */
function stampHook(dir, code) {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, "on_task_completed.sh");
  writeFileSync(
    file,
    `#!/usr/bin/env bash\nprintf '%s %s\\n' "$EPOCHREALTIME" "$PI_TEAMS_EVENT_TIMESTAMP" >> "\${BENCH_STAMPS:-bench-stamps.txt}"\n${code === 0 ? "" : `echo "3 tests failed" >&2\nexit ${code}\n`}`,
    { mode: 0o755 },
  );
  return { dir, file };
}

/** A leader (or the reference poller) of `side` on `team`, in a working directory of its own for its stamps. */
function startWatcher(side, team, hooks, label) {
  const cwd = path.join(root, `cwd-${label}`);
  mkdirSync(cwd, { recursive: true });
  const stamps = path.join(cwd, "bench-stamps.txt");
  const env = { ...process.env, ...(side?.env ?? {}), BENCH_STAMPS: stamps, LC_ALL: "C" };
  const args = side
    ? [...side.nodeArgs, side.bin, "watch", "--team-dir", team.teamDir, "--hooks-dir", hooks.dir, "--json"]
    : [POLLER, team.tasksDir, hooks.file, "700"];
  const proc = startNdjson(args, { env, cwd });
  started.add(proc);
  return { proc, stamps };
}

function readStamps(file) {
  const byTimestamp = new Map();
  if (!existsSync(file)) return byTimestamp;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const [stamp, timestamp] = line.split(" ");
    if (stamp && timestamp && !byTimestamp.has(timestamp)) byTimestamp.set(timestamp, parseEpochRealtime(stamp));
  }
  return byTimestamp;
}

let stampSeq = 0;
const nextCompletedAt = () => new Date((stampSeq = Math.max(stampSeq + 1, Date.now()))).toISOString();

/** One completion renamed into place; resolves with its record once the watcher's event line is out. */
async function oneEvent(watcher, team, id) {
  calibrate();
  const completedAt = nextCompletedAt();
  const commit = stageTaskWrite(team, task(id, { completedAt }));
  const renameNs = realNs();
  commit();
  const key = `task_completed:${id}:${completedAt}`;
  try {
    await watcher.proc.waitFor((l) => l.type === "event" && l.key === key, EVENT_TIMEOUT_MS, key);
    return { completedAt, renameNs, lost: false };
  } catch {
    return { completedAt, renameNs, lost: true };
  }
}

function figures(watcher, records) {
  const stamps = readStamps(watcher.stamps);
  const ms = [];
  let lost = 0;
  for (const r of records) {
    const at = stamps.get(r.completedAt);
    if (r.lost || at === undefined) lost += 1;
    else ms.push(msBetween(r.renameNs, at));
  }
  const repeated = [...watcher.proc.byKey.values()].filter((n) => n > 1).length;
  return { ...summarize(ms), lost, repeated };
}

async function latency(list) {
  const size = list === "small" ? SMALL : BIG;
  const history = list === "small" ? 0 : Math.floor(BIG / 2);
  const hooks = stampHook(path.join(root, `hooks-${list}`), 0);
  const all = [...sides, null].map((side, i) => {
    const team = makeTeam(root, `${list}-${i}`);
    fillTasks(team, size, { completed: history });
    if (side?.hooks) {
      const file = path.join(team.teamDir, "config.json");
      writeFileSync(
        file,
        `${JSON.stringify({ ...JSON.parse(readFileSync(file, "utf8")), hooks: side.hooks }, null, 2)}\n`,
      );
    }
    return { side, team, watcher: startWatcher(side, team, hooks, `${list}-${i}`), records: [], next: history };
  });
  for (const s of all)
    await s.watcher.proc.waitFor((l) => l.type === (s.side ? "ready" : "watching"), 120_000, "ready");
  const nextId = (s) => (list === "small" ? (s.next++ % SMALL) + 1 : ++s.next);
  // The floor: this process spawning the same gate with bash directly, spawn → first instruction.
  const floorStamps = path.join(root, `floor-${list}.txt`);
  const floor = [];
  const floorSample = () =>
    new Promise((resolve) => {
      calibrate();
      const stamp = `floor-${floor.length}-${Math.random()}`;
      const t0 = realNs();
      const child = spawn("bash", [hooks.file], {
        env: { ...process.env, BENCH_STAMPS: floorStamps, PI_TEAMS_EVENT_TIMESTAMP: stamp },
        stdio: "ignore",
      });
      floor.push({ completedAt: stamp, renameNs: t0, lost: false });
      child.on("close", resolve);
      child.on("error", resolve);
    });
  const load0 = loadNow();
  for (let round = 0; round < WARMUP + SAMPLES; round++) {
    const turn = all.filter((s) => s.side || (round % 4 === 0 && s.records.length < REFERENCE_SAMPLES));
    if (round >= WARMUP) await floorSample();
    for (const s of shuffle(turn)) {
      // The reference's samples fall at random phases of its 700 ms cycle; a leader's after a short random gap.
      await sleep(Math.random() * (s.side ? 20 : 700));
      const record = await oneEvent(s.watcher, s.team, nextId(s));
      if (round >= WARMUP) s.records.push(record);
    }
  }
  const load1 = loadNow();
  for (const s of all) await s.watcher.proc.stop();
  const out = {};
  for (const s of all) out[s.side?.name ?? "reference (700 ms poll)"] = figures(s.watcher, s.records);
  out["floor (bare bash spawn)"] = figures({ stamps: floorStamps, proc: { byKey: new Map() } }, floor);
  results.latency[list] = { load: [load0, load1], sides: out };
  return results.latency[list];
}

/** Reopen throughput of one side for REOPEN_MS: failing completions gated per second, and what was lost or repeated. */
async function reopenRun(side, label) {
  const team = makeTeam(root, `reopen-${label}`);
  fillTasks(team, REOPEN_TASKS);
  const config = JSON.parse(readFileSync(path.join(team.teamDir, "config.json"), "utf8"));
  config.hooks = { failureAction: "reopen", maxReopensPerTask: 1_000_000, ...(side.hooks ?? {}) };
  writeFileSync(path.join(team.teamDir, "config.json"), `${JSON.stringify(config, null, 2)}\n`);
  const hooks = stampHook(path.join(root, `hooks-reopen-${label}`), 1);
  const watcher = startWatcher(side, team, hooks, `reopen-${label}`);
  await watcher.proc.waitFor((l) => l.type === "ready", 60_000, "ready");
  const written = new Set();
  // As a worker does: under the task's lock (the leader writes its reopen under it too), a fresh completedAt.
  const complete = async (id) => {
    const completedAt = nextCompletedAt();
    let done = false;
    await updateTaskFile(team.taskFile(id), (t) => {
      if (t.status === "completed") return t;
      done = true;
      return {
        ...t,
        status: "completed",
        updatedAt: completedAt,
        metadata: { ...t.metadata, result: "done", completedAt },
      };
    });
    if (done) written.add(`task_completed:${id}:${completedAt}`);
    return done;
  };
  let open = true;
  // Each task completed again once its event is out and the leader's reopen is in its file.
  const again = async (id) => {
    for (let tries = 0; open && tries < 500; tries++) {
      if (await complete(id)) return;
      await sleep(2);
    }
  };
  const gated = [];
  const seen = watcher.proc.lines.length;
  const onLine = setInterval(() => undefined, 1000);
  const t0 = performance.now();
  const load0 = loadNow();
  const cpu0 = cpuTimesOf(watcher.proc.pid);
  for (let id = 1; id <= REOPEN_TASKS; id++) await complete(String(id));
  let read = seen;
  while (performance.now() - t0 < REOPEN_MS) {
    await sleep(5);
    const lines = watcher.proc.lines;
    for (; read < lines.length; read++) {
      const line = lines[read];
      if (line.type !== "event" || !written.has(base(line.key))) continue;
      gated.push({ at: performance.now(), outcome: line.outcome });
      void again(line.taskId ?? line.key.split(":")[1]);
    }
  }
  open = false;
  const elapsed = performance.now() - t0;
  const load1 = loadNow();
  // The leader's CPU (all its threads) and its processes' (the reaped ones: gates, and standbys' chains), by
  // /proc's 10 ms ticks: what one failing completion costs the machine, whichever core it ran on.
  const cpu1 = cpuTimesOf(watcher.proc.pid);
  // Drain: every completion written gets its event line (a reopened task's next one is keyed `<key>#r<round>`).
  const events = () => {
    const byKey = new Map();
    for (const [key, n] of watcher.proc.byKey) byKey.set(base(key), (byKey.get(base(key)) ?? 0) + n);
    return byKey;
  };
  const deadline = performance.now() + 30_000;
  while (performance.now() < deadline && [...written].some((k) => !events().has(k))) await sleep(20);
  clearInterval(onLine);
  await watcher.proc.stop();
  const lost = [...written].filter((k) => !events().has(k)).length;
  const repeated = [...events().values()].filter((n) => n > 1).length;
  const failed = gated.filter((g) => g.outcome === "failed").length;
  return {
    perSecond: (1000 * failed) / elapsed,
    cpuMs: {
      leader: (1000 * (cpu1.self - cpu0.self)) / Math.max(1, failed),
      processes: (1000 * (cpu1.children - cpu0.children)) / Math.max(1, failed),
    },
    gated: gated.length,
    failed,
    written: written.size,
    lost,
    repeated,
    load: [load0, load1],
  };
}

async function reopen() {
  const bySide = Object.fromEntries(sides.map((s) => [s.name, []]));
  for (let round = 0; round < REOPEN_ROUNDS; round++) {
    for (const side of shuffle([...sides])) {
      const run = await reopenRun(side, `${round}-${sides.indexOf(side)}`);
      bySide[side.name].push(run);
      progress(
        `reopen round ${round + 1}, ${side.name}: ${run.perSecond.toFixed(1)} failing completions gated/s (${run.failed} in ${REOPEN_MS / 1000} s; lost ${run.lost}, repeated ${run.repeated}; CPU a completion: leader ${run.cpuMs.leader.toFixed(1)} ms, its processes ${run.cpuMs.processes.toFixed(1)} ms; load ${run.load.map((l) => l.toFixed(1)).join(" → ")})`,
      );
    }
  }
  results.reopen = bySide;
  return bySide;
}

/** An event's key without the round a reopened task's completion gets (`#r2`). */
const base = (key) => key.replace(/#r\d+$/, "");

function shuffle(items) {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

function progress(text) {
  process.stderr.write(`  ${text}\n`);
}

const f2 = (x) => (x === undefined || Number.isNaN(x) ? "—" : x.toFixed(2));

try {
  console.log(
    `spawn-path bench: node ${process.version}, ${os.availableParallelism?.() ?? os.cpus().length} CPUs, load ${loadNow().toFixed(2)}`,
  );
  for (const side of sides)
    console.log(`  ${side.name}: ${side.bin}${Object.keys(side.env).length ? ` ${JSON.stringify(side.env)}` : ""}`);
  if (opt.only !== "reopen") {
    for (const list of ["small", "large"]) {
      const { load, sides: figs } = await latency(list);
      console.log(
        `\nwrite → gate's first instruction, ${list === "small" ? SMALL : BIG} tasks (${SAMPLES} events per leader in turns, load ${load.map((l) => l.toFixed(1)).join(" → ")})`,
      );
      const mine = figs.this;
      for (const [name, f] of Object.entries(figs))
        console.log(
          `  ${name.padEnd(26)} p50 ${f2(f.median).padStart(8)} ms  p99 ${f2(f.p99).padStart(8)} ms  (n=${f.n}, lost ${f.lost}, repeated ${f.repeated})  this/it: p50 ${f2(mine.median / f.median)}×  p99 ${f2(mine.p99 / f.p99)}×`,
        );
    }
  }
  if (opt.only !== "latency") {
    const bySide = await reopen();
    console.log(
      `\nreopen throughput, failing completions gated per second (${REOPEN_ROUNDS} rounds of ${REOPEN_MS / 1000} s per side, ${REOPEN_TASKS} tasks)`,
    );
    const median = (runs) => summarize(runs.map((r) => r.perSecond)).median;
    const mine = median(bySide.this);
    const cpu = (runs, part) => summarize(runs.map((r) => r.cpuMs[part])).median.toFixed(1);
    for (const [name, runs] of Object.entries(bySide))
      console.log(
        `  ${name.padEnd(26)} median ${f2(median(runs)).padStart(7)}/s  runs ${runs.map((r) => r.perSecond.toFixed(1)).join(", ")}  lost ${runs.reduce((n, r) => n + r.lost, 0)}, repeated ${runs.reduce((n, r) => n + r.repeated, 0)}  this/it ${f2(mine / median(runs))}×  CPU a completion: leader ${cpu(runs, "leader")} ms, its processes ${cpu(runs, "processes")} ms`,
      );
  }
  if (opt.json) writeFileSync(opt.json, JSON.stringify(results, null, 2));
} finally {
  for (const proc of started) await proc.stop("SIGINT", 5_000).catch(() => undefined);
  removeQuietly(root);
  if (runtimeDir) removeQuietly(runtimeDir);
}
