/**
 * Long loops of a server (`serve`) in slices: each gives the event loop a turn whenever it has held it
 * for `SLICE_MS`, so that reading or sorting 100,000 logs never keeps `/healthz` waiting longer than
 * a slice. Measured in bench/serve-filters.mjs.
 */

/** The longest a reading loop holds the event loop between two turns of it. */
const SLICE_MS = 8;
// Taken at the first call: the `performance` global loads its module when first used (a command's start-up).
let sliceStart: number | undefined;

/**
 * Gives the event loop a turn when the work since the last one has taken `SLICE_MS` (shared by every
 * reader in the process: ten readers at once still give way every few milliseconds each), else
 * returns at once. Loops that read files call it once per file.
 */
export async function yieldIfDue(): Promise<void> {
  sliceStart ??= performance.now();
  if (performance.now() - sliceStart < SLICE_MS) return;
  await new Promise<void>((resolve) => setImmediate(resolve));
  sliceStart = performance.now();
}

/** `items.filter(keep)`, giving the event loop its turns (`yieldIfDue`): 100,000 names take a while. */
export async function filterSliced<T>(items: readonly T[], keep: (item: T) => boolean): Promise<T[]> {
  const kept: T[] = [];
  for (let i = 0; i < items.length; i++) {
    if (i % 1024 === 0) await yieldIfDue();
    const item = items[i] as T;
    if (keep(item)) kept.push(item);
  }
  return kept;
}

/** Items sorted at a time before they are merged: a few hundred microseconds of sorting. */
const RUN = 256;

/**
 * `items.sort(compare)` (stable, in place; the same array returned) in slices: runs of `RUN` sorted
 * at once, then merged pass by pass, with a turn of the event loop whenever one is due. Sorting
 * 100,000 names in one piece held a server 150 to 350 ms where the folder's listing comes unsorted.
 */
export async function sortSliced<T>(items: T[], compare: (a: T, b: T) => number): Promise<T[]> {
  const n = items.length;
  for (let lo = 0; lo < n; lo += RUN) {
    await yieldIfDue();
    const run = items.slice(lo, lo + RUN).sort(compare);
    for (let k = 0; k < run.length; k++) items[lo + k] = run[k] as T;
  }
  if (n <= RUN) return items;
  let from = items;
  let to: T[] = new Array<T>(n);
  for (let width = RUN; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n);
      const hi = Math.min(lo + 2 * width, n);
      let i = lo;
      let j = mid;
      for (let k = lo; k < hi; k++) {
        if ((k & 1023) === 0) await yieldIfDue();
        // The left run first on a tie: stable.
        if (i < mid && (j >= hi || compare(from[i] as T, from[j] as T) <= 0)) to[k] = from[i++] as T;
        else to[k] = from[j++] as T;
      }
    }
    [from, to] = [to, from];
  }
  if (from !== items) {
    for (let k = 0; k < n; k++) {
      if ((k & 1023) === 0) await yieldIfDue();
      items[k] = from[k] as T;
    }
  }
  return items;
}
