#!/usr/bin/env node
// What the extension costs a pi session: real pi (the dev dependency) in RPC mode, started alone, with
// this extension and the gates off, and with the gates on for a team of 10 tasks (the package's
// compiled entry, and the TypeScript entry of the sources), interleaved round by round so that machine
// noise hits all alike. Per configuration, the medians of:
//   - spawn → pi's answer to `get_state` (the session is up and takes commands);
//   - with the gates on, spawn → `/gates status` saying `watching` (the in-process leader runs);
//   - pi's RSS and CPU while idle for --idle-ms once it is up.
//
//   npm run build && node bench/pi.mjs [--rounds 7] [--idle-ms 3000]
//
// No model and no network (`--offline`, a home of its own). Needs `npm ci` (pi is a dev dependency).
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { cpuSecondsOf, memoryOf } from "./lib/proc.mjs";
import { percentile, ratio, sleep, table } from "./lib/stats.mjs";
import { fillTasks, makeTeam, makeTempRoot, removeQuietly } from "./lib/team.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.join(here, "..");
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const ROUNDS = Number(arg("rounds", 7));
const IDLE_MS = Number(arg("idle-ms", 3000));
const PI = path.join(repo, "node_modules", "@mariozechner", "pi-coding-agent", "dist", "cli.js");
if (!existsSync(PI)) {
  console.error(`bench/pi.mjs: pi is not installed (${PI} is missing: run npm ci)`);
  process.exit(2);
}

const root = makeTempRoot("bench-pi-");
const home = path.join(root, "home");
mkdirSync(home, { recursive: true });
const team = makeTeam(root, "team");
fillTasks(team, 10);
const hooksDir = path.join(root, "hooks");
mkdirSync(hooksDir);
writeFileSync(path.join(hooksDir, "on_task_completed.sh"), "#!/bin/sh\nexit 0\n", { mode: 0o755 });

const baseEnv = {};
for (const [name, value] of Object.entries(process.env)) if (value !== undefined && !name.startsWith("PI_")) baseEnv[name] = value;
const configs = [
  { name: "pi alone", args: [], env: {} },
  { name: "pi + extension, gates off", args: ["-e", repo], env: {} },
  { name: "pi + extension, gates on", args: ["-e", repo], env: { PI_TEAMS_GATES: "1", PI_TEAMS_HOOKS_TEAM_DIR: team.teamDir, PI_TEAMS_HOOKS_DIR: hooksDir }, gates: true },
  // The entry as TypeScript, compiled by pi's jiti (the leader still from dist/ when it is current).
  { name: "pi + sources' entry, gates on", args: ["-e", path.join(repo, "extensions", "teams-hooks", "index.ts")], env: { PI_TEAMS_GATES: "1", PI_TEAMS_HOOKS_TEAM_DIR: team.teamDir, PI_TEAMS_HOOKS_DIR: hooksDir }, gates: true },
];

/** One pi start: the figures of one round for one configuration. */
async function startOnce(config) {
  const t0 = performance.now();
  const child = spawn(process.execPath, [PI, "--mode", "rpc", "--no-session", "--no-extensions", "--offline", ...config.args], {
    cwd: root,
    env: { ...baseEnv, HOME: home, PI_OFFLINE: "1", NO_COLOR: "1", ...config.env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  const lines = [];
  let buffer = "";
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
  child.stdout.setEncoding("utf8").on("data", (chunk) => {
    buffer += chunk;
    for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
      const text = buffer.slice(0, end);
      buffer = buffer.slice(end + 1);
      try {
        lines.push({ at: performance.now(), line: JSON.parse(text) });
      } catch {
        // not a JSON line
      }
    }
  });
  const exited = new Promise((resolve) => child.on("close", resolve));
  const waitFor = async (what, pred, from = 0, timeoutMs = 30_000) => {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const hit = lines.slice(from).find((l) => pred(l.line));
      if (hit) return hit;
      if (child.exitCode !== null || performance.now() > deadline) throw new Error(`pi: no ${what} (exit ${child.exitCode}); stderr: ${stderr.slice(-1500)}`);
      await sleep(5);
    }
  };
  let seq = 0;
  const send = (command) => {
    const id = `b${++seq}`;
    child.stdin.write(`${JSON.stringify({ ...command, id })}\n`);
    return id;
  };
  try {
    const stateId = send({ type: "get_state" });
    const state = await waitFor("get_state response", (l) => l.type === "response" && l.id === stateId);
    const result = { up: state.at - t0, watching: NaN };
    if (config.gates) {
      // Ask /gates status until it says watching: at most 200 asks, 25 ms apart.
      for (let ask = 0; ask < 200 && Number.isNaN(result.watching); ask++) {
        const before = lines.length;
        send({ type: "prompt", message: "/gates status" });
        const notice = await waitFor("/gates status", (l) => l.type === "extension_ui_request" && l.method === "notify" && /^quality gates: /.test(String(l.message)), before);
        if (/^quality gates: watching/.test(String(notice.line.message))) result.watching = notice.at - t0;
        else await sleep(25);
      }
      if (Number.isNaN(result.watching)) throw new Error("the gates never said watching");
    }
    await sleep(300); // let start-up work settle before the idle window
    const cpu0 = cpuSecondsOf(child.pid);
    await sleep(IDLE_MS);
    result.idleCpuPct = ((cpuSecondsOf(child.pid) - cpu0) / (IDLE_MS / 1000)) * 100;
    result.rssMB = memoryOf(child.pid).rssMB;
    return result;
  } finally {
    child.stdin.end();
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    await exited;
    clearTimeout(timer);
  }
}

const median = (xs) => percentile(xs.filter(Number.isFinite), 0.5);

const samples = configs.map(() => ({ up: [], watching: [], idleCpuPct: [], rssMB: [] }));
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < configs.length; k++) {
      const i = (round + k) % configs.length; // rotate which configuration goes first
      const r = await startOnce(configs[i]);
      for (const key of Object.keys(samples[i])) samples[i][key].push(r[key]);
    }
  }
  const m = samples.map((s) => Object.fromEntries(Object.entries(s).map(([k, v]) => [k, median(v)])));
  const fmt = (v, unit, digits = 0) => (Number.isFinite(v) ? `${v.toFixed(digits)} ${unit}` : "—");
  const piVersion = JSON.parse(readFileSync(path.join(path.dirname(PI), "..", "package.json"), "utf8")).version;
  console.log(`node ${process.version}; pi ${piVersion}; ${ROUNDS} rounds, interleaved; load ${os.loadavg()[0].toFixed(2)} at the end`);
  console.log(
    table([
      ["configuration (medians)", "to get_state", "vs pi alone", "to gates watching", "idle CPU", "RSS idle", "RSS vs pi alone"],
      ...configs.map((c, i) => [
        c.name,
        fmt(m[i].up, "ms"),
        ratio(m[i].up, m[0].up),
        fmt(m[i].watching, "ms"),
        fmt(m[i].idleCpuPct, "%", 1),
        fmt(m[i].rssMB, "MB", 1),
        Number.isFinite(m[i].rssMB) ? `+${(m[i].rssMB - m[0].rssMB).toFixed(1)} MB` : "—",
      ]),
    ]),
  );
} finally {
  removeQuietly(root);
}
