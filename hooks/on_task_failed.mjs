#!/usr/bin/env node
// pi-teams-hooks: env=PI_TEAMS_FAILURE_JOURNAL sandbox-write=$PI_TEAMS_TEAM_DIR
// Runs when a worker gives a task back (pi-teams-hooks contract v1): appends one line to a failure
// journal so that someone can see which tasks keep failing and why. Never fails the event itself.
//
// The journal is $PI_TEAMS_FAILURE_JOURNAL, else <team dir>/failure-journal.log. One line per
// failure, tab-separated: time, task, member, reason, subject. The journal is never written through a
// symlink, and only ever to a regular file: the team dir is the agents' to write, and one of them can
// plant failure-journal.log as a symlink to the leader's ~/.profile, or as a FIFO that would block the
// write. Either is refused with one line on stderr naming the file, and the event still passes.
//
// With the hook helper `pi-teams-hooks/hook` (a gate the leader runs always gets the leader's own
// package; run by hand with node, where Node can resolve it from this file's folder), `runGate` reads
// and checks the context and turns a crash into one line (`gate crashed: TypeError: … (on_task_failed.mjs:<line>)`); `crash: "allow"` keeps that a note, never a
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

/** What a file that is not regular is, for the refusal's line. */
function kindOf(stat) {
  if (stat.isFIFO()) return "a FIFO";
  if (stat.isSocket()) return "a socket";
  if (stat.isDirectory()) return "a directory";
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return "a device";
  return "a special file";
}

/**
 * Appends `text` to `file`, creating it (0644) when missing. Returns null when written, else why not.
 * O_NOFOLLOW refuses a symlink as the last component (ELOOP); O_NONBLOCK makes a FIFO without a reader
 * fail at once (ENXIO, as a socket does) instead of blocking, and one with a reader open at once, to be
 * refused by fstat like anything else that is not a regular file; O_NOCTTY keeps a planted terminal
 * from becoming ours.
 */
function appendToJournal(file, text) {
  const { O_WRONLY, O_APPEND, O_CREAT, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = fs.constants;
  let fd;
  try {
    fd = fs.openSync(file, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0o644);
  } catch (error) {
    if (error?.code === "ELOOP") return "it is a symlink, and the journal is never written through one";
    if (error?.code !== "ENXIO" && error?.code !== "EISDIR") throw error;
    let kind = "no longer there";
    try {
      kind = kindOf(fs.lstatSync(file));
    } catch {
      // Gone since the open: the line still says that it was not a regular file.
    }
    return `it is not a regular file (${kind})`;
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) return `it is not a regular file (${kindOf(stat)})`;
    fs.writeSync(fd, text);
    return null;
  } finally {
    fs.closeSync(fd);
  }
}

/** Appends the failure of `ctx` to the journal and says so on stdout (or, refused, on stderr). */
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
  const refused = appendToJournal(journal, `${line}\n`);
  if (refused) {
    console.error(`on_task_failed: refused the failure journal ${journal}: ${refused}; nothing appended`);
    return;
  }
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
