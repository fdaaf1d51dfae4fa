/**
 * The live feed's pure parts: a cursor is one line of visible ASCII whatever a log's file name holds,
 * an event's fields never hold a line break, and IP addresses as the kernel's connection table
 * writes them.
 */
import { describe, expect, it } from "vitest";
import { addressBytes } from "../../extensions/teams-hooks/dashboard/backlog.js";
import { eventText } from "../../extensions/teams-hooks/dashboard/live.js";
import { cursorText, parseCursor } from "../../extensions/teams-hooks/dashboard/runs.js";

describe("cursors", () => {
  const names = [
    "2026-12-06T03-24-09-048Z_task_completed_task-1.json",
    'x\nevent: run\ndata: {"html": "<img src=x>"}\n\n.json',
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
    expect(text.split("\n")).toEqual([
      "id: 1~alpha~x.json",
      "event: run",
      'data: {"name":"a\\nevent: run\\r\\ndata: {}"}',
      "",
      "",
    ]);
  });

  it.each(["1~alpha~a\nb", "1~alpha~a\rb", "a\u0000b"])("refuses an id holding %j (a bug, never sent)", (id) => {
    expect(() => eventText({ id, event: "run", data: {} })).toThrow(/line break/);
  });
});

describe("addressBytes", () => {
  it.each([
    ["127.0.0.1", [127, 0, 0, 1]],
    ["::1", [...Array<number>(15).fill(0), 1]],
    ["::ffff:127.0.0.1", [...Array<number>(10).fill(0), 0xff, 0xff, 127, 0, 0, 1]],
    ["fe80::1:2", [0xfe, 0x80, ...Array<number>(10).fill(0), 0, 1, 0, 2]],
    ["2001:db8:0:0:0:0:0:1", [0x20, 0x01, 0x0d, 0xb8, ...Array<number>(11).fill(0), 1]],
  ])("%s", (address, bytes) => {
    expect(addressBytes(address)).toEqual(bytes);
  });

  it.each(["", "localhost", "1.2.3", "::g"])("%j is no address", (address) => {
    expect(addressBytes(address)).toBeNull();
  });
});
