/**
 * Before any test file starts, once per run: builds `dist/` if it is not current (build.ts), then
 * points the run's temp files at a RAM file system when the machine has one (fastTempDir). The
 * leader, the CLI and the pi extension under test are that build; test files take it as it is
 * (`ensureBuilt` in leader-rig.ts) instead of each checking it again. A build that fails stops the run
 * here, with the compiler's output, before a test times out waiting for it.
 */
import { chmodSync, mkdtempSync, rmSync, statSync, statfsSync } from "node:fs";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { buildIfStale } from "./build.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The hash of the sources `dist/` was built from in this run's global set-up. */
    distBuiltFrom: string;
  }
}

/** statfs's f_type of a tmpfs (linux/magic.h). */
const TMPFS_MAGIC = 0x01021994;
/** Room the suite needs at its peak (a 40 MB task, hooks that print past the caps, 10,000 logs), with margin. */
const ROOM_BYTES = 2 * 1024 ** 3;

/**
 * The tests write and remove tens of thousands of small files (task lists of 10,000, a log per run,
 * a context file per hook) and the leader fsyncs its ledger per event: on a disk file system that is a
 * large share of the suite's CPU (creating a file where many were just removed is dear on ext4). So,
 * unless TMPDIR is set, the run's temp files go to a folder of its own in /dev/shm when that is a tmpfs
 * with room: mode 1777 like /tmp (a leader under its own user writes there too), removed at the end.
 * Every process the tests start inherits it (os.tmpdir() reads TMPDIR). Elsewhere, os.tmpdir() as it is.
 */
function fastTempDir(): { dir: string; remove: () => void } | undefined {
  if (process.env.TMPDIR) return undefined;
  try {
    const shm = "/dev/shm";
    const fs = statfsSync(shm);
    if (fs.type !== TMPFS_MAGIC || fs.bavail * fs.bsize < ROOM_BYTES) return undefined;
    if ((statSync(shm).mode & 0o1777) !== 0o1777) return undefined;
    const dir = mkdtempSync(path.join(shm, "pi-teams-hooks-tests-"));
    chmodSync(dir, 0o1777);
    return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
  } catch {
    return undefined;
  }
}

/** Once per run, not per project: vitest calls the set-up once for each project, in one process. */
let tempDir: ReturnType<typeof fastTempDir> | null = null;

export default async function setup(project: TestProject): Promise<(() => void) | undefined> {
  project.provide("distBuiltFrom", await buildIfStale());
  // `vitest` in watch mode runs the set-up once: a rerun after an edit builds again first.
  project.onTestsRerun(async () => project.provide("distBuiltFrom", await buildIfStale({ again: true })));
  if (tempDir !== null) return undefined;
  tempDir = fastTempDir();
  if (tempDir === undefined) return undefined;
  process.env.TMPDIR = tempDir.dir;
  return tempDir.remove;
}
