#!/usr/bin/env node
// What each process of a run started from a standby costs in CPU, by the prefixes of its chain into a held
// view (runner/sandbox.ts heldChainOf, runner/standby.ts): `bash` alone (what a release without a sandbox
// runs), the standby's `sh` before it, `setpriv` before that, and `nsenter` into a user and a mount namespace
// held open (here by a sleeping `unshare`) with its root, as a standby enters a view. Each run is a gate that
// does `exit 1`, spawned from this Node process with the environment a standby gets (PATH only); its CPU is
// the children's user + system time in /proc/self/stat. The prefixes are taken in turns (which goes first
// rotates), `--batch` runs each; the line gives the median CPU a run over the rounds, and what the step adds.
//
//   node bench/held-steps.mjs [--rounds N (10)] [--batch N (100)]
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { benchArgs } from "./lib/args.mjs";

const { values: opt } = benchArgs(import.meta.url, {
  options: {
    rounds: { type: "string", default: "10" },
    batch: { type: "string", default: "100" },
  },
});
const ROUNDS = Number(opt.rounds);
const BATCH = Number(opt.batch);
const asRoot = process.getuid?.() === 0;

const dir = mkdtempSync(path.join(os.tmpdir(), "bench-held-steps-"));
const gate = path.join(dir, "on_task_completed.sh");
writeFileSync(gate, "exit 1\n", { mode: 0o755 });

// The view's namespaces, held by a process that sleeps in them (the leader holds their fds instead).
const holder = spawn("unshare", [asRoot ? "--map-root-user" : "--map-current-user", "--mount", "--", "sleep", "600"], {
  stdio: "ignore",
});
holder.on("error", () => undefined); // not found: said below, as a holder that never ran
const ns = (name) => `/proc/${holder.pid}/${name}`;

/** The children's CPU so far, in ms (clock ticks of 10 ms: read over a whole batch). */
function childrenCpuMs() {
  const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" ");
  return (Number(fields[13]) + Number(fields[14])) * (1000 / 100);
}

const setpriv = [
  "/usr/bin/setpriv",
  ...(asRoot ? ["--no-new-privs", "--bounding-set=-all", "--inh-caps=-all"] : ["--no-new-privs"]),
  "--",
];
const sh = ["/bin/sh", "-c", 'exec bash "$0"', gate];
const steps = {
  "bash (no sandbox)": ["bash", gate],
  "sh → bash (the standby's sh)": sh,
  "setpriv → sh → bash": [...setpriv, ...sh],
  "nsenter → setpriv → sh → bash": [
    "/usr/bin/nsenter",
    `--user=${ns("ns/user")}`,
    `--mount=${ns("ns/mnt")}`,
    `--root=${ns("root")}`,
    `--wdns=${dir}`,
    "--preserve-credentials",
    "--",
    ...setpriv,
    ...sh,
  ],
};

function batch(argv) {
  const before = childrenCpuMs();
  for (let i = 0; i < BATCH; i++) {
    const run = spawnSync(argv[0], argv.slice(1), { cwd: dir, env: { PATH: process.env.PATH }, stdio: "ignore" });
    if (run.status !== 1)
      throw new Error(`${argv.join(" ")}: exit ${run.status} ${run.signal ?? ""} ${run.error ?? ""}`);
  }
  return (childrenCpuMs() - before) / BATCH;
}

const names = Object.keys(steps);
const perRun = Object.fromEntries(names.map((n) => [n, []]));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** The holder's command name: `sleep` once it runs in its namespaces, null once it has ended. */
function holderCommand() {
  try {
    return readFileSync(ns("comm"), "utf8").trim();
  } catch {
    return null;
  }
}

try {
  for (let i = 0; i < 100 && holderCommand() !== "sleep"; i++) await new Promise((r) => setTimeout(r, 10));
  if (holderCommand() !== "sleep")
    throw new Error(
      "`unshare --user --mount` did not start here (not found, or refused by the kernel): no view to enter",
    );
  const load0 = os.loadavg()[0];
  for (const n of names) batch(steps[n]); // warm-up
  for (let i = 0; i < ROUNDS; i++)
    for (let k = 0; k < names.length; k++) {
      const n = names[(i + k) % names.length];
      perRun[n].push(batch(steps[n]));
    }
  console.log(
    `held-view steps: ${ROUNDS} rounds of ${BATCH} runs each in turns, node ${process.version}, load ${load0.toFixed(1)} → ${os.loadavg()[0].toFixed(1)}${asRoot ? ", as root" : ""}`,
  );
  const floor = median(perRun[names[0]]);
  let before = null;
  for (const n of names) {
    const ms = median(perRun[n]);
    const step = before === null ? "" : `  (+${(ms - before).toFixed(2)} ms)`;
    console.log(
      `  ${n.padEnd(32)} ${ms.toFixed(2).padStart(6)} ms CPU a run  ${(ms / floor).toFixed(2)}× bash's${step}`,
    );
    before = ms;
  }
} catch (error) {
  console.error(`bench/held-steps.mjs: ${error.message}`);
  process.exitCode = 2;
} finally {
  holder.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
}
