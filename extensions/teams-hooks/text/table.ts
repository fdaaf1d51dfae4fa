/**
 * Tables that fit the terminal. Columns are as wide as their widest cell (by display width:
 * text/width.ts); when a row is wider than the terminal, the widest column that may be cut is cut
 * with `…`, then the next widest, each down to its minimum. When even the minima do not fit, the
 * columns marked to go are left out, least important first; when those are gone too, the line is
 * left long rather than losing more. No imports but text/width.ts (the logs table uses it).
 */
import { displayWidth, padEnd, padStart, truncate } from "./width.js";

export interface ColumnSpec {
  /** Aligned right (numbers, durations). */
  right?: boolean;
  /** May be cut with `…` down to this many columns; absent: never cut. */
  min?: number;
  /** May be left out when even the minima do not fit: lower numbers go first; absent: always shown. */
  drop?: number;
}

/** Where each column goes: its width, 0 when it is left out. */
export interface TableLayout {
  widths: readonly number[];
  shown: readonly boolean[];
  /** The width every column at its natural width would take (the terminal width that cuts nothing). */
  needed: number;
  /** The width the laid-out table takes: more than asked when the columns that may not go do not fit. */
  used: number;
}

interface TableOptions {
  /** The columns a line may take (text/terminal.ts `terminalWidth`); Infinity: never cut. */
  width: number;
  /** Spaces between columns; default 2. */
  gap?: number;
  /** Put before each line (counted in its width); default none. */
  indent?: string;
}

/** The widest cell of each column, by display width, and at least `start[i]` (a follow keeps widening). */
export function naturalWidths(
  rows: ReadonlyArray<readonly string[]>,
  columns: number,
  start: readonly number[] = [],
): number[] {
  const widths = Array.from({ length: columns }, (_, i) => start[i] ?? 0);
  for (const cells of rows) {
    for (let i = 0; i < columns; i++) {
      const w = displayWidth(cells[i] ?? "");
      if (w > (widths[i] ?? 0)) widths[i] = w;
    }
  }
  return widths;
}

/**
 * The layout of columns as wide as `natural` in `opts.width`. `shown`, when given, is kept as it
 * is (a table printed row by row keeps the columns of its header).
 */
export function fitTable(
  natural: readonly number[],
  specs: readonly ColumnSpec[],
  opts: TableOptions,
  shown?: readonly boolean[],
): TableLayout {
  const gap = opts.gap ?? 2;
  const indent = displayWidth(opts.indent ?? "");
  const room = opts.width - indent;
  const visible = natural.map(() => true);
  const minimum = (i: number): number => Math.min(natural[i] ?? 0, specs[i]?.min ?? Number.POSITIVE_INFINITY);
  const total = (widths: (i: number) => number): number => {
    let sum = 0;
    let count = 0;
    for (let i = 0; i < natural.length; i++) {
      if (!visible[i]) continue;
      sum += widths(i);
      count += 1;
    }
    return sum + gap * Math.max(0, count - 1);
  };
  const needed = total((i) => natural[i] ?? 0) + indent;
  if (shown) {
    for (let i = 0; i < visible.length; i++) visible[i] = shown[i] ?? true;
  } else {
    while (total(minimum) > room) {
      let next = -1;
      for (let i = 0; i < natural.length; i++) {
        const order = specs[i]?.drop;
        if (visible[i] && order !== undefined && (next < 0 || order < (specs[next]?.drop ?? 0))) next = i;
      }
      if (next < 0) break;
      visible[next] = false;
    }
  }
  const widths = natural.map((w, i) => (visible[i] ? w : 0));
  let excess = total((i) => widths[i] ?? 0) - room;
  while (excess > 0) {
    // The widest column that may still be cut; the rightmost of equals (free text sits on the right).
    let widest = -1;
    let second = 0;
    for (let i = 0; i < widths.length; i++) {
      const w = widths[i] ?? 0;
      if (!visible[i] || w <= minimum(i)) continue;
      if (widest < 0 || w >= (widths[widest] ?? 0)) {
        if (widest >= 0) second = Math.max(second, widths[widest] ?? 0);
        widest = i;
      } else {
        second = Math.max(second, w);
      }
    }
    if (widest < 0) break; // every column at its minimum: the line stays long
    const w = widths[widest] ?? 0;
    // Down to the next widest (so that the widest are cut evenly), at least by one, never past the minimum.
    const target = Math.max(minimum(widest), Math.min(w - 1, Math.max(second, w - excess)));
    widths[widest] = target;
    excess -= w - target;
  }
  return { widths, shown: visible, needed, used: total((i) => widths[i] ?? 0) + indent };
}

/** One line of the table: cells cut and padded to the layout, the last one not padded unless aligned right. */
export function tableRow(
  cells: readonly string[],
  layout: TableLayout,
  specs: readonly ColumnSpec[],
  opts: Pick<TableOptions, "gap" | "indent"> = {},
): string {
  const out: string[] = [];
  const last = layout.shown.lastIndexOf(true);
  for (let i = 0; i <= last; i++) {
    if (!layout.shown[i]) continue;
    const width = layout.widths[i] ?? 0;
    const cell = truncate(cells[i] ?? "", width);
    out.push(specs[i]?.right ? padStart(cell, width) : i === last ? cell : padEnd(cell, width));
  }
  return `${opts.indent ?? ""}${out.join(" ".repeat(opts.gap ?? 2))}`.trimEnd();
}

/**
 * A whole table, header first, one line per row, fitted to `opts.width`; and the note that names
 * the columns it left out, by their header (empty when none was).
 */
export function formatTable(
  rows: ReadonlyArray<readonly string[]>,
  specs: readonly ColumnSpec[],
  opts: TableOptions,
): { text: string; note: string } {
  const layout = fitTable(naturalWidths(rows, specs.length), specs, opts);
  const text = rows.map((cells) => `${tableRow(cells, layout, specs, opts)}\n`).join("");
  return {
    text,
    note: hiddenNote(
      hiddenColumns(layout).map((i) => rows[0]?.[i] ?? ""),
      layout,
      opts.width,
    ),
  };
}

/** The indexes of the columns a layout leaves out. */
export function hiddenColumns(layout: TableLayout): number[] {
  return layout.shown.flatMap((visible, i) => (visible ? [] : [i]));
}

/**
 * `(hook and duration left out to fit 80 columns; COLUMNS=171 or --json shows everything)` (`json`: the command has
 * --json); empty when nothing was.
 */
export function hiddenNote(names: readonly string[], layout: TableLayout, width: number, json = true): string {
  if (names.length === 0) return "";
  const list = names.length === 1 ? names[0] : `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
  const fit =
    layout.used > width
      ? `left out, and the rest still takes ${layout.used} of ${width} columns`
      : `left out to fit ${width} columns`;
  return `(${list} ${fit}; COLUMNS=${layout.needed}${json ? " or --json" : ""} shows everything)`;
}
