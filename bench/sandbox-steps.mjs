#!/usr/bin/env node
// What each step of a sandboxed run's chain costs (runner/sandbox.ts), by its prefixes: a bare `bash`, then
// `unshare` before it, then `sh`, then `mount -a` of a real run's fstab, then the whole chain (the second
// `unshare` chrooted into the view, and `setpriv` for a leader running as root), each spawn → exit of a gate
// that does `exit 0`, taken in turns (which goes first rotates), medians and p90. The last row is the
// leader's own part: the run folder and the fstab written (no process).
//
//   npm run build && node bench/sandbox-steps.mjs [rounds, 100]
import "./lib/help.mjs";
import { spawn } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { runsRoot, makeRunDir, removeRunDir } from "../dist/teams-hooks/runner/run-dir.js";
import { sandboxSupport, sandboxed } from "../dist/teams-hooks/runner/sandbox.js";
import { fileId } from "../dist/teams-hooks/runner/writable-path.js";

const rounds = Number(process.argv[2] ?? 100);
if (!sandboxSupport().ok) {
  console.error(`this machine cannot sandbox a gate: ${sandboxSupport().reason}`);
  process.exit(2);
}
const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "bench-sandbox-steps-")));
const gate = path.join(dir, "on_task_completed.sh");
writeFileSync(gate, "exit 0\n", { mode: 0o755 });
const plan = (run) => ({
  runDir: run.dir,
  cwd: dir,
  bound: [{ path: dir, id: fileId(statSync(dir, { bigint: true })) }],
  visible: [dir, path.dirname(path.dirname(process.execPath))],
  protect: [],
  hide: [path.dirname(runsRoot())],
  resultFile: run.resultFile,
});
const OUTER = ["--user", "--map-root-user", "--mount", "--propagation", "private", "--"];

function timed(command, args) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(command, args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let err = "";
    child.stderr.on("data", (d) => (err += d));
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${command}: ${code} ${err}`)),
    );
  });
}

async function inRun(fn) {
  const run = makeRunDir("bench");
  try {
    return await fn(run);
  } finally {
    removeRunDir(run.dir);
  }
}

const steps = {
  "bash (the floor)": () => timed("bash", [gate]),
  "unshare → bash": () => timed("unshare", [...OUTER, "bash", gate]),
  "unshare → sh → bash": () => timed("unshare", [...OUTER, "/bin/sh", "-c", 'exec bash "$0"', gate]),
  // The view before its writable paths (the set-up binds those itself, then mounts the fstab's second part).
  "unshare → sh, mount -a → bash": () =>
    inRun((run) => {
      sandboxed("bash", [gate], plan(run));
      return timed("unshare", [
        ...OUTER,
        "/bin/sh",
        "-c",
        'mount -c -a -T "$0" && exec bash "$1"',
        path.join(run.dir, "fstab"),
        gate,
      ]);
    }),
  "the whole chain": () =>
    inRun((run) => {
      const chain = sandboxed("bash", [gate], plan(run));
      return timed(chain.command, chain.args);
    }),
  "leader's part (run folder, fstab)": () => {
    const t0 = performance.now();
    const run = makeRunDir("bench");
    sandboxed("bash", [gate], plan(run));
    const ms = performance.now() - t0;
    removeRunDir(run.dir);
    return ms;
  },
};

const names = Object.keys(steps);
const samples = Object.fromEntries(names.map((n) => [n, []]));
const q = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];
try {
  const load0 = os.loadavg()[0];
  for (let i = 0; i < 5; i++) for (const n of names) await steps[n]();
  for (let i = 0; i < rounds; i++)
    for (let k = 0; k < names.length; k++) {
      const n = names[(i + k) % names.length];
      samples[n].push(await steps[n]());
    }
  console.log(
    `sandbox steps: ${rounds} rounds in turns, node ${process.version}, load ${load0.toFixed(1)} → ${os.loadavg()[0].toFixed(1)}${process.getuid?.() === 0 ? ", as root (setpriv in the chain)" : ""}`,
  );
  let before = null;
  for (const n of names) {
    const p50 = q(samples[n], 0.5);
    const step = before === null || n.startsWith("leader") ? "" : `  (+${(p50 - before).toFixed(2)} ms)`;
    console.log(
      `  ${n.padEnd(36)} p50 ${p50.toFixed(2).padStart(7)} ms  p90 ${q(samples[n], 0.9).toFixed(2).padStart(7)} ms${step}`,
    );
    if (!n.startsWith("leader")) before = p50;
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
