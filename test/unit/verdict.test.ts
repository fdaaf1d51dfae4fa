import { describe, expect, it } from "vitest";
import {
  DEFERRAL_NOT_SUPPORTED,
  describeInvalidVerdict,
  lastLineOf,
  lastLineTracker,
  readHttpVerdict,
  readVerdict,
  verdictOutcome,
  type LastLine,
} from "../../extensions/teams-hooks/contract/verdict.js";

describe("readVerdict", () => {
  it.each([
    ["no file, plain output", null, "all good\n", { kind: "none" }],
    ["no file, empty output", null, "", { kind: "none" }],
    [
      "last stdout line allows",
      null,
      'checking\n{"decision":"allow"}\n\n',
      { kind: "verdict", source: "stdout", verdict: { decision: "allow" } },
    ],
    [
      "last stdout line denies with details",
      null,
      '{"decision":"deny","code":"lint.errors","reason":"3 lint errors","message":"see src/a.ts"}',
      {
        kind: "verdict",
        source: "stdout",
        verdict: { decision: "deny", code: "lint.errors", reason: "3 lint errors", message: "see src/a.ts" },
      },
    ],
    ["a verdict not on the last line is output", null, '{"decision":"deny"}\ndone\n', { kind: "none" }],
    ["JSON without decision is output", null, '{"tests":5}', { kind: "none" }],
    ["text starting with { is output", null, "{not json", { kind: "none" }],
    [
      "the file",
      '{"decision":"deny","code":"tests"}',
      "",
      { kind: "verdict", source: "file", verdict: { decision: "deny", code: "tests" } },
    ],
    [
      "the file wins over stdout",
      '{"decision":"allow"}',
      '{"decision":"deny"}',
      { kind: "verdict", source: "file", verdict: { decision: "allow" } },
    ],
    [
      "an empty file is no verdict",
      "  \n",
      '{"decision":"deny"}',
      { kind: "verdict", source: "stdout", verdict: { decision: "deny" } },
    ],
    [
      "unknown keys are kept",
      '{"decision":"allow","extra":1}',
      "",
      { kind: "verdict", source: "file", verdict: { decision: "allow", extra: 1 } },
    ],
  ])("%s", (_name, fileText, stdout, expected) => {
    expect(readVerdict({ fileText, stdout })).toEqual(expected);
  });

  it.each([
    ["garbage in the file", "garbage", "not JSON"],
    ["an array in the file", "[1]", "expected a JSON object, got an array"],
    ["an unknown decision", '{"decision":"maybe"}', "decision"],
    ["an upper-case code", '{"decision":"deny","code":"Lint"}', "code: must start with a lower-case letter"],
    ["a code starting with a digit", '{"decision":"deny","code":"1x"}', "code:"],
    ["a 65-byte code", `{"decision":"deny","code":"${"a".repeat(65)}"}`, "code: must be at most 64 bytes"],
    ["a blank reason", '{"decision":"deny","reason":"   "}', "reason: must not be blank"],
    ["an oversize reason", `{"decision":"deny","reason":"${"r".repeat(1025)}"}`, "reason: must be at most 1024 bytes"],
    ["a reason with a newline", '{"decision":"deny","reason":"a\\nb"}', "reason: must not contain control characters"],
    ["a reason that is not a string", '{"decision":"deny","reason":5}', "reason:"],
  ])("%s is invalid, not a denial", (_name, fileText, problem) => {
    const read = readVerdict({ fileText, stdout: "" });
    expect(read.kind).toBe("invalid");
    if (read.kind === "invalid") {
      expect(read.problem).toContain(problem);
      expect(describeInvalidVerdict(read)).toMatch(/^invalid verdict in PI_TEAMS_HOOK_RESULT_FILE: /);
    }
  });

  it("a 64-byte code and a 1,024-byte reason are fine", () => {
    const fileText = JSON.stringify({ decision: "deny", code: `a${"b".repeat(63)}`, reason: "é".repeat(512) });
    const read = readVerdict({ fileText, stdout: "" });
    expect(read.kind).toBe("verdict");
  });

  it("an invalid verdict on stdout names stdout", () => {
    const read = readVerdict({ fileText: null, stdout: '{"decision":"deny","code":"BAD"}' });
    expect(read.kind === "invalid" && describeInvalidVerdict(read)).toMatch(/the last line of stdout: code/);
  });
});

describe("decision values", () => {
  it.each([
    ["ALLOW", "allow"],
    [" Deny ", "deny"],
    ["Defer", "defer"],
  ])("%j is read as %s (any case, blanks around ignored)", (written, decision) => {
    const read = readVerdict({ fileText: JSON.stringify({ decision: written }), stdout: "" });
    expect(read).toEqual({ kind: "verdict", source: "file", verdict: { decision } });
  });

  it("an unknown decision says so, and is marked as such (an HTTP answer's transport failure)", () => {
    const read = readVerdict({ fileText: '{"decision":"approve","reason":"ok"}', stdout: "" });
    expect(read).toMatchObject({ kind: "invalid", unsupportedDecision: true });
    expect(read.kind === "invalid" && read.problem).toBe('decision: "approve" is not one of allow, deny, defer, patch');
  });

  it("a known decision with a bad field is an invalid verdict, not an unsupported decision", () => {
    const read = readVerdict({ fileText: '{"decision":"DENY","code":"Bad Code"}', stdout: "" });
    expect(read.kind).toBe("invalid");
    expect(read.kind === "invalid" && read.unsupportedDecision).toBeFalsy();
  });
});

describe("readHttpVerdict", () => {
  it.each([
    ["an empty body", "", { kind: "none", body: "empty" }],
    ["blanks only", " \n ", { kind: "none", body: "empty" }],
    ["text", "OK", { kind: "none", body: "malformed" }],
    ["JSON without decision", '{"status":"queued"}', { kind: "none", body: "malformed" }],
    ["a JSON array", "[1,2]", { kind: "none", body: "malformed" }],
    [
      "a verdict",
      '{"decision":"Deny","reason":"tests failed"}',
      { kind: "verdict", source: "http", verdict: { decision: "deny", reason: "tests failed" } },
    ],
    [
      "a defer",
      '{"decision":"defer","reason":"queued as job 17"}',
      { kind: "verdict", source: "http", verdict: { decision: "defer", reason: "queued as job 17" } },
    ],
  ])("%s", (_name, body, expected) => {
    expect(readHttpVerdict(body)).toEqual(expected);
  });

  it("an unsupported decision value is invalid and marked unsupported", () => {
    expect(readHttpVerdict('{"decision":"maybe"}')).toMatchObject({
      kind: "invalid",
      source: "http",
      unsupportedDecision: true,
    });
  });
});

describe("verdictOutcome", () => {
  it("allow passes, deny fails, defer holds a task event", () => {
    expect(verdictOutcome({ decision: "allow" }, true).outcome).toBe("passed");
    expect(verdictOutcome({ decision: "deny" }, true).outcome).toBe("failed");
    expect(verdictOutcome({ decision: "defer", reason: "CI job 17" }, true)).toEqual({
      outcome: "deferred",
      verdict: { decision: "defer", reason: "CI job 17" },
    });
  });

  it("a defer where the event cannot be held is a denial with code deferral_not_supported, keeping the reason", () => {
    expect(verdictOutcome({ decision: "defer", reason: "CI job 17" }, false)).toEqual({
      outcome: "failed",
      verdict: { decision: "deny", code: DEFERRAL_NOT_SUPPORTED, reason: "this event cannot be deferred: CI job 17" },
    });
    expect(DEFERRAL_NOT_SUPPORTED).toBe("deferral_not_supported");
  });

  it("keeps the reason within the reason limit", () => {
    const { verdict } = verdictOutcome({ decision: "defer", reason: "é".repeat(512) }, false);
    expect(Buffer.byteLength(verdict.reason ?? "")).toBeLessThanOrEqual(1024);
    expect(verdict.reason?.endsWith("…")).toBe(true);
  });

  it("cuts at a blank, never inside a word: the front of a secret the cut would keep is dropped whole", () => {
    const secret = `tok_${"k".repeat(60)}`;
    const reason = `${"waiting for ci ".repeat(66)}${secret}`.slice(-1024);
    const { verdict } = verdictOutcome({ decision: "defer", reason }, false);
    expect(Buffer.byteLength(verdict.reason ?? "")).toBeLessThanOrEqual(1024);
    expect(verdict.reason).toMatch(/waiting for ci…$/);
    expect(verdict.reason).not.toContain("tok_");
    const { verdict: oneWord } = verdictOutcome({ decision: "defer", reason: "x".repeat(1024) }, false);
    expect(oneWord.reason).toBe("this event cannot be deferred:…");
  });
});

describe("verdict hygiene", () => {
  it.each([
    [
      "a C1 control character (U+009B, a terminal's CSI)",
      "tests \u009b31m fail",
      "must not contain control characters",
    ],
    ["U+0085 (next line)", "a\u0085b", "must not contain control characters"],
    ["U+FFFD, what bytes that are not UTF-8 decode to", "caf\uFFFD", "must be valid UTF-8"],
  ])("a reason with %s is invalid", (_name, reason, problem) => {
    const read = readVerdict({ fileText: JSON.stringify({ decision: "deny", reason }), stdout: "" });
    expect(read.kind === "invalid" && read.problem).toContain(problem);
  });

  const deny = '{"decision":"deny","reason":"hidden"}';
  const blanks = (n: number): string => " ".repeat(n);
  it.each([
    ["blanks after it", `${deny}${blanks(60_000)}\n`],
    ["blanks after it, no final newline", `${deny}${blanks(60_000)}`],
    ["blanks before it", `${blanks(60_000)}${deny}\n`],
    ["blanks on both sides", `${blanks(30_000)}${deny}${blanks(30_000)}\n`],
    ["tabs, no-break spaces and a carriage return after it", `${deny}${"\t\u00a0".repeat(20_000)}\r\n`],
    ['text before it (it still holds "decision")', `${"x".repeat(60_000)}${deny}\n`],
  ])("a verdict line past the cap padded with %s is invalid", (_name, stdout) => {
    const problem = "the last line is a verdict line of over 49152 bytes (the most a verdict line may have)";
    expect(readVerdict({ fileText: null, stdout })).toEqual({ kind: "invalid", source: "stdout", problem });
  });

  it("a verdict line within the cap, blanks included, is a verdict", () => {
    const stdout = `${blanks(20_000)}${deny}${blanks(20_000)}\n`;
    expect(readVerdict({ fileText: null, stdout })).toMatchObject({ kind: "verdict", verdict: { decision: "deny" } });
  });

  it("the last line is the last that holds more than blanks: blank lines after a verdict do not hide it", () => {
    const stdout = `${deny}\n${"\n  \t\n".repeat(50_000)}`;
    expect(readVerdict({ fileText: null, stdout })).toMatchObject({ kind: "verdict", verdict: { decision: "deny" } });
  });

  it("a long last line that does not look like a verdict is ordinary output", () => {
    expect(readVerdict({ fileText: null, stdout: "x".repeat(60_000) })).toEqual({ kind: "none" });
    expect(readVerdict({ fileText: null, stdout: `${deny}\n${"x".repeat(60_000)}\n` })).toEqual({ kind: "none" });
  });
});

describe("lastLineTracker", () => {
  /** The output pushed in pieces of `size` characters, as a pipe delivers it. */
  function inPieces(text: string, size: number): LastLine {
    const tracker = lastLineTracker();
    for (let at = 0; at < text.length; at += size) tracker.push(text.slice(at, at + size));
    return tracker.result();
  }

  it.each([1, 3, 7, 64, 4096, 1_000_000])("gives what lastLineOf gives, in pieces of %i characters", (size) => {
    for (const text of [
      "",
      "one\ntwo\n",
      'a\n{"decision":"allow"}\n\n  \n',
      `{"deci${"sion"}":"deny"}${" ".repeat(50_000)}\n\n`,
      `${" ".repeat(49_000)}x${" ".repeat(1_000)}`,
      "last\r\n\r\n",
    ]) {
      expect(inPieces(text, size)).toEqual(lastLineOf(text));
    }
  });

  it.each([
    ["no output", "", { text: "", bytes: 0, first: "", mentionsDecision: false }],
    ["only blank lines", "\n \n\t\n", { text: "", bytes: 0, first: "", mentionsDecision: false }],
    [
      "the last line that holds more than blanks",
      "a\n  b  \n \n",
      { text: "  b  ", bytes: 5, first: "b", mentionsDecision: false },
    ],
    ["a line still open", "a\nb", { text: "b", bytes: 1, first: "b", mentionsDecision: false }],
    [
      "a line past the cap keeps only its marks",
      `${" ".repeat(49_152)}{"decision"}`,
      { text: "", bytes: 49_164, first: "{", mentionsDecision: true },
    ],
    ["bytes, not characters", "é".repeat(3), { text: "ééé", bytes: 6, first: "é", mentionsDecision: false }],
  ])("%s", (_name, text, expected) => {
    expect(lastLineOf(text)).toEqual(expected);
  });

  it('sees "decision" split between two pieces of a long line', () => {
    const tracker = lastLineTracker();
    tracker.push(`x${" ".repeat(60_000)}"deci`);
    tracker.push('sion"');
    expect(tracker.result()).toMatchObject({ mentionsDecision: true, first: "x", text: "" });
  });
});
