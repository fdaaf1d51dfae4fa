#!/usr/bin/env node
// Start-up of the leader on a large task list: spawn → `watching` (events taken from then on; the
// target is ≤ 500 ms at 10,000 tasks) and spawn → `ready` (start-up scan done), for a first start
// (fresh hook-state/) and a restart (ledger and scan state present). In the same rounds, two
// baselines: the same build on a team with no tasks, and a bare `node` that prints one JSON line (what
// starting Node and reading a line costs this machine at that moment). With --other, another build
// too. Rounds are interleaved so that machine noise hits everything alike; medians. Also the CPU
// time the leader has used when its `watching` line arrives (all threads), which other load on the
// machine moves much less than the wall time.
//
//   npm run build && node bench/startup.mjs [--rounds 7] [--tasks 10000] \
//     [--other /path/to/other/dist/teams-hooks/bin.js]
//
// The leader runs with the node flags of the bin's shebang, as `pi-teams-hooks watch` runs.
import "./lib/help.mjs";
import { rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { msBetween, realNs } from "./lib/clock.mjs";
import { cpuMsOf, shebangFlags, startNdjson } from "./lib/proc.mjs";
import { fillTasks, makeStampHook, makeTeam, makeTempRoot, removeQuietly } from "./lib/team.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const ROUNDS = Number(arg("rounds", 7));
const TASKS = Number(arg("tasks", 10_000));
const TARGET_MS = 500;
const builds = [{ name: "this", bin: path.join(here, "..", "dist", "teams-hooks", "bin.js") }];
if (arg("other")) builds.push({ name: "other", bin: path.resolve(arg("other")) });

const root = makeTempRoot("bench-startup-");
const { hooksDir } = makeStampHook(root);
const teams = builds.map((b) => {
  const big = makeTeam(root, `team-${b.name}`);
  fillTasks(big, TASKS, { completed: TASKS / 2 });
  return { big, empty: makeTeam(root, `empty-${b.name}`) };
});

async function startOnce(bin, team) {
  const t0 = realNs();
  const proc = startNdjson(
    [...shebangFlags(bin), bin, "watch", "--team-dir", team.teamDir, "--hooks-dir", hooksDir, "--json"],
    {
      env: { ...process.env, BENCH_STAMPS: path.join(root, "stamps.txt") },
    },
  );
  const watching = await proc.waitFor((l) => l.type === "watching", 60_000, "watching");
  const cpu = cpuMsOf(proc.pid);
  const ready = await proc.waitFor((l) => l.type === "ready", 60_000, "ready");
  await proc.stop();
  return { watching: msBetween(t0, watching.receivedNs), ready: msBetween(t0, ready.receivedNs), cpu };
}

/** A bare Node that prints one JSON line and exits: spawn → that line. */
async function nodeOnce() {
  const t0 = realNs();
  const proc = startNdjson(["-e", 'console.log(\'{"type":"line"}\')']);
  const line = await proc.waitFor((l) => l.type === "line", 60_000, "the line");
  await proc.exited;
  return msBetween(t0, line.receivedNs);
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

const FIGURES = [
  "first watching",
  "first ready",
  "restart watching",
  "restart ready",
  "0 tasks watching",
  "0 tasks ready",
  "first CPU to watching",
  "restart CPU to watching",
  "0 tasks CPU to watching",
];
const samples = builds.map(() => Object.fromEntries(FIGURES.map((f) => [f, []])));
const nodeSamples = [];
try {
  for (let round = 0; round < ROUNDS; round++) {
    nodeSamples.push(await nodeOnce());
    for (let k = 0; k < builds.length; k++) {
      const i = (round + k) % builds.length; // alternate which build goes first
      const { bin } = builds[i];
      const { big, empty } = teams[i];
      for (const team of [big, empty]) rmSync(path.join(team.teamDir, "hook-state"), { recursive: true, force: true });
      const runs = {
        first: await startOnce(bin, big),
        restart: await startOnce(bin, big),
        "0 tasks": await startOnce(bin, empty),
      };
      for (const [kind, figures] of Object.entries(runs)) {
        samples[i][`${kind} watching`].push(figures.watching);
        samples[i][`${kind} ready`].push(figures.ready);
        samples[i][`${kind} CPU to watching`].push(figures.cpu);
      }
    }
  }
  console.log(
    `node ${process.version}, ${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(2)}; ${TASKS} tasks, ${ROUNDS} rounds, interleaved; medians, spawn → line`,
  );
  console.log(`${"bare node, one line".padEnd(26)} ${median(nodeSamples).toFixed(0).padStart(5)} ms`);
  for (const figure of FIGURES) {
    const meds = samples.map((s) => median(s[figure]));
    const cells = builds.map((b, i) => `${b.name} ${meds[i].toFixed(0).padStart(5)} ms`).join("   ");
    const ratio = meds.length > 1 ? `   ratio ${(meds[0] / meds[1]).toFixed(2)}×` : "";
    console.log(`${`${figure}`.padEnd(26)} ${cells}${ratio}`);
  }
  const worst = Math.max(median(samples[0]["first watching"]), median(samples[0]["restart watching"]));
  console.log(
    `target: to watching at ${TASKS} tasks ≤ ${TARGET_MS} ms (first start and restart): ${worst <= TARGET_MS ? "met" : "MISSED"} (${worst.toFixed(0)} ms)`,
  );
} finally {
  removeQuietly(root);
}
