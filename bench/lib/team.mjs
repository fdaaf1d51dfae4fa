// Temporary team directories as a worker would leave them: config.json, one pretty-printed JSON file
// per task, and writes that go to `<file>.tmp.<pid>.<ms>` and are renamed over the task
// (docs/decisions/team-dir-facts.md, "The lock protocol").
import { chmodSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

export const TASK_LIST = "bench";

const DESCRIPTION =
  "Uploads fail on transient 503s from the storage API. Add a retry with exponential backoff and jitter (base 200 ms, cap 5 s, at most 6 attempts), make it configurable, log each retry at debug level, and cover it with a test that stubs the client. Keep the public API unchanged.";

export function makeTempRoot(prefix) {
  return mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Creates `<root>/<name>` with config.json and an empty task list folder; returns its paths. */
export function makeTeam(root, name) {
  const teamDir = path.join(root, name);
  const tasksDir = path.join(teamDir, "tasks", TASK_LIST);
  mkdirSync(tasksDir, { recursive: true });
  const now = new Date().toISOString();
  writeJson(path.join(teamDir, "config.json"), {
    version: 1,
    teamId: name,
    taskListId: TASK_LIST,
    leadName: "team-lead",
    style: "normal",
    createdAt: now,
    updatedAt: now,
    members: [{ name: "alice" }, { name: "bob" }],
  });
  return { teamDir, tasksDir, taskFile: (id) => path.join(tasksDir, `${id}.json`) };
}

/** A task as pi-agent-teams writes it; `completedAt` makes it a completed one. */
export function task(id, { completedAt, owner = id % 2 ? "alice" : "bob" } = {}) {
  const created = "2025-01-15T09:00:00.000Z";
  return {
    id: String(id),
    subject: `Add retry with backoff to uploader #${id}`,
    description: DESCRIPTION,
    owner,
    status: completedAt ? "completed" : "pending",
    blocks: [],
    blockedBy: id > 1 ? [String(id - 1)] : [],
    metadata: completedAt ? { result: "Retries added; tests pass (14 new).", completedAt } : {},
    createdAt: created,
    updatedAt: completedAt ?? created,
  };
}

export function taskText(value) {
  return `${JSON.stringify(value, null, 2)}\n`;
}

function writeJson(file, value) {
  writeFileSync(file, taskText(value));
}

/** Fills the list with `count` tasks; the first `completed` of them carry an old completion. */
export function fillTasks(team, count, { completed = 0 } = {}) {
  for (let id = 1; id <= count; id++) {
    const completedAt = id <= completed ? new Date(Date.UTC(2025, 0, 15, 10, 0, 0, id)).toISOString() : undefined;
    writeJson(team.taskFile(id), task(id, { completedAt }));
  }
}

let tmpSeq = 0;
/** Writes the temp file now; call the returned function to rename it over the task (the "commit"). */
export function stageTaskWrite(team, value) {
  const file = team.taskFile(value.id);
  const tmp = `${file}.tmp.${process.pid}.${Date.now()}${++tmpSeq}`;
  writeFileSync(tmp, taskText(value));
  return () => renameSync(tmp, file);
}

/**
 * A hooks dir whose on_task_completed.sh first stamps the wall clock and the event's timestamp: into
 * `$BENCH_STAMPS`, or, in the sandbox (which gives a gate none of the leader's variables it does not
 * declare, and a build older than the sandbox would refuse the setting), into `bench-stamps.txt` in its
 * working directory (the leader's: see stampsIn).
 */
export function makeStampHook(root) {
  const hooksDir = path.join(root, "hooks");
  mkdirSync(hooksDir, { recursive: true });
  const hook = path.join(hooksDir, "on_task_completed.sh");
  // First action: one builtin printf, appended with O_APPEND (atomic for a short line), no fork.
  writeFileSync(
    hook,
    `#!/usr/bin/env bash\nprintf '%s %s\\n' "$EPOCHREALTIME" "$PI_TEAMS_EVENT_TIMESTAMP" >> "\${BENCH_STAMPS:-bench-stamps.txt}"\n`,
  );
  chmodSync(hook, 0o755);
  return { hooksDir, hook };
}

export function removeQuietly(dir) {
  rmSync(dir, { recursive: true, force: true });
}

/**
 * The stamps a watcher's gates wrote for `stampsFile`: the file itself (`$BENCH_STAMPS`), and the one a
 * sandboxed gate wrote in its working directory, `<stampsFile>.d/` (start the watcher there: stampsCwd).
 */
export function stampsFiles(stampsFile) {
  return [stampsFile, path.join(stampsCwd(stampsFile), "bench-stamps.txt")];
}

/** The working directory to start a watcher in whose gates stamp into `stampsFile` (made here). */
export function stampsCwd(stampsFile) {
  const dir = `${stampsFile}.d`;
  mkdirSync(dir, { recursive: true });
  return dir;
}
