/**
 * The v1 contract end to end, through the built `pi-teams-hooks run`: a real hook dumps what it was
 * given (its PI_TEAMS_* variables, stdin, the context file), and each case compares that with the
 * document docs/hook-contract.md describes, written out here by hand, byte for byte: the first v1
 * document's keys as they always were, then the additive `work`.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTempTeam, type TempTeam } from "../helpers/temp-team.js";

const run = promisify(execFile);
const BIN = path.resolve("dist/teams-hooks/bin.js");
const ELLIPSIS = "\u2026";
const CREATED = "2026-12-01T08:00:00.000Z";
const UPDATED = "2026-12-01T09:00:00.000Z";

// A sandboxed gate gets only the contract's variables and the names it declares: DUMP_FILE is declared.
const DUMP_HOOK = `// pi-teams-hooks: env=DUMP_FILE
import fs from "node:fs";
const stdin = fs.readFileSync(0, "utf8");
const file = process.env.PI_TEAMS_HOOK_CONTEXT_FILE;
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("PI_TEAMS_")));
const contextFile = file ? fs.readFileSync(file, "utf8") : null;
fs.writeFileSync(process.env.DUMP_FILE, JSON.stringify({ env, stdin, contextFile, cwd: process.cwd() }));
`;

interface Dump {
  env: Record<string, string>;
  stdin: string;
  contextFile: string | null;
  cwd: string;
}

interface TaskFile {
  id: string;
  subject: string;
  description: string;
  owner?: string;
  status: string;
  blocks: string[];
  blockedBy: string[];
  metadata?: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

function task(id: string, fields: Partial<TaskFile> = {}): TaskFile {
  return {
    id,
    subject: `Task ${id}`,
    description: "Do the thing",
    owner: "alice",
    status: "completed",
    blocks: [],
    blockedBy: [],
    metadata: { completedAt: UPDATED },
    createdAt: CREATED,
    updatedAt: UPDATED,
    ...fields,
  };
}

const NUMBERS = (n: number, prefix = ""): string[] => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`);

const TASKS: TaskFile[] = [
  task("1", { subject: "s".repeat(1000) }),
  task("2", { subject: "s".repeat(1001) }),
  task("3", { description: "d".repeat(8000) }),
  task("4", { description: "d".repeat(9000) }),
  task("5", { blockedBy: NUMBERS(250), blocks: NUMBERS(201, "b") }),
  (() => {
    const t = task("6");
    delete t.owner;
    delete t.metadata;
    return t;
  })(),
  task("7", {
    subject: "Zürich → 東京 \u{1F680}\nsecond line\ttab",
    description: 'line 1\nline 2\r\n"quoted" \\ back',
  }),
  task("8", { metadata: { completedAt: UPDATED, nested: { list: [1, "two", { three: null }], flag: true }, n: 1.5 } }),
  task("9", {
    status: "pending",
    metadata: { abortedAt: "2026-12-01T09:30:00.000Z", abortedBy: "alice", abortReason: "stuck" },
  }),
  task("10", { metadata: { completedAt: UPDATED, blob: "x".repeat(200_000) } }),
  task("11", { subject: "nul\u0000inside" }),
];

let team: TempTeam;
let hooksDir: string;
let dumpDir: string;

beforeAll(async () => {
  team = await makeTempTeam({ teamId: "alpha", tasks: TASKS as unknown as Record<string, unknown>[] });
  hooksDir = path.join(team.teamsRoot, "_hooks");
  dumpDir = path.join(team.teamsRoot, "dumps");
  fs.mkdirSync(hooksDir, { recursive: true });
  fs.mkdirSync(dumpDir);
  for (const base of ["on_task_completed", "on_task_failed", "on_idle"])
    fs.writeFileSync(path.join(hooksDir, `${base}.mjs`), DUMP_HOOK);
});

afterAll(async () => {
  await team.cleanup();
});

async function fire(name: string, args: string[]): Promise<{ dump: Dump; stdout: string }> {
  const dumpFile = path.join(dumpDir, `${name}.json`);
  const env = { ...cleanEnv(), DUMP_FILE: dumpFile, PI_TEAMS_ROOT_DIR: team.teamsRoot };
  const { stdout } = await run(process.execPath, [BIN, "run", ...args, "--team-dir", team.teamDir], {
    env,
    cwd: team.teamsRoot,
  });
  return { dump: JSON.parse(fs.readFileSync(dumpFile, "utf8")) as Dump, stdout };
}

/** The test runner's environment minus any contract variables it may carry. */
function cleanEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      (e): e is [string, string] => e[1] !== undefined && !e[0].startsWith("PI_TEAMS_"),
    ),
  );
}

/** The document docs/hook-contract.md describes, in its key order. */
function expectedDocument(event: string, t: TaskFile | null, member: string | null, timestamp: string | null): string {
  const cut = (s: string, limit: number): string => (s.length > limit ? s.slice(0, limit - 1) + ELLIPSIS : s);
  return JSON.stringify({
    version: 1,
    event,
    team: { id: "alpha", dir: team.teamDir, taskListId: "alpha", style: "normal" },
    member,
    timestamp,
    task: t && {
      id: t.id,
      subject: cut(t.subject, 1000),
      description: cut(t.description, 8000),
      owner: t.owner ?? null,
      status: t.status,
      blockedBy: t.blockedBy.slice(0, 200),
      blocks: t.blocks.slice(0, 200),
      metadata: t.metadata ?? {},
      createdAt: t.createdAt,
      updatedAt: t.updatedAt,
    },
    // Additive, still v1: the work's story, after every key above (which keep their place and value).
    ...(t ? { work: expectedWork(t) } : {}),
  });
}

/** The document's `work` for a task a worker made: its result summary and error as recorded in its metadata. */
function expectedWork(t: TaskFile): Record<string, unknown> {
  const recorded = (value: unknown): string | null =>
    value === undefined || value === null || value === ""
      ? null
      : typeof value === "string"
        ? value
        : JSON.stringify(value);
  return {
    createdBy: { kind: "worker" },
    parameters: null,
    summary: recorded(t.metadata?.result),
    error: recorded(t.metadata?.abortReason),
  };
}

function expectedEnv(
  event: string,
  t: TaskFile | null,
  member: string | null,
  timestamp: string | null,
  dump: Dump,
): Record<string, string> {
  const env: Record<string, string> = {
    PI_TEAMS_HOOK_EVENT: event,
    PI_TEAMS_HOOK_CONTEXT_VERSION: "1",
    PI_TEAMS_HOOK_CONTEXT_JSON: expectedDocument(event, t, member, timestamp),
    PI_TEAMS_TEAM_ID: "alpha",
    PI_TEAMS_TEAM_DIR: team.teamDir,
    PI_TEAMS_TASK_LIST_ID: "alpha",
    PI_TEAMS_STYLE: "normal",
    // No PI_TEAMS_ROOT_DIR: it is in the leader's environment (fire sets it), but a sandboxed gate
    // gets only the contract's variables and the names its settings line declares.
    PI_TEAMS_HOOK_RUN_ID: dump.env.PI_TEAMS_HOOK_RUN_ID ?? "(missing)",
    PI_TEAMS_HOOK_CONTEXT_FILE: dump.env.PI_TEAMS_HOOK_CONTEXT_FILE ?? "(missing)",
    // Additive (verdicts): where the hook may write its decision.
    PI_TEAMS_HOOK_RESULT_FILE: dump.env.PI_TEAMS_HOOK_RESULT_FILE ?? "(missing)",
    // Additive (at-least-once runs): the event's key, the same for every attempt, and this attempt.
    PI_TEAMS_HOOK_EVENT_KEY: expectedKey(event, t, member, timestamp, dump),
    PI_TEAMS_HOOK_ATTEMPT: "1",
    // Additive (what runs is what was trusted): the gate's own path; what runs is a private copy of it.
    PI_TEAMS_HOOK_PATH: path.join(hooksDir, `on_${event}.mjs`),
  };
  if (member) env.PI_TEAMS_MEMBER = member;
  if (timestamp) env.PI_TEAMS_EVENT_TIMESTAMP = timestamp;
  if (t) {
    env.PI_TEAMS_TASK_ID = t.id;
    env.PI_TEAMS_TASK_STATUS = t.status;
    if (t.subject) env.PI_TEAMS_TASK_SUBJECT = t.subject;
    if (t.owner) env.PI_TEAMS_TASK_OWNER = t.owner;
  }
  return env;
}

/** `<event>:<task id>:<completedAt | updatedAt | abortedAt>`, or `idle:<member>:<timestamp>` (now, when not given). */
function expectedKey(
  event: string,
  t: TaskFile | null,
  member: string | null,
  timestamp: string | null,
  dump: Dump,
): string {
  if (t) {
    const stamp = event === "task_completed" ? (t.metadata?.completedAt ?? t.updatedAt) : t.metadata?.abortedAt;
    return `${event}:${t.id}:${String(stamp)}`;
  }
  if (timestamp) return `idle:${member ?? "unknown"}:${timestamp}`;
  const seen = dump.env.PI_TEAMS_HOOK_EVENT_KEY ?? "";
  return /^idle:unknown:\d{4}-\d\d-\d\dT[\d:.]+Z$/.test(seen) ? seen : "idle:unknown:<now>";
}

function byId(id: string): TaskFile {
  const found = TASKS.find((t) => t.id === id);
  if (!found) throw new Error(`no task ${id}`);
  return found;
}

describe("run: what a hook receives (contract v1, byte for byte)", () => {
  it.each([
    ["a 1,000-character subject", "1"],
    ["a 1,001-character subject", "2"],
    ["an 8,000-character description", "3"],
    ["a 9,000-character description", "4"],
    ["250 blockedBy and 201 blocks", "5"],
    ["no owner and no metadata", "6"],
    ["unicode, newlines and escapes", "7"],
    ["nested metadata", "8"],
  ])("task_completed with %s", async (name, id) => {
    const t = byId(id);
    const { dump } = await fire(`completed-${id}`, [
      "task_completed",
      "--task",
      id,
      "--member",
      "alice",
      "--timestamp",
      UPDATED,
    ]);
    expect(dump.env).toEqual(expectedEnv("task_completed", t, "alice", UPDATED, dump));
    expect(dump.stdin).toBe(expectedDocument("task_completed", t, "alice", UPDATED));
    expect(dump.contextFile).toBe(dump.stdin);
    expect(dump.cwd).toBe(team.teamsRoot);
    expect(name).toBeTruthy();
  });

  it("without --member, the member is the task's owner, as under the leader; without --timestamp, none", async () => {
    const t = byId("1");
    const { dump } = await fire("completed-no-member", ["task_completed", "--task", "1"]);
    expect(dump.env).toEqual(expectedEnv("task_completed", t, "alice", null, dump));
    expect(dump.env).not.toHaveProperty("PI_TEAMS_EVENT_TIMESTAMP");
    expect(JSON.parse(dump.stdin)).toMatchObject({ member: "alice", timestamp: null });
  });

  it("without --member, a task that has no owner has no member: null and unset", async () => {
    const t = byId("6");
    const { dump } = await fire("completed-no-owner", ["task_completed", "--task", "6"]);
    expect(dump.env).toEqual(expectedEnv("task_completed", t, null, null, dump));
    expect(dump.env).not.toHaveProperty("PI_TEAMS_MEMBER");
    expect(JSON.parse(dump.stdin)).toMatchObject({ member: null, timestamp: null });
  });

  it("an aborted task fires task_failed with the task as it is", async () => {
    const t = byId("9");
    const { dump } = await fire("failed-9", [
      "task_failed",
      "--task",
      "9",
      "--member",
      "alice",
      "--timestamp",
      "2026-12-01T09:30:00.000Z",
    ]);
    expect(dump.env).toEqual(expectedEnv("task_failed", t, "alice", "2026-12-01T09:30:00.000Z", dump));
    expect(dump.stdin).toBe(dump.contextFile);
  });

  it.each([
    [
      "with a timestamp",
      ["--member", "bob", "--timestamp", "2026-12-01T10:00:00.000Z"],
      "bob",
      "2026-12-01T10:00:00.000Z",
    ],
    ["without one", [], null, null],
  ])("idle %s has no task", async (_name, flags, member, timestamp) => {
    const { dump } = await fire(`idle-${String(member)}`, ["idle", ...flags]);
    expect(dump.env).toEqual(expectedEnv("idle", null, member, timestamp, dump));
    expect(dump.stdin).toBe(expectedDocument("idle", null, member, timestamp));
  });

  it("a task with 200 KB of metadata runs normally: stdin and the file are complete, the variable fits", async () => {
    const t = byId("10");
    const { dump, stdout } = await fire("big-metadata", ["task_completed", "--task", "10"]);
    expect(stdout).toMatch(/passed/);
    expect(dump.stdin).toBe(expectedDocument("task_completed", t, "alice", null));
    expect(dump.contextFile).toBe(dump.stdin);
    const envJson = dump.env.PI_TEAMS_HOOK_CONTEXT_JSON ?? "";
    expect(Buffer.byteLength(envJson)).toBeLessThanOrEqual(100 * 1024);
    expect(
      (JSON.parse(envJson) as { task: { metadata: { blob: string } } }).task.metadata.blob.endsWith(ELLIPSIS),
    ).toBe(true);
    expect(dump.env.PI_TEAMS_HOOK_CONTEXT_TRUNCATED).toBe("1");
  });

  it("a NUL in the subject runs normally: stdin carries it escaped, the variable replaces it", async () => {
    const { dump, stdout } = await fire("nul-subject", ["task_completed", "--task", "11"]);
    expect(stdout).toMatch(/passed/);
    expect(dump.stdin).toBe(dump.contextFile);
    expect((JSON.parse(dump.stdin) as { task: { subject: string } }).task.subject).toBe("nul\u0000inside");
    expect(dump.env.PI_TEAMS_TASK_SUBJECT).toBe("nul\uFFFDinside");
  });

  it("the context file is removed after the run", async () => {
    const { dump } = await fire("file-removed", ["task_completed", "--task", "1"]);
    expect(fs.existsSync(dump.env.PI_TEAMS_HOOK_CONTEXT_FILE ?? "")).toBe(false);
  });

  it("each invocation gets its own run id", async () => {
    const a = await fire("run-id-a", ["task_completed", "--task", "1"]);
    const b = await fire("run-id-b", ["task_completed", "--task", "1"]);
    expect(a.dump.env.PI_TEAMS_HOOK_RUN_ID).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.dump.env.PI_TEAMS_HOOK_RUN_ID).not.toBe(b.dump.env.PI_TEAMS_HOOK_RUN_ID);
  });
});
