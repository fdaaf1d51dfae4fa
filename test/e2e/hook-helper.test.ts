/**
 * The hook helper `pi-teams-hooks/hook`: each channel (stdin, the context file, the environment),
 * their order, and its errors, first in process with injected channels, then for real: imported by
 * the package's own name (the `exports` entry), and inside a hook run by the built `run` command.
 */
import { execFile, spawnSync } from "node:child_process";
import fs from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { HOOK_CONTRACT_VERSION, type ContextDocument } from "../../extensions/teams-hooks/contract/contract.js";
import {
  GATE_LINE_MAX_CHARS,
  HookContextError,
  crashLine,
  parseHookContext,
  readHookContext,
  type StdinLike,
} from "../../extensions/teams-hooks/hook.js";
import { makeTask, makeTempTeam, tempDirs } from "../helpers/temp-team.js";

const execFileAsync = promisify(execFile);
const BIN = path.resolve("dist/teams-hooks/bin.js");
const HOOK_MODULE = pathToFileURL(path.resolve("dist/teams-hooks/hook.js")).href;

const DOC: ContextDocument = {
  version: 1,
  event: "task_failed",
  team: { id: "alpha", dir: "/teams/alpha", taskListId: "alpha", style: "normal" },
  member: "bob",
  timestamp: "2026-12-02T10:00:00.000Z",
  task: {
    id: "3",
    subject: "Parse the input",
    description: "d",
    owner: "bob",
    status: "pending",
    blockedBy: [],
    blocks: [],
    metadata: { abortReason: "stuck" },
    createdAt: "2026-12-02T09:00:00.000Z",
    updatedAt: "2026-12-02T10:00:00.000Z",
  },
};

const tempDir = tempDirs("teams-hooks-helper-");

function stdinOf(text: string, isTTY = false): StdinLike {
  return Object.assign(Readable.from([Buffer.from(text)]), { isTTY });
}

async function failure(promise: Promise<unknown>): Promise<HookContextError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof HookContextError) return error;
    throw error;
  }
  throw new Error("expected a HookContextError");
}

describe("readHookContext, in process", () => {
  it("reads standard input first", async () => {
    const file = path.join(await tempDir(), "ctx.json");
    await writeFile(file, JSON.stringify({ ...DOC, member: "from-file" }));
    const read = await readHookContext({
      stdin: stdinOf(JSON.stringify(DOC)),
      env: { PI_TEAMS_HOOK_CONTEXT_FILE: file, PI_TEAMS_HOOK_CONTEXT_JSON: "{}" },
    });
    expect(read).toEqual({ context: DOC, channel: "stdin", source: "stdin", truncated: false });
  });

  it.each([
    ["empty", stdinOf("")],
    ["blank", stdinOf(" \n")],
    ["a terminal", stdinOf(JSON.stringify({ ...DOC, member: "typed" }), true)],
    ["skipped (null)", null],
  ])("reads the context file when stdin is %s", async (_name, stdin) => {
    const file = path.join(await tempDir(), "ctx.json");
    await writeFile(file, JSON.stringify(DOC));
    const read = await readHookContext({
      stdin,
      env: { PI_TEAMS_HOOK_CONTEXT_FILE: file, PI_TEAMS_HOOK_CONTEXT_JSON: "{}" },
    });
    expect(read).toMatchObject({ channel: "file", source: file, context: DOC });
  });

  it("reads the environment when there is no file, or the file is gone, and says when it was shortened", async () => {
    const gone = path.join(await tempDir(), "removed-after-the-run.json");
    for (const env of [{}, { PI_TEAMS_HOOK_CONTEXT_FILE: gone }, { PI_TEAMS_HOOK_CONTEXT_FILE: "" }]) {
      const read = await readHookContext({
        stdin: stdinOf(""),
        env: { ...env, PI_TEAMS_HOOK_CONTEXT_JSON: JSON.stringify(DOC) },
      });
      expect(read).toEqual({ context: DOC, channel: "env", source: "PI_TEAMS_HOOK_CONTEXT_JSON", truncated: false });
    }
    const cut = await readHookContext({
      stdin: null,
      env: { PI_TEAMS_HOOK_CONTEXT_JSON: JSON.stringify(DOC), PI_TEAMS_HOOK_CONTEXT_TRUNCATED: "1" },
    });
    expect(cut.truncated).toBe(true);
  });

  it("keeps fields a later v1 may add", async () => {
    const read = await readHookContext({
      stdin: stdinOf(JSON.stringify({ ...DOC, runId: "r-1", team: { ...DOC.team, extra: true } })),
      env: {},
    });
    expect(read.context).toMatchObject({ runId: "r-1", team: { extra: true } });
  });

  it("refuses a contract version it does not know, naming the version and the supported ones", async () => {
    const error = await failure(readHookContext({ stdin: stdinOf(JSON.stringify({ ...DOC, version: 2 })), env: {} }));
    expect(error.code).toBe("E_CONTEXT_VERSION");
    expect(error.channel).toBe("stdin");
    expect(error.message).toContain("contract version 2");
    expect(error.message).toContain(`supports version ${HOOK_CONTRACT_VERSION}`);
    expect(() => parseHookContext(JSON.stringify({ ...DOC, version: "1" }), "env")).toThrow(/contract version "1"/);
  });

  it("names the channel of invalid JSON, and never falls through to the next channel", async () => {
    const file = path.join(await tempDir(), "ctx.json");
    await writeFile(file, "{oops");
    const fromStdin = await failure(
      readHookContext({ stdin: stdinOf("{oops"), env: { PI_TEAMS_HOOK_CONTEXT_JSON: JSON.stringify(DOC) } }),
    );
    expect([fromStdin.code, fromStdin.channel]).toEqual(["E_CONTEXT_JSON", "stdin"]);
    expect(fromStdin.message).toMatch(/^hook context from standard input is not valid JSON/);
    const fromFile = await failure(readHookContext({ stdin: null, env: { PI_TEAMS_HOOK_CONTEXT_FILE: file } }));
    expect(fromFile.message).toContain(`PI_TEAMS_HOOK_CONTEXT_FILE (${file}) is not valid JSON`);
    const fromEnv = await failure(readHookContext({ stdin: null, env: { PI_TEAMS_HOOK_CONTEXT_JSON: "[1," } }));
    expect(fromEnv.message).toContain("PI_TEAMS_HOOK_CONTEXT_JSON is not valid JSON");
  });

  it("names the field of a document that is not a v1 context", async () => {
    const bad = { ...DOC, task: { ...DOC.task, blocks: "none" } };
    const error = await failure(readHookContext({ stdin: stdinOf(JSON.stringify(bad)), env: {} }));
    expect(error.code).toBe("E_CONTEXT_INVALID");
    expect(error.message).toContain("task.blocks");
  });

  it("says what is missing when no channel holds a document", async () => {
    const error = await failure(readHookContext({ stdin: stdinOf("", true), env: {} }));
    expect(error.code).toBe("E_CONTEXT_MISSING");
    expect(error.message).toContain("standard input is a terminal");
    expect(error.message).toContain("PI_TEAMS_HOOK_CONTEXT_FILE is not set");
  });

  it("imports nothing but contract.ts and verdict.ts from the project (it ships to hooks on its own)", () => {
    const source = fs.readFileSync(path.resolve("extensions/teams-hooks/hook.ts"), "utf8");
    const local = [...source.matchAll(/from "(\.[^"]+)"/g)].map((m) => m[1]);
    expect(new Set(local)).toEqual(new Set(["./contract/contract.js", "./contract/verdict.js"]));
  });
});

describe("pi-teams-hooks/hook, for real (built)", () => {
  it("resolves by the package's own name (package.json exports)", () => {
    const script = `const { readHookContext } = await import("pi-teams-hooks/hook"); const r = await readHookContext(); console.log(JSON.stringify(r));`;
    const out = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      input: JSON.stringify(DOC),
      encoding: "utf8",
      cwd: path.resolve("."),
    });
    expect(out.stderr).toBe("");
    expect(JSON.parse(out.stdout)).toEqual({ context: DOC, channel: "stdin", source: "stdin", truncated: false });
  });

  it("gives a hook run by `run` the complete document from stdin, also beyond the environment's limit", async () => {
    const dir = await tempDir();
    const dump = path.join(dir, "dump.json");
    const hooksDir = path.join(dir, "hooks");
    fs.mkdirSync(hooksDir);
    await writeFile(
      path.join(hooksDir, "on_task_completed.mjs"),
      // The dump is written into the test's temp dir: a sandboxed gate must declare it writable.
      `// pi-teams-hooks: sandbox-write=${dir}\nimport { readHookContext } from ${JSON.stringify(HOOK_MODULE)};\nimport fs from "node:fs";\nconst read = await readHookContext();\nfs.writeFileSync(${JSON.stringify(dump)}, JSON.stringify(read));\n`,
    );
    const blob = "x".repeat(300_000);
    const team = await makeTempTeam({
      tasks: [
        makeTask({
          id: "1",
          status: "completed",
          owner: "alice",
          metadata: { completedAt: "2026-12-02T10:00:00.000Z", blob },
        }),
      ],
    });
    try {
      await execFileAsync(process.execPath, [
        BIN,
        "run",
        "task_completed",
        "--team-dir",
        team.teamDir,
        "--task",
        "1",
        "--hooks-dir",
        hooksDir,
      ]);
      const read = JSON.parse(fs.readFileSync(dump, "utf8")) as {
        channel: string;
        truncated: boolean;
        context: ContextDocument;
      };
      expect(read.channel).toBe("stdin");
      expect(read.truncated).toBe(false);
      expect(read.context.task?.metadata.blob).toBe(blob);
      expect(read.context.team.dir).toBe(team.teamDir);
    } finally {
      await team.cleanup();
    }
  });

  it("falls back to the environment for a hook run by hand with stdin closed", () => {
    const script = `const { readHookContext } = await import(${JSON.stringify(HOOK_MODULE)}); const r = await readHookContext(); console.log(r.channel, r.context.member);`;
    const out = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      stdio: ["ignore", "pipe", "pipe"],
      encoding: "utf8",
      env: { ...process.env, PI_TEAMS_HOOK_CONTEXT_JSON: JSON.stringify(DOC) },
    });
    expect(out.stderr).toBe("");
    expect(out.stdout.trim()).toBe("env bob");
  });
});

describe("runGate, for real (built)", () => {
  /** A teams root with task #1 completed by alice, and a hooks dir holding `files` (the gate first). */
  async function setUp(files: Record<string, string>, config?: Record<string, unknown>) {
    const team = await makeTempTeam({
      tasks: [
        makeTask({
          id: "1",
          status: "completed",
          owner: "alice",
          metadata: { completedAt: "2026-12-02T10:00:00.000Z" },
        }),
      ],
      ...(config ? { config } : {}),
    });
    tempDir.removeAfter(team.teamsRoot);
    const hooksDir = path.join(team.teamsRoot, "gates");
    fs.mkdirSync(hooksDir);
    for (const [name, text] of Object.entries(files)) await writeFile(path.join(hooksDir, name), text);
    return { team, hooksDir };
  }

  function gate(body: string): string {
    return `import { runGate } from ${JSON.stringify(HOOK_MODULE)};\n\n${body}\n`;
  }

  /** `run task_completed` on task #1: its one line, without the duration and the run id, and the run's log entry. */
  function run(setup: { team: { teamDir: string }; hooksDir: string }) {
    const out = spawnSync(
      process.execPath,
      [
        BIN,
        "run",
        "task_completed",
        "--team-dir",
        setup.team.teamDir,
        "--task",
        "1",
        "--hooks-dir",
        setup.hooksDir,
        "--json",
      ],
      { encoding: "utf8" },
    );
    const report = JSON.parse(out.stdout) as {
      result: {
        outcome: string;
        exitCode: number | null;
        stderr: string;
        errorKind?: string;
        verdict?: Record<string, unknown>;
      };
    };
    const human = spawnSync(
      process.execPath,
      [BIN, "run", "task_completed", "--team-dir", setup.team.teamDir, "--task", "1", "--hooks-dir", setup.hooksDir],
      { encoding: "utf8" },
    );
    return {
      result: report.result,
      line: human.stdout
        .trim()
        .replace(/ in \d+(?:\.\d+)?m?s/, "")
        .replace(/ \(run [0-9a-f]{8}\)$/, ""),
    };
  }

  const THROWS = gate("await runGate(async (context) => {\n  const x = undefined;\n  return x.files.length;\n});");
  const CRASH =
    "gate crashed: TypeError: Cannot read properties of undefined (reading 'files') (on_task_completed.mjs:5)";

  it("a gate that throws: one clean line naming the error and the gate's file:line; a denial under v1", async () => {
    const { result, line } = run(await setUp({ "on_task_completed.mjs": THROWS }));
    expect(line).toBe(`task_completed #1 on_task_completed.mjs failed: exit code 1 • ${CRASH}`);
    expect(line).not.toContain("node:internal");
    expect(result).toMatchObject({ outcome: "failed", exitCode: 1, stderr: `${CRASH}\n` });
  });

  it("a gate that throws under strict exit codes: a hook error, not a denial, with the same line", async () => {
    const { result, line } = run(await setUp({ "on_task_completed.mjs": THROWS }, { hooks: { exitCodes: "strict" } }));
    expect(result).toMatchObject({ outcome: "error", errorKind: "unexpected_exit", exitCode: 1, stderr: `${CRASH}\n` });
    expect(line).toMatch(
      /^task_completed #1 on_task_completed\.mjs error: exit code 1: under strict exit codes .* • exit code 1 • gate crashed: TypeError: /,
    );
    expect(line.endsWith(CRASH)).toBe(true);
    expect(line).not.toContain("node:internal");
  });

  it("names the frame in the gate's own helper file, past Node's and the helper's frames", async () => {
    const { result } = run(
      await setUp({
        "on_task_completed.mjs": gate(
          `import { check } from "./lib.mjs";\nawait runGate((context) => check(context.task));`,
        ),
        "lib.mjs": `export function check(task) {\n  if (!task.metadata.result) throw new RangeError("no result\\n  recorded");\n}\n`,
      }),
    );
    expect(result.stderr).toBe("gate crashed: RangeError: no result recorded (lib.mjs:2)\n");
  });

  it.each([{}, { hooks: { exitCodes: "strict" } }])(
    "a denial with code, reason and message is the verdict (config %j)",
    async (config) => {
      const body = `await runGate((context) => ({ deny: true, code: "tests.missing", reason: \`task #\${context.task.id}:\\n no tests\`, message: "Add a test for the parser." }));`;
      const { result, line } = run(await setUp({ "on_task_completed.mjs": gate(body) }, config));
      expect(line).toBe(
        "task_completed #1 on_task_completed.mjs failed: denied (tests.missing) • task #1: no tests • Add a test for the parser.",
      );
      expect(result).toMatchObject({
        outcome: "failed",
        exitCode: 1,
        verdict: { decision: "deny", code: "tests.missing", reason: "task #1: no tests" },
      });
    },
  );

  it.each([{}, { hooks: { exitCodes: "strict" } }])(
    "a gate that returns nothing allows (config %j)",
    async (config) => {
      const { result, line } = run(await setUp({ "on_task_completed.mjs": gate("await runGate(() => {});") }, config));
      expect(line).toBe("task_completed #1 on_task_completed.mjs passed");
      expect(result).toMatchObject({ outcome: "passed", exitCode: 0, stderr: "" });
      expect(result.verdict).toBeUndefined();
    },
  );

  it('with crash: "allow", a gate that throws prints the same line and passes (a gate that only records)', async () => {
    const body = `await runGate(() => { throw new Error("journal is read-only"); }, { crash: "allow" });`;
    const { result, line } = run(await setUp({ "on_task_completed.mjs": gate(body) }));
    expect(line).toBe("task_completed #1 on_task_completed.mjs passed");
    expect(result).toMatchObject({
      outcome: "passed",
      exitCode: 0,
      stderr: "gate crashed: Error: journal is read-only (on_task_completed.mjs:3)\n",
    });
  });

  it("an import() inside the gate that fails, and a rejection left unhandled, are crash lines too", async () => {
    const missing = run(
      await setUp({
        "on_task_completed.mjs": gate(`await runGate(async () => {\n  await import("./not-there.mjs");\n});`),
      }),
    );
    expect(missing.result.stderr).toMatch(
      /^gate crashed: Error \[ERR_MODULE_NOT_FOUND\]: Cannot find module .*\(on_task_completed\.mjs\)\n$/,
    );
    expect(missing.line).not.toContain("node:internal");
    const body = `await runGate(async () => {\n  Promise.reject(new Error("left behind"));\n  await new Promise((resolve) => setTimeout(resolve, 10_000));\n});`;
    const left = run(await setUp({ "on_task_completed.mjs": gate(body) }));
    expect(left.result).toMatchObject({
      outcome: "failed",
      exitCode: 1,
      stderr: "gate crashed: Error: left behind (on_task_completed.mjs:4)\n",
    });
  });

  it("a return that is no verdict is a crash, never a decision", async () => {
    const { result } = run(
      await setUp({ "on_task_completed.mjs": gate(`await runGate(() => ({ deny: true, code: "Bad Code" }));`) }),
    );
    expect(result).toMatchObject({ outcome: "failed", exitCode: 1 });
    expect(result.stderr).toMatch(/^gate returned no verdict: code: must start with a lower-case letter/);
  });

  it("an invalid context on stdin: one line naming the channel, no verdict, exit 1", async () => {
    const file = path.join(await tempDir(), "on_task_completed.mjs");
    await writeFile(file, gate("await runGate(() => { throw new Error('never called'); });"));
    for (const [input, line] of [
      ["{oops", /^gate not run \(E_CONTEXT_JSON\): hook context from standard input is not valid JSON/],
      [
        JSON.stringify({ ...DOC, task: { ...DOC.task, blocks: "none" } }),
        /^gate not run \(E_CONTEXT_INVALID\): .*task\.blocks/,
      ],
    ] as const) {
      const out = spawnSync(process.execPath, [file], {
        input,
        encoding: "utf8",
        env: { ...process.env, PI_TEAMS_HOOK_RESULT_FILE: "" },
      });
      expect(out.status).toBe(1);
      expect(out.stdout).toBe("");
      expect(out.stderr.split("\n")).toHaveLength(2);
      expect(out.stderr).toMatch(line);
      expect(out.stderr.length).toBeLessThanOrEqual(GATE_LINE_MAX_CHARS + 1);
    }
  });

  it("writes a defer verdict as the last line of stdout when there is no result file", async () => {
    const file = path.join(await tempDir(), "on_task_completed.mjs");
    await writeFile(
      file,
      gate(
        `console.log("asking CI");\nawait runGate(() => ({ decision: "defer", code: "ci.pending", reason: "waiting for CI" }));`,
      ),
    );
    const out = spawnSync(process.execPath, [file], { input: JSON.stringify(DOC), encoding: "utf8" });
    expect(out.status).toBe(0);
    expect(out.stdout.trim().split("\n").at(-1)).toBe(
      JSON.stringify({ code: "ci.pending", decision: "defer", reason: "waiting for CI" }),
    );
  });
});

describe("crashLine", () => {
  it("skips Node's internals and packages; without an own frame it names the gate file", () => {
    const error = new Error("Cannot find package 'left-pad' imported from /h/gate.mjs");
    error.name = "Error [ERR_MODULE_NOT_FOUND]";
    error.stack = `${error.name}: ${error.message}\n    at packageResolve (node:internal/modules/esm/resolve:873:9)\n    at x (/h/node_modules/p/index.js:3:1)`;
    expect(crashLine(error, "/h/on_task_completed.mjs")).toBe(
      "gate crashed: Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'left-pad' imported from /h/gate.mjs (on_task_completed.mjs)",
    );
    expect(crashLine("boom", "/h/g.mjs")).toBe('gate crashed: threw "boom" (g.mjs)');
    const coded = Object.assign(new Error("spawn git ENOENT"), { code: "ENOENT" });
    coded.stack = "Error: spawn git ENOENT\n    at ChildProcess._handle.onexit (node:internal/child_process:286:19)";
    expect(crashLine(coded, "/h/g.mjs")).toBe("gate crashed: Error [ENOENT]: spawn git ENOENT (g.mjs)");
  });

  it("cuts a long message and keeps the location whole", () => {
    const error = new TypeError("x".repeat(500));
    error.stack = `TypeError: ${error.message}\n    at gate (file:///h/on_task_completed.mjs:12:3)`;
    const line = crashLine(error);
    expect(line.length).toBe(GATE_LINE_MAX_CHARS);
    expect(line.endsWith("… (on_task_completed.mjs:12)")).toBe(true);
  });
});
