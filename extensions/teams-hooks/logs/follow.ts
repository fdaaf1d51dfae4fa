/**
 * `logs --follow`: each matching log that lands in the folder, once, oldest first. Its own module so
 * that only `--follow` loads the watcher (team/file-hints.ts, chokidar).
 */
import { describeError } from "../contract/errors.js";
import { isHookLogName, listHookLogNames } from "./hook-log.js";
import { type LogFilter, nameMayMatch, parseLogName, recordMatches } from "./filter.js";
import { type Candidate, type LogRow, type ProblemSink, readCandidates } from "./query.js";
import { hookLogsDir } from "../team/paths.js";
import { type DirWatcher, watchDirs } from "../team/file-hints.js";

interface FollowOptions {
  filter: LogFilter;
  /** Names already shown or deliberately left out; only names not in it are new. */
  seen: Iterable<string>;
  onRow: (row: LogRow) => void;
  onProblem: ProblemSink;
  /** A watcher or listing problem: reported, and following goes on. */
  onWarning: (message: string) => void;
  /** Following ends when this settles. */
  stop: Promise<unknown>;
  /** The periodic rescan that catches what the watcher missed (default 1000 ms). */
  rescanMs?: number;
  /** False: a missing `hook-logs/` is waited for, not created (a reader that must not write). Default true. */
  createDir?: boolean;
  /** Files larger than this are problems, read no further (logs/query.ts `QueryOptions.maxBytes`). */
  maxBytes?: number;
}

/**
 * Prints (through `onRow`) each matching log that lands in the folder, oldest first, until `stop`.
 * A directory watch is the fast path; a rescan every `rescanMs` catches dropped notices. Creates
 * `hook-logs/` when missing so that it can be watched (the leader would create it anyway), unless
 * `createDir` is false.
 */
export async function followLogs(teamDir: string, opts: FollowOptions): Promise<void> {
  let seen = new Set(opts.seen);
  let stopped = false;
  let running: Promise<void> | null = null;
  let again = false;
  let lastWarning = "";

  const scan = async (): Promise<void> => {
    const names = await listHookLogNames(teamDir, { inSlices: true });
    const fresh = names.filter((name) => !seen.has(name));
    seen = new Set(names); // a name pruned and written again is new again
    const candidates = fresh.flatMap((name): Candidate[] => {
      const info = parseLogName(name);
      return info === null || nameMayMatch(info, opts.filter) ? [{ name, timeMs: info?.timeMs ?? 0 }] : [];
    });
    await readCandidates(
      hookLogsDir(teamDir),
      candidates,
      opts.onProblem,
      (row) => {
        if (!stopped && recordMatches(row.record, opts.filter)) opts.onRow(row);
      },
      opts.maxBytes,
    );
  };
  const requestScan = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await scan();
          lastWarning = "";
        } catch (error) {
          const message = `cannot list ${hookLogsDir(teamDir)}: ${describeError(error)}; trying again`;
          if (message !== lastWarning) opts.onWarning(message);
          lastWarning = message;
        }
      } while (again && !stopped);
    })().finally(() => {
      running = null;
    });
  };

  let watcher: DirWatcher | null = null;
  try {
    watcher = await watchDirs(
      [{ dir: hookLogsDir(teamDir), accept: isHookLogName, onHint: requestScan, create: opts.createDir !== false }],
      {
        poll: false,
        pollIntervalMs: 0,
        onError: opts.onWarning,
      },
    );
  } catch (error) {
    opts.onWarning(
      `cannot watch ${hookLogsDir(teamDir)}: ${describeError(error)}; rescanning every ${opts.rescanMs ?? 1000} ms instead`,
    );
  }
  const timer = setInterval(requestScan, opts.rescanMs ?? 1000);
  requestScan(); // whatever landed between the caller's listing and the watch
  try {
    await opts.stop;
  } finally {
    stopped = true;
    clearInterval(timer);
    await watcher?.close();
    await running;
  }
}
