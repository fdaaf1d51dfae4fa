/**
 * A keyed job queue: jobs of one group (a task) run in order, one at a time; jobs of different groups
 * run in parallel up to `concurrency`. A group pushed as `low` (a member's idle notifications) starts
 * only when no other group waits: a flood of them never holds a task's gate back. No I/O. A job's own failure is its business: the queue catches
 * it, reports it through `onError`, and carries on.
 */
import { HooksError } from "../contract/errors.js";

type Job = () => Promise<void>;

export interface KeyedQueue {
  /** Adds a job; false once the queue is closing. `low`: the group waits behind every other group. */
  push(group: string, job: Job, low?: boolean): boolean;
  /** Jobs waiting plus running. */
  readonly size: number;
  readonly running: number;
  /** Resolves when nothing waits or runs. */
  onIdle(): Promise<void>;
  /** Stops taking jobs, drops the waiting ones, and resolves when the running ones have ended. */
  close(): Promise<number>;
}

export function createKeyedQueue(opts: { concurrency: number; onError: (error: unknown) => void }): KeyedQueue {
  if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1) {
    throw new HooksError("E_USAGE", `concurrency must be a whole number ≥ 1, got ${String(opts.concurrency)}`);
  }
  /** Waiting jobs per group, in arrival order; a group is in `ready` at most once. */
  const waiting = new Map<string, Job[]>();
  /** Groups with waiting jobs and none running, in the order they became ready. */
  const ready: string[] = [];
  /** The same, for groups pushed as `low`. */
  const readyLow: string[] = [];
  const lowGroups = new Set<string>();
  const active = new Set<string>();
  let idleWaiters: Array<() => void> = [];
  let closing: Promise<number> | undefined;
  let waitingCount = 0;

  const settleIdle = (): void => {
    if (waitingCount > 0 || active.size > 0) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const resolve of waiters) resolve();
  };

  const pump = (): void => {
    while (active.size < opts.concurrency && (ready.length > 0 || readyLow.length > 0) && !closing) {
      const group = ready.length > 0 ? ready.shift() : readyLow.shift();
      if (group === undefined) break;
      const jobs = waiting.get(group);
      const job = jobs?.shift();
      if (!jobs || !job) continue;
      if (jobs.length === 0) waiting.delete(group);
      waitingCount -= 1;
      active.add(group);
      void job()
        .catch((error: unknown) => opts.onError(error))
        .finally(() => {
          active.delete(group);
          if (waiting.has(group)) (lowGroups.has(group) ? readyLow : ready).push(group);
          else lowGroups.delete(group);
          pump();
          settleIdle();
        });
    }
  };

  return {
    push(group, job, low = false) {
      if (closing) return false;
      if (low) lowGroups.add(group);
      const jobs = waiting.get(group);
      if (jobs) jobs.push(job);
      else {
        waiting.set(group, [job]);
        if (!active.has(group)) (lowGroups.has(group) ? readyLow : ready).push(group);
      }
      waitingCount += 1;
      pump();
      return true;
    },
    get size() {
      return waitingCount + active.size;
    },
    get running() {
      return active.size;
    },
    onIdle() {
      if (waitingCount === 0 && active.size === 0) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
    close() {
      if (closing) return closing;
      const dropped = waitingCount;
      waiting.clear();
      ready.length = 0;
      readyLow.length = 0;
      waitingCount = 0;
      closing = new Promise<void>((resolve) => {
        if (active.size === 0) resolve();
        else idleWaiters.push(resolve);
      }).then(() => dropped);
      settleIdle();
      return closing;
    },
  };
}
