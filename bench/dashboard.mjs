#!/usr/bin/env node
// The dashboard at 10,000 hook logs per team: the real `pi-teams-hooks serve` (the built bin, with its
// shebang's node flags) over a teams root whose logs started in the last 7 days, so that the overview
// reads every one. Measured in the same rounds, the kinds rotating:
//   - the overview (GET /) over plain HTTP on a fresh connection: to the first byte, to the whole body,
//     and the server's CPU time for it (/proc, 10 ms ticks);
//   - the overview in a real headless Chromium (a new browser context each time): navigation → first
//     contentful paint, → the `load` event (its stylesheet, script and icon loaded), → first byte;
//   - the runs page (GET /runs, the newest 50) over HTTP;
//   - baselines: GET /healthz (what any answer of this server costs: the floor) and
//     `pi-teams-hooks logs stats --team-dir …` as a process over the same logs (the command line
//     reading the same files, node start-up included), and `pi-teams-hooks --version` (that start-up).
// Also the first overview of a server just started (a cold process: nothing compiled or cached yet,
// while the OS page cache stays warm), from a fresh server each round. Medians and p95.
//
//   npm run build && node bench/dashboard.mjs [--logs 10000] [--teams 1] [--rounds 7] [--cpu-prof DIR] \
//     [--node-arg=FLAG…]
//
// --node-arg=FLAG (repeatable): a node flag for the servers, after the shebang's (to try one).
// --cpu-prof DIR: afterwards, one more server under `node --cpu-prof` gets only overview requests;
// its profile is written to DIR and summed up here (where the overview's time goes).
import "./lib/help.mjs";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { writeHookLogs } from "./lib/hook-logs.mjs";
import { cpuSecondsOf, shebangFlags } from "./lib/proc.mjs";
import { arg, percentile, ratio, table } from "./lib/stats.mjs";
import { makeTeam, makeTempRoot, removeQuietly } from "./lib/team.mjs";

const BIN = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "dist", "teams-hooks", "bin.js");
const LOGS = Number(arg("logs", 10_000));
const TEAMS = Number(arg("teams", 1));
const ROUNDS = Number(arg("rounds", 7));
const PROFILE_DIR = arg("cpu-prof", null);
const NODE_ARGS = process.argv.filter((a) => a.startsWith("--node-arg=")).map((a) => a.slice("--node-arg=".length));
const FIRST_PAINT_TARGET_MS = 1000;
const DAY_MS = 86_400_000;
const NAMES = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"];
const GATES = { "on_task_completed.sh": "npm test --silent", "on_task_failed.sh": "exit 0", "on_idle.sh": "exit 0" };
/** The system's Chromium (as the dashboard's tests use it), or CHROMIUM_PATH. */
const CHROMIUM =
  process.env.CHROMIUM_PATH ||
  ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].find((f) => existsSync(f));

/** The server's environment: the bench's, without any PI_TEAMS_* that would point it elsewhere. */
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("PI_TEAMS_")));
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");

/**
 * One team per name: config.json, its gates (approved with `trust --all`), LOGS logs over the last 7 days less an hour.
 */
async function makeTeams(root) {
  const dirs = [];
  for (let t = 0; t < TEAMS; t++) {
    const { teamDir } = makeTeam(root, NAMES[t] ?? `team-${t + 1}`);
    mkdirSync(path.join(teamDir, "hooks"));
    for (const [gate, body] of Object.entries(GATES))
      writeFileSync(path.join(teamDir, "hooks", gate), `#!/usr/bin/env bash\n${body}\n`, { mode: 0o755 });
    await runProcess(["trust", "--team-dir", teamDir, "--all"]);
    // Oldest an hour inside the 7 days, newest now: the overview counts them all for an hour.
    const oldest = Date.now() - 7 * DAY_MS + 3_600_000;
    const step = (Date.now() - oldest) / LOGS;
    await writeHookLogs(teamDir, { count: LOGS, startedAt: (i) => new Date(oldest + i * step) });
    dirs.push(teamDir);
  }
  return dirs;
}

/** The bin as a person runs it; resolves with spawn → exit (ms); throws on a non-zero exit. */
function runProcess(args) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(BIN, args, { env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    child
      .on("error", reject)
      .on("close", (code) =>
        code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${args.join(" ")} exited ${code}: ${stderr}`)),
      );
  });
}

/** `serve` on 127.0.0.1:0 with the shebang's node flags (and `nodeFlags`); resolves once it listens. */
function startServer(root, nodeFlags = []) {
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    [...shebangFlags(BIN), ...NODE_ARGS, ...nodeFlags, BIN, "serve", "--teams-root", root, "--listen", "127.0.0.1:0"],
    { env, stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  child.stderr.setEncoding("utf8").on("data", (d) => (err += d));
  const exited = new Promise((resolve) => child.on("close", (code, signal) => resolve({ code, signal })));
  /** SIGINT; a server that has not exited 10 s later is killed, and that is an error. */
  const stop = async () => {
    child.kill("SIGINT");
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    const exit = await exited;
    clearTimeout(timer);
    if (exit.code !== 0) throw new Error(`serve did not exit cleanly on SIGINT (${JSON.stringify(exit)}): ${err}`);
  };
  return new Promise((resolve, reject) => {
    child.stdout.setEncoding("utf8").on("data", (d) => {
      out += d;
      const url = /^listening on (http:\/\/\S+)$/m.exec(out)?.[1];
      if (url) resolve({ url, pid: child.pid, startMs: performance.now() - t0, stop });
    });
    exited.then((exit) => reject(new Error(`serve exited ${JSON.stringify(exit)} before listening: ${err}`)));
  });
}

/** GET on a new connection: ms to the first byte of the answer and to its end, the server's CPU ms, the body. */
function get(server, pathname) {
  return new Promise((resolve, reject) => {
    const cpu0 = cpuSecondsOf(server.pid);
    const t0 = performance.now();
    let first = null;
    const req = http.get(`${server.url}${pathname}`, { agent: false }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        const full = performance.now() - t0;
        if (res.statusCode !== 200) return reject(new Error(`GET ${pathname}: ${res.statusCode}`));
        resolve({
          ttfb: first - t0,
          full,
          cpu: (cpuSecondsOf(server.pid) - cpu0) * 1000,
          body: Buffer.concat(chunks).toString("utf8"),
        });
      });
    });
    req.on("socket", (socket) => socket.once("data", () => (first ??= performance.now())));
    req.on("error", reject);
  });
}

/**
 * The overview in a fresh browser context: navigation → first byte, first contentful paint, `load` (ms, the page's own
 * clock).
 */
async function browse(browser, url) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    const page = await context.newPage();
    const answer = await page.goto(`${url}/`, { waitUntil: "load" });
    if (answer?.status() !== 200) throw new Error(`overview in Chromium: ${answer?.status()}`);
    const times = await page.evaluate(
      () =>
        new Promise((resolve) => {
          const nav = performance.getEntriesByType("navigation")[0];
          const done = (fcp) => resolve({ ttfb: nav.responseStart, fcp, load: nav.loadEventStart });
          const seen = performance.getEntriesByName("first-contentful-paint")[0];
          if (seen) return done(seen.startTime);
          new PerformanceObserver((list) => {
            const fcp = list.getEntriesByName("first-contentful-paint")[0];
            if (fcp) done(fcp.startTime);
          }).observe({ type: "paint", buffered: true });
          setTimeout(() => done(Number.NaN), 10_000);
        }),
    );
    // Leave once the page's live stream is open, as a viewer would: not while the server opens it.
    await page.waitForFunction(() => document.getElementById("live-status")?.textContent.startsWith("Live"), null, {
      timeout: 10_000,
    });
    return times;
  } finally {
    await context.close();
  }
}

/** Runs counted over 7 days on an overview page: every log, when the page tells the truth. */
function runsOnPage(htmlText) {
  return [...htmlText.matchAll(/data-k="runs7">(\d+)</g)].reduce((sum, m) => sum + Number(m[1]), 0);
}

/** Top functions (self and total time) and modules (self) of a .cpuprofile. */
function summariseProfile(file) {
  const profile = JSON.parse(readFileSync(file, "utf8"));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const where = (n) =>
    n.callFrame.url
      ? `${n.callFrame.url.replace(/^.*\/dist\/teams-hooks\//, "").replace(/^file:\/\//, "")}:${n.callFrame.lineNumber + 1}`
      : "";
  const fnKey = (n) => `${n.callFrame.functionName || "(anonymous)"} ${where(n)}`.trim();
  const modKey = (n) =>
    n.callFrame.url
      ? n.callFrame.url.replace(/^.*\/dist\/teams-hooks\//, "").replace(/^file:\/\//, "")
      : n.callFrame.functionName;
  const self = new Map();
  const total = new Map();
  const mods = new Map();
  let all = 0;
  const add = (map, key, ms) => map.set(key, (map.get(key) ?? 0) + ms);
  profile.samples.forEach((id, i) => {
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    const node = byId.get(id);
    if (node.callFrame.functionName === "(idle)") return; // waiting for the next request
    all += ms;
    add(self, fnKey(node), ms);
    add(mods, modKey(node), ms);
    const seen = new Set();
    for (let n = node; n; n = byId.get(parent.get(n.id))) {
      const key = fnKey(n);
      if (!seen.has(key)) add(total, key, ms);
      seen.add(key);
    }
  });
  const top = (map, n) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, ms]) => [k, `${ms.toFixed(0)} ms`, `${((ms / all) * 100).toFixed(1)} %`]);
  console.log(`\nCPU profile ${file}: ${(all / 1000).toFixed(2)} s busy (idle left out), start-up included`);
  console.log(table([["self time, by function", "ms", "share"], ...top(self, 18)]));
  console.log(`\n${table([["total time (self and callees), by function", "ms", "share"], ...top(total, 25)])}`);
  console.log(`\n${table([["self time, by module", "ms", "share"], ...top(mods, 12)])}`);
}

const stat = (xs) => ({ median: percentile(xs, 0.5), p95: percentile(xs, 0.95) });
const fmt = (x) => (Number.isFinite(x) ? `${x.toFixed(x < 10 ? 1 : 0)} ms` : "—");

const root = makeTempRoot("bench-dashboard-");
let browser = null;
let server = null;
try {
  if (!CHROMIUM) throw new Error("no Chromium found: install it (apt-get install chromium) or set CHROMIUM_PATH");
  const t0 = performance.now();
  const teamDirs = await makeTeams(root);
  console.log(`${TEAMS} team(s) × ${LOGS} logs written in ${root} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  console.log(
    `node ${process.version}, ${os.cpus()[0]?.model ?? "cpu"} ×${os.cpus().length}, Chromium ${CHROMIUM}; ${ROUNDS} rounds, interleaved`,
  );
  console.log(`server: node ${[...shebangFlags(BIN), ...NODE_ARGS].join(" ")} dist/teams-hooks/bin.js serve`);
  console.log(`load average at start: ${load()}`);

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  server = await startServer(root);
  const samples = {};
  const put = (name, value) => (samples[name] ??= []).push(value);
  /** `logs stats` over each team in turn (one process each): the time of all. */
  const stats = async () => {
    let ms = 0;
    for (const dir of teamDirs) ms += await runProcess(["logs", "stats", "--team-dir", dir]);
    return ms;
  };
  const kinds = {
    overview: async () => {
      const r = await get(server, "/");
      put("overview: first byte", r.ttfb);
      put("overview: whole body", r.full);
      put("overview: server CPU", r.cpu);
      const counted = runsOnPage(r.body);
      if (counted !== LOGS * TEAMS)
        throw new Error(`the overview counts ${counted} runs over 7 days, not ${LOGS * TEAMS}`);
      samples.bytes = r.body.length;
    },
    browser: async () => {
      const r = await browse(browser, server.url);
      put("Chromium: first byte", r.ttfb);
      put("Chromium: first contentful paint", r.fcp);
      put("Chromium: load event", r.load);
    },
    runs: async () => {
      const r = await get(server, "/runs");
      put("runs page: first byte", r.ttfb);
      put("runs page: whole body", r.full);
    },
    healthz: async () => put("healthz: whole body", (await get(server, "/healthz")).full),
    stats: async () => put("logs stats (process)", await stats()),
    version: async () => put("--version (process)", await runProcess(["--version"])),
    cold: async () => {
      const fresh = await startServer(root);
      try {
        put("cold: spawn → listening", fresh.startMs);
        const first = await get(fresh, "/");
        put("cold: first overview, first byte", first.ttfb);
        put("cold: first overview, whole body", first.full);
        put("cold: first overview, server CPU", first.cpu);
        const second = await get(fresh, "/");
        put("cold: second overview, whole body", second.full);
      } finally {
        await fresh.stop();
      }
    },
  };
  const order = Object.keys(kinds);
  // One untimed round first (Chromium's first context, the server's first requests), then the rounds.
  for (const kind of order) await kinds[kind]();
  for (const key of Object.keys(samples)) if (key !== "bytes" && !key.startsWith("cold:")) samples[key] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < order.length; i++) await kinds[order[(round + i) % order.length]]();
  }

  const floor = stat(samples["healthz: whole body"]).median;
  const cli = stat(samples["logs stats (process)"]).median;
  const row = (name) => {
    const s = stat(samples[name]);
    return [name, fmt(s.median), fmt(s.p95), ratio(s.median, floor), ratio(s.median, cli)];
  };
  const warm = Object.keys(samples).filter((k) => k !== "bytes" && !k.startsWith("cold:"));
  console.log(`\noverview page: ${samples.bytes} bytes; ${TEAMS * LOGS} runs counted on it\n`);
  console.log(
    table([["warm server (after 1 untimed round)", "median", "p95", "× healthz", "× logs stats"], ...warm.map(row)]),
  );
  const cold = Object.keys(samples).filter((k) => k.startsWith("cold:"));
  const coldHead = [`a fresh server each round (${ROUNDS + 1} starts)`, "median", "p95", "× healthz", "× logs stats"];
  console.log(`\n${table([coldHead, ...cold.map(row)])}`);
  const fcp = stat(samples["Chromium: first contentful paint"]);
  const met =
    fcp.p95 <= FIRST_PAINT_TARGET_MS
      ? "met (p95 too)"
      : fcp.median <= FIRST_PAINT_TARGET_MS
        ? "met by the median, not by the p95"
        : "missed";
  console.log(
    `\ntarget: overview first paint at ${LOGS} logs per team ≤ ${FIRST_PAINT_TARGET_MS} ms: ${met} (median ${fmt(fcp.median)}, p95 ${fmt(fcp.p95)})`,
  );
  console.log(`load average at end: ${load()}`);
  await server.stop();
  server = null;

  if (PROFILE_DIR) {
    const dir = path.resolve(PROFILE_DIR);
    mkdirSync(dir, { recursive: true });
    const before = new Set(readdirSync(dir));
    const profiled = await startServer(root, ["--cpu-prof", `--cpu-prof-dir=${dir}`]);
    for (let i = 0; i <= ROUNDS; i++) await get(profiled, "/");
    await profiled.stop();
    const made = readdirSync(dir).filter((f) => f.endsWith(".cpuprofile") && !before.has(f));
    for (const f of made) summariseProfile(path.join(dir, f));
  }
} finally {
  await server?.stop().catch(() => undefined);
  await browser?.close();
  removeQuietly(root);
}
