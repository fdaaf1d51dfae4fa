/**
 * A temp folder other users can get to. The suite's own temp folder may sit in a TMPDIR of the user's
 * own (mode 0700), which lets no other user reach what is in it: a test that runs something as another
 * uid lays its files out under /tmp then.
 */
import { stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

/** Whether every folder from `/` down to `dir` lets other users through (o+x). */
export async function othersCanTraverse(dir: string): Promise<boolean> {
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    if (((await stat(at)).mode & 0o001) === 0) return false;
    if (at === path.dirname(at)) return true;
  }
}

/** The temp dir, when other users can get through to it; else /tmp. */
export async function reachableTempDir(): Promise<string> {
  if (await othersCanTraverse(os.tmpdir())) return os.tmpdir();
  if (await othersCanTraverse("/tmp")) return "/tmp";
  throw new Error(`neither ${os.tmpdir()} nor /tmp lets other users through`);
}
