#!/usr/bin/env node
// Filtered runs over a big team, while the rest of the server is used: the real `pi-teams-hooks serve`
// (the built bin) over a teams root with one team of LOGS hook logs (default 100,000, over 30 days)
// and one small team. Each round fires ten filtered requests at once at the big team's runs
// (`GET /api/v1/teams/big/runs?hook=on_idle.sh&outcome=timed_out&member=ada`: a filter that keeps about
// 70 of 100,000 logs and that a log's name cannot decide, so a page of 50 means reading most of them
// without an index), and while they run asks, one after the other, `GET /healthz` and the small team's
// runs: how long those wait is what every other user of the server feels. The first round runs on a
// server just started (`cold`: nothing read yet), the others after it. The same rounds against a
// baseline build (another checkout, built: `--baseline DIR`), same run, same logs. Medians and p95,
// and the ratios baseline / this build.
//
//   npm run build
//   git archive <commit> | tar -x -C /tmp/baseline && (cd /tmp/baseline && npm ci)
//   node bench/serve-filters.mjs --baseline /tmp/baseline [--logs 100000] [--rounds 5]
//
// Without --baseline, this build alone. The logs are written once (through this build's log writer)
// and read by both servers. `--root DIR` keeps the teams root in DIR (written there on the first run,
// read again by the next: writing 100,000 logs takes minutes); `--node-flags "--cpu-prof ..."` adds
// flags to both servers' node (a profile, `--trace-gc`); `--order baseline-first` measures the baseline
// first (the machine's load drifts: alternate the order between runs); `--server-out DIR` keeps each
// server's stdout and stderr there.
import "./lib/help.mjs";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { writeHookLogs } from "./lib/hook-logs.mjs";
import { shebangFlags } from "./lib/proc.mjs";
import { arg, percentile, ratio, table } from "./lib/stats.mjs";
import { makeTeam, makeTempRoot, removeQuietly } from "./lib/team.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BIN = path.join(HERE, "..", "dist", "teams-hooks", "bin.js");
const BASELINE = arg("baseline", null);
const LOGS = Number(arg("logs", 100_000));
const ROUNDS = Number(arg("rounds", 5));
const ROOT = arg("root", null);
const NODE_FLAGS = String(arg("node-flags", "")).split(/\s+/).filter(Boolean);
const SERVER_OUT = arg("server-out", null);
const BASELINE_FIRST = arg("order", "this-first") === "baseline-first";
const AT_ONCE = 10;
const FILTER = "hook=on_idle.sh&outcome=timed_out&member=ada";
const DAY_MS = 86_400_000;
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("PI_TEAMS_")));

function run(bin, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`${args.join(" ")}: ${code} ${err}`))));
  });
}

function startServer(bin, root, tag) {
  const child = spawn(
    process.execPath,
    [
      ...shebangFlags(bin),
      ...NODE_FLAGS,
      bin,
      "serve",
      "--teams-root",
      root,
      "--listen",
      "127.0.0.1:0",
      "--rate-limit",
      "100000/min",
    ],
    { env, stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  child.stderr.setEncoding("utf8").on("data", (d) => (err += d));
  const exited = new Promise((resolve) => child.on("close", (code, signal) => resolve({ code, signal })));
  const stop = async () => {
    child.kill("SIGINT");
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
    if (SERVER_OUT) {
      mkdirSync(SERVER_OUT, { recursive: true });
      writeFileSync(path.join(SERVER_OUT, `${tag}.out`), out);
      writeFileSync(path.join(SERVER_OUT, `${tag}.err`), err);
    }
  };
  return new Promise((resolve, reject) => {
    child.stdout.setEncoding("utf8").on("data", (d) => {
      out += d;
      const url = /^listening on (http:\/\/\S+)$/m.exec(out)?.[1];
      if (url) resolve({ url, stop });
    });
    exited.then((exit) => reject(new Error(`serve exited ${JSON.stringify(exit)}: ${err}`)));
  });
}

/** GET on a new connection; ms to the whole answer. Throws on any status but 200. */
function get(url, key) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const headers = key ? { Authorization: `Bearer ${key}` } : {};
    const req = http.get(url, { agent: false, headers }, (res) => {
      res.resume();
      res.on("end", () =>
        res.statusCode === 200 ? resolve(performance.now() - t0) : reject(new Error(`GET ${url}: ${res.statusCode}`)),
      );
    });
    req.on("error", reject);
    req.setTimeout(900_000, () => req.destroy(new Error(`GET ${url}: no answer in 900 s`)));
  });
}

/** The rounds against one server: a first round of ten at once on a fresh server (cold), then ROUNDS more. */
async function measure(label, bin, root) {
  const tag = `${label.replace(/\W+/g, "-")}-${Date.now().toString(36)}`;
  const key = (await run(bin, keyArgs(root, `big-${tag}`, "big"))).trimEnd().split("\n").pop();
  const small = (await run(bin, keyArgs(root, `small-${tag}`, "small"))).trimEnd().split("\n").pop();
  const server = await startServer(bin, root, tag);
  const filtered = `${server.url}/api/v1/teams/big/runs?${FILTER}`;
  const samples = { coldHealthz: [], coldOther: [], coldRound: [], filtered: [], healthz: [], other: [], rounds: [] };
  try {
    for (let r = -1; r < ROUNDS; r++) {
      const t0 = performance.now();
      let done = false;
      const burst = Promise.all(Array.from({ length: AT_ONCE }, () => get(filtered, key))).then((ms) => {
        done = true;
        return ms;
      });
      // One after the other while the ten run: the health check, then the small team's runs.
      while (!done) {
        (r < 0 ? samples.coldHealthz : samples.healthz).push(await get(`${server.url}/healthz`));
        if (!done)
          (r < 0 ? samples.coldOther : samples.other).push(await get(`${server.url}/api/v1/teams/small/runs`, small));
      }
      const ms = await burst;
      if (r < 0) {
        samples.coldRound.push(performance.now() - t0);
        continue;
      }
      samples.filtered.push(...ms);
      samples.rounds.push(performance.now() - t0);
    }
  } finally {
    await server.stop();
  }
  const cold = `cold: ${samples.coldHealthz.length}, ${samples.coldOther.length}`;
  console.log(`${label}: ${samples.healthz.length} health checks, ${samples.other.length} small-team pages (${cold})`);
  return samples;
}

function keyArgs(root, name, team) {
  return ["serve", "keys", "create", "--teams-root", root, "--name", name, "--scopes", "logs:read", "--teams", team];
}

if (ROOT !== null) mkdirSync(ROOT, { recursive: true });
const root = ROOT ?? makeTempRoot("bench-serve-filters-");
try {
  if (BASELINE && !existsSync(path.join(BASELINE, "dist", "teams-hooks", "bin.js")))
    throw new Error(`--baseline ${BASELINE}: no dist/teams-hooks/bin.js there (npm ci builds it)`);
  const written = path.join(root, "written.json");
  if (existsSync(written) && JSON.parse(readFileSync(written, "utf8")).logs === LOGS) {
    console.log(`${LOGS} logs of ${root} read again; ${AT_ONCE} at once, ${ROUNDS} rounds`);
  } else {
    if (existsSync(path.join(root, "big")))
      throw new Error(`--root ${root}: holds a team big not written for ${LOGS} logs`);
    const { teamDir } = makeTeam(root, "big");
    const { teamDir: smallDir } = makeTeam(root, "small");
    mkdirSync(path.join(teamDir, "hook-logs"), { recursive: true });
    const oldest = Date.now() - 30 * DAY_MS;
    const t0 = performance.now();
    await writeHookLogs(teamDir, { count: LOGS, startedAt: (i) => new Date(oldest + (i * 30 * DAY_MS) / LOGS) });
    await writeHookLogs(smallDir, { count: 200, startedAt: (i) => new Date(Date.now() - (200 - i) * 60_000) });
    writeFileSync(written, JSON.stringify({ logs: LOGS }));
    console.log(
      `${LOGS} logs written in ${((performance.now() - t0) / 1000).toFixed(0)} s; ${AT_ONCE} at once, ${ROUNDS} rounds`,
    );
  }
  console.log(
    `load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")} at the start`,
  );

  const builds = [["this build", BIN]];
  if (BASELINE) builds.push(["baseline", path.join(BASELINE, "dist", "teams-hooks", "bin.js")]);
  const measured = new Map();
  for (const [name, bin] of BASELINE_FIRST ? [...builds].reverse() : builds)
    measured.set(name, await measure(name, bin, root));
  const results = builds.map(([name]) => [name, measured.get(name)]);
  console.log(
    `load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")} at the end`,
  );
  const median = (xs) => percentile(xs, 0.5);
  const p95 = (xs) => percentile(xs, 0.95);
  const f = (v) => (Number.isFinite(v) ? v.toFixed(v < 10 ? 1 : 0) : "—");
  const rows = [
    ["", ...results.flatMap(([name]) => [`${name} median`, `${name} p95`]), ...(BASELINE ? ["ratio (median)"] : [])],
  ];
  const line = (label, pick) => {
    const cells = results.flatMap(([, s]) => [f(median(pick(s))), f(p95(pick(s)))]);
    const ratioCell = BASELINE ? [ratio(median(pick(results[1][1])), median(pick(results[0][1])))] : [];
    rows.push([label, ...cells, ...ratioCell]);
  };
  line("GET /healthz during the ten (ms)", (s) => s.healthz);
  line("small team's runs during the ten (ms)", (s) => s.other);
  line("one of ten filtered requests (ms)", (s) => s.filtered);
  line("a round of ten (ms)", (s) => s.rounds);
  line("cold: GET /healthz during the first ten (ms)", (s) => s.coldHealthz);
  line("cold: small team's runs during the first ten (ms)", (s) => s.coldOther);
  line("cold: the first round of ten (ms)", (s) => s.coldRound);
  console.log(`\n${table(rows)}`);
  const worst = (xs) => (xs.length > 0 ? Math.max(...xs) : Number.NaN);
  for (const [name, s] of results) {
    const page = `slowest small-team page ${f(worst(s.other))} ms (cold: ${f(worst(s.coldOther))} ms)`;
    console.log(`${name}: slowest /healthz ${f(worst(s.healthz))} ms (cold: ${f(worst(s.coldHealthz))} ms), ${page}`);
  }
} finally {
  if (ROOT === null) removeQuietly(root);
}
