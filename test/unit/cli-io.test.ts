import { describe, expect, it } from "vitest";
import { eventLine, wantsColour } from "../../extensions/teams-hooks/cli/io.js";
import type { EventReport } from "../../extensions/teams-hooks/leader/notices.js";

const report = (over: Partial<EventReport> = {}): EventReport => ({
  time: "2026-12-02T10:31:07.123Z", key: "k", event: "task_completed", taskId: "3", member: "alice", hook: "on_task_completed.sh",
  outcome: "failed", timedOut: false, durationMs: 1234, summary: "exit code 1 • 2 tests fail", actions: ["reopened (1/3)", "nudge alice"],
  retry: false, logFile: null, policyApplied: true, ...over,
});

describe("wantsColour", () => {
  it.each([
    [true, {}, true],
    [false, {}, false],
    [true, { NO_COLOR: "1" }, false],
    [true, { TERM: "dumb" }, false],
  ])("isTTY=%s env=%j → %s", (isTTY, env, expected) => {
    expect(wantsColour({ isTTY, env })).toBe(expected);
  });
});

describe("eventLine", () => {
  it("says time, event, task, member, hook, result, duration, summary and actions", () => {
    expect(eventLine(report())).toBe("10:31:07 task_completed #3 alice on_task_completed.sh failed 1.2s: exit code 1 • 2 tests fail → reopened (1/3), nudge alice");
  });

  it.each<[Partial<EventReport>, string]>([
    [{ outcome: "passed", actions: ["none"] }, "10:31:07 task_completed #3 alice on_task_completed.sh passed 1.2s"],
    [{ outcome: "error", timedOut: true, summary: "timeout after 500ms", actions: [] }, "10:31:07 task_completed #3 alice on_task_completed.sh timed out 1.2s: timeout after 500ms"],
    [{ outcome: "no_hook", event: "idle", taskId: null }, "10:31:07 idle alice: no hook"],
    [{ outcome: "passed", actions: [], retry: true }, "10:31:07 task_completed #3 alice on_task_completed.sh passed 1.2s (retry)"],
  ])("%j", (over, line) => {
    expect(eventLine(report(over))).toBe(line);
  });

  it("colours the verdict only when asked", () => {
    expect(eventLine(report(), true)).toContain("\u001b[31mfailed\u001b[0m");
    expect(eventLine(report(), false)).not.toContain("\u001b[");
  });
});
