#!/usr/bin/env node
// `pi-teams-hooks logs` over 10,000 realistic hook logs: the default table (newest 50), every log
// (`--limit 10000`), and `stats`. Each is timed as a whole command (a fresh `node` process, start-up
// included: what a person waits for) and in-process (main() with output discarded). Wall time and
// CPU time (user + system) are both printed, as medians: on a busy machine wall time mostly measures
// the other processes, CPU time much less so.
// Build first: `npm run build && node bench/logs.mjs [logs] [runs] [keep-dir]` (with keep-dir, the
// logs are written there once, reused by later runs, and not removed).
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { main } from "../dist/teams-hooks/cli.js";
import { writeHookLog } from "../dist/teams-hooks/hook-log.js";

const exec = promisify(execFile);
const count = Number(process.argv[2] ?? 10_000);
const runs = Number(process.argv[3] ?? 7);
const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../dist/teams-hooks/bin.js");
const keepDir = process.argv[4] ? path.resolve(process.argv[4]) : null;
if (keepDir) mkdirSync(keepDir, { recursive: true });
const root = keepDir ?? mkdtempSync(path.join(os.tmpdir(), "bench-logs-"));
const teamDir = path.join(root, "alpha");
// Loaded into each child: reports its CPU time (start-up included) on stderr as it exits.
const cpuReporter = path.join(root, "cpu.mjs");
writeFileSync(cpuReporter, `process.on("exit", () => { const u = process.cpuUsage(); process.stderr.write("\\ncpu-us " + (u.user + u.system) + "\\n"); });\n`);

/** A deterministic generator, so that every run builds the same folder. */
let seed = 42;
const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
const pick = (items) => items[Math.floor(random() * items.length)];

const members = ["ada", "brian", "chen", "dora", "emil", "fatima"];
const testLines = Array.from({ length: 40 }, (_, i) => `  ✓ test/unit/module-${i}.test.ts (${5 + i} tests) ${10 + i}ms`);

function record(i, startedAt) {
  const r = random();
  const event = r < 0.7 ? "task_completed" : r < 0.9 ? "task_failed" : "idle";
  const member = pick(members);
  const taskId = String(1 + Math.floor(random() * 400));
  const o = random();
  const outcome = o < 0.8 ? "passed" : o < 0.92 ? "failed" : o < 0.96 ? "timed_out" : "error";
  const hook = `/home/me/.pi/teams/_hooks/on_${event}.sh`;
  const at = startedAt.toISOString();
  const task =
    event === "idle"
      ? null
      : {
          id: taskId,
          subject: `Implement feature ${taskId}: retry uploads with jittered backoff`,
          description: `Uploads fail on transient 503s. Retry up to 5 times with jittered exponential backoff.\nAcceptance: tests in test/upload-${taskId}.test.ts pass.`,
          owner: member,
          status: event === "task_completed" ? "completed" : "pending",
          blocks: [],
          blockedBy: ["1"],
          metadata: { result: `Done: see src/upload-${taskId}.ts`, completedAt: at },
          createdAt: "2026-01-01T09:00:00.000Z",
          updatedAt: at,
        };
  const failed = outcome !== "passed";
  const durationMs = outcome === "timed_out" ? 60_000 + random() * 1000 : 200 + random() * 8000;
  return {
    invocation: { event, teamId: "alpha", teamDir, taskListId: "alpha", style: "normal", memberName: member, timestamp: at, completedTask: task },
    result: {
      ran: true,
      hookPath: hook,
      command: ["bash", hook],
      outcome: outcome === "timed_out" ? "error" : outcome,
      exitCode: outcome === "passed" ? 0 : outcome === "failed" ? 1 : null,
      signal: outcome === "timed_out" ? "SIGTERM" : null,
      timedOut: outcome === "timed_out",
      durationMs,
      stdout: `> npm test --silent\n\n${testLines.slice(0, 10 + (i % 30)).join("\n")}\n`,
      stderr: failed ? `FAIL test/upload-${taskId}.test.ts > retries on 503\nAssertionError: expected 2 to be 5\n    at test/upload-${taskId}.test.ts:42:17\n` : "",
      stdoutDroppedBytes: 0,
      stderrDroppedBytes: 0,
      ...(outcome === "error" ? { error: "spawn bash ENOENT", errorCode: "ENOENT" } : {}),
      leftoverProcesses: 0,
      contextTruncated: false,
      runId: `run-${i}`,
      contractVersion: 1,
    },
    key: event === "idle" ? `idle:${member}:${at}` : `${event}:${taskId}:${at}`,
    startedAt: at,
    ...(event === "idle"
      ? {}
      : {
          policy: {
            failureAction: "reopen_followup",
            maxReopensPerTask: 3,
            followupOwner: "member",
            passed: !failed,
            summary: failed ? "exit code 1 • FAIL test/upload.test.ts > retries on 503" : "passed",
            alreadyApplied: false,
            reopen: failed ? { kind: "reopened", count: 1, max: 3 } : null,
            followupTaskId: failed ? String(500 + i) : null,
            nudged: failed ? member : null,
            actions: failed ? ["reopened (1/3)", `follow-up #${500 + i} for ${member}`, `nudge ${member}`] : ["none"],
            errors: [],
          },
        }),
  };
}

function median(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function asProcess(args) {
  const t0 = performance.now();
  const { stdout, stderr } = await exec(process.execPath, ["--import", cpuReporter, BIN, "logs", "--team-dir", teamDir, ...args], { maxBuffer: 256 * 1024 * 1024 });
  const ms = performance.now() - t0;
  const cpuMs = Number(/cpu-us (\d+)/.exec(stderr)?.[1] ?? Number.NaN) / 1000;
  return { ms, cpuMs, lines: stdout.split("\n").length - 1 };
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
  const have = existsSync(path.join(teamDir, "hook-logs")) ? readdirSync(path.join(teamDir, "hook-logs")).length : 0;
  if (have !== 0 && have !== count) throw new Error(`${teamDir} holds ${have} logs, not ${count}: use another keep-dir`);
  for (let i = have; i < count; i += 200) {
    await Promise.all(Array.from({ length: Math.min(200, count - i) }, (_, j) => writeHookLog(teamDir, record(i + j, new Date(start + (i + j) * 259_000)))));
  }
  console.log(`${count} logs ${have === count ? "reused" : "written"} in ${path.join(teamDir, "hook-logs")} (${Math.round(performance.now() - t0)} ms)`);
  console.log(`node ${process.version}, ${os.cpus()[0]?.model ?? "cpu"} ×${os.cpus().length}; median of ${runs} runs each (after 1 warm-up)\n`);

  const cases = [
    ["logs (default --limit 50)", []],
    ["logs --limit 10000", ["--limit", "10000"]],
    ["logs --limit 10000 --json", ["--limit", "10000", "--json"]],
    ["logs --outcome failed --since <last day>", ["--outcome", "failed", "--since", "2026-03-01"]],
    ["logs --task 7 --limit 0", ["--task", "7", "--limit", "0"]],
    ["logs stats", ["stats"]],
  ];
  const ms = (samples) => `${median(samples).toFixed(0)} ms`.padStart(8);
  console.log(`load average at start: ${os.loadavg().map((l) => l.toFixed(1)).join(", ")}`);
  console.log(`${"".padEnd(44)} ${"process (node start-up included)".padEnd(19)}   in-process`);
  console.log(`${"case".padEnd(44)} ${"wall".padStart(8)} ${"cpu".padStart(8)}   ${"wall".padStart(8)} ${"cpu".padStart(8)}  lines`);
  for (const [name, args] of cases) {
    await asProcess(args);
    await inProcess(args);
    const proc = { wall: [], cpu: [] };
    const inner = { wall: [], cpu: [] };
    let lines = 0;
    const add = (into, x) => (into.wall.push(x.ms), into.cpu.push(x.cpuMs), (lines = x.lines));
    for (let r = 0; r < runs; r++) {
      // Alternate which goes first, so that machine noise and cache state hit both alike.
      if (r % 2 === 0) {
        add(proc, await asProcess(args));
        add(inner, await inProcess(args));
      } else {
        add(inner, await inProcess(args));
        add(proc, await asProcess(args));
      }
    }
    console.log(`${name.padEnd(44)} ${ms(proc.wall)} ${ms(proc.cpu)}   ${ms(inner.wall)} ${ms(inner.cpu)}  ${lines}`);
  }
  const baseline = { wall: [], cpu: [] };
  for (let r = 0; r < runs; r++) {
    const t = performance.now();
    const { stderr } = await exec(process.execPath, ["--import", cpuReporter, BIN, "--version"]);
    baseline.wall.push(performance.now() - t);
    baseline.cpu.push(Number(/cpu-us (\d+)/.exec(stderr)?.[1] ?? Number.NaN) / 1000);
  }
  console.log(`${"node start-up alone (pi-teams-hooks --version)".padEnd(44)} ${ms(baseline.wall)} ${ms(baseline.cpu)}`);
  console.log(`load average at end: ${os.loadavg().map((l) => l.toFixed(1)).join(", ")}`);
} finally {
  if (!keepDir) rmSync(root, { recursive: true, force: true });
}
