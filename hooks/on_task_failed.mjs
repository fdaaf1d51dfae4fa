#!/usr/bin/env node
// Runs when a worker gives a task back (pi-teams-hooks contract v1): appends one line to a failure
// journal so that someone can see which tasks keep failing and why. Never fails the event itself.
//
// The journal is $PI_TEAMS_FAILURE_JOURNAL, else <team dir>/failure-journal.log. One line per
// failure, tab-separated: time, task, member, reason, subject.
//
// With the hook helper `pi-teams-hooks/hook` (when Node can resolve it from this file's folder: inside
// the pi-teams-hooks package itself, or with the package installed in a node_modules above the hooks
// dir; `npm install pi-teams-hooks` in the teams root puts it in <teams root>/node_modules, which
// <teams root>/_hooks sees), `runGate` reads and checks the context and turns a crash into one line
// (`gate crashed: TypeError: … (on_task_failed.mjs:<line>)`); `crash: "allow"` keeps that a note, never a
// failure. Elsewhere a small reader below does the same job: standard input, else
// $PI_TEAMS_HOOK_CONTEXT_FILE, else $PI_TEAMS_HOOK_CONTEXT_JSON.
//
// Try it:  pi-teams-hooks run task_failed --team-dir <team dir> --task <id> --hooks-dir hooks
import fs from "node:fs";
import path from "node:path";

async function loadHelper() {
  try {
    return await import("pi-teams-hooks/hook");
  } catch (error) {
    // Not installed where this file can see it (or an old version without ./hook): use the fallback.
    if (error?.code === "ERR_MODULE_NOT_FOUND" || error?.code === "ERR_PACKAGE_PATH_NOT_EXPORTED") return null;
    throw error;
  }
}

/** The fallback reader: the same channels in the same order, without validation. */
function readContextByHand() {
  const channels = [
    () => (process.stdin.isTTY ? "" : fs.readFileSync(0, "utf8")),
    () =>
      process.env.PI_TEAMS_HOOK_CONTEXT_FILE ? fs.readFileSync(process.env.PI_TEAMS_HOOK_CONTEXT_FILE, "utf8") : "",
    () => process.env.PI_TEAMS_HOOK_CONTEXT_JSON ?? "",
  ];
  for (const [index, read] of channels.entries()) {
    let text = "";
    try {
      text = read();
    } catch {
      continue; // EAGAIN on a non-blocking stdin, or the context file is gone: try the next channel
    }
    if (text.trim()) return { context: JSON.parse(text), channel: ["stdin", "file", "env"][index] };
  }
  throw new Error("no hook context: run this through pi-teams-hooks");
}

/** Appends the failure of `ctx` to the journal and says so on stdout. */
function journal(ctx, channel) {
  const task = ctx.task ?? {};
  const oneLine = (value) => String(value).replace(/\s+/g, " ").trim();
  // The worker's own words when the failure came with its idle notification, else what the task says.
  const reason = oneLine(ctx.notification?.failureReason ?? task.metadata?.abortReason ?? "no reason given").slice(
    0,
    200,
  );
  const line = [
    ctx.timestamp ?? new Date().toISOString(),
    `task #${task.id ?? "?"}`,
    ctx.member ?? "unknown",
    reason,
    oneLine(task.subject ?? ""),
  ].join("\t");
  const journal = process.env.PI_TEAMS_FAILURE_JOURNAL || path.join(ctx.team.dir, "failure-journal.log");
  fs.appendFileSync(journal, `${line}\n`);
  console.log(`journal: task #${task.id ?? "?"} failed (${reason}) → ${journal} [context from ${channel}]`);
}

const helper = await loadHelper();
if (helper) {
  // An unknown contract version, a broken document or a crash: one line on stderr, and the event passes.
  await helper.runGate((context, read) => journal(context, `${read.channel} via pi-teams-hooks/hook`), {
    crash: "allow",
  });
}
let read;
try {
  read = readContextByHand();
} catch (error) {
  // A broken document: say so loudly, but never fail a failure hook.
  console.error(`on_task_failed: ${error.message}`);
  process.exit(0);
}
if (read.context.version !== 1) {
  console.error(`on_task_failed: contract version ${read.context.version} is not one this hook knows (1)`);
  process.exit(0);
}
journal(read.context, read.channel);
