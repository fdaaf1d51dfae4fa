#!/usr/bin/env node
// `pi-teams-hooks logs` over 10,000 realistic hook logs: the default table (newest 50), every log
// (`--limit 10000`, also as `--json`), two filters, and `stats`. Each is timed as a whole command
// (what a person waits for: the bin run as a person runs it, through its shebang and that shebang's
// node flags, start-up included, stdout to a file as with `> out.txt`) and in-process (main() with
// output discarded). Wall time and CPU time (user + system) are both printed, as medians: on a busy
// machine wall time mostly measures the other processes, CPU time much less so.
// Build first: `npm run build && node bench/logs.mjs [logs] [runs] [keep-dir] [baseline-bin]` (with
// keep-dir, the logs are written there once, reused by later runs, and not removed; with the bin.js
// of another build, that build is timed too, its runs interleaved with these so that both see the
// same load, and its output is compared with this one's).
import "./lib/help.mjs";
import { spawn } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { main } from "../dist/teams-hooks/cli/main.js";
import { writeHookLogs } from "./lib/hook-logs.mjs";

const count = Number(process.argv[2] ?? 10_000);
const runs = Number(process.argv[3] ?? 7);
const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../dist/teams-hooks/bin.js");
const keepDir = process.argv[4] ? path.resolve(process.argv[4]) : null;
const baselineBin = process.argv[5] ? path.resolve(process.argv[5]) : null;
if (keepDir) mkdirSync(keepDir, { recursive: true });
const root = keepDir ?? mkdtempSync(path.join(os.tmpdir(), "bench-logs-"));
const teamDir = path.join(root, "alpha");
// Loaded into each child: reports its CPU time (start-up included) on stderr as it exits.
const cpuReporter = path.join(root, "cpu.mjs");
writeFileSync(
  cpuReporter,
  `process.on("exit", () => { const u = process.cpuUsage(); process.stderr.write("\\ncpu-us " + (u.user + u.system) + "\\n"); });\n`,
);
/** Through NODE_OPTIONS, so that the bin's shebang (`node --max-semi-space-size=2`) still applies. */
const childEnv = {
  ...process.env,
  NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import=${pathToFileURL(cpuReporter).href}`.trim(),
};
/** Where each command's stdout goes. */
const outFile = path.join(root, "stdout.txt");

function median(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** One run of a bin; stdout goes to `outFile` (a pipe would also time whatever reads it). */
async function runBin(args, bin = BIN) {
  const out = openSync(outFile, "w");
  const t0 = performance.now();
  const child = spawn(bin, args, { stdio: ["ignore", out, "pipe"], env: childEnv });
  closeSync(out);
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk));
  const code = await new Promise((resolve, reject) => child.on("error", reject).on("close", resolve));
  const ms = performance.now() - t0;
  if (code !== 0) throw new Error(`${args.join(" ")} exited ${code}: ${stderr}`);
  return { ms, cpuMs: Number(/cpu-us (\d+)/.exec(stderr)?.[1] ?? Number.NaN) / 1000 };
}

async function asProcess(args, bin = BIN) {
  const run = await runBin(["logs", "--team-dir", teamDir, ...args], bin);
  const stdout = readFileSync(outFile, "utf8");
  return { ...run, lines: stdout.split("\n").length - 1, stdout };
}

async function inProcess(args) {
  let lines = 0;
  const io = {
    stdout: (text) => (lines += text.split("\n").length - 1),
    stderr: () => {},
    env: {},
    cwd: process.cwd(),
    isTTY: false,
    stopSignal: new Promise(() => {}),
  };
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const code = await main(["logs", "--team-dir", teamDir, ...args], io);
  const cpu = process.cpuUsage(cpu0);
  const ms = performance.now() - t0;
  if (code !== 0) throw new Error(`logs ${args.join(" ")} exited ${code}`);
  return { ms, cpuMs: (cpu.user + cpu.system) / 1000, lines };
}

try {
  const t0 = performance.now();
  const start = Date.parse("2026-02-01T00:00:00.000Z");
  // The log writer refuses a team dir that is not there (it never makes one up): make it first.
  mkdirSync(teamDir, { recursive: true });
  const have = existsSync(path.join(teamDir, "hook-logs")) ? readdirSync(path.join(teamDir, "hook-logs")).length : 0;
  if (have !== 0 && have !== count)
    throw new Error(`${teamDir} holds ${have} logs, not ${count}: use another keep-dir`);
  await writeHookLogs(teamDir, { from: have, count, startedAt: (i) => new Date(start + i * 259_000) });
  console.log(
    `${count} logs ${have === count ? "reused" : "written"} in ${path.join(teamDir, "hook-logs")} (${Math.round(performance.now() - t0)} ms)`,
  );
  console.log(
    `node ${process.version}, ${os.cpus()[0]?.model ?? "cpu"} ×${os.cpus().length}; median of ${runs} runs each (after 1 warm-up)\n`,
  );

  const cases = [
    ["logs (default --limit 50)", []],
    ["logs --limit 10000", ["--limit", "10000"]],
    ["logs --limit 10000 --json", ["--limit", "10000", "--json"]],
    ["logs --outcome failed --since <last day>", ["--outcome", "failed", "--since", "2026-03-01"]],
    ["logs --task 7 --limit 0", ["--task", "7", "--limit", "0"]],
    ["logs stats", ["stats"]],
  ];
  const ms = (samples) => `${median(samples).toFixed(0)} ms`.padStart(8);
  console.log(
    `load average at start: ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(", ")}`,
  );
  if (baselineBin) console.log(`baseline: ${baselineBin}`);
  const baselineHead = baselineBin ? `   ${"baseline process".padEnd(17)}` : "";
  console.log(
    `${"".padEnd(44)} ${"process (node start-up included)".padEnd(19)}   in-process${" ".repeat(16)}${baselineHead}`,
  );
  const baselineCols = baselineBin ? `   ${"wall".padStart(8)} ${"cpu".padStart(8)}  output` : "";
  console.log(
    `${"case".padEnd(44)} ${"wall".padStart(8)} ${"cpu".padStart(8)}   ${"wall".padStart(8)} ${"cpu".padStart(8)}  lines${baselineCols}`,
  );
  for (const [name, args] of cases) {
    const first = await asProcess(args);
    await inProcess(args);
    const baseFirst = baselineBin ? await asProcess(args, baselineBin) : null;
    const proc = { wall: [], cpu: [] };
    const inner = { wall: [], cpu: [] };
    const base = { wall: [], cpu: [] };
    const add = (into, x) => {
      into.wall.push(x.ms);
      into.cpu.push(x.cpuMs);
    };
    const steps = [() => asProcess(args).then((x) => add(proc, x)), () => inProcess(args).then((x) => add(inner, x))];
    if (baselineBin) steps.push(() => asProcess(args, baselineBin).then((x) => add(base, x)));
    for (let r = 0; r < runs; r++) {
      // Rotate which goes first, so that machine noise and cache state hit all alike.
      for (let i = 0; i < steps.length; i++) await steps[(r + i) % steps.length]();
    }
    const baseline = baseFirst
      ? `   ${ms(base.wall)} ${ms(base.cpu)}  ${baseFirst.stdout === first.stdout ? "same" : "differs"}`
      : "";
    console.log(
      `${name.padEnd(44)} ${ms(proc.wall)} ${ms(proc.cpu)}   ${ms(inner.wall)} ${ms(inner.cpu)}  ${String(first.lines).padEnd(5)}${baseline}`,
    );
  }
  const version = { wall: [], cpu: [] };
  const baseVersion = { wall: [], cpu: [] };
  for (let r = 0; r < runs; r++) {
    for (const [bin, into] of r % 2 === 0 || !baselineBin
      ? [
          [BIN, version],
          [baselineBin, baseVersion],
        ]
      : [
          [baselineBin, baseVersion],
          [BIN, version],
        ]) {
      if (!bin) continue;
      const run = await runBin(["--version"], bin);
      into.wall.push(run.ms);
      into.cpu.push(run.cpuMs);
    }
  }
  const baseline = baselineBin ? `${" ".repeat(28)}${ms(baseVersion.wall)} ${ms(baseVersion.cpu)}` : "";
  console.log(
    `${"node start-up alone (pi-teams-hooks --version)".padEnd(44)} ${ms(version.wall)} ${ms(version.cpu)}${baseline}`,
  );
  console.log(
    `load average at end: ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(", ")}`,
  );
} finally {
  if (!keepDir) rmSync(root, { recursive: true, force: true });
}
