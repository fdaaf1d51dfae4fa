import { describe, expect, it } from "vitest";
import { headCapture } from "../../extensions/teams-hooks/runner/capture.js";

/** Feeds `text` as UTF-8 split at every `size` bytes (so multi-byte characters straddle chunks). */
function feed(
  limit: number,
  text: string | Buffer,
  size: number,
): ReturnType<ReturnType<typeof headCapture>["result"]> {
  const capture = headCapture(limit);
  const bytes = typeof text === "string" ? Buffer.from(text, "utf8") : text;
  for (let at = 0; at < bytes.length; at += size) capture.push(bytes.subarray(at, at + size));
  return capture.result();
}

describe("headCapture", () => {
  it.each([
    ["ascii", "hello world"],
    ["2-byte", "héllo wörld ñ"],
    ["3-byte", "日本語のテキスト…"],
    ["4-byte (surrogate pairs)", "🙂 ok 🚀🚀 done"],
    ["mixed", "a é 日 🙂 z"],
  ])("keeps %s text whole when split into 1-byte chunks", (_name, text) => {
    expect(feed(1_000, text, 1)).toEqual({ text, droppedBytes: 0 });
  });

  it.each([1, 2, 3, 5, 7])("joins characters split across %i-byte chunks", (size) => {
    const text = "é日🙂".repeat(20);
    expect(feed(1_000, text, size)).toEqual({ text, droppedBytes: 0 });
  });

  it("keeps the first N characters and counts the dropped bytes exactly", () => {
    const text = "é".repeat(10); // 20 bytes
    expect(feed(4, text, 3)).toEqual({ text: "éééé", droppedBytes: 12 });
  });

  it("counts every byte past the limit, across many chunks", () => {
    const chunk = Buffer.alloc(65_536, "x");
    const capture = headCapture(12_000);
    for (let i = 0; i < 100; i++) capture.push(chunk);
    const { text, droppedBytes } = capture.result();
    expect(text).toBe("x".repeat(12_000));
    expect(droppedBytes).toBe(100 * 65_536 - 12_000);
  });

  it("never ends the head in half a surrogate pair", () => {
    const result = feed(3, "ab🙂cd", 100);
    expect(result.text).toBe("ab");
    expect(result.droppedBytes).toBe(6); // 🙂 (4 bytes) + "cd"
    expect(result.text.isWellFormed()).toBe(true);
  });

  it("counts an incomplete character held at the cut as dropped", () => {
    // Head full at exactly 2 chars, then the first byte of "日" (3 bytes) arrives and nothing more.
    const capture = headCapture(2);
    capture.push(Buffer.from("ab", "utf8"));
    capture.push(Buffer.from("日", "utf8").subarray(0, 1));
    expect(capture.result()).toEqual({ text: "ab", droppedBytes: 1 });
  });

  it("turns a truncated character at the very end into U+FFFD when it fits", () => {
    const capture = headCapture(10);
    capture.push(Buffer.from("ok ", "utf8"));
    capture.push(Buffer.from("日", "utf8").subarray(0, 2));
    expect(capture.result()).toEqual({ text: "ok \uFFFD", droppedBytes: 0 });
  });

  it("exactly at the limit drops nothing", () => {
    expect(feed(5, "abcde", 2)).toEqual({ text: "abcde", droppedBytes: 0 });
  });

  it("with limit 0 keeps nothing and counts everything", () => {
    expect(feed(0, "abc", 1)).toEqual({ text: "", droppedBytes: 3 });
  });

  it("returns the same result twice and counts chunks pushed after it", () => {
    const capture = headCapture(2);
    capture.push(Buffer.from("abcd"));
    expect(capture.result()).toEqual({ text: "ab", droppedBytes: 2 });
    capture.push(Buffer.from("ef"));
    expect(capture.result()).toEqual({ text: "ab", droppedBytes: 4 });
  });

  it("keeps invalid bytes as U+FFFD without throwing", () => {
    expect(feed(10, Buffer.from([0x61, 0xff, 0x62]), 1)).toEqual({ text: "a\uFFFDb", droppedBytes: 0 });
  });
});
