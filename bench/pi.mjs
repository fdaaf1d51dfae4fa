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
import "./lib/help.mjs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { makePiRoot, piVersion, requirePi, startPi } from "./lib/pi.mjs";
import { cpuSecondsOf, memoryOf } from "./lib/proc.mjs";
import { arg, percentile, ratio, sleep, table } from "./lib/stats.mjs";
import { fillTasks, makeTeam, removeQuietly } from "./lib/team.mjs";

const repo = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const ROUNDS = Number(arg("rounds", 7));
const IDLE_MS = Number(arg("idle-ms", 3000));
requirePi("bench/pi.mjs");

const { root, home, hooksDir } = makePiRoot("bench-pi-");
const team = makeTeam(root, "team");
fillTasks(team, 10);

const configs = [
  { name: "pi alone", args: [], env: {} },
  { name: "pi + extension, gates off", args: ["-e", repo], env: {} },
  {
    name: "pi + extension, gates on",
    args: ["-e", repo],
    env: { PI_TEAMS_GATES: "1", PI_TEAMS_HOOKS_TEAM_DIR: team.teamDir, PI_TEAMS_HOOKS_DIR: hooksDir },
    gates: true,
  },
  // The entry as TypeScript, compiled by pi's jiti (the leader still from dist/ when it is current).
  {
    name: "pi + sources' entry, gates on",
    args: ["-e", path.join(repo, "extensions", "teams-hooks", "index.ts")],
    env: { PI_TEAMS_GATES: "1", PI_TEAMS_HOOKS_TEAM_DIR: team.teamDir, PI_TEAMS_HOOKS_DIR: hooksDir },
    gates: true,
  },
];

/** One pi start: the figures of one round for one configuration. */
async function startOnce(config) {
  const pi = startPi({ cwd: root, home, args: config.args, env: config.env });
  try {
    const stateId = pi.send({ type: "get_state" });
    const state = await pi.waitFor("get_state response", (l) => l.type === "response" && l.id === stateId);
    const result = { up: state.at - pi.t0, watching: NaN };
    if (config.gates) result.watching = (await pi.untilWatching()) - pi.t0;
    await sleep(300); // let start-up work settle before the idle window
    const cpu0 = cpuSecondsOf(pi.pid);
    await sleep(IDLE_MS);
    result.idleCpuPct = ((cpuSecondsOf(pi.pid) - cpu0) / (IDLE_MS / 1000)) * 100;
    result.rssMB = memoryOf(pi.pid).rssMB;
    return result;
  } finally {
    await pi.stop();
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
  console.log(
    `node ${process.version}; pi ${piVersion()}; ${ROUNDS} rounds, interleaved; load ${os.loadavg()[0].toFixed(2)} at the end`,
  );
  console.log(
    table([
      [
        "configuration (medians)",
        "to get_state",
        "vs pi alone",
        "to gates watching",
        "idle CPU",
        "RSS idle",
        "RSS vs pi alone",
      ],
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
