/**
 * Real team directories for tests: `makeTempTeam()` builds `<tmp>/teams-XXXX/<teamId>/` from object
 * literals (the layout of docs/architecture.md, "What the leader reads and writes"), `cleanup()` removes the whole
 * teams root. Nothing is mocked: the files are written the way a team runtime writes them (pretty JSON + newline).
 *
 *   const team = await makeTempTeam({ tasks: [makeTask({ id: "1", status: "completed" })] });
 *   try { … team.taskFile("1") … } finally { await team.cleanup(); }
 *
 * Malformed content: pass a string wherever JSON is accepted (`config: "{not json"`, a task entry
 * `{ id: "3", raw: "[]" }`, `inbox: "oops"`), or write anything with `files`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { MailboxMessage, Task } from "../../extensions/teams-hooks/contract/team-files.js";
import {
  configFile,
  highWatermarkFile,
  inboxFile,
  taskFile,
  tasksDir,
} from "../../extensions/teams-hooks/team/paths.js";
import { afterAll, afterEach } from "vitest";

/** A task file to write: any object (written as JSON to `<id>.json`), or `{ id, raw }` for exact file content. */
export type TaskSeed = Record<string, unknown> | { id: string; raw: string };

/** An inbox to write; `messages` is written as JSON, or as is when it is a string. */
export interface InboxSeed {
  /** Default `"team"` (the leader's inbox). */
  namespace?: string;
  /** Default: the team's lead name. */
  member?: string;
  messages: unknown[] | string;
}

export interface TempTeamOptions {
  /** Default `"test-team"`. The teams root is always a fresh temp dir, so ids never collide. */
  teamId?: string;
  /** Written to config.json (a string is written as is). Absent: no config.json, so the defaults apply. */
  config?: Record<string, unknown> | string;
  /** Task files, written to `tasks/<taskListId>/<id>.json`; an entry without an id gets its 1-based position. */
  tasks?: TaskSeed[];
  /** Content of `.highwatermark` (written as `<n>\n`). */
  highWatermark?: number;
  /** Shorthand for one inbox: the leader's, in the `team` namespace. */
  inbox?: unknown[] | string;
  inboxes?: InboxSeed[];
  /** Extra files, relative to the team dir. */
  files?: Record<string, string>;
}

export interface TempTeam {
  /** The teams root (`PI_TEAMS_ROOT_DIR`): the parent of the team dir, where `_hooks/` goes. */
  teamsRoot: string;
  teamDir: string;
  teamId: string;
  taskListId: string;
  leadName: string;
  tasksDir: string;
  taskFile(id: string): string;
  inboxFile(namespace: string, member: string): string;
  /** Removes the teams root and everything in it. Safe to call twice. */
  cleanup(): Promise<void>;
}

const FIXED_TIME = "2025-01-01T00:00:00.000Z";

/** A valid task object; `partial` overrides any field and may add unknown ones. */
export function makeTask(partial: Partial<Task> & Record<string, unknown> = {}): Task {
  const id = partial.id ?? "1";
  return {
    id,
    subject: `Task ${id}`,
    description: `Description of task ${id}`,
    status: "pending",
    blocks: [],
    blockedBy: [],
    createdAt: FIXED_TIME,
    updatedAt: FIXED_TIME,
    ...partial,
  };
}

/** A valid mailbox message (`read: false`), for inbox seeds and appends. */
export function makeMessage(partial: Partial<MailboxMessage> & Record<string, unknown> = {}): MailboxMessage {
  return { from: "worker-1", text: "hello", timestamp: FIXED_TIME, read: false, ...partial };
}

/** Builds a team dir under a fresh temp teams root. */
export async function makeTempTeam(options: TempTeamOptions = {}): Promise<TempTeam> {
  const teamsRoot = await mkdtemp(path.join(os.tmpdir(), "teams-"));
  const teamId = options.teamId ?? "test-team";
  const teamDir = path.join(teamsRoot, teamId);
  const config = typeof options.config === "object" ? options.config : undefined;
  const taskListId = stringOr(config?.taskListId, stringOr(config?.teamId, teamId));
  const leadName = stringOr(config?.leadName, "team-lead");
  await mkdir(tasksDir(teamDir, taskListId), { recursive: true });

  if (options.config !== undefined) await writeText(configFile(teamDir), asText(options.config));
  for (const [position, seed] of (options.tasks ?? []).entries()) {
    const id = typeof seed.id === "string" || typeof seed.id === "number" ? String(seed.id) : String(position + 1);
    const content = "raw" in seed && typeof seed.raw === "string" ? seed.raw : asText(seed);
    await writeText(taskFile(teamDir, taskListId, id), content);
  }
  if (options.highWatermark !== undefined)
    await writeText(highWatermarkFile(teamDir, taskListId), `${options.highWatermark}\n`);
  const inboxes = [...(options.inboxes ?? []), ...(options.inbox === undefined ? [] : [{ messages: options.inbox }])];
  for (const seed of inboxes) {
    const file = inboxFile(teamDir, seed.namespace ?? "team", seed.member ?? leadName);
    await writeText(file, asText(seed.messages));
  }
  for (const [relative, content] of Object.entries(options.files ?? {})) {
    await writeText(path.join(teamDir, relative), content);
  }

  return {
    teamsRoot,
    teamDir,
    teamId,
    taskListId,
    leadName,
    tasksDir: tasksDir(teamDir, taskListId),
    taskFile: (id) => taskFile(teamDir, taskListId, id),
    inboxFile: (namespace, member) => inboxFile(teamDir, namespace, member),
    cleanup: () => rm(teamsRoot, { recursive: true, force: true }),
  };
}

/**
 * A maker of temp teams for the tests of one file: each team it makes is removed after the test that
 * made it (vitest's `afterEach`, registered where this is called). `defaults` lie under each call's options.
 *
 *   const team = tempTeams({ teamId: "alpha" });
 *   it("…", async () => { const t = await team({ tasks: […] }); … });
 */
export function tempTeams(defaults: TempTeamOptions = {}): (options?: TempTeamOptions) => Promise<TempTeam> {
  const made: TempTeam[] = [];
  afterEach(async () => {
    await Promise.all(made.splice(0).map((team) => team.cleanup()));
  });
  return async (options = {}) => {
    const team = await makeTempTeam({ ...defaults, ...options });
    made.push(team);
    return team;
  };
}

/** A maker of fresh temp dirs, each removed after the test that made it; `removeAfter` adds any other dir. */
export interface TempDirs {
  (): Promise<string>;
  /** Removes `dir` too after the current test (a dir a helper made elsewhere). */
  removeAfter(dir: string): void;
}

/**
 * Fresh temp dirs (`<parent>/<prefix>XXXX`, 0700 as mkdtemp makes them) for the tests of one file: each is removed
 * after the test that made it (vitest's `afterEach`, registered where this is called), made searchable again first
 * in case a test left it unsearchable.
 *
 *   const tempDir = tempDirs("teams-hooks-chain-");
 *   it("…", async () => { const dir = await tempDir(); … });
 */
export function tempDirs(prefix: string, parent: () => string | Promise<string> = os.tmpdir): TempDirs {
  const made: string[] = [];
  afterEach(async () => {
    for (const dir of made.splice(0)) {
      await chmod(dir, 0o700).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    }
  });
  const make = async (): Promise<string> => {
    const dir = await mkdtemp(path.join(await parent(), prefix));
    made.push(dir);
    return dir;
  };
  return Object.assign(make, { removeAfter: (dir: string) => void made.push(dir) });
}

/** A fresh temp dir for the running test alone, removed when it finishes (also in a `describe.concurrent`). */
export async function testTempDir(
  context: { onTestFinished(fn: () => Promise<void>): void },
  prefix: string,
): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  context.onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** One temp dir for the whole test file, made now (module load) and removed after its last test. */
export function fileTempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The lines the tests' gates append to `<team dir>/<file>` (`runs.txt`), one per run, in order; none before the first. */
export async function runs(team: Pick<TempTeam, "teamDir">, file = "runs.txt"): Promise<string[]> {
  const text = await readFile(path.join(team.teamDir, file), "utf8").catch(() => "");
  return text.split("\n").filter((line) => line !== "");
}

function asText(value: unknown): string {
  return typeof value === "string" ? value : `${JSON.stringify(value, null, 2)}\n`;
}

async function writeText(file: string, content: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, content, "utf8");
}

function stringOr(value: unknown, fallback: string): string {
  return typeof value === "string" && value !== "" ? value : fallback;
}

/** A global gate of `teamsRoot` (`_hooks/on_task_completed.sh`) that answers defer, held for CI: its hooks dir. */
export async function writeDeferringGate(teamsRoot: string): Promise<string> {
  const hooksDir = path.join(teamsRoot, "_hooks");
  await mkdir(hooksDir, { recursive: true });
  await writeFile(
    path.join(hooksDir, "on_task_completed.sh"),
    `#!/usr/bin/env bash\necho '{"decision":"defer","code":"ci.pending","reason":"waiting for CI"}'\n`,
    { mode: 0o755 },
  );
  return hooksDir;
}
