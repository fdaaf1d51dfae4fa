/**
 * A gate that runs as a user of its own (`run-as=NAME` on its settings line): the seeds' "execute as".
 * A leader running as root switches to the user itself (`setpriv`, as the recipe's start does); any
 * other leader goes through `sudo -n -E -u NAME`, which a sudoers rule must allow without a password
 * and with the environment kept (docs/security.md, "A gate as a user of its own"):
 *
 *   pi-leader ALL=(pi-gate) NOPASSWD:SETENV: ALL
 *
 * The gate's run folder is opened to that user, and to no one else (openRunDirTo): the folders above it
 * are passed through, the run's folder and files are the gate user's own or its group's. What the
 * gate writes stays within what that user may write, and the sandbox (when on) is built as that user.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { withAbsoluteSearchPath } from "./search-path.js";

/** A user of the system, as /etc/passwd has it. */
interface RunAsUser {
  name: string;
  uid: number;
  gid: number;
}

/** The user named `name`, from /etc/passwd (then `id`, for users of another name service); null when none. */
export function lookUpUser(name: string): RunAsUser | null {
  try {
    for (const line of readFileSync("/etc/passwd", "utf8").split("\n")) {
      const [user, , uid, gid] = line.split(":");
      if (user === name && uid !== undefined && gid !== undefined) return { name, uid: Number(uid), gid: Number(gid) };
    }
  } catch {
    // no /etc/passwd: ask id
  }
  const env = withAbsoluteSearchPath(process.env);
  const uid = spawnSync("id", ["-u", name], { encoding: "utf8", env });
  const gid = spawnSync("id", ["-g", name], { encoding: "utf8", env });
  if (uid.status !== 0 || gid.status !== 0) return null;
  return { name, uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

const sudoAllowed = new Map<string, string | null>();

/** Why this leader cannot start a command as `user` (null: it can), asked of sudo once per user. */
function cannotSwitch(user: RunAsUser): string | null {
  if (process.getuid?.() === 0) return null;
  const known = sudoAllowed.get(user.name);
  if (known !== undefined) return known;
  const probe = spawnSync("sudo", ["-n", "-E", "-u", user.name, "--", "true"], {
    encoding: "utf8",
    timeout: 10_000,
    env: withAbsoluteSearchPath(process.env),
  });
  const why =
    probe.error !== undefined
      ? `sudo is not installed (${probe.error.message})`
      : probe.status === 0
        ? null
        : `sudo refuses (${(probe.stderr.trim().split("\n")[0] ?? "").trim() || `exit ${probe.status}`})`;
  sudoAllowed.set(user.name, why);
  return why;
}

/**
 * The command that starts `command args` as `user`, or why it cannot be (one line with the fix).
 */
export function runAs(
  user: RunAsUser,
  command: string,
  args: readonly string[],
): { command: string; args: string[] } | { error: string } {
  const why = cannotSwitch(user);
  if (why !== null)
    return {
      error: `the gate runs as ${user.name} (run-as=${user.name}), and this leader cannot switch to that user: ${why}; a sudoers rule lets it: ${process.env.USER ?? "<leader user>"} ALL=(${user.name}) NOPASSWD:SETENV: ALL`,
    };
  if (process.getuid?.() === 0)
    return {
      command: "setpriv",
      args: [`--reuid=${user.uid}`, `--regid=${user.gid}`, `--init-groups`, "--", command, ...args],
    };
  return { command: "sudo", args: ["-n", "-E", "-u", user.name, "--", command, ...args] };
}

/**
 * Opens the run's folder to the gate's user, and to no one else: the folders above it are passed through
 * (0711, never listed), and the run's folder and files are the gate user's own (a leader running as
 * root hands them over) or its group's (any other leader, which must be in that group: sudo cannot
 * hand files over). Returns the owner and mode the files it may write (the result file first) must
 * keep, or why it cannot be done.
 */
export function openRunDirTo(
  runDir: string,
  runsRoot: string,
  user: RunAsUser,
  files: { read: string[]; exec: string[]; write: string[] },
): { uid: number; mode: number } | { error: string } {
  // Above the runs folder, the leader's own folders (its home, its state dir) must let others pass.
  for (let dir = path.dirname(path.dirname(runsRoot)); ; dir = path.dirname(dir)) {
    const mode = statSync(dir).mode;
    if ((mode & 0o001) === 0)
      return {
        error: `${dir} (mode ${(mode & 0o777).toString(8)}) does not let another user reach the run's folder below it (chmod o+x ${dir}, or 0711: passed through, never listed)`,
      };
    if (path.dirname(dir) === dir) break;
  }
  for (let dir = path.dirname(runDir); ; dir = path.dirname(dir)) {
    chmodSync(dir, 0o711);
    if (dir === path.dirname(runsRoot)) break;
  }
  const root = path.join(runDir, "root");
  if (process.getuid?.() === 0) {
    for (const dir of [runDir, root]) {
      chownSync(dir, user.uid, user.gid);
      chmodSync(dir, 0o700);
    }
    for (const file of [...files.read, ...files.exec, ...files.write]) chownSync(file, user.uid, user.gid);
    for (const file of files.read) chmodSync(file, 0o400);
    for (const file of files.exec) chmodSync(file, 0o500);
    for (const file of files.write) chmodSync(file, 0o600);
    return { uid: user.uid, mode: 0o600 };
  }
  if (!process.getgroups?.().includes(user.gid))
    return {
      error: `this leader is not in ${user.name}'s group (gid ${user.gid}), which the run's files are shared through (usermod --append --groups ${user.gid} <leader user>)`,
    };
  for (const dir of [runDir, root]) {
    chownSync(dir, -1, user.gid);
    chmodSync(dir, 0o750);
  }
  for (const file of [...files.read, ...files.exec, ...files.write]) chownSync(file, -1, user.gid);
  for (const file of files.read) chmodSync(file, 0o640);
  for (const file of files.exec) chmodSync(file, 0o550);
  for (const file of files.write) chmodSync(file, 0o660);
  return { uid: process.getuid?.() ?? 0, mode: 0o660 };
}
