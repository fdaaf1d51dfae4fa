#!/usr/bin/env node
// The reference design the leader is measured against: poll the task folder every 700 ms, read and
// parse every task file, and spawn the hook (bash, one at a time) for each completion not seen before.
// It speaks the same NDJSON as `pi-teams-hooks watch --json` (a `watching` line once the first scan is
// done, an `event` line per hook run, keyed like the leader's events), so bench/latency.mjs drives both
// the same way. Reads are synchronous: the cheapest way to read every file (async reads of 10,000
// files cost several times more here), so the comparison favours the baseline.
// Usage: node bench/lib/poll-baseline.mjs <tasksDir> <hook.sh> [intervalMs]
import { spawn } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";

const [tasksDir, hook, intervalArg] = process.argv.slice(2);
const intervalMs = Number(intervalArg ?? 700);
const known = new Set();
let first = true;
let busy = false;

async function scan() {
  const fresh = [];
  for (const name of readdirSync(tasksDir)) {
    if (!name.endsWith(".json")) continue;
    let t;
    try {
      t = JSON.parse(readFileSync(path.join(tasksDir, name), "utf8"));
    } catch {
      continue; // gone or half-written: next poll
    }
    if (t.status !== "completed") continue;
    const key = `task_completed:${t.id}:${t.metadata?.completedAt ?? t.updatedAt}`;
    if (known.has(key)) continue;
    known.add(key);
    if (!first) fresh.push({ key, t });
  }
  for (const { key, t } of fresh) {
    const began = performance.now();
    const code = await new Promise((resolve) => {
      const child = spawn("bash", [hook], {
        stdio: ["ignore", "pipe", "pipe"],
        env: {
          ...process.env,
          PI_TEAMS_HOOK_EVENT: "task_completed",
          PI_TEAMS_TASK_ID: String(t.id),
          PI_TEAMS_EVENT_TIMESTAMP: t.metadata?.completedAt ?? t.updatedAt,
        },
      });
      child.stdout.resume();
      child.stderr.resume();
      child.on("error", () => resolve(-1));
      child.on("close", (c) => resolve(c));
    });
    const outcome = code === 0 ? "passed" : "failed";
    const line = { type: "event", key, taskId: String(t.id), outcome, durationMs: performance.now() - began };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  }
}

async function tick() {
  if (busy) return; // a slow scan skips ticks rather than piling up
  busy = true;
  try {
    await scan();
  } finally {
    busy = false;
    if (first) {
      first = false;
      process.stdout.write(`${JSON.stringify({ type: "watching" })}\n`);
    }
  }
}

const timer = setInterval(tick, intervalMs);
void tick();
for (const signal of ["SIGINT", "SIGTERM"])
  process.on(signal, () => {
    clearInterval(timer);
    process.exit(0);
  });
