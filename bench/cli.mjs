#!/usr/bin/env node
// Start-up of short commands, as a person waits for them: spawn → exit of `--version`, `--help`,
// `logs --help`, `logs` on a team with no logs and on one with 1,000, and `run task_completed` with a
// gate that passes at once; and a leader's start and stop (`watch` on a team with no tasks, SIGTERM at
// its `ready` line, as a test or a supervisor stops it); next to a bare `node -e ""` measured in the
// same rounds (what starting Node costs this machine at that moment). Rounds are interleaved so that
// machine noise hits every command alike; medians per command, of the wall time and of the CPU time
// (user + system, start-up included), which other load on the machine moves much less. With --other,
// each command's CPU median against the other build's, from the same rounds.
//
//   npm run build && node bench/cli.mjs [--rounds 15] [--other /path/to/other/dist/teams-hooks/bin.js …]
//                                       [--extra name=/path/to/script.mjs …]
//
// --other adds another build's bin for the same commands (repeatable). --extra adds a script run as
// `node script.mjs --help` and `node script.mjs logs --team-dir <team>`: how the command-line
// library prototypes of docs/performance.md ("The command line: start-up") were timed.
import "./lib/help.mjs";
import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { writeHookLogs } from "./lib/hook-logs.mjs";
import { shebangFlags } from "./lib/proc.mjs";
import { fillTasks, makeTeam, makeTempRoot, removeQuietly } from "./lib/team.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const arg = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const ROUNDS = Number(arg("rounds", 15));
const extras = args
  .flatMap((a, i) => (a === "--extra" ? [args[i + 1] ?? ""] : []))
  .map((spec) => {
    const [name, script] = spec.split("=");
    return { name, script: path.resolve(script) };
  });

const root = makeTempRoot("bench-cli-");
const team = makeTeam(root, "team");
fillTasks(team, 3, { completed: 1 });
const hooksDir = path.join(root, "hooks");
mkdirSync(hooksDir);
writeFileSync(path.join(hooksDir, "on_task_completed.sh"), "#!/usr/bin/env bash\nexit 0\n");
chmodSync(path.join(hooksDir, "on_task_completed.sh"), 0o755);
const logged = makeTeam(root, "logged");
await writeHookLogs(logged.teamDir, {
  from: 0,
  count: 1000,
  startedAt: (i) => new Date(Date.parse("2026-02-01T00:00:00.000Z") + i * 259_000),
});
// Loaded into each child: reports its CPU time as it exits (through NODE_OPTIONS, so that a bin's
// shebang flags still apply).
const cpuReporter = path.join(root, "cpu.mjs");
writeFileSync(
  cpuReporter,
  `process.on("exit", () => { const u = process.cpuUsage(); process.stderr.write("\\ncpu-us " + (u.user + u.system) + "\\n"); });\n`,
);
const childEnv = {
  ...process.env,
  NO_COLOR: "1",
  NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import=${pathToFileURL(cpuReporter).href}`.trim(),
};

const bins = [{ name: "this", bin: path.join(here, "..", "dist", "teams-hooks", "bin.js") }];
/** `watch` starts, says `ready`, and is stopped with SIGTERM; with the node flags of the bin's shebang, as it runs. */
const STOP_AT_READY = '"type":"ready"';
const others = args.flatMap((a, i) => (a === "--other" ? [args[i + 1] ?? ""] : []));
others.forEach((bin, k) =>
  bins.push({ name: others.length === 1 ? "other" : `other ${k + 1}`, bin: path.resolve(bin) }),
);

const commands = [{ name: 'node -e ""', argv: ["-e", ""] }];
for (const [k, { name, bin }] of bins.entries()) {
  const idle = makeTeam(root, `idle-${k}`); // a leader's own: its hook-state/ is the same build's each round
  bins[k].first = commands.length;
  commands.push(
    { name: `${name}: --version`, argv: [bin, "--version"] },
    { name: `${name}: --help`, argv: [bin, "--help"] },
    { name: `${name}: logs --help`, argv: [bin, "logs", "--help"] },
    { name: `${name}: logs`, argv: [bin, "logs", "--team-dir", team.teamDir] },
    { name: `${name}: logs, 1,000`, argv: [bin, "logs", "--team-dir", logged.teamDir] },
    {
      name: `${name}: run`,
      argv: [bin, "run", "task_completed", "--team-dir", team.teamDir, "--hooks-dir", hooksDir, "--task", "1"],
    },
    {
      name: `${name}: watch, start+stop`,
      argv: [...shebangFlags(bin), bin, "watch", "--team-dir", idle.teamDir, "--hooks-dir", hooksDir, "--json"],
      stopAt: STOP_AT_READY,
    },
  );
}
for (const { name, script } of extras) {
  commands.push(
    { name: `${name}: --help`, argv: [script, "--help"] },
    { name: `${name}: logs`, argv: [script, "logs", "--team-dir", team.teamDir] },
  );
}

/**
 * Spawn → exit and the child's CPU time, in ms; fails the bench on a non-zero exit (a broken command measures nothing).
 */
function timeOnce(argv, stopAt) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(process.execPath, argv, {
      stdio: ["ignore", stopAt ? "pipe" : "ignore", "pipe"],
      env: childEnv,
    });
    let [stdout, stderr] = ["", ""];
    child.stdout?.on("data", (chunk) => {
      stdout += chunk;
      if (stdout.includes(stopAt) && child.exitCode === null && !child.killed) child.kill("SIGTERM");
    });
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => {
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (code !== 0) reject(new Error(`${argv.join(" ")} exited ${code}: ${stderr}`));
      else resolve({ ms, cpuMs: Number(/cpu-us (\d+)/.exec(stderr)?.[1] ?? Number.NaN) / 1000 });
    });
  });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

const samples = commands.map(() => []);
try {
  for (const c of commands) await timeOnce(c.argv, c.stopAt); // warm the file cache
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < commands.length; k++) {
      const i = (round + k) % commands.length; // rotate which command goes first
      samples[i].push(await timeOnce(commands[i].argv, commands[i].stopAt));
    }
  }
  const wall = (i) => samples[i].map((x) => x.ms);
  const cpu = (i) => samples[i].map((x) => x.cpuMs);
  const [floor, cpuFloor] = [median(wall(0)), median(cpu(0))];
  const ms = (x) => `${x.toFixed(0)} ms`.padStart(9);
  const over = (x) => `${x < 0 ? "" : "+"}${x.toFixed(0)} ms`.padStart(13);
  console.log(
    `node ${process.version}, ${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(2)}; ${ROUNDS} rounds, interleaved; spawn → exit`,
  );
  console.log(`${"".padEnd(28)} ${"wall time".padEnd(33)} CPU time`);
  console.log(
    `${"command".padEnd(28)} ${"median".padStart(9)} ${"min".padStart(9)} ${"over node -e".padStart(13)} ${"median".padStart(9)} ${"over node -e".padStart(13)}`,
  );
  commands.forEach((c, i) => {
    const [med, cpuMed] = [median(wall(i)), median(cpu(i))];
    const overs = i === 0 ? ["".padStart(13), "".padStart(13)] : [over(med - floor), over(cpuMed - cpuFloor)];
    console.log(`${c.name.padEnd(28)} ${ms(med)} ${ms(Math.min(...wall(i)))} ${overs[0]} ${ms(cpuMed)} ${overs[1]}`);
  });
  // Each other build against this one, command by command: CPU medians of the same rounds.
  const perBin = bins.length > 1 ? bins[1].first - bins[0].first : 0;
  for (let b = 1; b < bins.length; b++) {
    console.log(`\nCPU time, this against ${bins[b].name} (medians of the same rounds)`);
    console.log(
      `${"command".padEnd(28)} ${"this".padStart(9)} ${bins[b].name.padStart(9)} ${"difference".padStart(13)}`,
    );
    for (let j = 0; j < perBin; j++) {
      const [mine, theirs] = [bins[0].first + j, bins[b].first + j];
      const [a, o] = [median(cpu(mine)), median(cpu(theirs))];
      const what = commands[mine].name.slice(bins[0].name.length + 2);
      console.log(`${what.padEnd(28)} ${ms(a)} ${ms(o)} ${over(a - o)} ${`${(a / o).toFixed(2)}×`.padStart(8)}`);
    }
  }
} finally {
  removeQuietly(root);
}
