import { describe, expect, it } from "vitest";
import { eventLine, settingsRows, wantsColour } from "../../extensions/teams-hooks/cli/io.js";
import { resolveSettings } from "../../extensions/teams-hooks/settings/team-settings.js";
import type { EventReport } from "../../extensions/teams-hooks/leader/notices.js";

const report = (over: Partial<EventReport> = {}): EventReport => ({
  time: "2026-12-02T10:31:07.123Z",
  key: "k",
  event: "task_completed",
  taskId: "3",
  member: "alice",
  hook: "on_task_completed.sh",
  outcome: "failed",
  timedOut: false,
  durationMs: 1234,
  summary: "exit code 1 • 2 tests fail",
  actions: ["reopened (1/3)", "nudge alice"],
  retry: false,
  logFile: null,
  policyApplied: true,
  ...over,
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
    expect(eventLine(report())).toBe(
      "10:31:07 task_completed #3 alice on_task_completed.sh failed 1.2s: exit code 1 • 2 tests fail → reopened (1/3), nudge alice",
    );
  });

  it.each<[Partial<EventReport>, string]>([
    [{ outcome: "passed", actions: ["none"] }, "10:31:07 task_completed #3 alice on_task_completed.sh passed 1.2s"],
    [
      { outcome: "error", timedOut: true, summary: "timeout after 500ms", actions: [] },
      "10:31:07 task_completed #3 alice on_task_completed.sh timed out 1.2s: timeout after 500ms",
    ],
    [{ outcome: "no_hook", event: "idle", taskId: null }, "10:31:07 idle alice: no hook"],
    [
      { outcome: "passed", actions: [], retry: true },
      "10:31:07 task_completed #3 alice on_task_completed.sh passed 1.2s (retry)",
    ],
    [
      {
        outcome: "passed",
        actions: [],
        noGateInForce: true,
        summary: "no gate in force: on_task_completed skipped (owner=bob: owner alice does not match)",
      },
      "10:31:07 task_completed #3 alice on_task_completed.sh passed 1.2s: no gate in force: on_task_completed skipped (owner=bob: owner alice does not match)",
    ],
    [
      {
        outcome: "deferred",
        durationMs: 52,
        summary: "deferred (ci.pending): waiting for CI",
        actions: ["held until 2026-12-03T10:31:07.000Z"],
        deferral: { runId: "r1", expiresAt: "2026-12-03T10:31:07.000Z" },
      },
      "10:31:07 task_completed #3 alice on_task_completed.sh deferred 52ms (ci.pending): waiting for CI → held until 2026-12-03T10:31:07.000Z (run r1)",
    ],
    [
      { outcome: "deferred", durationMs: 52, summary: "deferred", actions: [] },
      "10:31:07 task_completed #3 alice on_task_completed.sh deferred 52ms",
    ],
    // The deciding run's short id, for `logs show`; a held gate's line already names its run in full.
    [
      { outcome: "passed", actions: [], runId: "4a739620-51eb-42cb-945b-c9232b60cf26" },
      "10:31:07 task_completed #3 alice on_task_completed.sh passed 1.2s (run 4a739620)",
    ],
    [
      { outcome: "passed", actions: [], retry: true, runId: "4a739620-51eb-42cb-945b-c9232b60cf26.2" },
      "10:31:07 task_completed #3 alice on_task_completed.sh passed 1.2s (run 4a739620.2) (retry)",
    ],
    [
      {
        outcome: "deferred",
        durationMs: 52,
        summary: "deferred",
        actions: [],
        runId: "4a739620-51eb-42cb-945b-c9232b60cf26",
        deferral: { runId: "4a739620-51eb-42cb-945b-c9232b60cf26", expiresAt: "2026-12-03T10:31:07.000Z" },
      },
      "10:31:07 task_completed #3 alice on_task_completed.sh deferred 52ms (run 4a739620-51eb-42cb-945b-c9232b60cf26)",
    ],
    [
      {
        outcome: "failed",
        durationMs: 0,
        summary: "denied • 2 tests fail",
        decision: { deferredRunId: "r1", decision: "deny", by: "ci", waitedMs: 533_000 },
      },
      "10:31:07 task_completed #3 alice on_task_completed.sh denied by ci after 8m 53s (deferred run r1): denied • 2 tests fail → reopened (1/3), nudge alice",
    ],
    [
      {
        outcome: "passed",
        durationMs: 0,
        actions: ["none"],
        decision: { deferredRunId: "r1", decision: "allow", by: "ada", waitedMs: 4_200 },
      },
      "10:31:07 task_completed #3 alice on_task_completed.sh allowed by ada after 4.2s (deferred run r1)",
    ],
    [
      {
        outcome: "error",
        durationMs: 0,
        summary: "no decision within 24h 0m (hooks.deferTimeoutMs)",
        actions: [],
        decision: { deferredRunId: "r1", decision: "expired", by: "pi-teams-hooks", waitedMs: 86_400_000 },
      },
      "10:31:07 task_completed #3 alice on_task_completed.sh expired after 1d 0h (deferred run r1): no decision within 24h 0m (hooks.deferTimeoutMs)",
    ],
  ])("%j", (over, line) => {
    expect(eventLine(report(over))).toBe(line);
  });

  it("colours the verdict only when asked", () => {
    expect(eventLine(report(), true)).toContain("\u001b[31mfailed\u001b[0m");
    expect(eventLine(report(), false)).not.toContain("\u001b[");
  });
});

describe("settingsRows: the privacy rows", () => {
  const report = (hooks: Record<string, unknown>) =>
    resolveSettings({ hooks, noBlock: null, file: "/t/config.json", env: {} });

  it("one projection row per gate, its fields after its name; the names of the variables, never a value", () => {
    const rows = settingsRows(
      report({
        projection: { "on_task_completed.d/10-lint.sh": ["task.id", "task.metadata.files"], on_idle: [] },
        redactEnv: ["DEPLOY_TOKEN", "NPM_TOKEN"],
      }),
    );
    expect(rows.split("\n").filter((l) => /^ {2}(confidential|redact env|projection) /.test(l))).toEqual([
      "  confidential                false            default",
      "  redact env                  DEPLOY_TOKEN, NPM_TOKEN config.json hooks.redactEnv",
      "  projection                  on_task_completed.d/10-lint.sh: task.id, task.metadata.files config.json hooks.projection",
      "  projection                  on_idle: identity fields only config.json hooks.projection",
    ]);
  });
});
