/**
 * The spawn helper: a small Python process (spawner.py) that starts hooks for the leader with
 * posix_spawn.
 *
 * Why: node:child_process forks the whole Node process (libuv: `clone` without `CLONE_VM`) and blocks
 * its main thread until the child has exec'd; from a leader of 60–150 MB the fork and the
 * copy-on-write faults after it are the largest part of the leader's CPU per event, and the main
 * thread can do nothing else meanwhile. posix_spawn from the helper copies no page tables at all
 * (docs/architecture.md, "The spawn helper"; docs/performance.md). The hook gets what
 * node:child_process gives it: its own session and process group, pipes for stdin, stdout and stderr,
 * default signal dispositions, the working directory and exactly the environment asked for; errors to
 * start come back with Node's codes and wording (`spawn bash ENOENT`).
 *
 * One helper per process, started on the first hook while a leader holds it (`useSpawnHelper`), ended
 * when the last holder lets go and its runs are over. Without `python3` (3.8 or later; another with
 * `PI_TEAMS_HOOKS_PYTHON`), or after the helper died three times, every spawn stays in this process;
 * `PI_TEAMS_HOOKS_SPAWNER=node` keeps them there from the start. A helper that dies loses its runs' exit status: those runs end as `internal`
 * errors naming the helper (the runner then ends what is left of their groups); runs it had not
 * started yet start in this process instead.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import type { Socket } from "node:net";
import { constants } from "node:os";
import { fileURLToPath } from "node:url";
import type { ExitStatus, HookProcess, OutputSource, SpawnRequest, Started } from "./process.js";

/** The environment variable that keeps every spawn in this process (`node`). */
export const SPAWNER_ENV = "PI_TEAMS_HOOKS_SPAWNER";
/** The environment variable naming the Python to run the helper with (default `python3` from PATH). */
export const PYTHON_ENV = "PI_TEAMS_HOOKS_PYTHON";
/** The oldest Python the helper runs on (posix_spawn's `setsid`); spawner.py checks it too. */
export const PYTHON_MIN: readonly [number, number] = [3, 8];

/** The interpreter a helper started with `env` runs on. */
export function helperPython(env: Readonly<Record<string, string | undefined>>): string {
  return env[PYTHON_ENV] || "python3";
}

const SCRIPT = fileURLToPath(new URL("./spawner.py", import.meta.url));
const HEADER = 9;
const EMPTY = Buffer.alloc(0);
/** After this many deaths in one process the helper is not started again. */
const MAX_DEATHS = 3;
const STDERR_KEEP = 2_000;
/** A helper that has not said it is ready by then is ended and not used again. */
const READY_MS = 10_000;

const ERRNO_NAMES = new Map(Object.entries(constants.errno).map(([name, n]) => [n, name]));
const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([name, n]) => [n, name as NodeJS.Signals]));

let holders = 0;
let current: Helper | undefined;
let deaths = 0;
let disabled: string | undefined;

/** Hooks started from now on go through the helper; call what it returns when done (idempotent). */
export function useSpawnHelper(): () => void {
  holders += 1;
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    holders -= 1;
    if (holders > 0) return;
    current?.close();
    current = undefined;
  };
}

/**
 * Starts the helper in `delayMs` unless a hook started it first, so that the first hook after a quiet
 * start does not wait for Python to start (20–30 ms; about 250 ms behind pyenv's shim, most of it
 * CPU, which is why it waits rather than competing with the caller's own start).
 */
export function warmSpawnHelper(delayMs: number): void {
  setTimeout(() => {
    if (inUse()) current ??= Helper.start();
  }, delayMs).unref();
}

/** Held by a leader, not switched off, not given up on. */
function inUse(): boolean {
  return holders > 0 && disabled === undefined && process.env[SPAWNER_ENV] !== "node";
}

/** The helper's pid while one runs, and why it is not used when it is not. */
export function spawnHelperStatus(): { pid: number | undefined; disabled: string | undefined; deaths: number } {
  return { pid: current?.pid, disabled, deaths };
}

/** Starts `request` through the helper; `undefined` when the helper is not in use or could not start it. */
export function helperStart(request: SpawnRequest): Promise<Started | undefined> | undefined {
  if (!inUse() || !acceptable(request)) return undefined;
  current ??= Helper.start();
  return current?.start(request); // none (no descriptors left, say): this process spawns, and fails alike
}

/**
 * What the helper's frames can carry: no NUL byte, a command. What it cannot is left to
 * node:child_process, which refuses it with its own error.
 */
function acceptable(request: SpawnRequest): boolean {
  const fields = [request.command, request.cwd, ...request.args, ...Object.entries(request.env).flat()];
  return request.command.length > 0 && fields.every((field) => !field.includes("\0"));
}

function died(helper: Helper, reason: string, unusable: boolean): void {
  if (current === helper) current = undefined;
  deaths += 1;
  if (unusable) disabled = reason;
  else if (deaths >= MAX_DEATHS) disabled = `the spawn helper exited ${deaths} times (last: ${reason})`;
}

/** Output delivered in order, buffered until a listener is attached. */
class Source implements OutputSource {
  #listener: ((chunk: Buffer) => void) | undefined;
  #queued: Buffer[] = [];
  #ended = false;
  #resolve!: () => void;
  readonly closed = new Promise<void>((resolve) => (this.#resolve = resolve));

  onData(listener: (chunk: Buffer) => void): void {
    this.#listener = listener;
    for (const chunk of this.#queued.splice(0)) listener(chunk);
  }

  push(chunk: Buffer): void {
    if (this.#ended) return;
    if (this.#listener) this.#listener(chunk);
    else this.#queued.push(chunk);
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#resolve();
  }

  get ended(): boolean {
    return this.#ended;
  }
}

interface Run {
  id: number;
  request: SpawnRequest;
  /** Until the helper says started or not. */
  settle: ((started: Started | undefined) => void) | undefined;
  pid: number;
  stdout: Source;
  stderr: Source;
  exit: ExitStatus | undefined;
  resolveExit: (status: ExitStatus) => void;
  exited: Promise<ExitStatus>;
  released: boolean;
}

class Helper {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #runs = new Map<number, Run>();
  #nextId = 1;
  #buffer: Buffer = EMPTY;
  #stderr = "";
  #closing = false;
  #dead = false;
  /** Set by the helper's first frame: a helper that dies before it is not one to start again. */
  #ready = false;
  readonly #python: string;
  readonly #readyTimer: NodeJS.Timeout;

  /** A new helper, or none when not even its process could be made (no descriptors left, say). */
  static start(): Helper | undefined {
    // -I: no PYTHON* variables, no user site; -S: no site module (faster start, nothing it needs).
    const python = helperPython(process.env);
    let child;
    try {
      child = spawn(python, ["-I", "-S", SCRIPT], { stdio: "pipe", detached: true, env: process.env });
    } catch {
      return undefined;
    }
    child.on("error", () => undefined); // EMFILE and the like: the constructor's listener takes over
    if (!child.stdin || !child.stdout || !child.stderr) return undefined; // Node made no pipes (EMFILE)
    return new Helper(child as ChildProcessWithoutNullStreams, python);
  }

  private constructor(child: ChildProcessWithoutNullStreams, python: string) {
    this.#child = child;
    this.#python = python;
    // Its own process group, so a Ctrl-C meant for the leader does not end it under running hooks; it
    // ends when the leader closes its stdin (also when the leader dies). No handle of it keeps this
    // process alive while no run needs it.
    this.#child.unref();
    (this.#child.stderr as unknown as Socket).unref();
    for (const stream of [this.#child.stdin, this.#child.stdout, this.#child.stderr]) stream.on("error", () => undefined);
    this.#child.stdout.on("data", (chunk: Buffer) => this.#onData(chunk));
    this.#child.stderr.on("data", (chunk: Buffer) => (this.#stderr = (this.#stderr + chunk.toString("utf8")).slice(-STDERR_KEEP)));
    this.#child.on("error", (error: NodeJS.ErrnoException) => this.#die(error.message));
    this.#readyTimer = setTimeout(() => {
      this.#die(`it did not say it was ready within ${READY_MS / 1000} s`);
      this.#child.kill("SIGKILL");
    }, READY_MS).unref();
    this.#child.on("exit", (code, signal) => this.#die(endedHow(code, signal)));
    // Its end of the pipe closes when it dies, usually just before `exit` arrives, which says how it
    // ended; with the child's handle unref'd, `exit` may not come at all, so the close decides soon.
    this.#child.stdout.on("close", () => {
      setTimeout(() => this.#die(endedHow(this.#child.exitCode, this.#child.signalCode)), 50);
    });
    this.#refresh();
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  start(request: SpawnRequest): Promise<Started | undefined> {
    const id = this.#nextId++;
    let resolveExit!: (status: ExitStatus) => void;
    const exited = new Promise<ExitStatus>((resolve) => (resolveExit = resolve));
    const run: Run = { id, request, settle: undefined, pid: 0, stdout: new Source(), stderr: new Source(), exit: undefined, resolveExit, exited, released: false };
    const started = new Promise<Started | undefined>((resolve) => (run.settle = resolve));
    this.#runs.set(id, run);
    this.#refresh();
    const fields = [request.cwd, request.command, String(request.args.length), ...request.args, ...Object.entries(request.env).map(([name, value]) => `${name}=${value}`)];
    this.#send("S", id, Buffer.from(fields.join("\0")));
    return started;
  }

  /** No new runs; the helper ends once the live ones are over. */
  close(): void {
    this.#closing = true;
    if (this.#runs.size === 0) this.#child.stdin.end();
  }

  #send(type: string, id: number, payload: Buffer = EMPTY): void {
    if (this.#dead) return;
    const header = Buffer.allocUnsafe(HEADER);
    header.writeUInt32BE(payload.length, 0);
    header[4] = type.charCodeAt(0);
    header.writeUInt32BE(id, 5);
    this.#child.stdin.write(payload.length > 0 && payload.length < 16_384 ? Buffer.concat([header, payload]) : header);
    if (payload.length >= 16_384) this.#child.stdin.write(payload);
  }

  #onData(chunk: Buffer): void {
    const buffer = this.#buffer.length > 0 ? Buffer.concat([this.#buffer, chunk]) : chunk;
    const frames: Array<{ type: string; id: number; payload: Buffer }> = [];
    let at = 0;
    while (buffer.length - at >= HEADER) {
      const length = buffer.readUInt32BE(at);
      if (buffer.length - at < HEADER + length) break;
      frames.push({ type: String.fromCharCode(buffer[at + 4] ?? 0), id: buffer.readUInt32BE(at + 5), payload: buffer.subarray(at + HEADER, at + HEADER + length) });
      at += HEADER + length;
    }
    // Consumed before they are handled: a listener that throws must not have them handled twice.
    this.#buffer = at === buffer.length ? EMPTY : buffer.subarray(at);
    for (const { type, id, payload } of frames) {
      const run = this.#runs.get(id);
      if (type === "H") {
        this.#ready = true;
        clearTimeout(this.#readyTimer);
      } else if (run) this.#frame(run, type, payload);
    }
  }

  #frame(run: Run, type: string, payload: Buffer): void {
    switch (type) {
      case "P":
        run.pid = payload.readUInt32BE(0);
        run.settle?.({ ok: true, process: this.#process(run) });
        run.settle = undefined;
        return;
      case "F":
        run.settle?.({ ok: false, error: spawnError(payload.readUInt32BE(0), run.request) });
        run.settle = undefined;
        this.#forget(run);
        return;
      case "O":
        return run.stdout.push(payload);
      case "R":
        return run.stderr.push(payload);
      case "o":
        run.stdout.end();
        return this.#forgetIfDone(run);
      case "r":
        run.stderr.end();
        return this.#forgetIfDone(run);
      case "X": {
        const value = payload.readUInt32BE(4);
        run.exit = payload.readUInt32BE(0) === 1 ? { code: null, signal: SIGNAL_NAMES.get(value) ?? null } : { code: value, signal: null };
        run.resolveExit(run.exit);
        return this.#forgetIfDone(run);
      }
    }
  }

  #process(run: Run): HookProcess {
    return {
      pid: run.pid,
      stdout: run.stdout,
      stderr: run.stderr,
      exited: run.exited,
      running: () => run.exit === undefined,
      writeStdin: (data) => {
        if (data.length > 0) this.#send("I", run.id, Buffer.from(data));
        this.#send("E", run.id);
      },
      release: () => {
        if (run.released) return;
        run.released = true;
        this.#send("C", run.id);
        run.stdout.end();
        run.stderr.end();
        this.#forgetIfDone(run);
      },
    };
  }

  #forgetIfDone(run: Run): void {
    if (run.exit !== undefined && run.stdout.ended && run.stderr.ended) this.#forget(run);
  }

  #forget(run: Run): void {
    this.#runs.delete(run.id);
    this.#refresh();
    if (this.#closing && this.#runs.size === 0) this.#child.stdin.end();
  }

  /** Holds the process open while a run waits on the helper, not otherwise. */
  #refresh(): void {
    const stdout = this.#child.stdout as unknown as Socket;
    if (this.#runs.size > 0) stdout.ref();
    else stdout.unref();
  }

  #die(reason: string): void {
    if (this.#dead) return;
    this.#dead = true;
    clearTimeout(this.#readyTimer);
    const said = this.#stderr.trim().split("\n").at(-1);
    const why = `the spawn helper (${this.#python}) ${this.#ready ? "exited" : "could not be started"}: ${reason}${said ? ` (${said})` : ""}`;
    // Closed and done: its end, not a death.
    if (!(this.#closing && this.#runs.size === 0)) died(this, why, !this.#ready);
    for (const run of this.#runs.values()) {
      if (run.settle && !this.#ready) {
        run.settle(undefined); // it never read a request: the caller starts it in this process instead
      } else if (run.settle) {
        // It may have started the hook and died before saying so: starting it again here could run
        // the gate twice, so this run ends as an error instead.
        run.settle({ ok: false, error: new Error(`${why}; it had not said whether the hook started`) });
      } else if (run.exit === undefined) {
        run.exit = { code: null, signal: null, lost: why };
        run.resolveExit(run.exit);
      }
      run.settle = undefined;
      run.stdout.end();
      run.stderr.end();
    }
    this.#runs.clear();
    (this.#child.stdout as unknown as Socket).unref();
  }
}

function endedHow(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ? `killed by ${signal}` : code !== null ? `exit code ${code}` : "its output closed";
}

/** The error node:child_process would give: `spawn <command> <CODE>`, with its fields. */
function spawnError(errno: number, request: SpawnRequest): Error {
  const code = ERRNO_NAMES.get(errno) ?? `errno ${errno}`;
  return Object.assign(new Error(`spawn ${request.command} ${code}`), { errno: -errno, code, syscall: `spawn ${request.command}`, path: request.command, spawnargs: [...request.args] });
}
