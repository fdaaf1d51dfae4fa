#!/usr/bin/env node
// Start-up of the leader on a large task list, this build next to another one, interleaved so that
// machine noise hits both alike: spawn → `watching` (events taken) and spawn → `ready` (start-up scan
// done), for a first start (fresh hook-state/) and a restart (ledger and scan state present).
//
//   npm run build && node bench/startup.mjs --other /path/to/other/dist/teams-hooks/bin.js [--rounds 7] [--tasks 10000]
//
// Without --other it measures this build alone. Prints the median of each figure per build and the
// ratio this / other.
import { rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { msBetween, realNs } from "./lib/clock.mjs";
import { startNdjson } from "./lib/proc.mjs";
import { fillTasks, makeStampHook, makeTeam, makeTempRoot, removeQuietly } from "./lib/team.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const ROUNDS = Number(arg("rounds", 7));
const TASKS = Number(arg("tasks", 10_000));
const builds = [{ name: "this", bin: path.join(here, "..", "dist", "teams-hooks", "bin.js") }];
if (arg("other")) builds.push({ name: "other", bin: path.resolve(arg("other")) });

const root = makeTempRoot("bench-startup-");
const { hooksDir } = makeStampHook(root);
const teams = builds.map((b) => {
  const team = makeTeam(root, `team-${b.name}`);
  fillTasks(team, TASKS, { completed: TASKS / 2 });
  return team;
});

async function startOnce(bin, team) {
  const t0 = realNs();
  const proc = startNdjson([bin, "watch", "--team-dir", team.teamDir, "--hooks-dir", hooksDir, "--json"], {
    env: { ...process.env, BENCH_STAMPS: path.join(root, "stamps.txt") },
  });
  const watching = await proc.waitFor((l) => l.type === "watching", 60_000, "watching");
  const ready = await proc.waitFor((l) => l.type === "ready", 60_000, "ready");
  await proc.stop();
  return { watching: msBetween(t0, watching.receivedNs), ready: msBetween(t0, ready.receivedNs) };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

const samples = builds.map(() => ({ first: { watching: [], ready: [] }, restart: { watching: [], ready: [] } }));
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < builds.length; k++) {
      const i = (round + k) % builds.length; // alternate which build goes first
      const build = builds[i];
      const team = teams[i];
      rmSync(path.join(team.teamDir, "hook-state"), { recursive: true, force: true });
      const first = await startOnce(build.bin, team);
      const restart = await startOnce(build.bin, team);
      for (const [kind, figures] of [["first", first], ["restart", restart]]) {
        samples[i][kind].watching.push(figures.watching);
        samples[i][kind].ready.push(figures.ready);
      }
    }
  }
  console.log(`node ${process.version}, ${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(2)}; ${TASKS} tasks, ${ROUNDS} rounds, interleaved`);
  for (const kind of ["first", "restart"]) {
    for (const figure of ["watching", "ready"]) {
      const meds = samples.map((s) => median(s[kind][figure]));
      const cells = builds.map((b, i) => `${b.name} ${meds[i].toFixed(0).padStart(5)} ms`).join("   ");
      const ratio = meds.length > 1 ? `   ratio ${(meds[0] / meds[1]).toFixed(2)}×` : "";
      console.log(`${kind.padEnd(8)} to ${figure.padEnd(9)} ${cells}${ratio}`);
    }
  }
} finally {
  removeQuietly(root);
}
