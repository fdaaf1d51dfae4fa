#!/usr/bin/env node
// Start-up of short commands, as a person waits for them: spawn → exit of `--help`, `logs` on a team
// with no logs, and `run task_completed` with a gate that passes at once, next to a bare `node -e ""`
// measured in the same rounds (what starting Node costs this machine at that moment). Rounds are
// interleaved so that machine noise hits every command alike; medians per command.
//
//   npm run build && node bench/cli.mjs [--rounds 15] [--other /path/to/other/dist/teams-hooks/bin.js]
//                                       [--extra name=/path/to/script.mjs …]
//
// --other adds another build's bin for the same commands. --extra adds a script run as
// `node script.mjs --help` and `node script.mjs logs --team-dir <team>`: how the command-line
// library prototypes of docs/performance.md ("The command line: start-up") were timed.
import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fillTasks, makeTeam, makeTempRoot, removeQuietly } from "./lib/team.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const arg = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const ROUNDS = Number(arg("rounds", 15));
const extras = args.flatMap((a, i) => (a === "--extra" ? [args[i + 1] ?? ""] : [])).map((spec) => {
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

const bins = [{ name: "this", bin: path.join(here, "..", "dist", "teams-hooks", "bin.js") }];
if (arg("other")) bins.push({ name: "other", bin: path.resolve(arg("other")) });

const commands = [{ name: 'node -e ""', argv: ["-e", ""] }];
for (const { name, bin } of bins) {
  commands.push(
    { name: `${name}: --help`, argv: [bin, "--help"] },
    { name: `${name}: logs`, argv: [bin, "logs", "--team-dir", team.teamDir] },
    { name: `${name}: run`, argv: [bin, "run", "task_completed", "--team-dir", team.teamDir, "--hooks-dir", hooksDir, "--task", "1"] },
  );
}
for (const { name, script } of extras) {
  commands.push({ name: `${name}: --help`, argv: [script, "--help"] }, { name: `${name}: logs`, argv: [script, "logs", "--team-dir", team.teamDir] });
}

/** Spawn → exit, in ms; fails the bench on a non-zero exit (a broken command measures nothing). */
function timeOnce(argv) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(process.execPath, argv, { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, NO_COLOR: "1" } });
    let stderr = "";
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => {
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (code !== 0) reject(new Error(`${argv.join(" ")} exited ${code}: ${stderr}`));
      else resolve(ms);
    });
  });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

const samples = commands.map(() => []);
try {
  for (const c of commands) await timeOnce(c.argv); // warm the file cache
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < commands.length; k++) {
      const i = (round + k) % commands.length; // rotate which command goes first
      samples[i].push(await timeOnce(commands[i].argv));
    }
  }
  const floor = median(samples[0]);
  console.log(`node ${process.version}, ${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(2)}; ${ROUNDS} rounds, interleaved; spawn → exit`);
  console.log(`${"command".padEnd(24)} ${"median".padStart(9)} ${"min".padStart(9)} ${"over node -e".padStart(13)}`);
  commands.forEach((c, i) => {
    const med = median(samples[i]);
    const min = Math.min(...samples[i]);
    const over = i === 0 ? "" : `+${(med - floor).toFixed(0)} ms`;
    console.log(`${c.name.padEnd(24)} ${`${med.toFixed(0)} ms`.padStart(9)} ${`${min.toFixed(0)} ms`.padStart(9)} ${over.padStart(13)}`);
  });
} finally {
  removeQuietly(root);
}
