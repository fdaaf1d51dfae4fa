/**
 * Who besides this user can write a folder: the question behind every place the leader must not
 * take from a folder the agents could have written (a gate's packages, its module type, tsx).
 */
import { lstatSync } from "node:fs";

/**
 * Why another user than this one (or root) can write `dir` (null when none can, or it does not
 * exist): owned by another user, or writable by its group (unless that is this user's own primary
 * group) or by everyone.
 */
export function othersCanWrite(dir: string): string | null {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(dir);
  } catch {
    return null;
  }
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  if (st.uid !== uid && st.uid !== 0) return `it belongs to uid ${st.uid}`;
  if ((st.mode & 0o002) !== 0) return "everyone can write it";
  if ((st.mode & 0o020) !== 0 && st.gid !== gid) return `its group (gid ${st.gid}) can write it`;
  return null;
}

/**
 * What keeps the leader from standing on its own ground in `teamDir`: its state (`hook-state/`), its
 * logs (`hook-logs/`) and the team's layer of gates (`hooks/`) must each be a real folder (no link)
 * that no other user can write, and the team dir itself must not be another user's (its owner renames
 * what it holds) nor let others rename in it (writable without the sticky bit). One line each, naming
 * the folder and what is wrong; none when all hold, or when a folder is not there yet (the leader
 * makes it its own).
 */
export function groundProblems(teamDir: string): string[] {
  const problems: string[] = [];
  const uid = process.getuid?.() ?? 0;
  try {
    const st = lstatSync(teamDir);
    if (st.uid !== uid && st.uid !== 0)
      problems.push(`${teamDir} belongs to uid ${st.uid}, who can move the leader's folders in it aside`);
    else if ((st.mode & 0o022) !== 0 && (st.mode & 0o1000) === 0 && othersCanWrite(teamDir) !== null)
      problems.push(`${teamDir} lets other users rename what is in it (${othersCanWrite(teamDir)}, and no sticky bit)`);
  } catch {
    return problems; // no team dir: the setup's own check says so
  }
  for (const name of ["hook-state", "hook-logs", "hooks"]) {
    const dir = `${teamDir}/${name}`;
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(dir);
    } catch {
      continue; // not made yet: the leader makes it, its own
    }
    if (st.isSymbolicLink())
      problems.push(`${dir} is a symbolic link: the leader's folder must be a folder of its own`);
    else if (st.isDirectory()) {
      // (A file in its place is no one's ground: every write there fails, is said, and is tried again.)
      const unsafe = othersCanWrite(dir);
      if (unsafe) problems.push(`${dir} can be written by another user (${unsafe})`);
    }
  }
  return problems;
}
