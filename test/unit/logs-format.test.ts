// The pure text and name helpers of `logs` that were rewritten for speed: each is checked against the
// version it replaces, on awkward input.
import { describe, expect, it } from "vitest";
import { HOOK_EVENTS, truncateText } from "../../extensions/teams-hooks/contract/contract.js";
import { parseLogName } from "../../extensions/teams-hooks/logs/filter.js";
import { firstLine, oneLine, shortRunId, shortRunIds } from "../../extensions/teams-hooks/logs/format.js";
import { runIdMatch, tableTime } from "../../extensions/teams-hooks/logs/find.js";

// Since the rewrite, an OSC goes whole and C1 controls (a one-character CSI among them) go too.
const CONTROL =
  /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|\u009b[0-9;?]*[ -/]*[@-~]|\u001b[@-_]|[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
/** The versions before the rewrite, verbatim but for CONTROL. */
// Since then, bidirectional controls are shown as their code point.
const INVISIBLE = /[\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const before = {
  oneLine: (text: string): string =>
    text
      .replace(/[\t\n\r]+/g, " ")
      .replace(CONTROL, "")
      .replace(INVISIBLE, (c) => `<U+${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}>`)
      .trim(),
  firstLine(text: string, max = 100): string {
    for (const line of text.split(/\r\n|\n|\r/)) {
      const clean = before.oneLine(line);
      if (clean) return truncateText(clean, max);
    }
    return "";
  },
  parseLogName(name: string) {
    const NAME = new RegExp(
      `^(\\d{4}-\\d{2}-\\d{2})T(\\d{2})-(\\d{2})-(\\d{2})-(\\d{3})Z_(${HOOK_EVENTS.join("|")})(_.*)?\\.json$`,
    );
    const m = NAME.exec(name);
    if (!m) return null;
    const [, date, hh, mm, ss, ms, event, rest = ""] = m;
    const timeMs = Date.parse(`${date}T${hh}:${mm}:${ss}.${ms}Z`);
    if (Number.isNaN(timeMs) || !(HOOK_EVENTS as readonly string[]).includes(event ?? "")) return null;
    if (rest === "" || /^_\d+$/.test(rest)) return { timeMs, event, suffix: null };
    const suffix = /^_(task|member)-(.+)$/.exec(rest);
    if (!suffix) return null;
    return { timeMs, event, suffix: { kind: suffix[1] === "task" ? "task" : "member", raw: suffix[2] ?? "" } };
  },
};

const TEXTS = [
  "",
  "\n\n",
  "   \n\t\n  x  ",
  "plain",
  "  padded  \nsecond",
  "\r\nwindows\r\nlines",
  "old\rmac",
  "\u001b[31mred\u001b[0m then\ttab",
  "\u001b]0;title\u0007 bell",
  "\u0000\u0001\u007f\n\u001b[2Kreal",
  "c1 \u009b2J csi \u0085 nel \u009d osc",
  "\u00a0non-breaking\u00a0",
  "line\u2028separator",
  "gate\u202egnp.exe\u202c and \u2066isolate\u2069",
  `${"é😀".repeat(60)}\nnext`,
  `${"x".repeat(99)}😀tail`,
  `\n\n${"y".repeat(12_000)}`,
];

describe("text helpers", () => {
  it.each(TEXTS.map((t) => [JSON.stringify(t).slice(0, 40), t]))("oneLine and firstLine as before: %s", (_, text) => {
    expect(oneLine(text)).toBe(before.oneLine(text));
    for (const max of [1, 2, 10, 100]) expect(firstLine(text, max)).toBe(before.firstLine(text, max));
  });
});

describe("parseLogName", () => {
  const stamps = [
    "2026-03-01T09-12-44-046Z",
    "2024-02-29T23-59-59-999Z",
    "2026-02-29T00-00-00-000Z", // no such day: Date.parse rolls it over
    "2026-02-30T10-00-00-000Z",
    "2026-04-31T00-00-00-000Z",
    "2026-13-01T00-00-00-000Z",
    "2026-00-10T00-00-00-000Z",
    "2026-01-00T00-00-00-000Z",
    "2026-01-32T00-00-00-000Z",
    "2026-01-01T24-00-00-000Z",
    "2026-01-01T24-00-00-001Z",
    "2026-01-01T25-00-00-000Z",
    "2026-01-01T23-60-00-000Z",
    "2026-01-01T23-59-60-000Z",
    "0000-01-01T00-00-00-000Z",
    "9999-12-31T23-59-59-999Z",
  ];
  const tails = [
    "_task_completed.json",
    "_task_failed_task-3.json",
    "_task_completed_task-3_2.json",
    "_task_completed_task-.json",
    "_task_completed_task-a_b-c.json",
    "_idle_member-ada.json",
    "_idle_member-.json",
    "_idle_2.json",
    "_idle_x.json",
    "_idle.json.json",
    "_idle_member-a\nb.json",
    "_other.json",
    "_task_completedx.json",
    "task_completed.json",
    ".json",
  ];
  const names = [
    ...stamps.flatMap((s) => tails.map((t) => `${s}${t}`)),
    "notes.json",
    "",
    "2026-03-01T09-12-44-046Z",
    "2026-3-01T09-12-44-046Z_idle.json",
  ];

  it.each(names.map((n) => [JSON.stringify(n), n]))("reads %s as before", (_, name) => {
    expect(parseLogName(name)).toEqual(before.parseLogName(name));
  });
});

describe("run ids as people type them", () => {
  const A = "4a739620-51eb-42cb-945b-c9232b60cf26";
  const B = "4a739620-5fff-42cb-945b-c9232b60cf26"; // shares A's first 8 characters, and more
  const C = "74d7de27-0b20-4774-876a-e36fd844f4fe";

  it.each([
    [A, "4a739620"],
    [`${A}.2`, "4a739620.2"],
    ["run-1", "run-1"],
    ["not-a-uuid-but-long", "not-a-uu"],
  ])("shortRunId(%s) = %s", (id, short) => {
    expect(shortRunId(id)).toBe(short);
  });

  it("shortRunIds lengthens only the ids that would share a short id, never ending on a dash", () => {
    expect(shortRunIds([A, C, B, `${A}.2`, A])).toEqual([
      "4a739620-51",
      "74d7de27",
      "4a739620-5f",
      "4a739620.2",
      "4a739620-51",
    ]);
    expect(shortRunIds(["4a739620-0000-4000-8000-000000000000", "4a739620-1000-4000-8000-000000000000"])).toEqual([
      "4a739620-0",
      "4a739620-1",
    ]);
    expect(shortRunIds([])).toEqual([]);
  });

  it.each<[string, string, "exact" | "prefix" | null]>([
    [A, A, "exact"],
    [A, "4a739620", "exact"],
    [A, "4a73", "prefix"],
    [A, "4a7", null],
    [A, "4a739620-51e", "prefix"],
    [A, "4a739620.2", null],
    [`${A}.2`, "4a739620.2", "exact"],
    [`${A}.2`, "4a73.2", "prefix"],
    [`${A}.2`, "4a739620", null],
    [`${A}.12`, "4a739620.2", null],
    ["run-2026-03-01T08:00:00.000Z", "run-2026-03-01T08", "prefix"],
  ])("runIdMatch(%s, %s) = %s", (id, selector, match) => {
    expect(runIdMatch(id, selector)).toBe(match);
  });

  it.each([
    ["2026-12-04 19:00:53", "2026-12-04T19-00-53"],
    ["2026-12-04T19:00:53.120Z", "2026-12-04T19-00-53-120"],
    ["2026-12-04 19:00", "2026-12-04T19-00"],
    [" 2026-12-04 19:00:53 ", "2026-12-04T19-00-53"],
    ["2026-12-04", null],
    ["2026-12-04T19-00-53", null],
    ["4a739620", null],
  ])("tableTime(%j) = %j", (text, prefix) => {
    expect(tableTime(text)).toBe(prefix);
  });
});
