/**
 * Files that are not regular files — a FIFO, a socket, a device, a directory — or that are far too
 * large, at a path where the leader or the CLI reads what agents and hooks write: each reader refuses
 * them unread, saying what they are, without blocking (a FIFO with no writer) and without reading
 * without end (/dev/zero). Real FIFOs (mkfifo), real sockets (a listening server), real devices.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fileTempDir } from "../helpers/temp-team.js";
import { isHooksError } from "../../extensions/teams-hooks/contract/errors.js";
import { readHookLog, writeHookLog } from "../../extensions/teams-hooks/logs/hook-log.js";
import { readJsonValue, readRegularFile } from "../../extensions/teams-hooks/team/json-file.js";
import { acquireLeaderLock } from "../../extensions/teams-hooks/team/leader-lock.js";
import { Ledger, ledgerFile } from "../../extensions/teams-hooks/leader/ledger.js";
import { inspectLock } from "../../extensions/teams-hooks/team/lock.js";
import { queryLogs } from "../../extensions/teams-hooks/logs/query.js";
import type { HookLogProblem } from "../../extensions/teams-hooks/logs/hook-log.js";
import { TeamSources } from "../../extensions/teams-hooks/leader/sources.js";
import { readHighWatermark } from "../../extensions/teams-hooks/team/tasks.js";
import { makeInvocation, makeRunResult } from "../helpers/invocation.js";
import { taskJson } from "../helpers/leader-rig.js";

const root = fileTempDir("special-files-");

const servers: net.Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

function dir(): string {
  return mkdtempSync(path.join(root, "d-"));
}

function mkfifo(file: string): string {
  execFileSync("mkfifo", [file]);
  return file;
}

/** A Unix socket file at `file`, listened on until the test ends (opening one gives ENXIO). */
async function socketAt(file: string): Promise<string> {
  const server = net.createServer();
  servers.push(server);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(file, resolve);
  });
  return file;
}

describe("readRegularFile", () => {
  const makers: Array<[string, (file: string) => string | Promise<string>, string]> = [
    ["a FIFO", mkfifo, "fifo"],
    ["a socket", socketAt, "socket"],
    [
      "a symlink to /dev/zero",
      (file) => {
        symlinkSync("/dev/zero", file);
        return file;
      },
      "character device",
    ],
    [
      "a directory",
      (file) => {
        mkdirSync(file);
        return file;
      },
      "directory",
    ],
  ];

  it.each(makers)("refuses %s unread, naming what it is", async (_name, make, kind) => {
    const file = await make(path.join(dir(), "x.json"));
    const read = readRegularFile(file, { maxBytes: 1024 });
    expect(read).toMatchObject({
      ok: false,
      problem: { kind: "not_regular", file, message: `${file}: not a regular file (${kind})` },
    });
    // readJsonValue (tasks, inboxes, config.json) goes through it.
    expect(await readJsonValue(file)).toMatchObject({
      ok: false,
      problem: { kind: "not_regular", message: `${file}: not a regular file (${kind})` },
    });
  });

  it("reads a regular file whole, up to its cap; one byte more is too large", () => {
    const file = path.join(dir(), "x.json");
    writeFileSync(file, "é".repeat(512)); // 1,024 bytes
    expect(readRegularFile(file, { maxBytes: 1024 })).toMatchObject({ ok: true, text: "é".repeat(512) });
    const over = readRegularFile(file, { maxBytes: 1023 });
    expect(over).toMatchObject({ ok: false, problem: { kind: "too_large", file } });
    if (!over.ok)
      expect(over.problem.message).toBe(`${file}: too large (1024 bytes, over the limit of 1023 bytes for this file)`);
  });

  it("a missing file is missing", () => {
    const file = path.join(dir(), "none.json");
    expect(readRegularFile(file, { maxBytes: 10 })).toMatchObject({ ok: false, problem: { kind: "missing", file } });
  });
});

describe("the leader's task sources", () => {
  function sources(): { sources: TeamSources; file: (id: string) => string; inbox: string } {
    const teamDir = dir();
    const tasks = path.join(teamDir, "tasks", "t");
    mkdirSync(tasks, { recursive: true });
    mkdirSync(path.join(teamDir, "mailboxes", "team", "inboxes"), { recursive: true });
    const s = new TeamSources({ teamId: "t", teamDir, taskListId: "t", leadName: "lead", style: "normal" });
    return { sources: s, file: (id) => path.join(tasks, `${id}.json`), inbox: s.inboxFile };
  }

  it.each([
    ["a FIFO", mkfifo, "fifo"],
    ["a socket", socketAt, "socket"],
  ] as const)(
    "a task file that is %s is reported once per version of it, then read once it is a task",
    async (_name, make, kind) => {
      const { sources: s, file } = sources();
      await make(file("300"));
      expect(s.lookAtTask(file("300"))).toEqual({
        kind: "problem",
        message: `${file("300")}: not a regular file (${kind}) — skipped until it changes`,
        fresh: true,
      });
      expect(s.lookAtTask(file("300"))).toEqual({ kind: "unchanged" });
      expect(s.changedSinceLook(file("300"))).toBe(false); // the reconcile scan does not look again
      rmSync(file("300"));
      writeFileSync(file("300"), taskJson({ id: "300" }));
      expect(s.lookAtTask(file("300"))).toMatchObject({ kind: "task", task: { id: "300" } });
    },
  );

  it("a task file over 64 MiB is refused from its size, unread", () => {
    const { sources: s, file } = sources();
    writeFileSync(file("9"), "");
    execFileSync("truncate", ["-s", String(64 * 1024 * 1024 + 1), file("9")]); // sparse: no 64 MiB written
    expect(s.lookAtTask(file("9"))).toEqual({
      kind: "problem",
      message: `${file("9")}: too large (${64 * 1024 * 1024 + 1} bytes, over the limit of 64 MiB for this file) — skipped until it changes`,
      fresh: true,
    });
    expect(s.lookAtTask(file("9"))).toEqual({ kind: "unchanged" });
  });

  it("an idle notification's task that is a FIFO is read as no task (the notification alone describes it)", async () => {
    const { sources: s, file } = sources();
    mkfifo(file("5"));
    expect(await s.readTaskById("5")).toBeNull();
  });

  it("a FIFO as the leader's inbox is one problem, said again only when it changes", async () => {
    const { sources: s, inbox } = sources();
    mkfifo(inbox);
    expect(await s.lookAtInbox({ force: true, unreadOnly: false })).toEqual({
      events: [],
      problems: [`${inbox}: not a regular file (fifo) — skipped until it changes`],
      unmatched: [],
    });
    expect(await s.lookAtInbox({ force: false, unreadOnly: false })).toEqual({
      events: [],
      problems: [],
      unmatched: [],
    });
  });
});

describe("other readers of files agents and hooks write", () => {
  it("a FIFO as a lock file reads as a lock with no readable pid, at once", async () => {
    const d = dir();
    const file = path.join(d, "1.json");
    mkfifo(`${file}.lock`);
    expect(await inspectLock(file)).toMatchObject({
      held: true,
      holder: { pid: null },
      holderAlive: null,
      stale: false,
    });
  });

  it("a FIFO as the leader lock, left by a leader long gone, is taken over", async () => {
    const teamDir = dir();
    const lockFile = path.join(teamDir, "hook-state", "leader.lock");
    mkdirSync(path.dirname(lockFile), { recursive: true });
    mkfifo(lockFile);
    utimesSync(lockFile, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    const lock = await acquireLeaderLock(teamDir);
    expect(lock.file).toBe(lockFile);
    await lock.release();
  });

  it("a FIFO as the high watermark is no watermark (0)", async () => {
    const file = mkfifo(path.join(dir(), ".highwatermark"));
    expect(await readHighWatermark(file)).toBe(0);
  });

  it("a FIFO as the ledger stops the leader's start with an error naming it and what to do", async () => {
    const teamDir = dir();
    mkdirSync(path.dirname(ledgerFile(teamDir)), { recursive: true });
    mkfifo(ledgerFile(teamDir));
    const error = await Ledger.open(teamDir).then(
      () => null,
      (e: unknown) => e,
    );
    expect(isHooksError(error) && error.code).toBe("E_LEDGER");
    expect(error instanceof Error && error.message).toContain(
      `${ledgerFile(teamDir)}: not a regular file (fifo); move it aside`,
    );
  });

  it.each([
    ["a FIFO", (target: string) => mkfifo(target), "fifo"],
    ["/dev/zero", () => "/dev/zero", "character device"],
  ] as const)(
    "a hook log that is a symlink to %s is one problem for `logs`, and the other logs are listed",
    async (_name, target, kind) => {
      const teamDir = dir();
      const logs = path.join(teamDir, "hook-logs");
      mkdirSync(logs, { recursive: true });
      const link = path.join(logs, "2026-03-01T00-00-00-000Z_task_completed_task-9.json");
      symlinkSync(target(path.join(teamDir, "fifo")), link);
      const good = await writeHookLog(teamDir, {
        invocation: makeInvocation({ teamDir }),
        result: makeRunResult({ runId: "r1" }),
        startedAt: "2026-03-01T00:01:00.000Z",
      });
      expect(await readHookLog(link)).toMatchObject({
        ok: false,
        problem: { kind: "not_regular", message: `${link}: not a regular file (${kind}) — log skipped` },
      });
      const problems: HookLogProblem[] = [];
      const { rows, total } = await queryLogs(teamDir, { filter: {}, onProblem: (p) => problems.push(p) });
      expect({ files: rows.map((r) => r.file), total }).toEqual({ files: [good], total: 2 });
      expect(problems.map((p) => p.message)).toEqual([`${link}: not a regular file (${kind}) — log skipped`]);
    },
  );
});
