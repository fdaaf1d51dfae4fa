/**
 * A sandboxed gate's chain started ahead of its run: the leader's next run of a gate starts from a
 * process already waiting inside the gate's view, instead of building the view on the way (forking
 * the leader, two `unshare`s, `sh`, `mount -a`, `setpriv`: docs/performance.md measures what that
 * costs between a task's write and the gate's first instruction).
 *
 * After a run of a sandboxed gate, the leader starts the same chain as a run would, for a run folder
 * of its own, with one step more at its end, inside the view (chrooted, capabilities dropped, in its
 * own session and process group, the run's stdin and output pipes in place): a `sh` that waits on a
 * pipe of the leader's (fd 3). The next run of the gate (same gate, command, working directory, team,
 * sandbox settings and stdin) takes it when the view it would build now is the one the standby
 * built: the same fstab and read-only list, and the same files at each path it binds (device and
 * inode). Otherwise the standby is ended and the run builds its own, as without one. The run writes
 * its files into the standby's folder (seen live in the view through the folder's bind), the gate's
 * environment as a file of `export NAME='value'` lines, then `go` on the pipe: the `sh` sources the
 * file, closes the pipe and execs the gate. The gate is then exactly what a run without a standby
 * starts, with the environment asked for (nothing of the `sh`'s own: PWD and PATH are unset first).
 *
 * A view serves several runs of its gate, one after another. Once a standby's `sh` waits (it says
 * `ready` on fd 3, before any `go`), the leader holds its view: the user and mount namespaces it is in
 * and its root, open in the leader (runner/sandbox.ts, holdView). When the run ends with no process left
 * in the view (endRun's `settled`: none in a look, none made since), the view's `/tmp`, `/dev/shm` and
 * hiding tmpfs exactly as they were when held, and the result folder holding the leader's result file only,
 * the run's files are removed from the folder, a new result file is made (a process that kept the last one
 * open writes where no run reads), and the next standby of the gate enters that view (`nsenter`, then
 * `setpriv`) instead of building one. Anything else (a file left in `/tmp`, a
 * process that outran the sweep, a view that no longer fits) lets the view go and removes its folder: the
 * next standby builds its own. A view waits FREE_IDLE_MS for its next standby, then goes too.
 *
 * A standby not taken within STANDBY_IDLE_MS is ended (its namespace holds binds of the working
 * directory). A leader that dies leaves its standbys reading EOF on the pipe: each exits 125 without
 * starting anything. Only a leader asks for standbys (`standby: true`); `run` and direct callers of
 * runHook never get one. `PI_TEAMS_HOOKS_STANDBY=off` in the leader's environment turns them off.
 */
import {
  closeSync,
  constants as fsConstants,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import { startProcess, type HookProcess } from "./process.js";
import { makeRunDir, newResultFile, removeRunDir, runsRoot, type RunDir } from "./run-dir.js";
import {
  canEnterHeld,
  clearSetupFailure,
  chainOf,
  heldChainOf,
  heldViewClean,
  holdView,
  releaseView,
  viewOf,
  writeView,
  type HeldView,
  SANDBOX_SETUP_FAILED,
  SANDBOX_SETUP_MARK,
  type SandboxPlan,
  type View,
  VIEW_FILES,
} from "./sandbox.js";
import { absoluteSearchPath } from "./search-path.js";
import { signalGroup } from "./terminate.js";

/** How long a standby waits for a run before it is ended. */
const STANDBY_IDLE_MS = 60_000;
/** At most this many standbys at once (one per gate and working directory). */
const MAX_STANDBYS = 16;
/**
 * An environment or an argument list larger than this starts the usual way: the kernel's E2BIG is then
 * Node's spawn error, said as without a standby, not a `sh` failing to exec.
 */
const MAX_STRING_BYTES = 96 * 1024;
const MAX_TOTAL_BYTES = 1024 * 1024;

/**
 * The last step of a standby's chain, inside the view: wait for `go` on fd 3, forget the shell's own
 * exported variables, take the run's environment from the file `$1`, say `started` on fd 3 and close it,
 * exec the gate. Only this `sh` has fd 3: an exit after `started` is the gate's own, whatever it prints (a
 * gate's tests that print the sandbox's mark and exit 125 do not pass for a view that could not be built).
 */
const WAIT = [
  // A held view's fds (HELD_FD_BASE..), entered already: nothing of the gate's gets them.
  "exec 4<&- 5<&- 6<&-",
  // Ready: the leader may hold this view now, before anything of the gate's runs in it.
  "echo ready >&3",
  `read -r go <&3 && [ "$go" = go ] || { echo "${SANDBOX_SETUP_MARK} the gate's start was called off" >&2; exit ${SANDBOX_SETUP_FAILED}; }`,
  "unset PWD PATH go",
  `. "$1" || { echo "${SANDBOX_SETUP_MARK} the run's environment could not be read" >&2; exit ${SANDBOX_SETUP_FAILED}; }`,
  "shift",
  "echo started >&3",
  "exec 3<&-",
  'exec "$@"',
].join("\n");

/** A chain waiting for its run. */
export interface Standby {
  key: string;
  run: RunDir;
  /** The file its run's stdin is (the context file, or a Claude Code gate's input), created empty. */
  stdinFile: string;
  /** The command it execs, as the run would start it (the copy of the gate in its folder). */
  command: string;
  args: readonly string[];
  view: View;
  pins: string;
  plan: SandboxPlan;
  process: HookProcess;
  idle: NodeJS.Timeout;
  /** Told to go: its process is the run's gate from then on. */
  released: boolean;
  /** Its view, held for the next runs (holdView): taken once its `sh` waits, or the one it was started in. */
  held: HeldView | null;
  /** Its run's end found no process left in its view (endRun): the view may serve again (recycle). */
  settled: boolean;
  /** `stops` when it was started: a view held since a stop is let go, not kept. */
  generation: number;
  /**
   * Once its fd 3 is closed: whether its `sh` said `started` there (WAIT), so that its process became the gate.
   * An exit before that is the standby's own failure, never the gate's.
   */
  execed: Promise<boolean>;
}

/** Whether the `sh` of `process` said `started` on fd 3 (WAIT), known once that fd is closed at its end. */
function execedOf(process: HookProcess): Promise<boolean> {
  const go = process.go;
  if (!go) return Promise.resolve(false);
  let said = "";
  return new Promise<boolean>((resolve) => {
    go.on("data", (chunk: Buffer) => {
      if (said.length < 64) said += chunk.toString("latin1");
    });
    go.once("close", () => resolve(/^started$/m.test(said)));
  });
}

/** A view whose run ended clean, with its folder, waiting for the next standby of its gate (at most one a gate). */
interface FreeView {
  run: RunDir;
  view: View;
  pins: string;
  held: HeldView;
  generation: number;
  idle: NodeJS.Timeout;
}

/**
 * How long a free view waits for its next standby: shorter than ORPHAN_AGE_MS, so that another leader's
 * start never takes its folder for one a dead leader left (a free view has no process in it).
 */
const FREE_IDLE_MS = 5_000;

const waiting = new Map<string, Standby>();
const starting = new Map<string, Promise<void>>();
const free = new Map<string, FreeView>();

/** Whether standbys are on in this process (`PI_TEAMS_HOOKS_STANDBY=off` turns them off). */
function standbysOn(): boolean {
  return process.env.PI_TEAMS_HOOKS_STANDBY !== "off";
}

/**
 * The standby for `key` whose view is still the one `planFor` gives for its folder now, taken out
 * of the pool (one still starting is waited for); null when there is none (one that no longer fits is ended).
 */
export async function takeStandby(key: string, planFor: (run: RunDir) => SandboxPlan): Promise<Standby | null> {
  // One being started is waited for: the rest of its chain is never longer than a chain of the run's own.
  await starting.get(key);
  const standby = waiting.get(key);
  if (!standby) return null;
  waiting.delete(key);
  clearTimeout(standby.idle);
  if (!standby.process.running()) {
    void end(standby);
    return null;
  }
  if (!stillFits(standby, () => planFor(standby.run))) {
    void end(standby);
    return null;
  }
  return standby;
}

/**
 * The gate's environment as the `sh` of a standby sources it, or null when it cannot be said that way
 * (a name the shell would not take as a variable, a value too large): the run then starts the usual way.
 */
export function environmentScript(env: Readonly<Record<string, string>>, args: readonly string[]): string | null {
  let total = 0;
  const lines: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || SHELL_OWN.has(name)) return null;
    const size = Buffer.byteLength(name) + Buffer.byteLength(value) + 2;
    if (size > MAX_STRING_BYTES || value.includes("\0")) return null;
    total += size;
    lines.push(`export ${name}='${value.replaceAll("'", "'\\''")}'\n`);
  }
  for (const arg of args) {
    const size = Buffer.byteLength(arg) + 1;
    if (size > MAX_STRING_BYTES) return null;
    total += size;
  }
  if (total > MAX_TOTAL_BYTES || env.PATH === undefined) return null;
  return lines.join("");
}

/** Variables dash gives a meaning of its own (read-only, or read by the shell as it runs). */
const SHELL_OWN = new Set([
  "PPID",
  "OPTIND",
  "OPTARG",
  "LINENO",
  "IFS",
  "PS1",
  "PS2",
  "PS4",
  "ENV",
  "MAIL",
  "MAILPATH",
  "MAILCHECK",
  "HISTSIZE",
]);

/**
 * Starts the gate that `standby` waits with: writes the environment file, then `go`. False when the
 * standby can no longer be told (it ended meanwhile): its run then starts the usual way.
 */
export function release(standby: Standby, script: string): boolean {
  const file = envFile(standby.run);
  const fd = openSync(
    file,
    fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW,
    0o600,
  );
  try {
    writeSync(fd, script);
  } finally {
    closeSync(fd);
  }
  const go = standby.process.go;
  if (!go || !standby.process.running()) return false;
  go.end("go\n");
  standby.released = true;
  return true;
}

/**
 * The command a run without its standby would start in the standby's folder (its view is written there). Its
 * set-up says there again whether it failed: the file is emptied of what the standby's own set-up said.
 */
export function usualStart(standby: Standby): { command: string; args: string[] } {
  clearSetupFailure(standby.run.dir);
  return chainOf(standby.command, standby.args, standby.plan);
}

/**
 * Starts a standby for `key` unless one waits or is being started, or the pool is full. `prepare`
 * lays out the run folder (the stdin file created empty) and says what the run will start and its plan.
 * `env` is the runs' (RunHookOptions.baseEnv): its runs folder holds the standby's, where a start looks for
 * what a dead leader left (leader/startup.ts), and its PATH (absolute folders only) is the standby's own.
 */
export async function startStandby(
  key: string,
  cwd: string,
  env: Readonly<Record<string, string | undefined>>,
  prepare: (run: RunDir) => { stdinFile: string; command: string; args: readonly string[]; plan: SandboxPlan },
): Promise<void> {
  if (!standbysOn() || waiting.has(key) || starting.has(key) || waiting.size + starting.size >= MAX_STANDBYS) return;
  const begun = startStandbyNow(key, cwd, env, prepare);
  starting.set(key, begun);
  try {
    await begun;
  } finally {
    starting.delete(key);
  }
}

async function startStandbyNow(
  key: string,
  cwd: string,
  env: Readonly<Record<string, string | undefined>>,
  prepare: (run: RunDir) => { stdinFile: string; command: string; args: readonly string[]; plan: SandboxPlan },
): Promise<void> {
  const generation = stops;
  let reused = takeFree(key);
  let run: RunDir | null = null;
  let held: HeldView | null = null;
  try {
    const reusedLaid = reused ? prepare(reused.run) : null;
    let laid: ReturnType<typeof prepare>;
    let view: View;
    let pins: string;
    let chain: { command: string; args: string[] };
    const waitArgs = (r: RunDir, l: ReturnType<typeof prepare>): string[] => [
      "-c",
      WAIT,
      "pi-teams-standby",
      envFile(r),
      l.command,
      ...l.args,
    ];
    if (reused && reusedLaid) {
      // The view its last run left clean (recycle), entered as it is: no view to build. Whether it still fits is
      // asked once, when a run takes the standby (takeStandby): one that no longer does is ended with its view.
      ({ run, held, view, pins } = reused);
      laid = reusedLaid;
      chain = heldChainOf("/bin/sh", waitArgs(run, laid), laid.plan.cwd);
    } else {
      if (reused) dropView(reused.run, reused.held);
      reused = null;
      run = makeRunDir("standby", env, { resultFolder: true });
      laid = prepare(run);
      view = viewOf(laid.plan);
      writeView(laid.plan, view);
      // What each bound path is, taken before the chain starts: its mounts see these or later ones, and a path
      // replaced in between differs at the take (the standby is then ended, never used with an older folder).
      pins = pinsOf(laid.plan);
      chain = chainOf("/bin/sh", waitArgs(run, laid), laid.plan);
    }
    const started = await startProcess({
      command: chain.command,
      args: chain.args,
      cwd,
      env: { PATH: absoluteSearchPath(env.PATH ?? "/usr/bin:/bin") },
      stdinFile: laid.stdinFile,
      go: true,
      fds: held ? [held.fds.user, held.fds.mount, held.fds.root] : undefined,
    });
    if (!started.ok) {
      dropView(run, held);
      return;
    }
    const standby: Standby = {
      key,
      run,
      stdinFile: laid.stdinFile,
      command: laid.command,
      args: laid.args,
      view,
      pins,
      plan: laid.plan,
      process: started.process,
      released: false,
      held,
      settled: false,
      generation,
      execed: execedOf(started.process),
      idle: setTimeout(() => {
        if (waiting.get(key) === standby) waiting.delete(key);
        void end(standby);
      }, STANDBY_IDLE_MS),
    };
    standby.idle.unref();
    // A view built for it is held once its `sh` says it waits, and only before its gate is told to go.
    if (!held)
      started.process.go?.on("data", (said: Buffer) => {
        if (standby.released || standby.held || !said.toString().includes("ready")) return;
        if (standby.process.running()) standby.held = holdView(standby.process.pid, standby.plan);
      });
    // Output before `go` is the chain's own failure (a mount refused): nothing waits, it is ended.
    void started.process.exited.then(() => {
      if (waiting.get(key) !== standby) return;
      waiting.delete(key);
      void end(standby);
    });
    if (generation !== stops) {
      await end(standby);
      return;
    }
    waiting.set(key, standby);
  } catch {
    if (run) dropView(run, held);
    else if (reused) dropView(reused.run, reused.held);
  }
}

/** The free view of `key`, taken out of the pool; null when there is none. */
function takeFree(key: string): FreeView | null {
  const found = free.get(key);
  if (!found) return null;
  free.delete(key);
  clearTimeout(found.idle);
  if (found.generation !== stops) {
    dropView(found.run, found.held);
    return null;
  }
  return found;
}

/** Whether a view built as `built` is still the one the plan builds now: the same text and the same files bound. */
function stillFits(built: { view: View; pins: string }, planNow: () => SandboxPlan): boolean {
  try {
    const plan = planNow();
    const view = viewOf(plan);
    return isDeepStrictEqual(view, built.view) && pinsOf(plan) === built.pins;
  } catch {
    return false;
  }
}

/** A view let go and its folder removed. */
function dropView(run: RunDir, held: HeldView | null): void {
  if (held) releaseView(held);
  removeRunDir(run.dir);
}

/** What a run's folder keeps between the runs of a held view: the view's own files and the result folder. */
const KEPT = new Set<string>(["root", ...VIEW_FILES, "fstab.failed", "out"]);

/**
 * Keeps the view of a standby whose run has ended for the next standby of its gate, when nothing of the
 * run is left: no process in the view (endRun settled), the view's `/tmp`, `/dev/shm` and hiding tmpfs as
 * they were, the result folder holding the leader's result file only (a new one is made for the next run);
 * and when the next can enter it with `nsenter` found in PATH (canEnterHeld). The run's files are removed
 * from the folder. True when kept: the folder is then the pool's, not to be removed. False: the caller
 * removes the folder (its view, if held, is let go here).
 */
export function recycle(standby: Standby): boolean {
  const held = standby.held;
  standby.held = null;
  if (!held) return false;
  const kept =
    standby.released &&
    standby.settled &&
    canEnterHeld() &&
    standby.generation === stops &&
    !free.has(standby.key) &&
    free.size < MAX_STANDBYS &&
    heldViewClean(held) &&
    newResultFile(standby.run) &&
    clearRunFiles(standby.run);
  if (!kept) {
    releaseView(held);
    return false;
  }
  const entry: FreeView = {
    run: standby.run,
    view: standby.view,
    pins: standby.pins,
    held,
    generation: standby.generation,
    idle: setTimeout(() => {
      if (free.get(standby.key) === entry) free.delete(standby.key);
      dropView(entry.run, entry.held);
    }, FREE_IDLE_MS),
  };
  entry.idle.unref();
  free.set(standby.key, entry);
  return true;
}

/** Removes what the run wrote into its folder (documents, the gate's copy, the environment file). */
function clearRunFiles(run: RunDir): boolean {
  try {
    for (const name of readdirSync(run.dir)) {
      if (KEPT.has(name)) continue;
      rmSync(path.join(run.dir, name), { recursive: true, force: true });
    }
    return true;
  } catch {
    return false;
  }
}

/** How many times endStandbys ran: a standby whose start began before the last one is ended, not kept. */
let stops = 0;

/** Ends every standby, and every one being started (a leader's stop). */
export async function endStandbys(): Promise<void> {
  stops += 1;
  const all = [...waiting.values()];
  waiting.clear();
  for (const found of free.values()) {
    clearTimeout(found.idle);
    dropView(found.run, found.held);
  }
  free.clear();
  await Promise.all([...all.map(end), ...starting.values()]);
}

/** Ends a standby that no run took: its group killed, reaped, its folder removed. */
async function end(standby: Standby): Promise<void> {
  clearTimeout(standby.idle);
  standby.process.go?.destroy();
  if (standby.process.running()) signalGroup(standby.process.pid, "SIGKILL");
  await standby.process.exited;
  standby.process.release();
  dropView(standby.run, standby.held);
  standby.held = null;
}

function envFile(run: RunDir): string {
  return path.join(run.dir, "env.sh");
}

/** The files the view binds, by device and inode: a path replaced since the standby was built shows another file. */
function pinsOf(plan: SandboxPlan): string {
  const paths = [plan.cwd, ...plan.bound.map((b) => b.path), ...plan.visible, ...plan.protect, ...plan.hide];
  return paths
    .map((p) => {
      try {
        const st = statSync(p);
        return `${p}\0${st.dev}:${st.ino}`;
      } catch {
        return `${p}\0-`;
      }
    })
    .join("\n");
}

/**
 * The standby folders in the runs folder of `env` whose run is `runId` or a later hook of its chain (`<runId>.N`):
 * the environment file the run wrote there names it (a run in flight keeps that file until its end).
 */
export function standbyDirsOf(
  runId: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string[] {
  const dirs = standbyDirs(env);
  const line = environmentScript({ PI_TEAMS_HOOK_RUN_ID: runId, PATH: "" }, [])?.split("\n")[0];
  if (!line) return [];
  // The same line, or the one of a chain's later hook: its id is the run's with `.N` before the closing quote. A
  // value is quoted with each `'` of its own escaped, so no other variable's value holds a line that reads so.
  const open = line.slice(0, -1);
  const namesRun = (text: string): boolean =>
    text.split("\n").some((l) => l === line || (l.startsWith(open) && /^\.\d+'$/.test(l.slice(open.length))));
  return dirs.filter((dir) => {
    try {
      return namesRun(readFileSync(path.join(dir, "env.sh"), "utf8"));
    } catch {
      return false;
    }
  });
}

/** The standby folders (`standby.XXXXXX`) in the runs folder of `env`; none where it cannot be read. */
function standbyDirs(env: Readonly<Record<string, string | undefined>>): string[] {
  try {
    const root = runsRoot(env);
    return readdirSync(root)
      .filter((name) => /^standby\.[A-Za-z0-9]{6}$/.test(name))
      .map((name) => path.join(root, name));
  } catch {
    return [];
  }
}

/** A standby folder this old with no process in its view was left by a leader that died. */
const ORPHAN_AGE_MS = 10_000;

/**
 * Removes the standby folders (and the folders of runs that started from one) that a leader which died
 * left in the runs folder: those with no process in their view (none whose root is the folder's `root/`)
 * and untouched for ORPHAN_AGE_MS. The runs folder is shared by the leaders of every team of this
 * install: a live leader's standby always has its process. Returns how many were removed.
 */
export function removeOrphanStandbys(env: Readonly<Record<string, string | undefined>> = process.env): number {
  const dirs = standbyDirs(env);
  if (dirs.length === 0) return 0;
  const roots = new Set<string>();
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      roots.add(readlinkSync(`/proc/${pid}/root`));
    } catch {
      // gone, or another user's
    }
  }
  let removed = 0;
  for (const dir of dirs) {
    try {
      if (Date.now() - lstatSync(dir).mtimeMs < ORPHAN_AGE_MS) continue;
      if (roots.has(realpathSync(path.join(dir, "root")))) continue;
    } catch {
      continue;
    }
    removeRunDir(dir);
    removed += 1;
  }
  return removed;
}
