/**
 * Starting a hook's process: node:child_process, the one way every command starts a hook (the leader,
 * `run`, the pi extension), in its own session and process group, with exactly the environment
 * asked for. Its stdin is a file opened read-only (the run's context document, or a Claude Code
 * gate's input), so `/dev/stdin`, `cat`, `read` and seeking all work and there is no writer to feed
 * or to fail; stdout and stderr are pipes the runner drains.
 */
import { spawn } from "node:child_process";
import { closeSync, constants as fsConstants, openSync } from "node:fs";

interface SpawnRequest {
  command: string;
  args: readonly string[];
  cwd: string;
  env: Readonly<Record<string, string>>;
  /** The file the hook reads as its stdin (fd 0), opened read-only for it. */
  stdinFile: string;
  /** A pipe of ours on fd 3 (a standby's `go`: runner/standby.ts); the process closes it before the gate. */
  go?: boolean;
  /** Open files of ours the process gets after `go`, from fd 4 on (a held view's: runner/sandbox.ts). */
  fds?: readonly number[];
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
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
  /** Stops reading the output pipes and lets them go (a background child may still hold them). */
  release(): void;
  /** Our end of fd 3, when asked for (`go`). */
  readonly go?: NodeJS.WritableStream & { destroy(): void };
}

type Started = { ok: true; process: HookProcess } | { ok: false; error: unknown };

/** Starts a hook in its own process group. Never rejects: a failure to start is `ok: false`. */
export async function startProcess(request: SpawnRequest): Promise<Started> {
  let stdin: number;
  try {
    // O_NOFOLLOW: the runner just wrote this file itself (`wx`, 0600); never a link planted since.
    stdin = openSync(request.stdinFile, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
  } catch (error) {
    return { ok: false, error };
  }
  let child: ReturnType<typeof spawn>;
  try {
    child = spawn(request.command, request.args, {
      cwd: request.cwd,
      env: request.env,
      shell: false,
      detached: true,
      stdio: request.go ? [stdin, "pipe", "pipe", "pipe", ...(request.fds ?? [])] : [stdin, "pipe", "pipe"],
    });
  } catch (error) {
    return { ok: false, error }; // refused before any process existed (E2BIG, EINVAL): Node throws these
  } finally {
    // The child has its own copy (or none, if it never started): ours is not needed either way.
    closeSync(stdin);
  }
  // ENOENT, EACCES and the like arrive as `error` with no pid; later errors (none that we provoke:
  // signals go to the group through process.kill) must not crash the leader either.
  const failed = new Promise<unknown>((resolve) => child.on("error", resolve));
  const pid = child.pid;
  if (pid === undefined) return { ok: false, error: await failed };
  const exited = new Promise<ExitStatus>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  const source = (stream: NodeJS.ReadableStream): OutputSource => {
    stream.on("error", () => undefined); // a pipe error ends the capture early; `close` still follows
    return {
      onData: (listener) =>
        stream.on("data", (chunk: Buffer | string) => listener(typeof chunk === "string" ? Buffer.from(chunk) : chunk)),
      closed: new Promise<void>((resolve) => stream.once("close", () => resolve())),
    };
  };
  const { stdout, stderr } = child;
  if (!stdout || !stderr) return { ok: false, error: new Error("the hook's output pipes were not created") };
  const go = request.go ? (child.stdio[3] as import("node:net").Socket | null) : null;
  go?.on("error", () => undefined); // the process ended before `go`: its run starts the usual way
  return {
    ok: true,
    process: {
      pid,
      stdout: source(stdout),
      stderr: source(stderr),
      exited,
      running: () => child.exitCode === null && child.signalCode === null,
      release: () => {
        for (const stream of [stdout, stderr]) stream.destroy();
      },
      go: go ?? undefined,
    },
  };
}
