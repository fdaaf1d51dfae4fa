/**
 * A line diff in the unified format (`@@ -a,b +c,d @@`, three lines of context), for `trust` to show
 * what changed in a gate. Pure. Gates are short scripts, so a plain longest-common-subsequence table
 * is enough; past a size where that table would be large, only the line counts are given.
 */

/** Above this many cells (lines × lines) no diff is computed. */
const MAX_CELLS = 4_000_000;
const CONTEXT = 3;

type Op = { kind: "same" | "del" | "add"; line: string };

/** The unified diff of `before` → `after` as lines (without a trailing newline), or a one-line note. */
export function unifiedDiff(before: string, after: string, labels: { before: string; after: string }): string[] {
  const a = splitLines(before);
  const b = splitLines(after);
  if (a.length * b.length > MAX_CELLS) return [`(${a.length} → ${b.length} lines: too long to show as a diff)`];
  const ops = diffOps(a, b);
  if (ops.every((op) => op.kind === "same")) return [];
  return [`--- ${labels.before}`, `+++ ${labels.after}`, ...hunks(ops)];
}

function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split(/\r?\n/);
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/** The edit script: a table of common-subsequence lengths from the end, then one walk from the start. */
function diffOps(a: string[], b: string[]): Op[] {
  const width = b.length + 1;
  const table = new Uint32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i * width + j] =
        a[i] === b[j]
          ? (table[(i + 1) * width + j + 1] ?? 0) + 1
          : Math.max(table[(i + 1) * width + j] ?? 0, table[i * width + j + 1] ?? 0);
    }
  }
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    const left = a[i];
    const right = b[j];
    if (left !== undefined && right !== undefined && left === right) {
      ops.push({ kind: "same", line: left });
      i++;
      j++;
    } else if (
      left !== undefined &&
      (right === undefined || (table[(i + 1) * width + j] ?? 0) >= (table[i * width + j + 1] ?? 0))
    ) {
      ops.push({ kind: "del", line: left }); // on a tie the old line goes first, as diff prints it
      i++;
    } else if (right !== undefined) {
      ops.push({ kind: "add", line: right });
      j++;
    }
  }
  return ops;
}

/** Groups the script into hunks with CONTEXT lines around each change. */
function hunks(ops: Op[]): string[] {
  const out: string[] = [];
  // Line numbers (1-based) in a and b at each op.
  const posA: number[] = [];
  const posB: number[] = [];
  let na = 1;
  let nb = 1;
  for (const op of ops) {
    posA.push(na);
    posB.push(nb);
    if (op.kind !== "add") na++;
    if (op.kind !== "del") nb++;
  }
  let k = 0;
  while (k < ops.length) {
    if (ops[k]?.kind === "same") {
      k++;
      continue;
    }
    // One hunk: from CONTEXT lines before this change to CONTEXT lines after the last change that
    // follows it within 2 × CONTEXT unchanged lines (closer changes share a hunk).
    const start = Math.max(0, k - CONTEXT);
    let last = k;
    for (let j = k + 1; j < ops.length && j - last <= 2 * CONTEXT; j++) if (ops[j]?.kind !== "same") last = j;
    const stop = Math.min(ops.length, last + CONTEXT + 1);
    const slice = ops.slice(start, stop);
    const countA = slice.filter((op) => op.kind !== "add").length;
    const countB = slice.filter((op) => op.kind !== "del").length;
    // An empty side is numbered by the line before it, as diff does.
    const fromA = (posA[start] ?? 1) - (countA === 0 ? 1 : 0);
    const fromB = (posB[start] ?? 1) - (countB === 0 ? 1 : 0);
    out.push(`@@ -${fromA},${countA} +${fromB},${countB} @@`);
    for (const op of slice) out.push(`${op.kind === "same" ? " " : op.kind === "del" ? "-" : "+"}${op.line}`);
    k = stop;
  }
  return out;
}

/** True when `bytes` look like text (no NUL in the first 8 KiB): what a diff can be shown for. */
export function looksLikeText(bytes: Uint8Array): boolean {
  return !bytes.subarray(0, 8192).includes(0);
}
