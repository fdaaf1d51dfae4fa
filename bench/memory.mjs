#!/usr/bin/env node
// The leader's peak memory under tasks of tens of megabytes: five task files with a description of
// `--mb` MB each (default 60) are completed while the leader runs, and a failing gate reopens each
// one (the policy rewrites every file, a note at the head of its description). The baseline, measured
// in the same run, is the same leader on the same five tasks with a one-line description. Prints the
// peak resident size (VmHWM) of each, their ratio, and checks that every description came back whole.
// Build first: `npm run build && node bench/memory.mjs [--mb 60] [--rounds 3]`.
import "./lib/help.mjs";
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { memoryOf, startNdjson } from "./lib/proc.mjs";
import { arg, sleep, table } from "./lib/stats.mjs";
import { makeTeam, makeTempRoot, task, taskText } from "./lib/team.mjs";

const MB = Number(arg("mb", "60"));
const ROUNDS = Number(arg("rounds", "3"));
const TASKS = 5;
const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../dist/teams-hooks/bin.js");

async function peakOf(descriptionBytes) {
  const root = makeTempRoot("bench-memory-");
  try {
    const team = makeTeam(root, "memory");
    const config = JSON.parse(readFileSync(path.join(team.teamDir, "config.json"), "utf8"));
    config.hooks = { failureAction: "reopen" };
    writeFileSync(path.join(team.teamDir, "config.json"), `${JSON.stringify(config, null, 2)}\n`);
    const hooks = path.join(team.teamDir, "hooks");
    mkdirSync(hooks);
    writeFileSync(path.join(hooks, "on_task_completed.sh"), "#!/bin/sh\necho 'tests fail' >&2\nexit 1\n");
    chmodSync(path.join(hooks, "on_task_completed.sh"), 0o755);
    const description = descriptionBytes > 0 ? "x".repeat(descriptionBytes) : "Add a retry.";
    for (let id = 1; id <= TASKS; id++)
      writeFileSync(team.taskFile(id), taskText({ ...task(id), blockedBy: [], status: "in_progress", description }));
    const home = path.join(root, "home");
    mkdirSync(home);
    const env = { ...process.env, HOME: home, XDG_STATE_HOME: path.join(home, "state"), NO_COLOR: "1" };
    const leader = startNdjson([BIN, "watch", "--team-dir", team.teamDir, "--json"], { env, cwd: team.teamDir });
    await leader.waitFor((l) => l.type === "ready", 60_000, "ready");
    for (let id = 1; id <= TASKS; id++) {
      const completedAt = new Date().toISOString();
      const next = { ...task(id, { completedAt }), blockedBy: [], description };
      writeFileSync(`${team.taskFile(id)}.tmp`, taskText(next));
      renameSync(`${team.taskFile(id)}.tmp`, team.taskFile(id));
      await sleep(200);
    }
    const deadline = Date.now() + 120_000;
    let reopened = 0;
    while (Date.now() < deadline) {
      reopened = 0;
      for (let id = 1; id <= TASKS; id++) {
        const text = readFileSync(team.taskFile(id), "utf8");
        if (text.includes('"reopenedByQualityGateCount"')) reopened++;
      }
      if (reopened === TASKS) break;
      await sleep(250);
    }
    const { hwmMB } = memoryOf(leader.child.pid);
    leader.child.kill("SIGTERM");
    await leader.exited;
    let whole = 0;
    for (let id = 1; id <= TASKS; id++) {
      const back = JSON.parse(readFileSync(team.taskFile(id), "utf8"));
      if (back.description.endsWith(description) && back.description.includes("quality gate")) whole++;
    }
    return { hwmMB, reopened, whole };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const rows = [
  ["run", `peak RSS, ${TASKS} × ${MB} MB (MB)`, "peak RSS, small tasks (MB)", "ratio", "reopened", "whole"],
];
for (let round = 1; round <= ROUNDS; round++) {
  const small = await peakOf(0);
  const large = await peakOf(MB * 1_000_000);
  rows.push([
    round,
    large.hwmMB.toFixed(0),
    small.hwmMB.toFixed(0),
    (large.hwmMB / small.hwmMB).toFixed(2),
    `${large.reopened}/${TASKS}`,
    `${large.whole}/${TASKS}`,
  ]);
  if (large.whole !== TASKS || large.reopened !== TASKS) process.exitCode = 1;
}
console.log(table(rows));
