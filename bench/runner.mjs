#!/usr/bin/env node
// Per-invocation cost of runHook next to a bare child_process.spawn of the same trivial hook, and of a
// sandboxed run (util-linux unshare: runner/sandbox.ts) next to an unsandboxed one.
// Both are measured in the same run, alternating which goes first, so machine noise hits both alike.
// Build first: `npm run build && node bench/runner.mjs [iterations]`.
import "./lib/help.mjs";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { runHook } from "../dist/teams-hooks/runner/run-hook.js";

const iterations = Number(process.argv[2] ?? 200);
const warmup = 10;
const dir = mkdtempSync(path.join(os.tmpdir(), "bench-runner-"));
const script = path.join(dir, "on_task_completed.sh");
writeFileSync(script, "exit 0\n", { mode: 0o755 });

const hook = { hookPath: script, command: "bash", args: [script] };
const gateBytes = Buffer.from("exit 0\n");
const invocation = {
  event: "task_completed",
  teamId: "bench",
  teamDir: dir,
  taskListId: "bench",
  style: "normal",
  memberName: "alice",
  timestamp: "2025-01-15T10:42:07.123Z",
  completedTask: {
    id: "3",
    subject: "Add retry with backoff to the uploader",
    description: "Uploads fail on transient 503s.",
    owner: "alice",
    status: "completed",
    blocks: [],
    blockedBy: ["1"],
    metadata: { result: "done", completedAt: "2025-01-15T10:42:07.123Z" },
    createdAt: "2025-01-15T09:00:00.000Z",
    updatedAt: "2025-01-15T10:42:07.123Z",
  },
};

async function viaRunHook(escapeeScan = "auto", sandbox = "off") {
  const t0 = performance.now();
  const result = await runHook(hook, invocation, {
    cwd: dir,
    timeoutMs: 60_000,
    escapeeScan,
    sandbox: { mode: sandbox },
    snapshot: { content: gateBytes, sha256: "" },
  });
  if (sandbox !== "off" && result.sandbox !== "on") throw new Error(`not sandboxed: ${result.sandbox}`);
  if (result.outcome !== "passed") throw new Error(`runHook: ${JSON.stringify(result)}`);
  return performance.now() - t0;
}

function viaSpawn() {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn("bash", [script], { cwd: dir });
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`exit ${code}`))));
  });
}

function stats(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { median: at(0.5), p95: at(0.95) };
}

const fmt = (ms) => `${ms.toFixed(2)} ms`;

// Each round runs every variant once, rotating which goes first.
const variants = [
  { name: "runHook (bash exit 0)", run: () => viaRunHook("auto"), samples: [] },
  { name: "bare spawn (bash exit 0)", run: viaSpawn, samples: [] },
  { name: "runHook, escapeeScan always", run: () => viaRunHook("always"), samples: [] },
  { name: "runHook, sandboxed", run: () => viaRunHook("auto", "required"), samples: [] },
];

try {
  for (let i = 0; i < warmup; i++) for (const v of variants) await v.run();
  for (let i = 0; i < iterations; i++) {
    for (let k = 0; k < variants.length; k++) {
      const v = variants[(i + k) % variants.length];
      v.samples.push(await v.run());
    }
  }
  const [ours, bare, always, sandboxed] = variants.map((v) => ({ ...v, ...stats(v.samples) }));
  console.log(
    `node ${process.version}, ${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(2)}; ${iterations} invocations each after ${warmup} warm-up, interleaved`,
  );
  for (const v of [ours, bare, always, sandboxed])
    console.log(`${v.name.padEnd(30)} median ${fmt(v.median).padStart(9)}   p95 ${fmt(v.p95).padStart(9)}`);
  console.log(
    `${"ratio runHook / bare spawn".padEnd(30)} median ${(ours.median / bare.median).toFixed(2)}×      p95 ${(ours.p95 / bare.p95).toFixed(2)}×`,
  );
  console.log(
    `${"ratio always-scan / spawn".padEnd(30)} median ${(always.median / bare.median).toFixed(2)}×      p95 ${(always.p95 / bare.p95).toFixed(2)}×`,
  );
  console.log(
    `${"sandboxed − unsandboxed".padEnd(30)} median ${fmt(sandboxed.median - ours.median).padStart(9)}   p95 ${fmt(sandboxed.p95 - ours.p95).padStart(9)}   (ratio ${(sandboxed.median / ours.median).toFixed(2)}×)`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
