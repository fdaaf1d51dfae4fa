/**
 * runHook against real processes and real files. Every hang scenario checks afterwards, independently
 * of terminate.ts, that no process of the run is left: none in its process group and none carrying its
 * run id in /proc/<pid>/environ (zombies waiting for a lazy PID 1 do not count: they run nothing).
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { chmodSync, copyFileSync, existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fileTempDir } from "../helpers/temp-team.js";
import {
  OUTPUT_LIMIT_CHARS,
  RunResultSchema,
  type HookCommand,
  type RunResult,
} from "../../extensions/teams-hooks/contract/hook-run.js";
import { findProcessesByRunId, terminateGroup } from "../../extensions/teams-hooks/runner/terminate.js";
import {
  liveRuns,
  runHook,
  terminateAllRuns,
  type RunHookOptions,
} from "../../extensions/teams-hooks/runner/run-hook.js";
import { runsRoot } from "../../extensions/teams-hooks/runner/run-dir.js";
import { makeInvocation, makeTask } from "../helpers/invocation.js";

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/hooks");
const tmp = fileTempDir("run-test-");

function bash(name: string): HookCommand {
  const file = path.join(FIXTURES, name);
  return { hookPath: file, command: "bash", args: [file] };
}

function node(name: string, ...args: string[]): HookCommand {
  const file = path.join(FIXTURES, name);
  return { hookPath: file, command: process.execPath, args: [file, ...args] };
}

/** Live, non-zombie pids in group `pgid` or carrying `runId`, read straight from /proc. */
function survivors(pgid: number, runId: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (state === "Z") continue;
      const environ = readFileSync(`/proc/${pid}/environ`, "latin1").split("\0");
      if (Number(pgrp) === pgid || environ.includes(`PI_TEAMS_HOOK_RUN_ID=${runId}`)) found.push(pid);
    } catch {
      // gone while we looked: not a survivor
    }
  }
  return found;
}

interface Timed {
  result: RunResult;
  ms: number;
  pid: number | undefined;
  runId: string;
}

const started: Array<{ pid: number; runId: string }> = [];

async function run(
  hook: HookCommand,
  opts: Partial<RunHookOptions> = {},
  invocation = makeInvocation(),
): Promise<Timed> {
  const runId = opts.runId ?? randomUUID();
  let pid: number | undefined;
  const t0 = performance.now();
  const result = await runHook(hook, invocation, {
    cwd: tmp,
    timeoutMs: 10_000,
    ...opts,
    runId,
    onSpawn: (info) => {
      pid = info.pid;
      started.push(info);
    },
  });
  const ms = performance.now() - t0;
  expect(RunResultSchema.parse(result)).toEqual(result);
  expect(result.runId).toBe(runId);
  expect(runFoldersOf(runId)).toEqual([]);
  return { result, ms, pid, runId };
}

/**
 * The private folders of run `runId` still in the leader's runs folder (runner/run-dir.ts makeRunDir:
 * `<runs root>/<runId>.XXXXXX`, holding the context file): none once the run is over.
 */
function runFoldersOf(runId: string): string[] {
  return readdirSync(runsRoot()).filter((name) => name.startsWith(`${runId}.`));
}

// A test that leaves a process behind fails; the net below only keeps the machine clean afterwards.
afterEach(() => {
  for (const { pid, runId } of started.splice(0)) {
    for (const leftover of survivors(pid, runId)) process.kill(leftover, "SIGKILL");
  }
});

interface Dump {
  env: Record<string, string>;
  stdin: string;
  contextFile: string;
  contextFileContent: string;
  contextFileMode: number;
  cwd: string;
}

function readDump(file: string): Dump {
  return JSON.parse(readFileSync(file, "utf8")) as Dump;
}

describe("a hook run", () => {
  describe("runHook: exit codes and spawn failures", () => {
    it("exit 0 passes", async () => {
      const { result } = await run(bash("pass.sh"));
      expect(result).toMatchObject({
        outcome: "passed",
        exitCode: 0,
        signal: null,
        timedOut: false,
        leftoverProcesses: 0,
        ran: true,
      });
      expect(result.command).toEqual(["bash", path.join(FIXTURES, "pass.sh")]);
      expect(result.hookPath).toBe(path.join(FIXTURES, "pass.sh"));
    });

    it("exit 1 fails, with both streams captured", async () => {
      const { result } = await run(bash("fail.sh"));
      expect(result).toMatchObject({
        outcome: "failed",
        exitCode: 1,
        timedOut: false,
        stdout: "checking task 3\n",
        stderr: "lint failed: 3 problems\n",
      });
      expect(result.error).toBeUndefined();
    });

    it("death by a signal gives outcome error with the signal", async () => {
      const { result } = await run(bash("signal-self.sh"));
      expect(result).toMatchObject({ outcome: "error", exitCode: null, signal: "SIGUSR1", timedOut: false });
    });

    it("a missing cwd gives outcome error without throwing", async () => {
      const { result } = await run(bash("pass.sh"), { cwd: path.join(tmp, "missing") });
      expect(result).toMatchObject({ outcome: "error", errorCode: "ENOENT" });
      expect(result.error).toMatch(/cwd/);
    });

    it.each([
      ["a missing interpreter", { hookPath: "/x/on_idle.sh", command: "/nonexistent/bash", args: ["/x/on_idle.sh"] }],
      ["a missing file", { hookPath: "/nonexistent/on_idle", command: "/nonexistent/on_idle", args: [] }],
    ])("%s gives outcome error ENOENT without throwing", async (_name, hook) => {
      const { result, pid } = await run(hook);
      expect(pid).toBeUndefined();
      expect(result).toMatchObject({ outcome: "error", errorCode: "ENOENT", exitCode: null, ran: true });
      expect(result.error).toMatch(/ENOENT/);
      expect(result.error).not.toContain("\n");
    });

    it("a file without an execute bit gives outcome error EACCES", async () => {
      const file = path.join(tmp, "not-executable.sh");
      copyFileSync(path.join(FIXTURES, "not-executable.sh"), file);
      chmodSync(file, 0o644);
      const { result } = await run({ hookPath: file, command: file, args: [] });
      expect(result).toMatchObject({ outcome: "error", errorCode: "EACCES" });
    });

    it("an environment over the kernel limit gives outcome error E2BIG", async () => {
      const baseEnv = { ...process.env, HUGE: "x".repeat(512 * 1024) };
      const { result } = await run(bash("pass.sh"), { baseEnv });
      expect(result).toMatchObject({ outcome: "error", errorCode: "E2BIG", exitCode: null });
    });
  });

  describe("runHook: the contract as the hook sees it", () => {
    const contractVariables = [
      "PI_TEAMS_EVENT_TIMESTAMP",
      "PI_TEAMS_HOOK_CONTEXT_FILE",
      "PI_TEAMS_HOOK_CONTEXT_JSON",
      "PI_TEAMS_HOOK_CONTEXT_VERSION",
      "PI_TEAMS_HOOK_EVENT",
      "PI_TEAMS_HOOK_PATH",
      "PI_TEAMS_HOOK_RESULT_FILE",
      "PI_TEAMS_HOOK_RUN_ID",
      "PI_TEAMS_MEMBER",
      "PI_TEAMS_STYLE",
      "PI_TEAMS_TASK_ID",
      "PI_TEAMS_TASK_LIST_ID",
      "PI_TEAMS_TASK_OWNER",
      "PI_TEAMS_TASK_STATUS",
      "PI_TEAMS_TASK_SUBJECT",
      "PI_TEAMS_TEAM_DIR",
      "PI_TEAMS_TEAM_ID",
    ];

    it("sees exactly the contract variables, and stdin equals the context file byte for byte", async () => {
      const out = path.join(tmp, `dump-${randomUUID()}.json`);
      const baseEnv = { ...process.env, KEEP_ME: "yes", PI_TEAMS_TASK_ID: "stale", PI_TEAMS_HOOK_RUN_ID: "stale" };
      const { result, runId } = await run(node("env-dump.mjs", out), { baseEnv });
      expect(result).toMatchObject({ outcome: "passed", contextTruncated: false });
      const dump = readDump(out);
      expect(
        Object.keys(dump.env)
          .filter((name) => name.startsWith("PI_TEAMS_"))
          .sort(),
      ).toEqual(contractVariables);
      expect(dump.env).toMatchObject({
        KEEP_ME: "yes",
        PI_TEAMS_HOOK_EVENT: "task_completed",
        PI_TEAMS_HOOK_CONTEXT_VERSION: "1",
        PI_TEAMS_HOOK_RUN_ID: runId,
        PI_TEAMS_TASK_ID: "3",
        PI_TEAMS_TASK_OWNER: "alice",
        PI_TEAMS_TASK_SUBJECT: "Add retry with backoff to the uploader",
      });
      // The context file is in the run's private folder, `<runs root>/<runId>.XXXXXX/context.json`.
      const contextFile = dump.env.PI_TEAMS_HOOK_CONTEXT_FILE ?? "";
      expect(path.basename(contextFile)).toBe("context.json");
      expect(path.dirname(path.dirname(contextFile))).toBe(runsRoot());
      expect(path.basename(path.dirname(contextFile))).toMatch(/^[0-9a-f-]{36}\.[A-Za-z0-9]{6}$/);
      expect(path.basename(path.dirname(contextFile)).startsWith(`${runId}.`)).toBe(true);
      expect(dump.stdin).toBe(dump.contextFileContent);
      expect(Buffer.from(dump.stdin, "base64").toString("utf8")).toBe(dump.env.PI_TEAMS_HOOK_CONTEXT_JSON);
      expect(dump.contextFileMode).toBe(0o600);
      expect(dump.cwd).toBe(tmp);
      expect(existsSync(dump.contextFile)).toBe(false);
    });

    it("a task with 200 KB of metadata runs normally; stdin and the file carry all of it", async () => {
      const out = path.join(tmp, `dump-${randomUUID()}.json`);
      const task = makeTask({ metadata: { result: "ok", log: "y".repeat(200_000) } });
      const { result } = await run(node("env-dump.mjs", out), {}, makeInvocation({ task }));
      expect(result).toMatchObject({ outcome: "passed", exitCode: 0, contextTruncated: true });
      const dump = readDump(out);
      expect(dump.stdin).toBe(dump.contextFileContent);
      const doc = JSON.parse(Buffer.from(dump.stdin, "base64").toString("utf8")) as {
        task: { metadata: { log: string } };
      };
      expect(doc.task.metadata.log).toHaveLength(200_000);
      expect(dump.env.PI_TEAMS_HOOK_CONTEXT_TRUNCATED).toBe("1");
    });

    it("a task with NUL in its subject runs normally", async () => {
      const out = path.join(tmp, `dump-${randomUUID()}.json`);
      const task = makeTask({ subject: "fix\u0000bug" });
      const { result } = await run(node("env-dump.mjs", out), {}, makeInvocation({ task }));
      expect(result).toMatchObject({ outcome: "passed", exitCode: 0 });
      const dump = readDump(out);
      expect(dump.stdin).toBe(dump.contextFileContent);
      const doc = JSON.parse(Buffer.from(dump.stdin, "base64").toString("utf8")) as { task: { subject: string } };
      expect(doc.task.subject).toBe("fix\u0000bug");
      expect(dump.env.PI_TEAMS_TASK_SUBJECT).not.toContain("\u0000");
    });

    it("a hook that exits without reading a large stdin does not hang the runner", async () => {
      const task = makeTask({ metadata: { log: "z".repeat(2_000_000) } });
      const { result, ms } = await run(bash("pass.sh"), {}, makeInvocation({ task }));
      expect(result.outcome).toBe("passed");
      expect(ms).toBeLessThan(3_000);
    });
  });

  describe("runHook: hangs end within timeout + 2 s with nothing left alive", () => {
    it.each([
      ["sleep 300 & wait", bash("sleep-bg-wait.sh")],
      ["(sleep 300; true)", bash("subshell-sleep.sh")],
      ["foreground sleep 300", bash("sleep-forever.sh")],
      ["trap '' TERM; sleep 300", bash("trap-term.sh")],
      ["setsid sleep 300 & wait", bash("setsid-escape.sh")],
      ["a node hook ignoring SIGTERM", node("ignore-term.mjs")],
    ])("%s times out", async (_name, hook) => {
      const { result, ms, pid, runId } = await run(hook, { timeoutMs: 500 });
      expect(result).toMatchObject({ outcome: "error", timedOut: true, exitCode: null });
      expect(result.signal).toMatch(/^SIG(TERM|KILL)$/);
      expect(ms).toBeLessThan(3_000);
      expect(pid).toBeDefined();
      expect(survivors(pid ?? -1, runId)).toEqual([]);
    });

    it("sleep 300 & exit 0 returns quickly as passed and kills the leftover", async () => {
      const { result, ms, pid, runId } = await run(bash("fork-grandchild.sh"), { timeoutMs: 10_000 });
      expect(result).toMatchObject({ outcome: "passed", exitCode: 0, timedOut: false });
      expect(result.leftoverProcesses).toBeGreaterThanOrEqual(1);
      expect(ms).toBeLessThan(3_000);
      expect(survivors(pid ?? -1, runId)).toEqual([]);
    });

    it("with escapeeScan 'always', a quiet setsid child of a clean exit is found and killed", async () => {
      const { result, pid, runId } = await run(bash("setsid-quiet.sh"), { escapeeScan: "always" });
      expect(result).toMatchObject({ outcome: "passed", leftoverProcesses: 1 });
      expect(survivors(pid ?? -1, runId)).toEqual([]);
    });

    it("terminateAllRuns ends a live run and waits for it", async () => {
      const pending = run(bash("sleep-bg-wait.sh"), { timeoutMs: 60_000 });
      await vi.waitFor(() => expect(liveRuns()).toHaveLength(1), { timeout: 5_000 });
      const [live] = liveRuns();
      await terminateAllRuns();
      expect(liveRuns()).toEqual([]);
      const { result, pid, runId } = await pending;
      expect(live).toEqual({ pid, runId });
      expect(result).toMatchObject({ outcome: "error", timedOut: false });
      expect(result.error).toMatch(/shutting down/);
      expect(survivors(pid ?? -1, runId)).toEqual([]);
    });
  });

  describe("runHook: output", () => {
    it("a 500 MB flood is drained, kept to its head, and does not grow the leader", async () => {
      const before = process.memoryUsage().rss;
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
      try {
        const { result } = await run(bash("flood.sh"), { timeoutMs: 60_000 });
        expect(result).toMatchObject({ outcome: "passed", exitCode: 0 });
        const [head, note] = result.stdout.split("\n… (truncated, ");
        expect(head?.length).toBeLessThanOrEqual(OUTPUT_LIMIT_CHARS);
        expect(note).toBe(`${result.stdoutDroppedBytes} bytes omitted)`);
        expect(result.stdoutDroppedBytes).toBe(500_000_000 - OUTPUT_LIMIT_CHARS);
        expect(result.stderr).toBe("");
      } finally {
        clearInterval(sampler);
      }
      expect(peak - before).toBeLessThan(64 * 1024 * 1024);
    });
  });
});

describe("terminate: identifying a run by its run id", () => {
  /** A detached `sleep` group carrying `runId`, as a crashed leader would have left it. */
  function orphanGroup(runId: string): number {
    const child = spawn("sleep", ["300"], {
      detached: true,
      stdio: "ignore",
      env: { ...process.env, PI_TEAMS_HOOK_RUN_ID: runId },
    });
    child.unref();
    const pid = child.pid ?? -1;
    started.push({ pid, runId });
    return pid;
  }

  it("matches the whole variable, not a prefix", async () => {
    const runId = randomUUID();
    const pid = orphanGroup(runId);
    await vi.waitFor(async () => expect(await findProcessesByRunId(runId)).toEqual([pid]), { timeout: 5_000 });
    expect(await findProcessesByRunId(runId.slice(0, -1))).toEqual([]);
  });

  it("with confirmGroup, leaves a group that does not carry the run id alone", async () => {
    const runId = randomUUID();
    const pid = orphanGroup(runId);
    await vi.waitFor(async () => expect(await findProcessesByRunId(runId)).toEqual([pid]), { timeout: 5_000 });
    expect(await terminateGroup(pid, { graceMs: 200, runId: randomUUID(), confirmGroup: true })).toEqual([]);
    expect(survivors(pid, runId)).toEqual([pid]);
    expect(await terminateGroup(pid, { graceMs: 200, runId, confirmGroup: true })).toEqual([pid]);
    expect(survivors(pid, runId)).toEqual([]);
  });
});

describe("terminate: a child that left the group and dropped its environment", () => {
  /** Whether `pid` is a live (non-zombie) process, straight from /proc. */
  function alive(pid: number): boolean {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
      return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0] !== "Z";
    } catch {
      return false;
    }
  }
  const strays: number[] = [];
  afterEach(() => {
    for (const pid of strays.splice(0)) if (alive(pid)) process.kill(pid, "SIGKILL");
  });

  /** The escapee's pid, once escape-bare.sh has written it (its child has left and become `sleep`). */
  async function escapeeOf(pidFile: string): Promise<number> {
    const pid = await vi.waitFor(() => Number(readFileSync(pidFile, "utf8")), { timeout: 10_000, interval: 20 });
    strays.push(pid);
    return pid;
  }

  it("a hook ended while it runs (a timeout, a stop): the escapee is found by its parent link, ended and counted", async () => {
    const pidFile = path.join(tmp, `escapee-${randomUUID()}`);
    const running = run(
      { ...bash("escape-bare.sh"), args: [path.join(FIXTURES, "escape-bare.sh"), pidFile] },
      { timeoutMs: 10_000 },
    );
    const escapee = await escapeeOf(pidFile);
    // the run id cannot find it
    expect(await findProcessesByRunId(started.at(-1)?.runId ?? "")).not.toContain(escapee);
    await terminateAllRuns(); // the stop takes the timeout's path: the hook is still running
    const { result } = await running;
    expect(result).toMatchObject({ outcome: "error", errorKind: "stopped" });
    expect(alive(escapee)).toBe(false);
    expect(result.leftoverProcesses).toBeGreaterThanOrEqual(1);
  });

  it("once the hook has exited its parent link is gone: only a leader still running is walked", async () => {
    const pidFile = path.join(tmp, `escapee-${randomUUID()}`);
    const hook = spawn("bash", [path.join(FIXTURES, "escape-bare.sh"), pidFile], { detached: true, stdio: "ignore" });
    const pgid = hook.pid ?? -1;
    const escapee = await escapeeOf(pidFile);
    expect(await terminateGroup(pgid, { graceMs: 500 })).not.toContain(escapee);
    expect(alive(escapee)).toBe(true); // an orphan now: nothing ties it to the run any more

    const again = spawn("bash", [path.join(FIXTURES, "escape-bare.sh"), `${pidFile}.2`], {
      detached: true,
      stdio: "ignore",
    });
    const second = await escapeeOf(`${pidFile}.2`);
    expect(await terminateGroup(again.pid ?? -1, { graceMs: 500, leaderRunning: true })).toContain(second);
    expect(alive(second)).toBe(false);
  });
});
