/**
 * File hints from the team directory. A hint only says "look at this file again": the leader re-reads
 * it and works out what really changed, and a reconcile scan finds whatever a watcher dropped.
 *
 * Default: one `fs.watch` per watched directory (inotify on Linux): one watch however many tasks,
 * and a notice in well under a millisecond. `poll: true` uses chokidar's polling instead, for network
 * file systems where inotify sees nothing. docs/decisions/watching.md has the figures behind the choice.
 * The only importer of chokidar, loaded only for `poll` (its import is ~15–20 ms of a start-up).
 */
import fs from "node:fs";
import path from "node:path";
import type { FSWatcher as ChokidarWatcher } from "chokidar";
import { describeError } from "../contract/errors.js";
import { makeFolders } from "./json-file.js";
import { isTempOrLock } from "./paths.js";

export interface WatchTarget {
  /** The directory to watch; created when missing so that the watch can start (unless `create` is false). */
  dir: string;
  /** Which names in it matter; temp and lock files are never passed. */
  accept: (name: string) => boolean;
  /** Called with the file's absolute path. */
  onHint: (file: string) => void;
  /** False: a missing directory is waited for (retried every second), not created. Default true. */
  create?: boolean;
  /** A folder of the team's (the task list, an inbox folder): made as json-file.ts `mkdirUnder`'s `shared` says. */
  shared?: boolean;
  /**
   * Called with the absolute path of a file that changed but is not accepted (temp and lock files
   * excepted); native watching only (polling never looks at such files).
   */
  onIgnored?: (file: string) => void;
}

export interface DirWatcher {
  /**
   * Watches every folder again from scratch: after a folder was deleted and created again (inotify
   * watches the old folder, which no longer has a name), or anything else a watcher cannot report.
   */
  rearm(): void;
  close(): Promise<void>;
}

interface WatchOptions {
  poll: boolean;
  pollIntervalMs: number;
  /** A watcher error: reported, and the watch re-armed (the reconcile scan covers the gap). */
  onError: (message: string) => void;
}

const REARM_MS = 1000;

export async function watchDirs(targets: WatchTarget[], opts: WatchOptions): Promise<DirWatcher> {
  for (const target of targets) {
    if (target.create !== false) makeFolders(target.dir, { shared: target.shared === true });
  }
  return opts.poll ? pollDirs(targets, opts, (await import("chokidar")).watch) : nativeDirs(targets, opts);
}

function nativeDirs(targets: WatchTarget[], opts: WatchOptions): DirWatcher {
  const watchers = new Map<WatchTarget, fs.FSWatcher>();
  const timers = new Set<NodeJS.Timeout>();
  /** Targets whose failure was reported: said once until they are watched again. */
  const failing = new Set<WatchTarget>();
  let closed = false;

  const fail = (target: WatchTarget, message: string): void => {
    if (!failing.has(target)) opts.onError(`${message}; retrying every ${REARM_MS} ms`);
    failing.add(target);
    rearm(target);
  };

  const arm = (target: WatchTarget): void => {
    if (closed || watchers.has(target)) return;
    try {
      const watcher = fs.watch(target.dir, { persistent: true }, (_type, name) => {
        // Linux always passes the name; without one, nothing tells which file: the scan settles it.
        if (typeof name !== "string" || isTempOrLock(name)) return;
        if (target.accept(name)) target.onHint(path.join(target.dir, name));
        else target.onIgnored?.(path.join(target.dir, name));
      });
      watcher.on("error", (error) => {
        watcher.close();
        if (watchers.get(target) === watcher) watchers.delete(target);
        fail(target, `watching ${target.dir} failed: ${describeError(error)}`);
      });
      watchers.set(target, watcher);
      failing.delete(target);
    } catch (error) {
      fail(target, `cannot watch ${target.dir}: ${describeError(error)}`);
    }
  };

  // A missing folder is waited for, never created again: a team dir that was deleted stays deleted
  // until its owner brings it back (the leader's reconcile scan says so).
  const rearm = (target: WatchTarget): void => {
    if (closed) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      arm(target);
    }, REARM_MS);
    timers.add(timer);
  };

  for (const target of targets) arm(target);
  return {
    rearm() {
      for (const [target, watcher] of watchers) {
        watcher.close();
        watchers.delete(target);
      }
      for (const target of targets) arm(target);
    },
    async close() {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const watcher of watchers.values()) watcher.close();
      watchers.clear();
    },
  };
}

async function pollDirs(
  targets: WatchTarget[],
  opts: WatchOptions,
  chokidarWatch: typeof import("chokidar").watch,
): Promise<DirWatcher> {
  const watchers: ChokidarWatcher[] = targets.map((target) => {
    const watcher = chokidarWatch(target.dir, {
      ignoreInitial: true,
      usePolling: true,
      interval: opts.pollIntervalMs,
      binaryInterval: opts.pollIntervalMs,
      depth: 0,
      ignored: (file: string) => file !== target.dir && (isTempOrLock(file) || !target.accept(path.basename(file))),
    });
    const hint = (file: string): void => target.onHint(path.resolve(file));
    watcher.on("add", hint);
    watcher.on("change", hint);
    watcher.on("unlink", hint);
    watcher.on("error", (error) => opts.onError(`polling ${target.dir} failed: ${describeError(error)}`));
    return watcher;
  });
  // Armed means every file's first stat is taken: chokidar lists the folder and starts a poller per file
  // asynchronously, and a file rewritten before its poller's first stat never looks changed to it (the
  // start-up scan, which follows, may already have read the old content).
  await Promise.all(watchers.map((watcher) => new Promise<void>((resolve) => watcher.once("ready", () => resolve()))));
  let closing: Promise<void> | undefined;
  return {
    rearm() {
      // Polling stats the path itself, so a folder created again is seen without a new watcher.
    },
    close() {
      closing ??= Promise.all(watchers.map((w) => w.close())).then(() => undefined);
      return closing;
    },
  };
}
