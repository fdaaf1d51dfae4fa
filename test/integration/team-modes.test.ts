/**
 * The modes of what this project writes in the team's shared folders (tasks, mailboxes): in a
 * group-writable folder, files and folders stay group-writable whatever the umask, so that a leader
 * under its own Unix user leaves them writable by the agents' group (docs/security.md, "A leader
 * under its own user"); elsewhere they keep the umask's bits, as before. Real files, real modes.
 */
import { chmod, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { appendMessage, markRead } from "../../extensions/teams-hooks/team/mailbox.js";
import { createTask, updateTask } from "../../extensions/teams-hooks/team/tasks.js";
import { highWatermarkFile, inboxFile, taskFile, tasksDir } from "../../extensions/teams-hooks/team/paths.js";
import { watchDirs } from "../../extensions/teams-hooks/team/file-hints.js";
import { makeMessage, makeTask, type TempTeam, tempTeams } from "../helpers/temp-team.js";

const tempTeam = tempTeams();

/** A team whose dir has `mode` and no tasks/ or mailboxes/ yet: everything below is ours to create. */
async function team(mode: number): Promise<TempTeam> {
  const made = await tempTeam();
  await rm(path.join(made.teamDir, "tasks"), { recursive: true });
  await chmod(made.teamDir, mode);
  return made;
}

const modeOf = async (file: string): Promise<number> => (await stat(file)).mode & 0o7777;

/** The bits a file created here gets from this process's umask (without asking process.umask()). */
async function umaskedFileMode(): Promise<number> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "umask-"));
  try {
    await writeFile(path.join(dir, "f"), "");
    return await modeOf(path.join(dir, "f"));
  } finally {
    await rm(dir, { recursive: true });
  }
}

async function writeEverything(t: TempTeam): Promise<{ files: string[]; folders: string[] }> {
  const now = "2025-01-01T00:00:00.000Z";
  const { task } = await createTask(t.teamDir, t.taskListId, (id) => makeTask({ id, createdAt: now, updatedAt: now }));
  const updated = await updateTask(t.teamDir, t.taskListId, task.id, (current) => ({ ...current, owner: "bob" }));
  expect(updated).toMatchObject({ ok: true, written: true });
  expect(await appendMessage(t.teamDir, t.taskListId, "bob", makeMessage())).toMatchObject({ ok: true });
  expect(await markRead(t.teamDir, t.taskListId, "bob", () => true)).toMatchObject({ ok: true, marked: 1 });
  const inbox = inboxFile(t.teamDir, t.taskListId, "bob");
  return {
    files: [taskFile(t.teamDir, t.taskListId, task.id), highWatermarkFile(t.teamDir, t.taskListId), inbox],
    folders: [
      path.dirname(tasksDir(t.teamDir, t.taskListId)),
      tasksDir(t.teamDir, t.taskListId),
      path.join(t.teamDir, "mailboxes"),
      path.dirname(path.dirname(inbox)),
      path.dirname(inbox),
    ],
  };
}

describe("what the leader writes in the team's shared folders", () => {
  it("stays group-writable in a group-writable setgid team dir: tasks, watermark, inboxes, folders", async () => {
    const t = await team(0o2775);
    const { files, folders } = await writeEverything(t);
    for (const file of files) expect({ file, group: (await modeOf(file)) & 0o060 }).toEqual({ file, group: 0o060 });
    // The kernel gives new folders the setgid bit of a setgid parent; the group bits are ours.
    for (const folder of folders) expect({ folder, mode: await modeOf(folder) }).toEqual({ folder, mode: 0o2775 });
  });

  it("a folder the leader watches before it exists (task list, the lead's inbox folder) is made so too", async () => {
    const t = await team(0o2775);
    const inboxes = path.dirname(inboxFile(t.teamDir, "team", t.leadName));
    const watched = [tasksDir(t.teamDir, t.taskListId), inboxes];
    const watcher = await watchDirs(
      watched.map((dir) => ({ dir, shared: true, accept: () => false, onHint: () => undefined })),
      { poll: false, pollIntervalMs: 100, onError: (message) => expect.fail(message) },
    );
    await watcher.close();
    for (const folder of [...watched, path.dirname(watched[0] ?? ""), path.dirname(inboxes)]) {
      expect({ folder, mode: await modeOf(folder) }).toEqual({ folder, mode: 0o2775 });
    }
  });

  it("keeps the umask's bits where the team dir is not group-writable (a team of one user)", async () => {
    const t = await team(0o755);
    const { files, folders } = await writeEverything(t);
    const fileMode = await umaskedFileMode();
    for (const file of files) expect({ file, mode: await modeOf(file) }).toEqual({ file, mode: fileMode });
    const folderMode = fileMode | ((fileMode & 0o444) >> 2); // the umask's bits on 0777
    for (const folder of folders) expect({ folder, mode: await modeOf(folder) }).toEqual({ folder, mode: folderMode });
  });
});
