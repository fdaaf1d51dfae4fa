/**
 * The sandbox a gate runs in: util-linux's `unshare` and `mount`, the base system's own tools
 * (docs/security.md, "Gates run sandboxed"). One run's launch, outermost first:
 *
 *   unshare --user --map-root-user --mount             a user and a mount namespace of the run
 *     sh -c SETUP                                       mount -c -a -T <run dir>/fstab: the view below, each
 *                                                       writable path bound from a descriptor checked to
 *                                                       be the file the leader resolved onto one checked
 *                                                       to be its place in the view
 *       unshare --user --map-user=<uid> --mount         a second user and mount namespace, chrooted into
 *               --root=<run dir>/root --wd=<cwd>        the view (no capability left over the mounts)
 *         setpriv --no-new-privs [--bounding-set=-all]  the bounding set emptied for a gate run as root
 *           the gate
 *
 * The view, built in the run's `root/` folder: the whole file system bound recursively and every
 * real file system in it remounted read-only; a fresh tmpfs on `/tmp` and `/dev/shm`; the gate's
 * working directory and its `sandbox-write=` paths bound writable; the leader's own folders (its
 * state, the team's `hook-state/`, `hook-logs/` and hooks dirs) bound read-only again where they lie
 * inside a writable path; the leader's runs folder hidden, this run's folder shown read-only in it;
 * the run's result file bound writable, alone (a standby's: the result file's own folder). The gate's process
 * then holds no capability in the namespace that owns these mounts (it cannot remount them), and
 * the kernel refuses it a new user namespace inside a chroot (no way to gain one back). Every step
 * execs the next: the process the leader started is the gate's, in the gate's process group, with
 * its exit status and signal as they are (runner/terminate.ts ends it as any gate).
 *
 * A leader keeps a view built for a standby for the gate's next runs (runner/standby.ts): it holds the
 * namespaces of the chain's last `unshare` and the view's root open, and a next run enters them with
 * `nsenter --user --mount --root` (then `setpriv`, as the chain's last step): the same view, with no
 * capability over its mounts, as the chain would build it again.
 *
 * No pid namespace: its first process would be the gate, and the kernel drops the signals a
 * namespace's first process sends itself (a gate that kills itself would go on), while a small init
 * before it would turn every signal into an exit code. The gate's processes see the leader's pid
 * (docs/security.md says what they can do with it).
 */
import { spawn, spawnSync } from "node:child_process";
import {
  accessSync,
  closeSync,
  constants as fsConstants,
  existsSync,
  lstatSync,
  openSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  statSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import type { SandboxMode } from "../settings/hook-line.js";

/** Whether this machine can sandbox a gate, probed once per process; `reason` says why not. */
type SandboxSupport = { ok: true } | { ok: false; reason: string };

let probed: SandboxSupport | null = null;

/**
 * Whether unprivileged user and mount namespaces work here: `unshare` started once as a run
 * would start it. The kernel can refuse (`kernel.unprivileged_userns_clone=0`, `user.max_user_namespaces=0`,
 * an AppArmor restriction, a container's seccomp profile), or util-linux can be missing.
 */
export function sandboxSupport(): SandboxSupport {
  if (probed) return probed;
  const { chain, missing } = toolPaths();
  if (!chain) return (probed = { ok: false, reason: `${missing} is not installed` });
  const probe = spawnSync(chain.unshare, PROBE_ARGS, {
    stdio: ["ignore", "ignore", "pipe"],
    timeout: PROBE_TIMEOUT_MS,
  });
  probed = probeSaid(
    probe.error,
    probe.signal ? `ended by ${probe.signal}` : probe.status,
    probe.stderr.toString("utf8"),
  );
  return probed;
}

/**
 * sandboxSupport without waiting on the main thread: the probe runs while the caller goes on (a leader's start
 * loads its state meanwhile), and its answer is kept for sandboxSupport's later calls.
 */
export function probeSandbox(): Promise<SandboxSupport> {
  if (probed) return Promise.resolve(probed);
  if (probing) return probing;
  const { chain, missing } = toolPaths();
  if (!chain) return Promise.resolve((probed = { ok: false, reason: `${missing} is not installed` }));
  probing = new Promise<SandboxSupport>((resolve) => {
    const child = spawn(chain.unshare, PROBE_ARGS, {
      stdio: ["ignore", "ignore", "pipe"],
      timeout: PROBE_TIMEOUT_MS,
    });
    const said: Buffer[] = [];
    child.stderr.on("data", (chunk: Buffer) => said.push(chunk));
    const settle = (error: Error | undefined, status: number | null, signal: NodeJS.Signals | null): void => {
      probed ??= probeSaid(error, signal ? `ended by ${signal}` : status, Buffer.concat(said).toString("utf8"));
      resolve(probed);
    };
    child.on("error", (error) => settle(error, null, null));
    child.on("close", (status, signal) => settle(undefined, status, signal));
  });
  return probing;
}

let probing: Promise<SandboxSupport> | null = null;
const PROBE_TIMEOUT_MS = 5_000;

/** What the probe's end says: whether the kernel made the namespaces, or why not. */
function probeSaid(error: Error | undefined, status: number | string | null, stderr: string): SandboxSupport {
  if (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return {
      ok: false,
      reason: code === "ENOENT" ? "util-linux's unshare is not installed" : `unshare: ${error.message}`,
    };
  }
  if (status !== 0) {
    const said = stderr.trim().split("\n")[0] ?? "";
    const how = typeof status === "string" ? status : `exit ${status}`;
    return { ok: false, reason: `the kernel refuses unprivileged namespaces (${said || how})` };
  }
  return { ok: true };
}

/**
 * How a team's gates run on this machine, in one line: sandboxed, or why not (a warning). Said by
 * the leader at start and by `run` before it fires an event.
 */
export function sandboxNotice(setting: { value: SandboxMode; origin: string }): {
  level: "info" | "warn";
  message: string;
} {
  if (setting.value === "off")
    return {
      level: "warn",
      message: `hooks.sandbox is off (${setting.origin}): gates run unsandboxed, with the leader's own authority`,
    };
  const support = sandboxSupport();
  if (support.ok)
    return {
      level: "info",
      message: `sandbox: gates run sandboxed (hooks.sandbox ${setting.value}, ${setting.origin}): read-only file system but their working directory and a private /tmp, in user and mount namespaces of their own`,
    };
  return {
    level: "warn",
    message: `gates are NOT sandboxed on this machine: ${support.reason}; they run with the leader's own authority (hooks.sandbox ${setting.value}); a gate whose settings line says sandbox=required is held, not run`,
  };
}

const OUTER_FLAGS = ["--user", "--map-root-user", "--mount", "--propagation", "private"];
/** The probe: `unshare` makes the namespaces a run's chain makes first, and runs nothing in them. */
const PROBE_ARGS = [...OUTER_FLAGS, "--", "/bin/sh", "-c", "exit 0"];

/** What one sandboxed run needs: paths are absolute, as the leader sees them. */
export interface SandboxPlan {
  /** The run's private folder: `root/` and `fstab` are made in it. */
  runDir: string;
  cwd: string;
  /**
   * Writable inside, the working directory first, then the gate's `sandbox-write=` paths: each as the leader
   * resolved it, with the file it reached, by device and inode (`dev:ino`, as stat(1) prints them). The set-up
   * binds each from a descriptor it checked to be that file onto one checked to be its place in the view
   * (setupScript), never by its path, which `mount` would resolve again: a link the agents swapped in meanwhile
   * would have the leader's own folder bound writable, or theirs mounted over a program the set-up runs next.
   */
  bound: readonly { path: string; id: string }[];
  /**
   * Shown read-only where the private `/tmp` or `/dev/shm` would hide them: what the gate needs to
   * see (its run folder, the team dir, the gate's folder, the leader's package and Node).
   */
  visible: readonly string[];
  /** Read-only again where they lie inside a writable path: the leader's own folders. */
  protect: readonly string[];
  /**
   * Hidden behind an empty tmpfs: the leader's runs folder, where other runs' files are (their
   * documents may hold what this gate may not see), and the user's runtime folder, whose sockets
   * (the session bus, systemd's) would start a command outside the sandbox; this run's folder is
   * shown again, read-only.
   */
  hide: readonly string[];
  /** The run's result file: writable inside, alone. */
  resultFile: string;
  /** A standby's: the result file's own folder, writable inside (alone) in place of the file. */
  resultFolder?: string;
  /** The user the gate runs as (`run-as=`); absent: the leader's own. */
  user?: { uid: number; gid: number };
}

/** The exit status SETUP ends with when the mounts could not be made: the gate never started. */
export const SANDBOX_SETUP_FAILED = 125;
/** The first words of SETUP's line on stderr when it failed, for the runner to tell it from a gate's own 125. */
export const SANDBOX_SETUP_MARK = "pi-teams-hooks sandbox:";

/**
 * What setpriv makes of a gate: no privilege to gain at an exec (a program's file capabilities, a set-user-ID
 * file), and for one started as root in its namespace, no capability at all.
 */
function noPrivileges(root: boolean): string[] {
  return root ? ["--no-new-privs", "--bounding-set=-all", "--inh-caps=-all"] : ["--no-new-privs"];
}

/** The programs a run's chain execs, each at the path found for it (toolPaths). */
interface ChainTools {
  unshare: string;
  setpriv: string;
  mount: string;
  stat: string;
  readlink: string;
  mkdir: string;
}

/** The set-up script, with util-linux's and coreutils' tools at the paths found for them (toolPaths). */
function setupScript(tools: ChainTools): string {
  const [unshare, setpriv, mount, stat, readlink, mkdir] = [
    tools.unshare,
    tools.setpriv,
    tools.mount,
    tools.stat,
    tools.readlink,
    tools.mkdir,
  ].map(shellQuote);
  return [
    // A failure is said on stderr, and in `<fstab>.failed` (made empty beside the fstab: writeView), in the run's
    // folder, read-only in the view: the gate, whose stderr is the same, cannot write it. Only that file says the
    // set-up failed.
    `f=$1`,
    `failed() { echo "${SANDBOX_SETUP_MARK} $1" >&2; echo "$1" > "$f.failed"; exit ${SANDBOX_SETUP_FAILED}; }`,
    // Every mount or none: a view with one of them missing would be a weaker sandbox than asked, in silence. First
    // the view without its writable paths: the whole file system read-only, its own /tmp and /dev/shm.
    `${mount} -c -a -T "$f" || failed "the gate's view could not be built (mount -a -T $f)"`,
    // Then each writable path (SandboxPlan.bound, two lines each: the id, the path; ancestors first), bound by
    // descriptors, never by path, which mount would resolve again and the agents can change meanwhile: the folder
    // opened here and checked to be the one the leader resolved (device and inode), onto its place in the view,
    // opened and checked to be there itself with no link on the way (its path as the kernel names it), so that it
    // is mounted nowhere else: over a program the set-up or the view runs next, or outside the view. A place the
    // view's own /tmp or /dev/shm hides is made there. A list that cannot be read fails the set-up.
    `while IFS= read -r i && IFS= read -r k && IFS= read -r p; do`,
    // Opened without opening anything but a folder or a regular file (a FIFO would hold the set-up, a device's
    // open can act): a folder by going into it.
    `  if cd -P -- "$p" 2>/dev/null; then eval 'command exec 4<.'; elif [ -f "$p" ] && [ ! -h "$p" ]; then eval 'command exec 4<"$p"'; else false; fi 2>/dev/null || failed "$p could not be opened"`,
    `  [ "$(${stat} -L -c %d:%i /proc/self/fd/4 2>/dev/null)" = "$i" ] || failed "$p is not the folder the leader checked: it was replaced while the view was built"`,
    `  if [ "$k" = make ]; then if [ -d /proc/self/fd/4 ]; then ${mkdir} -p -- "$2$p"; else ${mkdir} -p -- "$2\${p%/*}" && : > "$2$p"; fi 2>/dev/null || failed "$p could not be made in the gate's view"; fi`,
    `  if cd -P -- "$2$p" 2>/dev/null; then eval 'command exec 5<.'; elif [ -f "$2$p" ] && [ ! -h "$2$p" ]; then eval 'command exec 5<"$2$p"'; else false; fi 2>/dev/null || failed "$p could not be opened in the gate's view"`,
    `  cd /`,
    `  [ "$(${readlink} /proc/self/fd/5 2>/dev/null)" = "$2$p" ] || failed "$p is not, in the gate's view, where the leader checked it: a link was swapped in on its way while the view was built"`,
    `  ${mount} -c --bind /proc/self/fd/4 /proc/self/fd/5 || failed "$p could not be bound writable in the gate's view"`,
    `  exec 4<&- 5<&-`,
    `done < "$f.rw" || failed "the list of its writable paths could not be read ($f.rw)"`,
    // Then what lies on them: the leader's folders inside them read-only again, each bound onto its place in the
    // view opened and checked as above (a link in the agents' folder would steer it elsewhere, and leave the
    // folder writable), then made read-only through the new mount itself, opened and checked to be that folder
    // there (mount -a would take a folder that is a writable path for mounted already); then the hidden ones and
    // the run's own files.
    `while IFS= read -r p; do`,
    `  eval 'command exec 5<"$2$p"' 2>/dev/null || failed "$p could not be opened in the gate's view"`,
    `  [ "$(${readlink} /proc/self/fd/5 2>/dev/null)" = "$2$p" ] || failed "$p is not, in the gate's view, where the leader checked it: a link was swapped in on its way while the view was built"`,
    `  ${mount} -c --bind -- "$p" /proc/self/fd/5 || failed "$p could not be bound read-only in the gate's view"`,
    `  { eval 'command exec 6<"$2$p"' 2>/dev/null && [ /proc/self/fd/6 -ef "$p" ] && [ "$(${readlink} /proc/self/fd/6 2>/dev/null)" = "$2$p" ] && ${mount} -c -o remount,bind,ro /proc/self/fd/6; } || failed "$p could not be bound read-only in the gate's view"`,
    `  exec 5<&- 6<&-`,
    `done < "$f.ro" || failed "the list of its protected paths could not be read ($f.ro)"`,
    `${mount} -c -a -T "$f.after" || failed "the gate's view could not be built (mount -a -T $f.after)"`,
    // What must be read-only is checked in the view as built: a link swapped in under a writable path while the
    // view was made (mount follows links) would show a protected folder writable.
    `while IFS= read -r p; do [ -w "$2$p" ] && failed "$p would be writable in the gate's view"; done < "$f.ro"`,
    `r=$2 w=$3 u=$4 g=$5; shift 5`,
    // In the outer namespace the ids are 0:0, so --map-root-user gives the maps of --map-user=0 --map-group=0
    // without a look-up of "0" as a user and a group name first.
    `if [ "$u" = 0 ]; then exec ${unshare} --user --map-root-user --mount --root="$r" --wd="$w" -- ${setpriv} ${noPrivileges(true).join(" ")} -- "$@"; fi`,
    // Not root: its exec leaves it no capability, and no_new_privs keeps a file's capabilities from giving one (they
    // would count in the namespace that owns the view's mounts).
    `exec ${unshare} --user --map-user="$u" --map-group="$g" --mount --root="$r" --wd="$w" -- ${setpriv} ${noPrivileges(false).join(" ")} -- "$@"`,
  ].join("\n");
}

interface Tools {
  /** The chain's tools; null when PATH has none (the sandbox is then unavailable: sandboxSupport). */
  chain: (ChainTools & { setup: string }) | null;
  /** The first of the chain's tools that PATH has not, with its package, for the message: `util-linux's mount`. */
  missing: string | null;
  /** `nsenter` and `setpriv` for entering a held view; null when PATH lacks one (no view is kept). */
  held: { nsenter: string; setpriv: string } | null;
}

let tools: Tools | null = null;

/**
 * util-linux's tools, each at the first absolute folder of the leader's PATH that has it (one the view hides,
 * under /tmp, last), found once per process: each step of a run's chain then execs it directly, never by a
 * search of PATH (a failed exec per folder before it, and an empty or relative folder would be the working
 * directory of the step: the gate's). A tool no such folder has makes the sandbox unavailable, said so.
 */
function toolPaths(): Tools {
  if (tools) return tools;
  const dirs = (process.env.PATH ?? "/usr/bin:/bin").split(":").filter((dir) => path.isAbsolute(dir));
  const hidden = (dir: string): boolean => dir === "/tmp" || dir === "/dev/shm" || hiddenInView(dir);
  // Never a bare name: the search would go through an empty or relative folder of PATH, the working directory
  // of the process that execs it (a gate's, which the agents write). A folder the view hides (under /tmp) is
  // taken last: a gate's view shows the leader's PATH folders there, read-only, to the leader's own user only.
  const find = (name: string): string | null => {
    for (const dir of [...dirs.filter((d) => !hidden(d)), ...dirs.filter(hidden)]) {
      const file = path.join(dir, name);
      try {
        accessSync(file, fsConstants.X_OK);
        if (statSync(file).isFile()) return file;
      } catch {
        // not here
      }
    }
    return null;
  };
  const [unshare, mount, setpriv, nsenter, stat, readlink, mkdir] = [
    "unshare",
    "mount",
    "setpriv",
    "nsenter",
    "stat",
    "readlink",
    "mkdir",
  ].map(find);
  const names = {
    "util-linux's unshare": unshare,
    "util-linux's mount": mount,
    "util-linux's setpriv": setpriv,
    "coreutils' stat": stat,
    "coreutils' readlink": readlink,
    "coreutils' mkdir": mkdir,
  };
  const missing = Object.entries(names).find(([, file]) => file === null)?.[0] ?? null;
  const chain =
    unshare && mount && setpriv && stat && readlink && mkdir
      ? { unshare, mount, setpriv, stat, readlink, mkdir }
      : null;
  tools = {
    chain: chain ? { ...chain, setup: setupScript(chain) } : null,
    missing,
    held: nsenter && setpriv ? { nsenter, setpriv } : null,
  };
  return tools;
}

/** A word for sh: the text single-quoted. */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/**
 * The command that starts `command args` in the sandbox of `plan`, after writing the plan's fstab
 * into the run folder. Throws (an I/O error) when the run folder cannot be written.
 */
export function sandboxed(
  command: string,
  args: readonly string[],
  plan: SandboxPlan,
): { command: string; args: string[] } {
  writeView(plan, viewOf(plan));
  return chainOf(command, args, plan);
}

/**
 * The text of a run's view: its fstab, the list of protected paths checked read-only once it is built, and the
 * writable paths checked to be the files the leader resolved (their id, then their path, a line each).
 */
export interface View {
  fstab: string;
  /** What lies on the writable paths, mounted after them: the leader's folders read-only again, the run's files. */
  after: string;
  readOnly: string;
  bound: string;
}

/** The view `plan` builds as the machine is now (its mounts read from /proc/self/mountinfo). */
export function viewOf(plan: SandboxPlan): View {
  const shown = shownInHidden(plan);
  return {
    ...fstabOf(plan, path.join(plan.runDir, "root"), readMounts(), shown),
    readOnly: protectedInView(plan)
      .map((p) => `${p}\n`)
      .join(""),
    // Ancestors first: a later bind above an earlier one would cover it. Each: its id, whether the set-up makes
    // its place (`make`: in the view's own /tmp or /dev/shm, under nothing shown there: nothing of the agents'
    // on its way), its path.
    bound: [...plan.bound]
      .sort((a, b) => a.path.length - b.path.length)
      .map((b) => `${b.id}\n${placeToMake(b.path, shown) ? "make" : "-"}\n${b.path}\n`)
      .join(""),
  };
}

/**
 * The folders shown read-only where the view's own /tmp or /dev/shm would hide them, ancestors first. One that is
 * not there has nothing to show (a PATH folder gone).
 */
function shownInHidden(plan: SandboxPlan): string[] {
  // The folder of the `setpriv` a run execs inside the view, where the view would hide it (a PATH of links under /tmp).
  const setpriv = toolPaths().chain?.setpriv;
  const shown = setpriv && hiddenInView(setpriv) ? [...plan.visible, path.dirname(setpriv)] : plan.visible;
  return outerFirst(shown).filter((dir) => hiddenInView(dir) && existsSync(dir));
}

/** Whether a writable path's place is made in the view: hidden by its own /tmp or /dev/shm, under nothing `shown`. */
function placeToMake(file: string, shown: readonly string[]): boolean {
  return hiddenInView(file) && !shown.some((dir) => file === dir || isUnder(file, dir));
}

/** The files of a view in its run's folder (writeView), which its set-up reads: a run-as user's set-up too. */
export const VIEW_FILES = ["fstab", "fstab.ro", "fstab.rw", "fstab.after"] as const;

/** Writes `view` into the run folder of `plan` (`wx`: never through a planted file). */
export function writeView(plan: SandboxPlan, view: View): void {
  const fstab = path.join(plan.runDir, "fstab");
  writeFileSync(fstab, view.fstab, { mode: 0o600, flag: "wx" });
  writeFileSync(`${fstab}.ro`, view.readOnly, { mode: 0o600, flag: "wx" });
  writeFileSync(`${fstab}.rw`, view.bound, { mode: 0o600, flag: "wx" });
  writeFileSync(`${fstab}.after`, view.after, { mode: 0o600, flag: "wx" });
  // Empty until the set-up fails (setupScript): read-only in the view, so the gate cannot write it.
  writeFileSync(setupFailedFile(plan.runDir), "", { mode: 0o600, flag: "wx" });
}

/** Where the set-up of a run's view says it failed (setupScript): `fstab.failed`, beside the fstab in the run's folder. */
export function setupFailedFile(runDir: string): string {
  return path.join(runDir, "fstab.failed");
}

/** Whether the set-up said it failed: the regular file it writes (setupFailedFile), not empty. */
export function setupSaidFailed(runDir: string): boolean {
  try {
    const st = lstatSync(setupFailedFile(runDir));
    return st.isFile() && st.size > 0;
  } catch {
    return false;
  }
}

/** Empties what an earlier set-up in `runDir` said (a standby's, before its folder serves a run's own chain). */
export function clearSetupFailure(runDir: string): void {
  closeSync(
    openSync(
      setupFailedFile(runDir),
      fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_TRUNC | fsConstants.O_NOFOLLOW,
      0o600,
    ),
  );
}

/** The command that starts `command args` in the sandbox of `plan`, its view written already (writeView). */
export function chainOf(
  command: string,
  args: readonly string[],
  plan: SandboxPlan,
): { command: string; args: string[] } {
  // As the kernel names it: the set-up compares a writable path's place in the view with it (setupScript).
  const root = realpathSync(path.join(plan.runDir, "root"));
  const fstab = path.join(plan.runDir, "fstab");
  const uid = plan.user?.uid ?? process.getuid?.() ?? 0;
  const gid = plan.user?.gid ?? process.getgid?.() ?? 0;
  const tools = toolPaths().chain;
  // Started only where sandboxSupport found the tools.
  if (!tools) throw new Error(`${toolPaths().missing} is not installed`);
  const { unshare, setup } = tools;
  return {
    command: unshare,
    args: [
      ...OUTER_FLAGS,
      "--",
      "/bin/sh",
      "-c",
      setup,
      "pi-teams-sandbox",
      fstab,
      root,
      plan.cwd,
      String(uid),
      String(gid),
      command,
      ...args,
    ],
  };
}

/**
 * Ends every process still in the run's view: its root is the run's `root/` folder (a chroot no
 * sandboxed process can leave), so a process of the gate's that left its process group and cleared
 * its environment is found all the same, and must not write the result file after the gate. (A root
 * is the run's own folder, never another run's: unlike a namespace's number, it is not reused.)
 * `killed`: the pids killed (SIGKILL); `settled`: none is left, as far as the kernel's own count of the
 * processes it made shows: a look at /proc that found none, and no process made since it began but ones
 * looked at too (noneMadeSince). A look alone proves nothing: a process that forks and exits before its
 * turn in the list leaves a child the list does not hold.
 *
 * Every process of the machine is read, not only those with a pid given since the run began: the kernel's
 * turn of pids can come round with no process made and none counted (`processes` in /proc/stat), since a fork
 * that fails after taking its pid moves it on (a pidfd asked for with the descriptor table full, a pids cgroup
 * at its limit), so a gate can leave a process whose pid lies before its run's first.
 */
export function endRun(runDir: string): { killed: number[]; settled: boolean } {
  let root: string;
  try {
    root = realpathSync(path.join(runDir, "root"));
    // The folder itself, never where a link in its place leads: a `run-as=` gate's user owns its run's folder, and
    // a `root` linked to `/` would have every process of the machine taken for the run's.
    if (root !== path.join(realpathSync(runDir), "root")) return { killed: [], settled: false };
  } catch {
    return { killed: [], settled: false };
  }
  const killed = new Set<number>();
  // Kills those of `pids` that are in the view: how many were.
  const look = (pids: readonly string[]): number => {
    let found = 0;
    for (const name of pids) {
      if (!inView(name, root)) continue;
      try {
        process.kill(Number(name), "SIGKILL");
        killed.add(Number(name));
        found += 1;
      } catch {
        // gone meanwhile
      }
    }
    return found;
  };
  // A second look: a process forked while the first was killing.
  for (let pass = 0; pass < 3; pass++) {
    const before = lastPid();
    if (look(readdirSync("/proc").filter((name) => /^\d+$/.test(name))) > 0) continue;
    return { killed: [...killed], settled: before !== null && noneMadeSince(before, look) };
  }
  return { killed: [...killed], settled: false };
}

/**
 * Whether process `pid` is in the view whose root is `root`. A process whose first thread has ended shows
 * no root of its own (`/proc/<pid>/root` is gone) while its other threads still run: those are read.
 */
function inView(pid: string, root: string): boolean {
  try {
    return readlinkSync(`/proc/${pid}/root`) === root;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") return false; // another user's
  }
  let threads: string[];
  try {
    threads = readdirSync(`/proc/${pid}/task`);
  } catch {
    return false; // gone
  }
  return threads.some((tid) => {
    try {
      return readlinkSync(`/proc/${pid}/task/${tid}/root`) === root;
    } catch {
      return false;
    }
  });
}

/** How many pids made during a look are looked at one by one, at most, before the look is called unsure. */
const MADE_MAX = 4096;

/**
 * True when no process was made since the kernel gave pid `since` but ones `look` found outside the view:
 * the pids given since are looked at, until the kernel has given none more meanwhile. False when one was in
 * the view (killed), or when the machine kept making processes (not sure: the view is not kept).
 */
function noneMadeSince(since: number, look: (pids: readonly string[]) => number): boolean {
  let from = since;
  for (let round = 0; round < 8; round++) {
    const now = lastPid();
    if (now === null) return false;
    if (now === from) return true;
    const made = pidsBetween(from, now);
    if (made === null || look(made) > 0) return false;
    from = now;
  }
  return false;
}

/**
 * The pid the kernel gave last in this process's pid namespace (it gives them in turn, wrapping at
 * pid_max): null where it cannot be read, or where /proc is not this namespace's (its numbers would be
 * another's).
 */
function lastPid(): number | null {
  try {
    if (readlinkSync("/proc/self") !== String(process.pid)) return null;
    const last = Number(readFileSync("/proc/sys/kernel/ns_last_pid", "latin1").trim());
    return Number.isInteger(last) && last >= 0 ? last : null;
  } catch {
    return null;
  }
}

let pidMax: number | null = null;

/** The pids after `from` up to `to` in the kernel's turn (wrapping at pid_max); null when too many to look at. */
function pidsBetween(from: number, to: number): string[] | null {
  if (pidMax === null) {
    try {
      pidMax = Number(readFileSync("/proc/sys/kernel/pid_max", "latin1").trim());
    } catch {
      return null;
    }
  }
  const count = to > from ? to - from : pidMax - 1 - from + to;
  if (!(count > 0 && count <= MADE_MAX)) return null;
  const pids: string[] = [];
  for (let pid = from + 1; pids.length < count; pid = pid + 1 >= pidMax ? 1 : pid + 1) pids.push(String(pid));
  return pids;
}

/**
 * A view kept for the next runs of its gate (runner/standby.ts): the namespaces a standby's chain made
 * and its root, held open by the leader, so that the next standby enters them (`nsenter`) instead of
 * building the same view again. `scratch` is what the view's writable file systems of its own (its
 * `/tmp`, `/dev/shm`, the tmpfs that hide the leader's folders) held when it was taken: a run that
 * left them otherwise ends the view (heldViewClean).
 */
export interface HeldView {
  fds: { user: number; mount: number; root: number };
  scratch: readonly string[];
  /** The view's tmpfs mount points, as the gate sees them. */
  points: readonly string[];
}

/**
 * Holds the view `pid` is in, when it is the view of `plan` (its root is the run folder's `root/`): the
 * standby's `sh`, chrooted and in the chain's last namespaces, before anything of the gate ran in them.
 * Null when it is not there (yet), or gone.
 */
export function holdView(pid: number, plan: SandboxPlan): HeldView | null {
  const opened: number[] = [];
  try {
    const root = realpathSync(path.join(plan.runDir, "root"));
    if (readlinkSync(`/proc/${pid}/root`) !== root) return null;
    for (const name of ["ns/user", "ns/mnt", "root"]) opened.push(openSync(`/proc/${pid}/${name}`, "r"));
    const [user, mount, rootFd] = opened as [number, number, number];
    // Still the same process in the same view: a pid is not reused before the leader reaps it.
    if (readlinkSync(`/proc/${pid}/root`) !== root) throw new Error("moved");
    const points = ["/tmp", "/dev/shm", ...outerFirst(plan.hide).filter((d) => existsSync(d))];
    return { fds: { user, mount, root: rootFd }, points, scratch: [...scratchOf(rootFd, points)] };
  } catch {
    for (const fd of opened) closeQuietly(fd);
    return null;
  }
}

/** Lets a held view go: the kernel ends its namespaces with the last process or file that holds them. */
export function releaseView(view: HeldView): void {
  for (const fd of Object.values(view.fds)) closeQuietly(fd);
}

/**
 * True when the view's own writable file systems are as they were when it was held: nothing left in them.
 * Read in the order held and given up at the first difference: a folder a run filled has a new change time
 * on its own line, before any of its entries would be read.
 */
export function heldViewClean(view: HeldView): boolean {
  try {
    let n = 0;
    for (const line of scratchOf(view.fds.root, view.points)) if (line !== view.scratch[n++]) return false;
    return n === view.scratch.length;
  } catch {
    return false;
  }
}

/**
 * Every entry of the view's tmpfs mounts, read through the held root: its name, inode, change time, mode,
 * owner and links. Any file made, removed, renamed, written or changed in them moves a change time (the
 * kernel sets it; no call sets it back). Mounts on them (the folders bound into the view) are named, not read.
 */
function* scratchOf(rootFd: number, points: readonly string[]): Generator<string> {
  function* walk(dir: string, dev: bigint, depth: number): Generator<string> {
    for (const name of readdirSync(dir).sort()) {
      const entry = `${dir}/${name}`;
      const st = lstatSync(entry, { bigint: true });
      if (st.dev !== dev) {
        yield `${entry} mount`;
        continue;
      }
      yield `${entry} ${st.ino} ${st.ctimeNs} ${st.mode} ${st.uid} ${st.nlink}`;
      if (st.isDirectory() && depth < 32) yield* walk(entry, dev, depth + 1);
    }
  }
  for (const point of points) {
    const top = `/proc/self/fd/${rootFd}${point}`;
    const st = lstatSync(top, { bigint: true });
    yield `${point} ${st.dev} ${st.ino} ${st.ctimeNs} ${st.mode} ${st.uid} ${st.nlink}`;
    if (st.isDirectory()) yield* walk(top, st.dev, 0);
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // closed already
  }
}

/** The fds a standby started in a held view has them at (after its stdin, output pipes and `go` on 3). */
export const HELD_FD_BASE = 4;

/**
 * The command that starts `command args` in a held view: `nsenter` into its user and mount namespaces
 * and its root (the fds HELD_FD_BASE.. of the process), in `cwd` there, with the leader's own ids as
 * that namespace maps them; then `setpriv`, as in the chain: no new privileges, and for a leader running as
 * root its capabilities dropped. The gate holds no capability over the view's mounts (the namespace the
 * chain's last `unshare` made owns them, locked there) and cannot gain one.
 */
export function heldChainOf(
  command: string,
  args: readonly string[],
  cwd: string,
): { command: string; args: string[] } {
  const held = toolPaths().held;
  // Kept only where canEnterHeld found them.
  if (!held) throw new Error("util-linux's nsenter is not installed");
  const { nsenter, setpriv } = held;
  const fd = (n: number): string => `/proc/self/fd/${HELD_FD_BASE + n}`;
  return {
    command: nsenter,
    args: [
      `--user=${fd(0)}`,
      `--mount=${fd(1)}`,
      `--root=${fd(2)}`,
      `--wdns=${cwd}`,
      "--preserve-credentials",
      "--",
      setpriv,
      ...noPrivileges((process.getuid?.() ?? 0) === 0),
      "--",
      command,
      ...args,
    ],
  };
}

/**
 * Whether a held view can be entered: `nsenter` and `setpriv` found in an absolute folder of PATH. A name
 * left to the search would be looked for from the gate's working directory, where a relative or empty
 * folder of PATH finds a file the gate's agents wrote, started with the leader's authority.
 */
export function canEnterHeld(): boolean {
  return toolPaths().held !== null;
}

/** One mount as /proc/self/mountinfo shows it: its mount point (with mountinfo's octal escapes), type, options. */
interface MountEntry {
  /** Its mount id and its parent's (mountinfo's first two fields). */
  id: string;
  parent: string;
  point: string;
  type: string;
  readOnly: boolean;
  /** Its per-mount options (mountinfo's sixth field): nosuid, nodev, noexec, the atime rule. */
  options: string[];
}

/** The mounts this process sees, in mount order. */
function readMounts(): MountEntry[] {
  const mounts: MountEntry[] = [];
  for (const line of readFileSync("/proc/self/mountinfo", "utf8").split("\n")) {
    const fields = line.split(" ");
    const dash = fields.indexOf("-");
    const point = fields[4];
    if (dash < 0 || point === undefined) continue;
    const options = (fields[5] ?? "").split(",");
    mounts.push({
      id: fields[0] ?? "",
      parent: fields[1] ?? "",
      point,
      type: fields[dash + 1] ?? "",
      readOnly: options.includes("ro"),
      options,
    });
  }
  return mounts;
}

/**
 * The two fstabs (mount(8)'s own format, one `mount -a` each) that build the view of `plan` in `root`: the
 * view before its writable paths, which the set-up binds itself in between (setupScript), and what lies on them.
 */
function fstabOf(
  plan: SandboxPlan,
  root: string,
  mounts: readonly MountEntry[],
  shown: readonly string[],
): { fstab: string; after: string } {
  const inRoot = (point: string): string => `${fstabEscape(root)}${point === "/" ? "" : point}`;
  const lines = [`/ ${fstabEscape(root)} none rbind 0 0`];
  const visible = shownMounts(mounts);
  // Every mount read-only, the kernel's own too (/proc/sys, /sys, /dev: a gate of a leader running as root
  // would pass their owner checks). Its other flags are kept: a mount inherited from the leader's namespace
  // has them locked, and a remount that dropped one would be refused.
  for (const m of visible) {
    if (m.readOnly) continue;
    const kept = m.options.filter((o) => o !== "rw" && o !== "ro" && o !== "");
    lines.push(`${inRoot(m.point)} ${inRoot(m.point)} none ${["remount", "bind", "ro", ...kept].join(",")} 0 0`);
  }
  // The gate's own when it runs as the leader's user: a file or folder of them handed to another user's process
  // (through a socket) lets it make nothing there.
  const scratch = plan.user ? "1777" : "0700";
  lines.push(`tmpfs ${fstabEscape(root)}/tmp tmpfs mode=${scratch},nosuid,nodev 0 0`);
  lines.push(`tmpfs ${fstabEscape(root)}/dev/shm tmpfs mode=${scratch},nosuid,nodev 0 0`);
  const bind = (to: string[], dir: string, options: string): void => {
    to.push(`${fstabEscape(dir)} ${inRoot(fstabEscape(dir))} none ${options},X-mount.mkdir 0 0`);
  };
  // Ancestors first, and the writable paths after the ones shown read-only: a later mount above an
  // earlier one would cover it. The writable paths, and the protected paths inside them, are bound by the
  // set-up itself between the two fstabs (SandboxPlan.bound, protectedInView).
  for (const dir of shown) bind(lines, dir, "bind,ro");
  const after: string[] = [];
  for (const dir of outerFirst(plan.hide).filter((d) => existsSync(d)))
    after.push(`tmpfs ${inRoot(fstabEscape(dir))} tmpfs mode=0755,nosuid,nodev,X-mount.mkdir 0 0`);
  bind(after, plan.runDir, "bind,ro");
  const writtenBack = plan.resultFolder ?? plan.resultFile;
  after.push(`${fstabEscape(writtenBack)} ${inRoot(fstabEscape(writtenBack))} none bind 0 0`);
  return { fstab: `${lines.join("\n")}\n`, after: `${after.join("\n")}\n` };
}

/**
 * The protected paths that lie inside a writable one and exist: read-only in the view, checked so after
 * it is built. (A path with a newline in it cannot be listed; none of the leader's own has one.)
 */
function protectedInView(plan: SandboxPlan): string[] {
  // Ancestors first: the set-up binds them in this order.
  return outerFirst(plan.protect).filter(
    (dir) => !dir.includes("\n") && existsSync(dir) && plan.bound.some(({ path: w }) => dir === w || isUnder(dir, w)),
  );
}

/**
 * The mounts a path shows: not covered by a mount on top of it at the same point (its child there), and
 * on a parent that is shown itself. mountinfo's order is not the order of mounting (a container's root
 * may come after its /proc): the parent ids say what lies on what.
 */
function shownMounts(mounts: readonly MountEntry[]): MountEntry[] {
  const byId = new Map(mounts.map((m) => [m.id, m]));
  const covered = new Set(
    mounts.filter((m) => mounts.some((top) => top.parent === m.id && top.point === m.point)).map((m) => m.id),
  );
  const shown = new Map<string, boolean>();
  const isShown = (m: MountEntry, depth = 0): boolean => {
    const known = shown.get(m.id);
    if (known !== undefined) return known;
    const parent = byId.get(m.parent);
    const result =
      !covered.has(m.id) && (parent === undefined || parent === m || depth > 64 || isShown(parent, depth + 1));
    shown.set(m.id, result);
    return result;
  };
  return mounts.filter((m) => isShown(m));
}

/** The distinct paths of `dirs`, each ancestor before what lies inside it. */
function outerFirst(dirs: readonly string[]): string[] {
  return [...new Set(dirs.map((d) => path.resolve(d)))].sort((a, b) => a.length - b.length);
}

/** True when `child` lies strictly inside `parent` (both absolute, as mountinfo or path.resolve gives them). */
function isUnder(child: string, parent: string): boolean {
  if (parent === "/") return child !== "/";
  return child.startsWith(`${parent}/`);
}

/** fstab's escapes (the same as mountinfo's): a blank, a tab, a newline and a backslash as octal. */
function fstabEscape(file: string): string {
  return file.replace(/[\\ \t\n]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, "0")}`);
}

/** Whether the view's fresh `/tmp` or `/dev/shm` covers `dir`: shown only when the plan lists it as visible. */
export function hiddenInView(dir: string): boolean {
  return isUnder(dir, "/tmp") || isUnder(dir, "/dev/shm");
}
