/**
 * The spawn helper (spawn/helper.ts, spawn/spawner.py) against real processes: what a hook inherits
 * is what node:child_process gives it (each check runs both ways and compares), and the helper's own
 * life: it dies, it is missing, its leader dies, its last holder lets go. The runHook cases of
 * run.test.ts also run through it.
 */
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { runHook } from "../../extensions/teams-hooks/runner/run.js";
import { spawnHelperStatus, useSpawnHelper } from "../../extensions/teams-hooks/spawn/helper.js";
import { SPAWNER_ENV, startProcess, type HookProcess, type SpawnRequest } from "../../extensions/teams-hooks/spawn/process.js";
import { makeInvocation } from "../helpers/invocation.js";

const tmp = mkdtempSync(path.join(os.tmpdir(), "spawn-helper-test-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const DIST_HELPER = path.resolve("dist/teams-hooks/spawn/helper.js");
const DIST_PROCESS = path.resolve("dist/teams-hooks/spawn/process.js");

const pidsToKill: number[] = [];
afterEach(() => {
  for (const pid of pidsToKill.splice(0)) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
});

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

async function until(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

interface Ran {
  pid: number;
  stdout: string;
  stderr: string;
  code: number | null;
  signal: string | null;
}

async function collect(started: HookProcess, stdin = ""): Promise<Ran> {
  let stdout = "";
  let stderr = "";
  started.stdout.onData((chunk) => (stdout += chunk.toString("utf8")));
  started.stderr.onData((chunk) => (stderr += chunk.toString("utf8")));
  started.writeStdin(stdin);
  const exit = await started.exited;
  await Promise.all([started.stdout.closed, started.stderr.closed]);
  started.release();
  return { pid: started.pid, stdout, stderr, code: exit.code, signal: exit.signal };
}

/** Runs `request` in this process and through the helper; both results, the helper's checked to be its. */
async function bothWays(request: SpawnRequest, stdin = ""): Promise<{ node: Ran; helper: Ran }> {
  const inProcess = await startProcessWithout(request);
  if (!inProcess.ok) throw inProcess.error;
  const node = await collect(inProcess.process, stdin);
  const release = useSpawnHelper();
  try {
    const viaHelper = await startProcess(request);
    if (!viaHelper.ok) throw viaHelper.error;
    const helper = await collect(viaHelper.process, stdin);
    expect(spawnHelperStatus().pid).toBeGreaterThan(0);
    return { node, helper };
  } finally {
    release();
  }
}

async function startProcessWithout(request: SpawnRequest): ReturnType<typeof startProcess> {
  process.env[SPAWNER_ENV] = "node";
  try {
    return await startProcess(request);
  } finally {
    delete process.env[SPAWNER_ENV];
  }
}

const baseEnv = { PATH: process.env.PATH ?? "/usr/bin:/bin" };

describe("what a hook inherits, in this process and through the helper", () => {
  it("its own session and process group, signals 1–31 at their default disposition, an empty signal mask", async () => {
    const request = { command: "bash", args: ["-c", "read -r _ _ _ _ pgrp sid _ < /proc/$$/stat; echo $$ $pgrp $sid; grep -E '^Sig(Ign|Blk):' /proc/$$/status"], cwd: tmp, env: baseEnv };
    const { node, helper } = await bothWays(request);
    for (const ran of [node, helper]) {
      const [first, blocked, ignored] = ran.stdout.split("\n");
      const [pid, pgrp, sid] = (first ?? "").split(" ").map(Number);
      expect(pid).toBe(ran.pid);
      expect(pgrp).toBe(ran.pid);
      expect(sid).toBe(ran.pid);
      expect(blocked).toMatch(/^SigBlk:\s+0{16}$/);
      // Bit n-1 is signal n. Through posix_spawn, glibc leaves its own two signals (32, 33: no
      // program can name them) ignored; every signal a hook can trap is at its default.
      expect(BigInt(`0x${ignored?.split(/\s+/)[1]}`) & 0x7fffffffn).toBe(0n);
    }
  });

  it("exactly the environment asked for, values with newlines, '=' and UTF-8 included", async () => {
    const env = { ...baseEnv, PLAIN: "1", TRICKY: "a=b\nsecond line ✓", EMPTY: "" };
    const { node, helper } = await bothWays({ command: process.execPath, args: ["-e", "process.stdout.write(JSON.stringify(process.env))"], cwd: tmp, env });
    expect(JSON.parse(helper.stdout)).toEqual(env);
    expect(JSON.parse(node.stdout)).toEqual(env);
  });

  it("the working directory, and a command looked up in the hook's own PATH", async () => {
    const bin = mkdtempSync(path.join(tmp, "bin-"));
    writeFileSync(path.join(bin, "only-here"), "#!/bin/sh\npwd\n", { mode: 0o755 });
    const { node, helper } = await bothWays({ command: "only-here", args: [], cwd: bin, env: { PATH: `/nonexistent:${bin}` } });
    expect(helper.stdout.trim()).toBe(bin);
    expect(node.stdout.trim()).toBe(bin);
  });

  it("a megabyte on stdin reaches a hook that reads it, and a hook that does not read is no error", async () => {
    const big = "x".repeat(1 << 20);
    const reads = await bothWays({ command: "bash", args: ["-c", "wc -c"], cwd: tmp, env: baseEnv }, big);
    expect(reads.helper.stdout.trim()).toBe(String(1 << 20));
    expect(reads.node.stdout.trim()).toBe(String(1 << 20));
    const ignores = await bothWays({ command: "bash", args: ["-c", "exit 3"], cwd: tmp, env: baseEnv }, big);
    expect(ignores.helper.code).toBe(3);
    expect(ignores.node.code).toBe(3);
  });

  it("an executable without #! runs with /bin/sh, as execvp runs it", async () => {
    const bin = mkdtempSync(path.join(tmp, "bin-"));
    writeFileSync(path.join(bin, "no-shebang"), "echo ran without a shebang\n", { mode: 0o755 });
    const { node, helper } = await bothWays({ command: path.join(bin, "no-shebang"), args: [], cwd: tmp, env: baseEnv });
    expect(node).toMatchObject({ code: 0, stdout: "ran without a shebang\n" });
    expect(helper).toMatchObject({ code: 0, stdout: "ran without a shebang\n" });
  });

  it("a directory named like the command on PATH is EACCES, as node:child_process says", async () => {
    const bin = mkdtempSync(path.join(tmp, "bin-"));
    mkdirSync(path.join(bin, "a-directory"));
    const request = { command: "a-directory", args: [], cwd: tmp, env: { PATH: bin } };
    const node = await startProcessWithout(request);
    const release = useSpawnHelper();
    try {
      expect(node).toMatchObject({ ok: false, error: { code: "EACCES" } });
      expect(await startProcess(request)).toMatchObject({ ok: false, error: { code: "EACCES" } });
    } finally {
      release();
    }
  });

  it.each([
    ["a command not on PATH", { command: "no-such-command-here", args: [] as string[] }, "ENOENT"],
    ["a missing absolute command", { command: "/nonexistent/hook", args: [] as string[] }, "ENOENT"],
  ])("%s fails to start with node's code and wording", async (_name, partial, code) => {
    const request = { ...partial, cwd: tmp, env: baseEnv };
    const node = await startProcessWithout(request);
    const release = useSpawnHelper();
    try {
      const helper = await startProcess(request);
      expect(helper.ok).toBe(false);
      expect(node.ok).toBe(false);
      if (helper.ok || node.ok) return;
      expect(helper.error).toMatchObject({ code, message: (node.error as Error).message });
    } finally {
      release();
    }
  });

  it("a file found on PATH without an execute bit is EACCES, a missing working directory ENOENT", async () => {
    const bin = mkdtempSync(path.join(tmp, "bin-"));
    writeFileSync(path.join(bin, "not-executable"), "#!/bin/sh\n", { mode: 0o644 });
    chmodSync(path.join(bin, "not-executable"), 0o644);
    const release = useSpawnHelper();
    try {
      // Root passes access(X_OK) only where some execute bit is set, so this holds as root too.
      const denied = await startProcess({ command: "not-executable", args: [], cwd: tmp, env: { PATH: bin } });
      expect(denied).toMatchObject({ ok: false, error: { code: "EACCES" } });
      const noCwd = await startProcess({ command: "bash", args: [], cwd: path.join(tmp, "gone"), env: baseEnv });
      expect(noCwd).toMatchObject({ ok: false, error: { code: "ENOENT" } });
      expect(spawnHelperStatus().pid).toBeGreaterThan(0);
    } finally {
      release();
    }
  });
});

describe("the helper's own life", () => {
  let release = (): void => undefined;
  beforeAll(() => {
    release = useSpawnHelper();
  });
  afterAll(() => release());

  it("killed under a running hook: that run ends as an internal error naming the helper, its group is ended, the next run gets a new helper", async () => {
    const first = await runHook({ hookPath: "inline", command: "bash", args: ["-c", "echo started; sleep 300"] }, makeInvocation(), {
      cwd: tmp,
      timeoutMs: 60_000,
      onSpawn: ({ pid }) => {
        pidsToKill.push(pid);
        const helper = spawnHelperStatus().pid;
        expect(helper).toBeGreaterThan(0);
        setTimeout(() => process.kill(helper as number, "SIGKILL"), 200);
      },
    }).then((result) => ({ result, hookPid: pidsToKill.at(-1) as number }));
    expect(first.result).toMatchObject({ outcome: "error", errorKind: "internal" });
    expect(first.result.error).toMatch(/spawn helper \(\S*python3\S*\) exited: killed by SIGKILL/);
    await until("the hook's group to be gone", () => !alive(first.hookPid));

    const second = await runHook({ hookPath: "inline", command: "bash", args: ["-c", "echo $PPID"] }, makeInvocation(), { cwd: tmp, timeoutMs: 10_000 });
    expect(second).toMatchObject({ outcome: "passed" });
    const status = spawnHelperStatus();
    expect(status).toMatchObject({ disabled: undefined, deaths: expect.any(Number) });
    expect(second.stdout.trim()).toBe(String(status.pid));
  });
});

/** A Node process that holds the helper, like a leader, and runs `body` (ESM, the built modules). */
function holder(body: string, env: NodeJS.ProcessEnv = process.env): ReturnType<typeof spawn> {
  const script = `import { useSpawnHelper, spawnHelperStatus } from ${JSON.stringify(DIST_HELPER)};
import { startProcess } from ${JSON.stringify(DIST_PROCESS)};
const release = useSpawnHelper();
${body}`;
  return spawn(process.execPath, ["--input-type=module", "-e", script], { env, stdio: ["ignore", "pipe", "pipe"] });
}

function exitOf(child: ReturnType<typeof spawn>): Promise<number | null> {
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

async function lines(child: ReturnType<typeof spawn>, count: number): Promise<string[]> {
  let out = "";
  child.stdout?.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")));
  await until(`${count} line(s) from the holder`, () => out.split("\n").length > count);
  return out.split("\n").slice(0, count);
}

describe("the helper under load", () => {
  it("a run released while another starts never holds up a third (no read waits on a reused pipe)", async () => {
    const release = useSpawnHelper();
    try {
      const env = baseEnv;
      const talker = await startProcess({ command: "yes", args: [], cwd: tmp, env });
      if (!talker.ok) throw talker.error;
      pidsToKill.push(talker.process.pid);
      talker.process.stdout.onData(() => undefined);
      talker.process.writeStdin("");
      await new Promise((resolve) => setTimeout(resolve, 100));
      // Released (its pipes closed in the helper) and a quiet hook started in the same moment: the
      // quiet one's pipes may get the released one's descriptor numbers within one pass of the helper.
      talker.process.release();
      const quiet = startProcess({ command: "sleep", args: ["60"], cwd: tmp, env });
      const started = await quiet;
      if (!started.ok) throw started.error;
      pidsToKill.push(started.process.pid);
      // Without the fix the helper sat in a blocking read on the quiet hook's stdout for its 60 s.
      const third = await Promise.race([startProcess({ command: "true", args: [], cwd: tmp, env }), new Promise<"stuck">((resolve) => setTimeout(() => resolve("stuck"), 20_000))]);
      expect(third).toMatchObject({ ok: true });
      if (third !== "stuck" && third.ok) await collect(third.process);
    } finally {
      release();
    }
  }, 40_000);

  it("with no file descriptors left, a start fails with EMFILE and the process lives on", async () => {
    const child = spawn("bash", ["-c", `ulimit -n 200; exec ${JSON.stringify(process.execPath)} --input-type=module -e "$0"`, `import { openSync } from "node:fs";
import { useSpawnHelper } from ${JSON.stringify(DIST_HELPER)};
import { startProcess } from ${JSON.stringify(DIST_PROCESS)};
const release = useSpawnHelper();
const fds = [];
try { for (;;) fds.push(openSync("/dev/null", "r")); } catch {}
const s = await startProcess({ command: "true", args: [], cwd: "/", env: { PATH: process.env.PATH } });
setTimeout(() => { console.log(JSON.stringify({ ok: s.ok, code: s.error?.code })); release(); }, 300);`], { stdio: ["ignore", "pipe", "pipe"] });
    const exited = exitOf(child); // listened for now: it may come while the line is being waited for
    const [line] = await lines(child, 1);
    const exit = await exited;
    expect(JSON.parse(line ?? "{}")).toEqual({ ok: false, code: "EMFILE" });
    expect(exit).toBe(0);
  });
});

describe("warming the helper (in a process of its own, so nothing else holds one)", () => {
  it("starts it without a hook while held, and not once nobody holds it", async () => {
    const child = holder(`import { warmSpawnHelper } from ${JSON.stringify(DIST_HELPER)};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
warmSpawnHelper(10);
for (let i = 0; i < 250 && spawnHelperStatus().pid === undefined; i++) await sleep(20);
const warmed = spawnHelperStatus().pid;
release();
warmSpawnHelper(10);
await sleep(300);
console.log(JSON.stringify({ warmed, after: spawnHelperStatus().pid ?? null }));`);
    const exited = exitOf(child);
    const [line] = await lines(child, 1);
    expect(JSON.parse(line ?? "{}")).toEqual({ warmed: expect.any(Number), after: null });
    expect(await exited).toBe(0);
  });
});

describe("the helper and the process that holds it", () => {
  it("ends when its leader is killed with SIGKILL, and leaves the leader's hook running as before", async () => {
    const child = holder(`const s = await startProcess({ command: "sleep", args: ["300"], cwd: "/", env: { PATH: process.env.PATH } });
console.log(spawnHelperStatus().pid, s.process.pid);
setInterval(() => undefined, 1000);`);
    const [line] = await lines(child, 1);
    const [helperPid, hookPid] = (line ?? "").split(" ").map(Number) as [number, number];
    pidsToKill.push(hookPid);
    expect(alive(helperPid)).toBe(true);
    child.kill("SIGKILL");
    await until("the helper to end", () => !alive(helperPid));
    expect(alive(hookPid)).toBe(true); // the next leader's start ends it (its ledger knows the group)
  });

  it("ends when the last holder lets go, and the holder's process can exit", async () => {
    const child = holder(`const s = await startProcess({ command: "true", args: [], cwd: "/", env: { PATH: process.env.PATH } });
s.process.writeStdin("");
await s.process.exited;
s.process.release();
console.log(spawnHelperStatus().pid);
release();`);
    const exited = exitOf(child); // listened for now: it may come while the line is being waited for
    const [line] = await lines(child, 1);
    const exit = await exited;
    expect(exit).toBe(0);
    await until("the helper to end", () => !alive(Number(line)));
  });

  it("PI_TEAMS_HOOKS_PYTHON names the interpreter: one that is not there leaves the hooks in the leader's process", async () => {
    const child = holder(
      `const s = await startProcess({ command: "bash", args: ["-c", "echo ran"], cwd: "/", env: { PATH: process.env.PATH } });
let out = ""; s.process.stdout.onData((c) => (out += c)); s.process.writeStdin("");
await s.process.exited; await s.process.stdout.closed; s.process.release();
console.log(JSON.stringify({ out: out.trim(), status: spawnHelperStatus() }));
release();`,
      { ...process.env, PI_TEAMS_HOOKS_PYTHON: path.join(tmp, "no-such-python") },
    );
    const [line] = await lines(child, 1);
    const report = JSON.parse(line ?? "{}") as { out: string; status: { disabled?: string } };
    expect(report.out).toBe("ran");
    expect(report.status.disabled).toContain(`spawn ${path.join(tmp, "no-such-python")} ENOENT`);
  });

  it("without python3 on PATH every hook still starts, in the leader's process, and the reason is kept", async () => {
    const noPython = mkdtempSync(path.join(tmp, "path-"));
    for (const tool of ["bash", "true"]) {
      const found = spawnSync("bash", ["-c", `command -v ${tool}`], { encoding: "utf8" }).stdout.trim();
      writeFileSync(path.join(noPython, tool), `#!/bin/sh\nexec ${found} "$@"\n`, { mode: 0o755 });
    }
    const child = holder(
      `const s = await startProcess({ command: "bash", args: ["-c", "echo ran"], cwd: "/", env: { PATH: process.env.PATH } });
let out = ""; s.process.stdout.onData((c) => (out += c)); s.process.writeStdin("");
await s.process.exited; await s.process.stdout.closed; s.process.release();
console.log(JSON.stringify({ out: out.trim(), parent: s.process.pid > 0, status: spawnHelperStatus() }));
release();`,
      { ...process.env, PATH: noPython, PI_TEAMS_HOOKS_PYTHON: "" },
    );
    const [line] = await lines(child, 1);
    const report = JSON.parse(line ?? "{}") as { out: string; status: { disabled?: string } };
    expect(report.out).toBe("ran");
    expect(report.status.disabled).toMatch(/spawn helper \(python3\) could not be started: spawn python3 ENOENT/);
  });
});
