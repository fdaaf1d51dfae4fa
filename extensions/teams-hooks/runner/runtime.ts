/**
 * What a process that fires events runs on, beside a team's settings: the clock, how long a write waits
 * for a lock, the sent log of each team dir, the waits before a step is tried again, who is told that a
 * hook started, and the test pause. Built once (the command line's bin, the pi extension, the task
 * API's server, a `Leader` given none) and passed whole, like the team's settings (`TeamSetup`): to the leader, to each event
 * (event/invoke.ts `InvokeRequest.runtime`), to a decision's application (event/deferral-decision.ts) and
 * down to the runner (runner/run-hook.ts). Tests build their own with `createRuntime`.
 */
import { DEFAULT_LOCK_TIMEOUT_MS } from "../team/lock.js";
import { SentLog } from "../team/sent-log.js";

/** Waits before the 1st, 2nd, … new try of a policy that could not be applied: about a minute in all. */
export const RETRY_POLICY_MS: readonly number[] = Object.freeze([1_000, 2_000, 4_000, 8_000, 15_000, 30_000]);
/** First and longest wait between tries of a write that failed (a full disk). */
const RETRY_WRITE_MS: Readonly<{ first: number; max: number }> = Object.freeze({ first: 1_000, max: 30_000 });

/** A hook of an event has started: its process group, its run id, its file name, and the event's key. */
export interface SpawnInfo {
  pid: number;
  runId: string;
  hook: string;
  key: string;
}

export interface Runtime {
  /** The clock (tests pass their own). */
  readonly now: () => Date;
  /** How long a write of the policy waits for a lock (the lock protocol's 10 s unless a test says less). */
  readonly lockTimeoutMs: number;
  /** The sent log of a team dir (`hook-state/sent.jsonl`, team/sent-log.ts): one per team dir, shared. */
  readonly sentLog: (teamDir: string) => SentLog;
  readonly retry: {
    /**
     * Waits before each new try of a policy that could not be applied (a task lock held too long); once
     * they are used up the leader gives up on that event, loudly.
     */
    readonly policyMs: readonly number[];
    /** First and longest wait between tries of a write that failed (doubling from the first). */
    readonly writeMs: Readonly<{ first: number; max: number }>;
  };
  /** Told as each hook of an event starts (a leader's `started` notice and ledger record, `run`'s progress). */
  readonly onSpawn: ((info: SpawnInfo) => void) | null;
  /**
   * A hook for tests, never set in use: a run writes `<dir>/<run id>.paused` once its gate is checked
   * and copied, and starts only once `<dir>/<run id>.go` exists (or its timeout passes). The bin puts
   * `PI_TEAMS_HOOKS_TEST_PAUSE_DIR` here (docs/decisions/test-pause.md); nothing else reads it.
   */
  readonly testPause: string | null;
}

/** The parts of a runtime a caller chooses; each left out takes its default. */
interface RuntimeParts {
  now?: () => Date;
  lockTimeoutMs?: number;
  retryPolicyMs?: readonly number[];
  retryWriteMs?: { first: number; max: number };
  onSpawn?: ((info: SpawnInfo) => void) | null;
  testPause?: string | null;
}

/** A runtime (frozen): the parts given, the defaults for the rest, and one sent log per team dir. */
export function createRuntime(parts: RuntimeParts = {}): Runtime {
  const logs = new Map<string, SentLog>();
  return Object.freeze({
    now: parts.now ?? (() => new Date()),
    lockTimeoutMs: parts.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS,
    sentLog: (teamDir: string): SentLog => {
      let log = logs.get(teamDir);
      if (!log) {
        log = new SentLog(teamDir);
        logs.set(teamDir, log);
      }
      return log;
    },
    retry: Object.freeze({
      policyMs: Object.freeze([...(parts.retryPolicyMs ?? RETRY_POLICY_MS)]),
      writeMs: Object.freeze({ ...(parts.retryWriteMs ?? RETRY_WRITE_MS) }),
    }),
    onSpawn: parts.onSpawn ?? null,
    testPause: parts.testPause ?? null,
  });
}

/** The same runtime, with `listener` told of each spawn too (after the one it had): a leader's own records. */
export function alsoOnSpawn(runtime: Runtime, listener: (info: SpawnInfo) => void): Runtime {
  const before = runtime.onSpawn;
  return Object.freeze({
    ...runtime,
    onSpawn: (info: SpawnInfo) => {
      before?.(info);
      listener(info);
    },
  });
}
