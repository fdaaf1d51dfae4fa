/**
 * The live feed's pure parts: a cursor is one line of visible ASCII whatever a log's file name holds,
 * and an event's fields never hold a line break.
 */
import { describe, expect, it } from "vitest";
import { eventText } from "../../extensions/teams-hooks/dashboard/live.js";
import { cursorText, parseCursor } from "../../extensions/teams-hooks/dashboard/runs.js";

describe("cursors", () => {
  const names = [
    "2026-12-06T03-24-09-048Z_task_completed_task-1.json",
    "x\nevent: run\ndata: {\"html\": \"<img src=x>\"}\n\n.json",
    "a\rb\u2028c\u0000d.json",
    "100%~done ü €.json",
  ];

  it.each(names)("%j is one line of visible ASCII, and reads back as the name", (name) => {
    const text = cursorText({ timeMs: 1_796_527_449_048, team: "alpha", name });
    expect(text).toMatch(/^[\x21-\x7e]+$/);
    expect(parseCursor(text)).toEqual({ timeMs: 1_796_527_449_048, team: "alpha", name });
  });

  it("leaves a usual log name as it is, and takes no text that is not one it made", () => {
    expect(cursorText({ timeMs: 1, team: "alpha", name: names[0] ?? "" })).toBe(`1~alpha~${names[0]}`);
    expect(parseCursor("1~alpha~a%zz.json")).toBeNull();
    expect(parseCursor("1~alpha~a b.json")).toBeNull();
    expect(parseCursor("1~alpha~a\nb.json")).toBeNull();
  });

  it("writes a lone surrogate, which URL-encoding refuses, as U+FFFD", () => {
    expect(parseCursor(cursorText({ timeMs: 1, team: "alpha", name: "a\ud800.json" }))?.name).toBe("a\ufffd.json");
  });
});

describe("eventText", () => {
  it("is one line per field: the data's line breaks are JSON-escaped", () => {
    const text = eventText({ id: "1~alpha~x.json", event: "run", data: { name: "a\nevent: run\r\ndata: {}" } });
    expect(text.split("\n")).toEqual(["id: 1~alpha~x.json", "event: run", 'data: {"name":"a\\nevent: run\\r\\ndata: {}"}', "", ""]);
  });

  it.each(["1~alpha~a\nb", "1~alpha~a\rb", "a\u0000b"])("refuses an id holding %j (a bug, never sent)", (id) => {
    expect(() => eventText({ id, event: "run", data: {} })).toThrow(/line break/);
  });
});
