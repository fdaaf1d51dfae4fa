import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, readdir, rm, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { isHooksError } from "../../extensions/teams-hooks/contract/errors.js";
import { tryLeaderLock } from "../../extensions/teams-hooks/team/leader-lock.js";
import { inspectLock, withLock } from "../../extensions/teams-hooks/team/lock.js";
import {
  compileModules,
  runWorker,
  startWorker,
  type CompiledModules,
  type WorkerRun,
} from "../fixtures/workers/modules.js";

let modules: CompiledModules;
let dir: string;
const live: WorkerRun[] = [];

beforeAll(async () => {
  modules = await compileModules(["team/lock", "team/leader-lock"]);
});
afterAll(async () => {
  await modules.cleanup();
});
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "lock-test-"));
});
afterEach(async () => {
  for (const worker of live.splice(0)) {
    worker.child.kill("SIGKILL");
    await worker.done;
  }
  await rm(dir, { recursive: true, force: true });
});

/** A pid that certainly belonged to a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  return Number(child.stdout);
}

async function leftovers(): Promise<string[]> {
  return (await readdir(dir)).filter((name) => name.includes(".lock") || name.includes(".stale."));
}

async function countWithWorkers(file: string, workers: number, iterations: number): Promise<number> {
  const goFile = path.join(dir, "go");
  const runs = Array.from({ length: workers }, () => runWorker(modules, "lock-counter", { file, iterations, goFile }));
  await writeFile(goFile, ""); // release them together: maximum contention
  await Promise.all(runs);
  return Number((await readFile(file, "utf8")).trim());
}

describe("withLock across processes", () => {
  it("8 processes × 50 read-modify-writes of one counter lose no increment", async () => {
    const file = path.join(dir, "counter");
    expect(await countWithWorkers(file, 8, 50)).toBe(400);
    expect(await leftovers()).toEqual([]);
  });

  it("8 processes meeting a stale lock take it over once and still lose nothing", async () => {
    const file = path.join(dir, "counter");
    await writeFile(
      `${file}.lock`,
      JSON.stringify({ pid: deadPid(), createdAt: new Date().toISOString(), label: "crashed" }),
    );
    expect(await countWithWorkers(file, 8, 25)).toBe(200);
    expect(await leftovers()).toEqual([]);
  });

  it("a lock file is never seen without its holder: one killed at any moment leaves no pid-less lock", async () => {
    // Another process takes and releases the lock 400 times while this one reads the lock file as fast
    // as it can: an empty (or partly written) lock would block the file for a minute after a SIGKILL.
    const file = path.join(dir, "counter");
    const run = startWorker(modules, "lock-counter", { file, iterations: 400 });
    live.push(run);
    let finished = false;
    void run.done.then(() => (finished = true));
    let held = 0;
    const bad: string[] = [];
    while (!finished) {
      const until = performance.now() + 20;
      while (performance.now() < until) {
        let text: string;
        try {
          text = readFileSync(`${file}.lock`, "utf8");
        } catch {
          continue; // not held
        }
        held += 1;
        try {
          if (typeof (JSON.parse(text) as { pid?: unknown }).pid !== "number") bad.push(text);
        } catch {
          bad.push(text);
        }
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect((await run.done).code).toBe(0);
    expect(Number((await readFile(file, "utf8")).trim())).toBe(400);
    expect(held).toBeGreaterThan(100); // the reader did see the lock held, again and again
    expect(bad).toEqual([]);
    expect(await leftovers()).toEqual([]);
  });
});

describe("the leader lock across processes", () => {
  it("8 processes meeting a stale leader lock: exactly one takes it over (never two leaders, or a decide beside a leader)", async () => {
    const teamDir = path.join(dir, "team");
    const stateDir = path.join(teamDir, "hook-state");
    await mkdir(stateDir, { recursive: true });
    await writeFile(
      path.join(stateDir, "leader.lock"),
      JSON.stringify({ pid: deadPid(), createdAt: new Date().toISOString(), label: "pi-teams-hooks watch" }),
    );
    const goFile = path.join(dir, "go");
    // Each holds what it got for 2 s: longer than the contenders take to try, so a second holder would overlap the
    // first.
    const runs = Array.from({ length: 8 }, (_, i) =>
      runWorker(modules, "leader-lock", { teamDir, goFile, holdMs: 2_000, label: `contender ${i}` }),
    );
    await writeFile(goFile, "");
    const results = (await Promise.all(runs)) as Array<{ got: boolean }>;
    expect(results.filter((r) => r.got)).toHaveLength(1);
    expect((await readdir(stateDir)).filter((name) => name.includes(".stale.") || name.includes("takeover"))).toEqual(
      [],
    );
  });
});

/** Sets a file's times to `ms` ago. */
async function age(file: string, ms: number): Promise<void> {
  const then = new Date(Date.now() - ms);
  await utimes(file, then, then);
}

/** A contender in its own process: withLock on `file`, waiting at most `timeoutMs`. */
function contend(file: string, timeoutMs: number): Promise<{ got: boolean; code?: string; message?: string }> {
  return runWorker(modules, "try-lock", { file, timeoutMs });
}

describe("the stale rule, with another runtime's locks (docs/team-dir.md)", () => {
  it("a bare pid (`12345\\n`) of a live holder is never taken over, at any age; once it is gone, at once", async () => {
    const file = path.join(dir, "data.json");
    const lock = `${file}.lock`;
    // Another runtime's lock: its pid, plain, created exclusively (noclobber), held while it works.
    const script = 'set -o noclobber; echo $$ > "$0" && exec sleep 120';
    const holder = spawn("bash", ["-c", script, lock], { stdio: "ignore" });
    const exited = new Promise((resolve) => holder.once("exit", resolve));
    try {
      await vi.waitFor(async () => expect(await readFile(lock, "utf8")).toBe(`${holder.pid}\n`), { timeout: 5_000 });
      await age(lock, 10 * 60_000);
      const live = { held: true, stale: false, holderAlive: true, holder: { pid: holder.pid } };
      expect(await inspectLock(file)).toMatchObject(live);
      const refused = await contend(file, 500);
      expect(refused).toMatchObject({ got: false, code: "E_LOCK_TIMEOUT" });
      expect(refused.message).toContain(`held by pid ${holder.pid}`);
      expect(await readFile(lock, "utf8")).toBe(`${holder.pid}\n`);
    } finally {
      holder.kill("SIGKILL");
      await exited;
    }
    const gone = { held: true, stale: true, holderAlive: false, staleReason: `process ${holder.pid} is gone` };
    expect(await inspectLock(file)).toMatchObject(gone);
    const started = Date.now();
    expect(await contend(file, 5_000)).toEqual({ got: true });
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(await leftovers()).toEqual([]);
  });

  it.each([
    ["garbage", "garbage, not a pid\n"],
    ["a pid in a form not read", "pid=12345 host=a\n"],
    ["empty (being written)", ""],
  ])("a lock holding %s is respected until it is 60 s old, then taken over", async (_name, content) => {
    const file = path.join(dir, "data.json");
    const lock = `${file}.lock`;
    await writeFile(lock, content);
    await age(lock, 50_000);
    expect(await inspectLock(file)).toMatchObject({ held: true, stale: false, holder: { pid: null } });
    expect(await contend(file, 500)).toMatchObject({ got: false, code: "E_LOCK_TIMEOUT" });
    expect(await readFile(lock, "utf8")).toBe(content);
    await age(lock, 61_000);
    const staleReason = expect.stringMatching(/^no readable pid and 6\d s old$/);
    expect(await inspectLock(file)).toMatchObject({ held: true, stale: true, staleReason });
    expect(await contend(file, 500)).toEqual({ got: true });
    expect(await leftovers()).toEqual([]);
  });

  it("the leader lock follows the same rule: a live bare pid holds it, garbage waits for 60 s", async () => {
    const teamDir = path.join(dir, "team");
    const lock = path.join(teamDir, "hook-state", "leader.lock");
    await mkdir(path.dirname(lock), { recursive: true });
    const other = spawn("sleep", ["120"], { stdio: "ignore" });
    const exited = new Promise((resolve) => other.once("exit", resolve));
    try {
      await writeFile(lock, `${other.pid}\n`);
      await age(lock, 10 * 60_000);
      expect(await runWorker(modules, "leader-lock", { teamDir })).toEqual({ got: false, holder: other.pid });
    } finally {
      other.kill("SIGKILL");
      await exited;
    }
    expect(await runWorker(modules, "leader-lock", { teamDir })).toEqual({ got: true });

    await writeFile(lock, "garbage\n");
    await age(lock, 50_000);
    const refused: unknown = await tryLeaderLock(teamDir).catch((caught: unknown) => caught);
    expect(isHooksError(refused) && refused.code).toBe("E_TEAM_DIR");
    const message = refused instanceof Error ? refused.message : "";
    expect(message).toMatch(/holds no readable pid and is 5\d s old: it is taken over once 60 s old/);
    expect(await readFile(lock, "utf8")).toBe("garbage\n");
    await age(lock, 61_000);
    expect(await runWorker(modules, "leader-lock", { teamDir })).toEqual({ got: true });
  });
});

describe("withLock in one process", () => {
  it("writes {pid, createdAt, label} while held and removes the lock after, also when fn throws", async () => {
    const file = path.join(dir, "data.json");
    const content = await withLock(file, () => readFile(`${file}.lock`, "utf8"), { label: "test" });
    expect(JSON.parse(content)).toEqual({ pid: process.pid, createdAt: expect.any(String), label: "test" });
    await expect(withLock(file, () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(await leftovers()).toEqual([]);
  });

  it("serialises concurrent callers of the same process", async () => {
    const file = path.join(dir, "data.json");
    let inside = 0;
    let maxInside = 0;
    await Promise.all(
      Array.from({ length: 20 }, () =>
        withLock(file, async () => {
          maxInside = Math.max(maxInside, ++inside);
          // held across a turn of the event loop: no other caller may enter meanwhile
          await new Promise((resolve) => setTimeout(resolve, 1));
          inside -= 1;
        }),
      ),
    );
    expect(maxInside).toBe(1);
  });

  it("takes over the lock of a process that was killed while holding it", async () => {
    const file = path.join(dir, "data.json");
    const holder = startWorker(modules, "hold-lock", { file, label: "doomed" });
    live.push(holder);
    expect(JSON.parse(await holder.firstLine)).toMatchObject({ locked: true });
    holder.child.kill("SIGKILL");
    await holder.done;
    const before = await inspectLock(file);
    expect(before).toMatchObject({ held: true, stale: true, holderAlive: false, holder: { label: "doomed" } });
    const started = Date.now();
    await withLock(file, () => undefined, { timeoutMs: 5_000 });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await leftovers()).toEqual([]);
  });

  it("A1: takes over a lock without a readable pid (its writer died) once 60 s old, at any wait", async () => {
    const file = path.join(dir, "data.json");
    await writeFile(`${file}.lock`, "");
    // Fresh: respected, even by a contender that waits only 400 ms.
    expect(await inspectLock(file)).toMatchObject({ held: true, stale: false, holder: { pid: null } });
    const error: unknown = await withLock(file, () => undefined, { timeoutMs: 400 }).catch((caught: unknown) => caught);
    expect(isHooksError(error) && error.code).toBe("E_LOCK_TIMEOUT");
    expect(error instanceof Error && error.message).toContain("no readable pid");
    expect(error instanceof Error && error.message).toContain("it is taken over once 60 s old");
    const aged = new Date(Date.now() - 61_000);
    await utimes(`${file}.lock`, aged, aged);
    expect(await inspectLock(file)).toMatchObject({
      held: true,
      stale: true,
      holderAlive: null,
      holder: { pid: null },
    });
    await withLock(file, () => undefined, { timeoutMs: 400 });
    expect(await leftovers()).toEqual([]);
  });

  it("gives up after timeoutMs with E_LOCK_TIMEOUT naming the lock file, its holder and a fix", async () => {
    const file = path.join(dir, "data.json");
    const holder = startWorker(modules, "hold-lock", { file, label: "busy worker" });
    live.push(holder);
    const { pid } = JSON.parse(await holder.firstLine) as { pid: number };
    const started = Date.now();
    const error: unknown = await withLock(file, () => undefined, { timeoutMs: 300 }).catch((caught: unknown) => caught);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(isHooksError(error) && error.code).toBe("E_LOCK_TIMEOUT");
    const message = error instanceof Error ? error.message : "";
    expect(message).toContain(`${file}.lock`);
    expect(message).toContain(`pid ${pid}`);
    expect(message).toContain("busy worker");
    expect(message).toContain("rm -f");
    expect(await inspectLock(file)).toMatchObject({ held: true, stale: false, holderAlive: true, holder: { pid } });
  });

  it("inspectLock reports a free lock", async () => {
    const file = path.join(dir, "data.json");
    expect(await inspectLock(file)).toEqual({ held: false, lockFile: `${file}.lock` });
  });
});
