/**
 * A gate that runs as a user of its own (`run-as=NAME` on its settings line): the seeds' "execute as".
 * A leader running as root switches to the user itself (`setpriv`, as the recipe's start does); any
 * other leader goes through `sudo -n -E -u NAME`, which a sudoers rule must allow without a password
 * and with the environment kept (docs/security.md, "A gate as a user of its own"):
 *
 *   pi-leader ALL=(pi-gate) NOPASSWD:SETENV: ALL
 *
 * The gate's run folder is opened to that user just enough to run: the folder can be entered but not
 * listed (its name is random), the context and the gate's copy read, the result file written. What the
 * gate writes stays within what that user may write, and the sandbox (when on) is built as that user.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

/** A user of the system, as /etc/passwd has it. */
export interface RunAsUser {
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
  const uid = spawnSync("id", ["-u", name], { encoding: "utf8" });
  const gid = spawnSync("id", ["-g", name], { encoding: "utf8" });
  if (uid.status !== 0 || gid.status !== 0) return null;
  return { name, uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

const sudoAllowed = new Map<string, string | null>();

/** Why this leader cannot start a command as `user` (null: it can), asked of sudo once per user. */
function cannotSwitch(user: RunAsUser): string | null {
  if (process.getuid?.() === 0) return null;
  const known = sudoAllowed.get(user.name);
  if (known !== undefined) return known;
  const probe = spawnSync("sudo", ["-n", "-E", "-u", user.name, "--", "true"], { encoding: "utf8", timeout: 10_000 });
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
      error:
        `the gate runs as ${user.name} (run-as=${user.name}), and this leader cannot switch to that user: ${why}; ` +
        `a sudoers rule lets it: ${process.env.USER ?? "<leader user>"} ALL=(${user.name}) NOPASSWD:SETENV: ALL`,
    };
  if (process.getuid?.() === 0)
    return {
      command: "setpriv",
      args: [`--reuid=${user.uid}`, `--regid=${user.gid}`, `--init-groups`, "--", command, ...args],
    };
  return { command: "sudo", args: ["-n", "-E", "-u", user.name, "--", command, ...args] };
}

/**
 * Opens the run's folder to the gate's user: the folders on the way can be entered (not listed), the
 * run's files read, the result file written. Its name stays the one secret that keeps other users out.
 */
export function openRunDirTo(
  runDir: string,
  runsRoot: string,
  files: { read: string[]; write: string[] },
): string | null {
  // Above the runs folder, the leader's own folders (its home, its state dir) must let others pass.
  for (let dir = path.dirname(path.dirname(runsRoot)); ; dir = path.dirname(dir)) {
    const mode = statSync(dir).mode;
    if ((mode & 0o001) === 0)
      return `${dir} (mode ${(mode & 0o777).toString(8)}) does not let another user reach the run's folder below it (chmod o+x ${dir}, or 0711: passed through, never listed)`;
    if (path.dirname(dir) === dir) break;
  }
  for (let dir = runDir; ; dir = path.dirname(dir)) {
    chmodSync(dir, 0o711);
    if (dir === path.dirname(runsRoot)) break;
  }
  chmodSync(path.join(runDir, "root"), 0o755);
  for (const file of files.read) chmodSync(file, 0o644);
  for (const file of files.write) chmodSync(file, 0o666);
  return null;
}
