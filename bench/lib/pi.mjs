// Real pi (the dev dependency) in RPC mode, as the pi benches start it: `--offline`, no session, no
// extension but the ones asked for, a home of its own, no PI_* variable of the bench's environment.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { sleep } from "./stats.mjs";
import { makeTempRoot } from "./team.mjs";

const repo = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
export const PI_CLI = path.join(repo, "node_modules", "@mariozechner", "pi-coding-agent", "dist", "cli.js");

/** Exits with a word to the user when pi is not installed (a clone without `npm ci`). */
export function requirePi(bench) {
  if (existsSync(PI_CLI)) return;
  console.error(`${bench}: pi is not installed (${PI_CLI} is missing: run npm ci)`);
  process.exit(2);
}

export function piVersion() {
  return JSON.parse(readFileSync(path.join(path.dirname(PI_CLI), "..", "package.json"), "utf8")).version;
}

/** A temp root with pi's home and a hooks dir whose on_task_completed.sh is `exit 0`. */
export function makePiRoot(prefix) {
  const root = makeTempRoot(prefix);
  const home = path.join(root, "home");
  mkdirSync(home, { recursive: true });
  const hooksDir = path.join(root, "hooks");
  mkdirSync(hooksDir);
  writeFileSync(path.join(hooksDir, "on_task_completed.sh"), "#!/bin/sh\nexit 0\n", { mode: 0o755 });
  return { root, home, hooksDir };
}

/** The bench's environment without any PI_* variable: pi and the extension see only what a bench sets. */
export function cleanEnv() {
  const env = {};
  for (const [name, value] of Object.entries(process.env))
    if (value !== undefined && !name.startsWith("PI_")) env[name] = value;
  return env;
}

/**
 * Starts pi in RPC mode with `args` (e.g. `-e <extension>`) and `env` over a clean environment.
 * `lines` collects its JSON lines as `{ at, line }` (`at`: performance.now()); `waitFor(what, pred,
 * from)` resolves with the first one from index `from` on that matches; `send(command)` writes an RPC
 * command and returns its id; `stop()` closes stdin (pi exits on its own) and waits for the exit.
 */
export function startPi({ cwd, home, args = [], env = {} }) {
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    [PI_CLI, "--mode", "rpc", "--no-session", "--no-extensions", "--offline", ...args],
    {
      cwd,
      env: { ...cleanEnv(), HOME: home, PI_OFFLINE: "1", NO_COLOR: "1", ...env },
      stdio: ["pipe", "pipe", "pipe"],
    },
  );
  const lines = [];
  let buffer = "";
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d) => {
    stderr += d;
    if (stderr.length > 200_000) stderr = stderr.slice(-100_000);
  });
  child.stdout.setEncoding("utf8").on("data", (chunk) => {
    buffer += chunk;
    for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
      const text = buffer.slice(0, end);
      buffer = buffer.slice(end + 1);
      try {
        lines.push({ at: performance.now(), line: JSON.parse(text) });
      } catch {
        // not a JSON line
      }
    }
  });
  const exited = new Promise((resolve) => child.on("close", resolve));
  const waitFor = async (what, pred, from = 0, timeoutMs = 30_000) => {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const hit = lines.slice(from).find((l) => pred(l.line));
      if (hit) return hit;
      if (child.exitCode !== null || performance.now() > deadline)
        throw new Error(`pi: no ${what} (exit ${child.exitCode}); stderr: ${stderr.slice(-1500)}`);
      await sleep(5);
    }
  };
  let seq = 0;
  const send = (command) => {
    const id = `b${++seq}`;
    child.stdin.write(`${JSON.stringify({ ...command, id })}\n`);
    return id;
  };
  /** Asks `/gates status` until it says watching (at most 200 asks, 25 ms apart); the line's `at`. */
  const untilWatching = async () => {
    for (let ask = 0; ask < 200; ask++) {
      const before = lines.length;
      send({ type: "prompt", message: "/gates status" });
      const notice = await waitFor(
        "/gates status",
        (l) => l.type === "extension_ui_request" && l.method === "notify" && /^quality gates: /.test(String(l.message)),
        before,
      );
      if (/^quality gates: watching/.test(String(notice.line.message))) return notice.at;
      await sleep(25);
    }
    throw new Error("the gates never said watching");
  };
  const stop = async () => {
    child.stdin.end();
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    await exited;
    clearTimeout(timer);
  };
  return { child, pid: child.pid, t0, lines, waitFor, send, untilWatching, stop, stderr: () => stderr };
}
