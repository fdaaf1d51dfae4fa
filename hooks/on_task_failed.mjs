#!/usr/bin/env node
// Runs when a worker gives a task back (pi-teams-hooks contract v1): appends one line to a failure
// journal so that someone can see which tasks keep failing and why. Never fails the event itself.
//
// The journal is $PI_TEAMS_FAILURE_JOURNAL, else <team dir>/failure-journal.log.
import fs from "node:fs";
import path from "node:path";

function readContext() {
  // The complete document arrives on stdin and in a file; the environment copy may be shortened.
  for (const read of [() => fs.readFileSync(0, "utf8"), () => fs.readFileSync(process.env.PI_TEAMS_HOOK_CONTEXT_FILE ?? "", "utf8")]) {
    try {
      const text = read();
      if (text.trim()) return JSON.parse(text);
    } catch {
      // try the next channel
    }
  }
  return JSON.parse(process.env.PI_TEAMS_HOOK_CONTEXT_JSON ?? "{}");
}

const ctx = readContext();
if (ctx.version !== 1) {
  console.error(`on_task_failed: contract version ${ctx.version} is not one this hook knows (1)`);
  process.exit(0);
}
const task = ctx.task ?? {};
const reason = String(task.metadata?.abortReason ?? "no reason given").replace(/\s+/g, " ").slice(0, 200);
const line = `${ctx.timestamp ?? new Date().toISOString()}\ttask #${task.id ?? "?"}\t${ctx.member ?? "unknown"}\t${reason}\t${task.subject ?? ""}\n`;
const journal = process.env.PI_TEAMS_FAILURE_JOURNAL || path.join(ctx.team.dir, "failure-journal.log");
fs.appendFileSync(journal, line);
console.log(`journal: task #${task.id ?? "?"} failed (${reason}) → ${journal}`);
