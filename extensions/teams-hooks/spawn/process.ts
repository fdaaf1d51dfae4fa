/**
 * A hook's process as the runner sees it, started either by node:child_process in this process or by
 * the spawn helper (helper.ts): the same session, process group, stdio and exit status either way
 * (node:child_process connects the stdio with socket pairs, the helper with pipes).
 *
 * `startProcess` picks: the helper while a leader holds it (`useSpawnHelper`) and it works, the
 * in-process spawn otherwise (a one-off `run`, doctor, `PI_TEAMS_HOOKS_SPAWNER=node`, or no python3).
 */
import { spawn } from "node:child_process";
import { SPAWNER_ENV, helperStart } from "./helper.js";

export { SPAWNER_ENV };

export interface SpawnRequest {
  command: string;
  args: readonly string[];
  cwd: string;
  env: Readonly<Record<string, string>>;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the exit status was lost (the spawn helper died first): why. */
  lost?: string;
}

/** One of the hook's output pipes. */
export interface OutputSource {
  /** Every chunk, in order; what arrived before the listener is delivered to it first. */
  onData(listener: (chunk: Buffer) => void): void;
  /** Resolves once the pipe is closed (every holder closed its end) or released. */
  readonly closed: Promise<void>;
}

export interface HookProcess {
  readonly pid: number;
  readonly stdout: OutputSource;
  readonly stderr: OutputSource;
  readonly exited: Promise<ExitStatus>;
  /** True until the exit status is known (the process is not reaped yet). */
  running(): boolean;
  /** Writes `data` to the hook's stdin and closes it; a hook that does not read is not an error. */
  writeStdin(data: string): void;
  /** Stops reading the output pipes and lets them go (a background child may still hold them). */
  release(): void;
}

export type Started = { ok: true; process: HookProcess } | { ok: false; error: unknown };

/** Starts a hook in its own process group with piped stdio. Never rejects: a failure to start is `ok: false`. */
export async function startProcess(request: SpawnRequest): Promise<Started> {
  return (await helperStart(request)) ?? nodeStart(request);
}

function nodeStart(request: SpawnRequest): Promise<Started> | Started {
  let child;
  try {
    child = spawn(request.command, request.args, { cwd: request.cwd, env: request.env, shell: false, detached: true, stdio: "pipe" });
  } catch (error) {
    return { ok: false, error }; // refused before any process existed (E2BIG, EINVAL): Node throws these
  }
  // ENOENT, EACCES and the like arrive as `error` with no pid; later errors (none that we provoke:
  // signals go to the group through process.kill) must not crash the leader either.
  const failed = new Promise<unknown>((resolve) => child.on("error", resolve));
  const pid = child.pid;
  if (pid === undefined) return failed.then((error) => ({ ok: false, error }));
  const exited = new Promise<ExitStatus>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  const source = (stream: NodeJS.ReadableStream): OutputSource => {
    stream.on("error", () => undefined); // a pipe error ends the capture early; `close` still follows
    return {
      onData: (listener) => stream.on("data", (chunk: Buffer | string) => listener(typeof chunk === "string" ? Buffer.from(chunk) : chunk)),
      closed: new Promise<void>((resolve) => stream.once("close", () => resolve())),
    };
  };
  const hook: HookProcess = {
    pid,
    stdout: source(child.stdout),
    stderr: source(child.stderr),
    exited,
    running: () => child.exitCode === null && child.signalCode === null,
    writeStdin: (data) => {
      // The hook may never read stdin, or exit first: EPIPE then is normal, not an error.
      child.stdin.on("error", () => undefined);
      child.stdin.end(data);
    },
    release: () => {
      for (const stream of [child.stdin, child.stdout, child.stderr]) stream.destroy();
    },
  };
  return { ok: true, process: hook };
}
