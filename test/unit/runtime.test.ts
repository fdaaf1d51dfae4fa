/**
 * The runtime (runner/runtime.ts): one object, built once, holding the clock, the lock timeout, the sent
 * logs, the retry waits, the spawn listener and the test pause. The test pause is the runtime's alone:
 * a run waits at it when the runtime carries one, and never because of the environment (only the bin
 * reads `PI_TEAMS_HOOKS_TEST_PAUSE_DIR`, into the runtime it builds). Real hooks, real files.
 */
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { HookCommand } from "../../extensions/teams-hooks/contract/hook-run.js";
import { runHook } from "../../extensions/teams-hooks/runner/run-hook.js";
import {
  RETRY_POLICY_MS,
  type SpawnInfo,
  alsoOnSpawn,
  createRuntime,
} from "../../extensions/teams-hooks/runner/runtime.js";
import { DEFAULT_LOCK_TIMEOUT_MS } from "../../extensions/teams-hooks/team/lock.js";
import { makeInvocation } from "../helpers/invocation.js";
import { fileTempDir } from "../helpers/temp-team.js";

const PASS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/hooks/pass.sh");
const gate: HookCommand = { hookPath: PASS, command: "bash", args: [PASS] };
const tmp = fileTempDir("runtime-test-");
const VARIABLE = "PI_TEAMS_HOOKS_TEST_PAUSE_DIR";
const before = process.env[VARIABLE];

afterEach(() => {
  if (before === undefined) delete process.env[VARIABLE];
  else process.env[VARIABLE] = before;
});

function freshDir(name: string): string {
  return mkdtempSync(path.join(tmp, `${name}-`));
}

describe("the test pause", () => {
  it("is the runtime's: a run waits at it until its go, then runs", async () => {
    const dir = freshDir("pause");
    const runId = randomUUID();
    let done = false;
    const running = runHook(gate, makeInvocation(), {
      cwd: tmp,
      timeoutMs: 20_000,
      runId,
      runtime: createRuntime({ testPause: dir }),
    }).finally(() => {
      done = true;
    });
    await vi.waitFor(() => expect(existsSync(path.join(dir, `${runId}.paused`))).toBe(true), { timeout: 10_000 });
    expect(done).toBe(false);
    writeFileSync(path.join(dir, `${runId}.go`), "");
    const result = await running;
    expect(result.outcome).toBe("passed");
  });

  it("is never read from the environment below the bin: the variable alone pauses nothing", async () => {
    const dir = freshDir("env");
    process.env[VARIABLE] = dir;
    const result = await runHook(gate, makeInvocation(), { cwd: tmp, timeoutMs: 5_000, runId: randomUUID() });
    expect(result.outcome).toBe("passed");
    expect(result.timedOut).toBe(false);
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe("createRuntime", () => {
  it("fills in the defaults, frozen, with one sent log per team dir", () => {
    const runtime = createRuntime();
    expect(runtime.lockTimeoutMs).toBe(DEFAULT_LOCK_TIMEOUT_MS);
    expect(runtime.retry.policyMs).toEqual(RETRY_POLICY_MS);
    expect(runtime.retry.writeMs).toEqual({ first: 1_000, max: 30_000 });
    expect(runtime.testPause).toBeNull();
    expect(runtime.onSpawn).toBeNull();
    expect(Object.isFrozen(runtime)).toBe(true);
    const a = freshDir("team-a");
    const b = freshDir("team-b");
    expect(runtime.sentLog(a)).toBe(runtime.sentLog(a));
    expect(runtime.sentLog(a)).not.toBe(runtime.sentLog(b));
    expect(createRuntime().sentLog(a)).not.toBe(runtime.sentLog(a));
  });

  it("takes the parts given; alsoOnSpawn tells the listener it had, then the new one", () => {
    const told: string[] = [];
    const now = new Date("2026-01-02T03:04:05.000Z");
    const runtime = createRuntime({
      now: () => now,
      lockTimeoutMs: 300,
      retryPolicyMs: [100, 100],
      onSpawn: (info) => told.push(`first ${info.key}`),
    });
    expect(runtime.now()).toBe(now);
    expect(runtime.lockTimeoutMs).toBe(300);
    expect(runtime.retry.policyMs).toEqual([100, 100]);
    const both = alsoOnSpawn(runtime, (info: SpawnInfo) => told.push(`second ${info.key}`));
    both.onSpawn?.({ pid: 1, runId: "r", hook: "on_task_completed.sh", key: "task_completed:1:x" });
    expect(told).toEqual(["first task_completed:1:x", "second task_completed:1:x"]);
    expect(both.now()).toBe(now);
    expect(both.sentLog(tmp)).toBe(runtime.sentLog(tmp));
  });
});
