/**
 * The pure parts of what `serve` does with what agents write: a log bounded before it is held, paths
 * made relative to the teams root, an impossible date refused, a key's change described, and an
 * index's cut facts that may still match.
 */
import { describe, expect, it } from "vitest";
import { factsMatch, impossibleDate, parseTimeBound } from "../../extensions/teams-hooks/logs/filter.js";
import type { HookLogRecord } from "../../extensions/teams-hooks/logs/hook-log.js";
import { CUT_MARK, cutText, relativeTo, shownRecord } from "../../extensions/teams-hooks/logs/shown.js";
import { keyChange } from "../../extensions/teams-hooks/server/keys.js";
import { endOf } from "../../extensions/teams-hooks/server/task-status.js";

describe("shownRecord", () => {
  it("cuts long strings, long lists and deep nesting, and keeps a log that needs nothing cut as it is", () => {
    const small = { invocation: { event: "idle" }, result: { stderr: "x" } } as unknown as HookLogRecord;
    expect(shownRecord(small)).toBe(small);
    let deep: unknown = "bottom";
    for (let i = 0; i < 30; i++) deep = { deeper: deep };
    const big = {
      policy: { summary: "s".repeat(100_000), actions: Array.from({ length: 1_000 }, (_, i) => `a${i}`) },
      deep,
    } as unknown as HookLogRecord;
    const shown = shownRecord(big) as unknown as { policy: { summary: string; actions: string[] }; deep: unknown };
    expect(shown.policy.summary.length).toBe(16_000);
    expect(shown.policy.summary.endsWith(CUT_MARK)).toBe(true);
    expect(shown.policy.actions).toHaveLength(200);
    expect(JSON.stringify(shown.deep)).toContain("[nested too deep]");
  });

  it("never splits a surrogate pair", () => {
    // The cut would fall between the two halves of the emoji (after "aa" and its first half).
    const text = `aa😀${"t".repeat(20)}`;
    const cut = cutText(text, 2 + 1 + CUT_MARK.length);
    expect(cut).toBe(`aa${CUT_MARK}`);
    expect(cut).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
  });
});

describe("relativeTo", () => {
  it("writes paths under the root relative to it, the root itself as ., and leaves other paths alone", () => {
    const root = "/srv/teams";
    expect(
      relativeTo(
        { a: "/srv/teams/alpha/hooks/x.sh: no #! line", b: ["cwd /srv/teams", "/srv/teamsmore/y", "/usr/bin/env"] },
        root,
      ),
    ).toEqual({ a: "alpha/hooks/x.sh: no #! line", b: ["cwd .", "/srv/teamsmore/y", "/usr/bin/env"] });
  });
});

describe("dates", () => {
  it("a calendar date that does not exist is refused, with why; real ones, leap days too, are read", () => {
    expect(impossibleDate("2026-02-30")).toBe("February 2026 has 28 days");
    expect(impossibleDate("2026-04-31T09:00")).toBe("April 2026 has 30 days");
    expect(impossibleDate("2026-13-01")).toBe("there is no month 13");
    expect(impossibleDate("2028-02-29")).toBeNull();
    expect(impossibleDate("24h")).toBeNull();
    expect(parseTimeBound("2026-02-30", 0)).toBeNull();
    expect(parseTimeBound("2028-02-29", 0)).toBe(Date.parse("2028-02-29T00:00Z"));
  });
});

describe("endOf", () => {
  it("is null for an end no date can hold, and the end otherwise", () => {
    expect(endOf(0, 1e300)).toBeNull();
    expect(endOf(Date.parse("2026-12-01T00:00:00Z"), 8.64e15)).toBeNull();
    expect(endOf(Date.parse("2026-12-01T00:00:00Z"), 1500)).toBe("2026-12-01T00:00:01.500Z");
  });
});

describe("keyChange", () => {
  const key = {
    name: "ci",
    id: "0123456789ab",
    salt: "00".repeat(16),
    hash: "11".repeat(32),
    scopes: ["tasks:read"],
    teams: ["alpha"],
    templates: ["deploy"],
    rateLimit: null,
    createdAt: "2026-12-01T00:00:00Z",
  } as Parameters<typeof keyChange>[0];

  it("says each field that changed, and whether the key may now do more", () => {
    expect(keyChange(key, { ...key })).toBeNull();
    expect(
      keyChange(key, { ...key, login: { salt: "22".repeat(16), hash: "33".repeat(32), expiresAt: "x" } }),
    ).toBeNull();
    expect(keyChange(key, { ...key, scopes: ["tasks:read", "gates:decide"] })).toEqual({
      fields: ["scopes tasks:read → tasks:read, gates:decide"],
      widened: true,
    });
    expect(keyChange(key, { ...key, teams: [] })).toEqual({ fields: ["teams alpha → (none)"], widened: false });
    expect(keyChange(key, { ...key, templates: null, allTemplates: true })?.widened).toBe(true);
    expect(
      keyChange(
        { ...key, rateLimit: { count: 10, periodMs: 60_000 } },
        { ...key, rateLimit: { count: 5, periodMs: 60_000 } },
      ),
    ).toEqual({
      fields: ["rate 10/60000ms → 5/60000ms"],
      widened: false,
    });
  });
});

describe("factsMatch", () => {
  it("a member name cut in the index may still match: its record decides", () => {
    const facts = {
      startedMs: 0,
      event: "task_completed" as const,
      taskId: "1",
      member: "m".repeat(256),
      outcome: "failed" as const,
      hook: "x.sh",
      trigger: "leader" as const,
      long: true as const,
    };
    expect(factsMatch(facts, { member: "m".repeat(300) })).toBe(true);
    expect(factsMatch(facts, { member: "n".repeat(300) })).toBe(false);
    expect(factsMatch({ ...facts, long: undefined } as never, { member: "m".repeat(300) })).toBe(false);
  });
});
