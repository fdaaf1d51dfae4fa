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
