/**
 * The dashboard's pure parts: markup that cannot be injected into, and the overview's arithmetic
 * (24-hour and 7-day windows, one bar per UTC day, held runs apart from the pass rate).
 */
import { describe, expect, it } from "vitest";
import { escapeHtml, html, queryString } from "../../extensions/teams-hooks/dashboard/html.js";
import { type Sample, summarise } from "../../extensions/teams-hooks/dashboard/overview.js";
import { heldWord } from "../../extensions/teams-hooks/dashboard/runs.js";
import type { LogRow } from "../../extensions/teams-hooks/logs/query.js";

describe("html", () => {
  it("escapes every interpolated value, in text and in attributes", () => {
    const hostile = `"><script>alert(1)</script><a href='x'>&`;
    const out = html`<p title="${hostile}">${hostile}</p>`.text;
    expect(out).toBe(
      `<p title="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;a href=&#39;x&#39;&gt;&amp;">&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;a href=&#39;x&#39;&gt;&amp;</p>`,
    );
  });

  it("keeps markup made by html, escapes arrays item by item, leaves out null, undefined and false", () => {
    const items = ["<a>", html`<b>bold</b>`, 3];
    expect(html`<i>${items}</i>${null}${undefined}${false}${0}`.text).toBe("<i>&lt;a&gt;<b>bold</b>3</i>0");
  });

  it("drops terminal escape sequences and shows other control characters as U+FFFD", () => {
    expect(escapeHtml("\x1b[31mred\x1b[0m \x1b]0;title\x07done\x00\x9b\ttab\nline")).toBe(
      "red done\ufffd\ufffd\ttab\nline",
    );
  });

  it("builds query strings without empty values", () => {
    expect(queryString({ team: "a b", outcome: "", task: undefined, member: "ö&x" })).toBe(
      "?team=a+b&member=%C3%B6%26x",
    );
    expect(queryString({ team: "" })).toBe("");
  });
});

describe("overview arithmetic", () => {
  const now = Date.parse("2026-12-04T12:00:00.000Z");
  const hour = 3_600_000;
  const sample = (hoursAgo: number, outcome: string, extra: Partial<Sample> = {}): Sample => ({
    hook: "on_task_completed.sh",
    event: "task_completed",
    outcome,
    durationMs: 100,
    timeMs: now - hoursAgo * hour,
    member: "ada",
    skipped: false,
    shadow: false,
    hand: false,
    nonBlocking: false,
    ...extra,
  });

  it("counts the last 24 hours and 7 days apart, and one bar per UTC day, today last", () => {
    const [gate] = summarise(
      [
        sample(1, "passed"),
        sample(11, "failed"),
        sample(13, "passed"),
        sample(30, "timed_out"),
        sample(24 * 6 + 11, "passed"),
        sample(24 * 8, "failed"),
      ],
      now,
    );
    expect(gate?.day).toEqual({ runs: 3, passed: 2, failed: 1, deferred: 0 });
    expect(gate?.week).toEqual({ runs: 5, passed: 3, failed: 2, deferred: 0 });
    // At 12:00 UTC: 1 and 11 hours ago are today; 13 and 30 hours ago (23:00 and 06:00) yesterday; 155 hours ago six
    // days ago.
    expect(gate?.daily.map((d) => `${d.passed}/${d.failed}`)).toEqual([
      "1/0",
      "0/0",
      "0/0",
      "0/0",
      "0/0",
      "1/1",
      "1/1",
    ]);
  });

  it("leaves runs by hand out of every figure", () => {
    const hand = { hand: true, durationMs: 9000, member: "brian" };
    const [gate] = summarise([sample(1, "passed"), sample(2, "failed", hand), sample(30, "failed", hand)], now);
    expect(gate?.day).toEqual({ runs: 1, passed: 1, failed: 0, deferred: 0 });
    expect(gate?.week).toEqual({ runs: 1, passed: 1, failed: 0, deferred: 0 });
    expect(gate?.daily.map((d) => d.runs)).toEqual([0, 0, 0, 0, 0, 0, 1]);
    expect([gate?.p50Ms, gate?.p95Ms]).toEqual([100, 100]);
    expect(summarise([sample(1, "failed", hand)], now)).toEqual([]);
  });

  it("counts the passes of the 7 days that let an error through, in the pass rate as passes", () => {
    const crashed = { nonBlocking: true };
    const samples = [sample(1, "passed", crashed), sample(2, "passed"), sample(30, "passed", crashed)];
    samples.push(sample(24 * 8, "passed", crashed)); // older than the 7 days
    const [gate] = summarise(samples, now);
    expect(gate?.nonBlocking).toBe(2);
    expect(gate?.week).toEqual({ runs: 3, passed: 3, failed: 0, deferred: 0 });
  });

  it("leaves skipped runs out, and held runs and decisions out of the durations", () => {
    const [gate] = summarise(
      [
        sample(1, "passed", { durationMs: 10 }),
        sample(2, "deferred", { durationMs: null }),
        sample(3, "passed", { skipped: true, durationMs: 5000 }),
        sample(4, "failed", { durationMs: 30 }),
      ],
      now,
    );
    expect(gate?.day).toEqual({ runs: 3, passed: 1, failed: 1, deferred: 1 });
    expect([gate?.p50Ms, gate?.p95Ms]).toEqual([10, 30]);
  });

  it("keeps one row per hook and event, and marks a shadow gate", () => {
    const rows = summarise(
      [
        sample(1, "passed"),
        sample(1, "failed", { event: "task_failed" }),
        sample(1, "failed", { hook: "a.sh", shadow: true }),
      ],
      now,
    );
    expect(rows.map((r) => `${r.hook} ${r.event} ${r.shadow}`)).toEqual([
      "a.sh task_completed true",
      "on_task_completed.sh task_completed false",
      "on_task_completed.sh task_failed false",
    ]);
  });
});

describe("a run's held word", () => {
  const record = (policy: Record<string, unknown> | undefined) => ({ policy }) as unknown as LogRow["record"];

  it("is held for an event held for the lead or a retry, and nothing for a gate held for a decision", () => {
    expect(heldWord(record({ gate: "held", held: "approval" }))).toBe("held");
    expect(heldWord(record({ gate: "held", held: "fault" }))).toBe("held");
    // A deferred run says `deferred` (its own outcome), as a held gate does everywhere else.
    expect(heldWord(record({ gate: "held", held: "deferral" }))).toBeNull();
    expect(heldWord(record({ gate: "reopened" }))).toBeNull();
    expect(heldWord(record(undefined))).toBeNull();
    // Logs written before the gate state was kept.
    expect(heldWord(record({ held: "approval" }))).toBe("held");
    expect(heldWord(record({ gate: "held" }))).toBe("held");
  });
});
