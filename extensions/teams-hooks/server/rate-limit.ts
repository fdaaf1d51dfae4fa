/**
 * The per-key request rate of the task API: a token bucket per key, as many tokens as the rate's
 * count, refilled evenly over its period, so a key may burst up to its count and then goes at the
 * rate. In memory: a restart of `serve` starts every bucket full.
 */
import { HooksError } from "../contract/errors.js";

export interface RateLimit {
  count: number;
  periodMs: number;
}

/** The server's rate for keys that have none of their own. */
export const DEFAULT_RATE_LIMIT: Readonly<RateLimit> = Object.freeze({ count: 600, periodMs: 60_000 });

const PERIODS: Readonly<Record<string, number>> = {
  s: 1_000,
  sec: 1_000,
  m: 60_000,
  min: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
};

/** `600/min`, `10/s`, `5000/h` → a rate; E_USAGE naming `flag` otherwise. */
export function parseRateLimit(text: string, flag: string): RateLimit {
  const match = /^\s*(\d+)\s*\/\s*([a-z]+)\s*$/.exec(text);
  const count = match ? Number(match[1]) : Number.NaN;
  const periodMs = match ? PERIODS[match[2] ?? ""] : undefined;
  if (!Number.isSafeInteger(count) || count < 1 || count > 1_000_000 || periodMs === undefined) {
    throw new HooksError(
      "E_USAGE",
      `${flag} "${text}" must be COUNT/PERIOD with a count of 1 to 1000000 and a period of s, min or h (e.g. 600/min)`,
    );
  }
  return { count, periodMs };
}

/** `600/min`, for messages and `keys list`. */
export function formatRateLimit(rate: RateLimit): string {
  const unit =
    rate.periodMs === 1_000
      ? "s"
      : rate.periodMs === 60_000
        ? "min"
        : rate.periodMs === 3_600_000
          ? "h"
          : `${rate.periodMs}ms`;
  return `${rate.count}/${unit}`;
}

interface Bucket {
  tokens: number;
  at: number;
  rate: RateLimit;
}

/** Buckets by key name. A key whose rate changed (recreated under its name) starts a new bucket. */
export class RateLimiter {
  readonly #buckets = new Map<string, Bucket>();
  readonly #now: () => number;

  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  /** Takes one token: null when there was one, else the seconds until there is one (for `Retry-After`). */
  take(key: string, rate: RateLimit): number | null {
    const now = this.#now();
    let bucket = this.#buckets.get(key);
    if (!bucket || bucket.rate.count !== rate.count || bucket.rate.periodMs !== rate.periodMs) {
      bucket = { tokens: rate.count, at: now, rate };
      this.#buckets.set(key, bucket);
    }
    const perMs = rate.count / rate.periodMs;
    bucket.tokens = Math.min(rate.count, bucket.tokens + (now - bucket.at) * perMs);
    bucket.at = now;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return null;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000));
  }

  /** Forgets keys that are gone (revoked), so the map never outgrows the keys file. */
  retain(names: ReadonlySet<string>): void {
    for (const name of this.#buckets.keys()) if (!names.has(name)) this.#buckets.delete(name);
  }
}
