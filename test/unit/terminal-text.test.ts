/**
 * Text for a terminal, as pure functions: display width (CJK and emoji 2, marks and escapes 0), padding
 * and cutting by it, tables that fit a width, the terminal's width and colour from what the caller
 * read, the "still running" line with a fake clock, clock times at an offset, and spans of time.
 */
import { describe, expect, it } from "vitest";
import { displayWidth, padEnd, padStart, stripAnsi, truncate } from "../../extensions/teams-hooks/text/width.js";
import {
  type ColumnSpec,
  fitTable,
  formatTable,
  naturalWidths,
  tableRow,
} from "../../extensions/teams-hooks/text/table.js";
import {
  colourEnabled,
  canRedraw,
  dateTimeAt,
  isoOffset,
  offsetLabel,
  runningText,
  terminalWidth,
} from "../../extensions/teams-hooks/text/terminal.js";
import { tableTime } from "../../extensions/teams-hooks/logs/find.js";
import { formatDuration, formatSpan } from "../../extensions/teams-hooks/text/messages.js";

describe("displayWidth", () => {
  it.each([
    ["", 0],
    ["plain ascii", 11],
    ["张伟", 4], // CJK ideographs: Wide
    ["ｈｉ", 4], // fullwidth Latin: Fullwidth
    ["ｶﾀｶﾅ", 4], // halfwidth Katakana: narrow
    ["カタカナ", 8],
    ["한국어", 6], // Hangul syllables
    ["\u1100\u1161\u11a8", 2], // conjoining Jamo: one syllable
    ["e\u0301", 1], // combining acute: 0
    ["a\u200bb", 2], // zero width space
    ["\u00ad", 0], // soft hyphen: format character
    ["😀", 2], // emoji presentation
    ["👍🏽", 2], // with a skin tone: one cluster
    ["👨\u200d👩\u200d👧", 2], // ZWJ family: one cluster
    ["🇯🇵", 2], // flag: two regional indicators, one cluster
    ["❤", 1], // text presentation by default
    ["❤\ufe0f", 2], // VS16 asks for the emoji
    ["⌚", 2], // BMP emoji presentation (Wide)
    ["\u001b[31mred\u001b[0m", 3], // ANSI colour: 0
    ["\u001b]8;;https://x\u0007link\u001b]8;;\u0007", 4], // OSC 8 hyperlink
    ["…", 1], // Ambiguous counts 1
    ["Ω", 1],
    ["\t", 0],
  ])("%j is %d columns", (text, width) => {
    expect(displayWidth(text)).toBe(width);
  });

  it("strips escapes, nothing else", () => {
    expect(stripAnsi("\u001b[1mbold\u001b[0m 张")).toBe("bold 张");
  });
});

describe("padEnd / padStart by display width", () => {
  it.each([
    ["ada", 6, "ada   ", "   ada"],
    ["张伟", 6, "张伟  ", "  张伟"],
    ["e\u0301", 3, "e\u0301  ", "  e\u0301"],
    ["toolong", 3, "toolong", "toolong"],
    ["\u001b[32mok\u001b[0m", 4, "\u001b[32mok\u001b[0m  ", "  \u001b[32mok\u001b[0m"],
  ])("%j to %d", (text, width, end, start) => {
    expect(padEnd(text, width)).toBe(end);
    expect(padStart(text, width)).toBe(start);
    expect(displayWidth(padEnd(text, width))).toBe(Math.max(width, displayWidth(text)));
  });
});

describe("truncate", () => {
  it.each([
    ["short", 10, "short"],
    ["exactly10!", 10, "exactly10!"],
    ["eleven char", 10, "eleven ch…"],
    ["abc", 1, "…"],
    ["abc", 0, ""],
    ["张伟张伟", 5, "张伟…"], // 4 + … = 5
    ["张伟张伟", 4, "张…"], // 伟 would straddle the edge: 2 + … = 3
    ["e\u0301e\u0301e\u0301e\u0301", 3, "e\u0301e\u0301…"], // never splits a mark from its base
    ["👨\u200d👩\u200d👧 family", 4, "👨\u200d👩\u200d👧 …"],
  ])("%j to %d columns", (text, width, expected) => {
    const cut = truncate(text, width);
    expect(cut).toBe(expected);
    expect(displayWidth(cut)).toBeLessThanOrEqual(Math.max(0, width));
  });

  it("keeps escapes, and resets the colour after a cut", () => {
    const cut = truncate("\u001b[31mred text here\u001b[0m", 5);
    expect(cut).toBe("\u001b[31mred …\u001b[0m");
    expect(displayWidth(cut)).toBe(5);
  });
});

describe("tables that fit", () => {
  const specs: ColumnSpec[] = [{}, { min: 4, drop: 2 }, { right: true, drop: 1 }, { min: 6 }];
  const rows = [
    ["name", "team", "runs", "note"],
    ["ada", "alpha", "12", "a long note that is the widest column of all"],
    ["张伟", "beta-with-a-long-name", "3", "short"],
  ];

  it("as wide as its cells, by display width, with no width given", () => {
    const { text, note } = formatTable(rows, specs, { width: Number.POSITIVE_INFINITY });
    expect(note).toBe("");
    const lines = text.trimEnd().split("\n");
    expect(lines[2]).toBe("张伟  beta-with-a-long-name     3  short");
    // The last column starts at the same column on every line: 张伟 does not shift it.
    const starts = lines.map((line, i) => displayWidth(line.slice(0, line.indexOf(rows[i]?.[3] ?? ""))));
    expect(starts).toEqual([35, 35, 35]);
  });

  it("cuts the widest column that may be cut, then the next, each down to its minimum", () => {
    const { text, note } = formatTable(rows, specs, { width: 50 });
    expect(text).toBe(
      [
        "name  team                runs  note",
        "ada   alpha                 12  a long note that …",
        "张伟  beta-with-a-long-…     3  short",
        "",
      ].join("\n"),
    );
    for (const line of text.trimEnd().split("\n")) expect(displayWidth(line)).toBeLessThanOrEqual(50);
    expect(note).toBe("");
  });

  it("leaves out the columns marked to go, lowest first, when even the minima do not fit; says which", () => {
    const narrow = formatTable(rows, specs, { width: 22 });
    expect(narrow.text).toBe(["name  team     note", "ada   alpha    a long…", "张伟  beta-w…  short", ""].join("\n"));
    expect(narrow.note).toBe("(runs left out to fit 22 columns; COLUMNS=79 or --json shows everything)");
    const narrower = formatTable(rows, specs, { width: 12 });
    expect(narrower.text).toBe(["name  note", "ada   a lon…", "张伟  short", ""].join("\n"));
    expect(narrower.note).toBe("(team and runs left out to fit 12 columns; COLUMNS=79 or --json shows everything)");
    // Narrower than what may not go: the note does not claim a fit it did not make.
    const tiny = formatTable(rows, specs, { width: 5 });
    const used = Math.max(...tiny.text.trimEnd().split("\n").map(displayWidth));
    expect(used).toBeGreaterThan(5);
    expect(tiny.note).toBe(
      `(team and runs left out, and the rest still takes ${used} of 5 columns; COLUMNS=79 or --json shows everything)`,
    );
  });

  it("lets the line be long when nothing more may go", () => {
    const { text } = formatTable(rows, [{}, {}, {}, { min: 6 }], { width: 10 });
    expect(text.split("\n")[1]).toBe("ada   alpha                  12    a lon…");
  });

  it("keeps the columns it was given (a table printed row by row)", () => {
    const first = fitTable(naturalWidths(rows, 4), specs, { width: 22 });
    const wider = fitTable(naturalWidths(rows, 4, [30]), specs, { width: 200 }, first.shown);
    expect(wider.shown).toEqual(first.shown);
    expect(tableRow(["x", "y", "9", "z"], wider, specs)).toBe(`x${" ".repeat(29)}  y${" ".repeat(20)}  z`);
  });

  it("pads a right-aligned last column", () => {
    const layout = fitTable([3, 5], [{}, { right: true }], { width: 80 });
    expect(tableRow(["a", "12"], layout, [{}, { right: true }])).toBe("a       12");
  });
});

describe("terminalWidth", () => {
  it.each([
    [{ isTTY: true, columns: 132, env: { COLUMNS: "40" } }, 132],
    [{ isTTY: true, columns: 0, env: { COLUMNS: "40" } }, 40], // a pty that does not say
    [{ isTTY: false, columns: 132, env: { COLUMNS: "40" } }, 40],
    [{ isTTY: false, env: { COLUMNS: " 120 " } }, 120],
    [{ isTTY: false, env: {} }, 80],
    [{ isTTY: false, env: { COLUMNS: "0" } }, 80],
    [{ isTTY: false, env: { COLUMNS: "-5" } }, 80],
    [{ isTTY: false, env: { COLUMNS: "wide" } }, 80],
    [{ isTTY: false, env: { COLUMNS: "12.5" } }, 80],
  ])("%j → %d", (facts, width) => {
    expect(terminalWidth(facts)).toBe(width);
  });
});

describe("colourEnabled and canRedraw", () => {
  it.each([
    [true, {}, true, true],
    [false, {}, false, false],
    [true, { NO_COLOR: "1" }, false, true],
    [true, { NO_COLOR: "" }, true, true], // empty: not set
    [true, { TERM: "dumb" }, false, false],
    [false, { FORCE_COLOR: "1" }, true, false],
    [false, { FORCE_COLOR: "3" }, true, false],
    [false, { FORCE_COLOR: "true" }, true, false],
    [false, { FORCE_COLOR: "" }, false, false],
    [true, { FORCE_COLOR: "0" }, false, true],
    [true, { FORCE_COLOR: "false" }, false, true],
    [false, { FORCE_COLOR: "1", NO_COLOR: "1" }, false, false], // NO_COLOR wins
    [true, { FORCE_COLOR: "1", TERM: "dumb" }, true, false],
  ])("isTTY=%s env=%j → colour %s, redraw %s", (isTTY, env, colour, redraw) => {
    expect(colourEnabled({ isTTY, env })).toBe(colour);
    expect(canRedraw({ isTTY, env })).toBe(redraw);
  });
});

describe("runningText (a fake clock)", () => {
  const t0 = 1_000_000;
  it.each([
    [[{ label: "on_idle.sh", since: t0 }], t0 + 999, ""],
    [[{ label: "on_idle.sh", since: t0 }], t0 + 1000, "running on_idle.sh… 1s"],
    [[{ label: "on_idle.sh", since: t0 }], t0 + 3_400, "running on_idle.sh… 3s"],
    [
      [
        { label: "task_completed #3", since: t0 },
        { label: "idle", since: t0 + 2_500 },
      ],
      t0 + 5_000,
      "running task_completed #3… 5s, idle… 2s",
    ],
    [
      [
        { label: "task_completed #3", since: t0 },
        { label: "idle", since: t0 + 4_500 },
      ],
      t0 + 5_000,
      "running task_completed #3… 5s",
    ],
  ])("%j at +%d", (items, now, text) => {
    expect(runningText(items, now, { afterMs: 1000, width: 80 })).toBe(text);
  });

  it("stays one column short of the width, so that \\r redraws it", () => {
    const text = runningText([{ label: "a-hook-with-a-very-long-name.sh", since: 0 }], 12_000, {
      afterMs: 1000,
      width: 20,
    });
    expect(text).toBe("running a-hook-wit…");
    expect(displayWidth(text)).toBe(19);
  });
});

describe("clock times", () => {
  it.each([
    [0, "UTC", "Z"],
    [540, "UTC+09:00", "+09:00"],
    [-210, "UTC-03:30", "-03:30"],
    [345, "UTC+05:45", "+05:45"],
  ])("offset %d is %s (%s)", (offset, label, iso) => {
    expect(offsetLabel(offset)).toBe(label);
    expect(isoOffset(offset)).toBe(iso);
  });

  it.each([
    ["2026-03-01T09:12:44.046Z", 0, "2026-03-01 09:12:44"],
    ["2026-03-01T20:12:44.046Z", 540, "2026-03-02 05:12:44"],
    ["2026-03-01T01:00:00.000Z", -210, "2026-02-28 21:30:00"],
    ["not a time", 540, "not a time"],
  ])("%s at %d", (iso, offset, shown) => {
    expect(dateTimeAt(iso, offset)).toBe(shown);
  });
});

describe("tableTime: a time as the table shows it, as the start of the log names (UTC)", () => {
  it.each([
    ["2026-03-01 09:12:44", 0, "2026-03-01T09-12-44"],
    ["2026-03-01 18:12:44", 540, "2026-03-01T09-12-44"],
    ["2026-03-01 05:30", 540, "2026-02-28T20-30"],
    ["2026-03-01 09:12:44.046", -210, "2026-03-01T12-42-44-046"],
    ["2026-03-01T09:12:44.046Z", 540, "2026-03-01T09-12-44-046"], // Z: UTC already
    ["yesterday", 540, null],
  ])("%s at %d", (text, offset, prefix) => {
    expect(tableTime(text, offset)).toBe(prefix);
  });
});

describe("spans of time for people", () => {
  it.each([
    [0, "0ms"],
    [0.4, "0ms"],
    [0.5, "1ms"],
    [999.4, "999ms"],
    [999.5, "1000ms"],
    [1000, "1.0s"],
    [1049, "1.0s"],
    [59_999, "60.0s"],
    [65_432.1, "65.4s"],
    [3_600_000, "3600.0s"],
  ])("formatDuration(%d) = %s", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it.each([
    [0, "0ms"],
    [999, "999ms"],
    [59_999, "60.0s"],
    [60_000, "1m 0s"],
    [725_000, "12m 5s"],
    [3_599_999, "59m 59s"],
    [3_600_000, "1h 0m"],
    [12_000_000, "3h 20m"],
    [86_400_000, "1d 0h"],
    [190_000_000, "2d 4h"],
  ])("formatSpan(%d) = %s", (ms, text) => {
    expect(formatSpan(ms)).toBe(text);
  });
});
