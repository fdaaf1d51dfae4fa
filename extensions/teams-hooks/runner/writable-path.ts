/**
 * A gate's writable path (its working directory, a `sandbox-write=` path) resolved as the sandbox will bind it,
 * one component at a time from `/`, each link's own owner looked at (lstat) before it is followed. A link that
 * a user other than the leader's own or root owns is refused: under a leader of its own user, the agents' link
 * (a folder of theirs turned into a link to the leader's home, or to `/`) would have the leader bind its
 * target writable for the gate's tests, which run with the leader's authority. Under one user (the agents are
 * the leader's user) every link is the leader's own, and is followed as before.
 *
 * The walk holds the folder it stands in open (O_PATH) and looks up the next name through that descriptor
 * (`/proc/self/fd/N/name`): a folder above swapped for a link meanwhile is never followed unseen. It ends on
 * the file it reached, by device and inode: what the view must show at the path once built (runner/sandbox.ts).
 */
import {
  closeSync,
  constants as fsConstants,
  fstatSync,
  lstatSync,
  openSync,
  readFileSync,
  readlinkSync,
} from "node:fs";
import path from "node:path";

/** Linux's O_PATH (the generic value: every architecture Node runs on); Node's constants do not name it. */
const O_PATH = 0o10000000;
/** As many links as the kernel follows in one path before ELOOP. */
const MAX_LINKS = 40;

/** A writable path as it really is: its path with no link in it, and what is there (device, inode). */
export interface ResolvedPath {
  path: string;
  dev: bigint;
  ino: bigint;
  /** What is there: a folder, a regular file, or anything else (a FIFO, a socket, a device). */
  kind: "folder" | "file" | "other";
}

function kindOf(st: import("node:fs").BigIntStats): ResolvedPath["kind"] {
  return st.isDirectory() ? "folder" : st.isFile() ? "file" : "other";
}

/** A file's identity as the sandbox's set-up compares it (stat(1)'s `%d:%i`): its device and inode, in decimal. */
export function fileId(file: { dev: bigint; ino: bigint }): string {
  return `${file.dev}:${file.ino}`;
}

/**
 * A link on the way owned by someone else: the link's path (as reached) and its owner's uid; or one of the leader's
 * own (or root's) in a folder that someone else can write (`folderOwner`: that folder's owner), where they could
 * have put it: a sandboxed gate runs as the leader's user, so the links it makes in the agents' folders are the
 * leader's.
 */
export interface ForeignLink {
  link: string;
  owner: number;
  folderOwner?: number;
}

/**
 * `file` resolved from `/` (relative to the leader's working directory when not absolute), every link on the
 * way owned by `uid` or root; or the first link that is not; or null when the path is not there (or cannot be
 * reached: nothing to bind). Throws on a loop of links.
 */
export function resolveWritable(
  file: string,
  uid: number,
  gid: number = process.getgid?.() ?? 0,
): ResolvedPath | ForeignLink | null {
  const pending = parts(path.resolve(file));
  const real: string[] = [];
  let dir = openSync("/", O_PATH | fsConstants.O_DIRECTORY);
  let links = 0;
  try {
    for (;;) {
      const name = pending.shift();
      if (name === undefined) {
        const st = fstatSync(dir, { bigint: true });
        return { path: `/${real.join("/")}`, dev: st.dev, ino: st.ino, kind: kindOf(st) };
      }
      if (name === "..") {
        const up = openSync(`/proc/self/fd/${dir}/..`, O_PATH | fsConstants.O_DIRECTORY);
        closeSync(dir);
        dir = up;
        real.pop();
        continue;
      }
      const entry = `/proc/self/fd/${dir}/${name}`;
      let st: import("node:fs").BigIntStats;
      try {
        st = lstatSync(entry, { bigint: true });
      } catch {
        return null;
      }
      if (st.isSymbolicLink()) {
        const owner = Number(st.uid);
        if (owner !== uid && owner !== 0) return { link: `/${[...real, name].join("/")}`, owner };
        // The folder it is in: another user's, or one others can write (not sticky, nor the leader's own group).
        const folder = fstatSync(dir, { bigint: true });
        const mode = Number(folder.mode);
        const sticky = (mode & 0o1000) !== 0;
        const othersWrite = !sticky && ((mode & 0o002) !== 0 || ((mode & 0o020) !== 0 && Number(folder.gid) !== gid));
        if ((Number(folder.uid) !== uid && folder.uid !== 0n) || othersWrite)
          return { link: `/${[...real, name].join("/")}`, owner, folderOwner: Number(folder.uid) };
        if (++links > MAX_LINKS) throw new Error(`${file}: too many levels of symbolic links`);
        const target = readlinkSync(entry);
        // Still the link looked at: one put in its place between the two looks is looked at again.
        const again = lstatSync(entry, { bigint: true });
        if (again.ino !== st.ino || again.dev !== st.dev || again.uid !== st.uid || again.ctimeNs !== st.ctimeNs) {
          pending.unshift(name);
          continue;
        }
        if (path.isAbsolute(target)) {
          const top = openSync("/", O_PATH | fsConstants.O_DIRECTORY);
          closeSync(dir);
          dir = top;
          real.length = 0;
        }
        pending.unshift(...parts(target));
        continue;
      }
      if (pending.length === 0) {
        real.push(name);
        return { path: `/${real.join("/")}`, dev: st.dev, ino: st.ino, kind: kindOf(st) };
      }
      let next: number;
      try {
        // No link (O_NOFOLLOW): one swapped in since the look above fails here, and is looked at again.
        next = openSync(entry, O_PATH | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "ENOTDIR" || code === "ELOOP") {
          if (lstatSync(entry).isSymbolicLink()) {
            pending.unshift(name);
            continue;
          }
          return null; // a file with more path after it: not there
        }
        return null;
      }
      closeSync(dir);
      dir = next;
      real.push(name);
    }
  } finally {
    closeSync(dir);
  }
}

/** The components of a path, without empty ones and `.`. */
function parts(file: string): string[] {
  return file.split("/").filter((p) => p !== "" && p !== ".");
}

/** Whether a walk ended on a link someone else owns. */
export function isForeign(found: ResolvedPath | ForeignLink | null): found is ForeignLink {
  return found !== null && "link" in found;
}

/** A user's name and uid for a message (`nobody (uid 65534)`), or the uid alone where /etc/passwd has none. */
export function ownerName(uid: number): string {
  try {
    for (const line of readFileSync("/etc/passwd", "utf8").split("\n")) {
      const [name, , id] = line.split(":");
      if (name && id === String(uid)) return `${name} (uid ${uid})`;
    }
  } catch {
    // no /etc/passwd
  }
  return `uid ${uid}`;
}
