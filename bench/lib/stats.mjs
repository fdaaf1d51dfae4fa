// Small statistics and formatting helpers shared by the benches.

/** Nearest-rank percentile (q in 0..1) of an array of numbers. */
export function percentile(samples, q) {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1];
}

export function summarize(samples) {
  return {
    n: samples.length,
    median: percentile(samples, 0.5),
    p99: percentile(samples, 0.99),
    min: samples.length ? Math.min(...samples) : NaN,
    max: samples.length ? Math.max(...samples) : NaN,
  };
}

export function ms(value, digits = 1) {
  return Number.isFinite(value) ? `${value.toFixed(digits)} ms` : "—";
}

export function ratio(a, b) {
  return Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}×` : "—";
}

/** A plain text table: rows of cells, first row the header; numbers right-aligned by the caller. */
export function table(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i] ?? "").length)));
  const line = (r) =>
    r.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join("  ");
  return [line(rows[0]), widths.map((w) => "-".repeat(w)).join("  "), ...rows.slice(1).map(line)].join("\n");
}

/** The value after `--name` on the command line, or `fallback`. */
export function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

export const sleep = (msec) => new Promise((resolve) => setTimeout(resolve, msec));

/** Times `fn` `rounds` times after `warmup` untimed calls; the samples summarized (ms). */
export function timeCalls(fn, rounds, warmup = 50) {
  for (let i = 0; i < warmup; i++) fn();
  const samples = [];
  for (let i = 0; i < rounds; i++) {
    const started = performance.now();
    fn();
    samples.push(performance.now() - started);
  }
  return summarize(samples);
}
