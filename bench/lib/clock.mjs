// One wall clock for the bench and the hooks it starts. A hook stamps `$EPOCHREALTIME` (bash 5:
// gettimeofday, i.e. CLOCK_REALTIME, in microseconds, no fork); the bench must read the same clock
// with better than millisecond resolution. Node has no CLOCK_REALTIME in nanoseconds, so we anchor the
// monotonic `process.hrtime` to the instant `Date.now()` (CLOCK_REALTIME, whole ms) ticks over: that
// instant is known to within one loop turn (well under a microsecond here). `calibrate()` again at the
// start of each phase keeps NTP slewing out of the figures; it returns how far the old anchor had drifted.

let anchorReal = 0n;
let anchorHr = 0n;
let calibrated = false;

export function calibrate() {
  const oldOffset = calibrated ? anchorReal - anchorHr : null;
  // The tick lies between the previous Date.now() read and this one: both between `prevHr` and `hr2`.
  // A turn that was preempted (more than 20 µs wide) proves nothing: try again at the next tick.
  for (let attempt = 0; attempt < 50; attempt++) {
    let prevHr = process.hrtime.bigint();
    let last = Date.now();
    for (;;) {
      const hr1 = process.hrtime.bigint();
      const ms = Date.now();
      const hr2 = process.hrtime.bigint();
      if (ms !== last) {
        if (hr2 - prevHr <= 20_000n || attempt === 49) {
          anchorReal = BigInt(ms) * 1_000_000n;
          anchorHr = (prevHr + hr2) / 2n;
          calibrated = true;
          // Drift of the previous anchor: how far its idea of "now" is from the fresh one's (ns).
          return oldOffset === null ? null : Number(oldOffset - (anchorReal - anchorHr));
        }
        break;
      }
      prevHr = hr1;
      last = ms;
    }
  }
  throw new Error("unreachable");
}

/** CLOCK_REALTIME in nanoseconds, as a BigInt. */
export function realNs() {
  if (!calibrated) calibrate();
  return anchorReal + (process.hrtime.bigint() - anchorHr);
}

/** `$EPOCHREALTIME` text ("1796209111.405497", or with a comma in some locales) → ns BigInt. */
export function parseEpochRealtime(text) {
  const m = /^(\d+)[.,](\d{1,9})$/.exec(text.trim());
  if (!m) throw new Error(`not an EPOCHREALTIME stamp: ${JSON.stringify(text)}`);
  return BigInt(m[1]) * 1_000_000_000n + BigInt(m[2].padEnd(9, "0"));
}

/** Difference of two ns BigInts in milliseconds (a Number). */
export function msBetween(fromNs, toNs) {
  return Number(toNs - fromNs) / 1e6;
}
