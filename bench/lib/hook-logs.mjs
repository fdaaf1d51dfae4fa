// Realistic hook logs for the benches that read them (bench/logs.mjs, bench/dashboard.mjs), written
// through the built `writeHookLog` as the leader writes them: three events (70% task_completed, 20%
// task_failed, 10% idle), each with its own gate; six members; 80% passed, 12% failed, 4% timed out,
// 4% error; 10–40 lines of test output; a policy with its actions on every task event. A deterministic
// generator: the same calls give the same logs, run after run. Build first (`npm run build`).
import path from "node:path";
import { writeHookLog } from "../../dist/teams-hooks/logs/hook-log.js";

const MEMBERS = ["ada", "brian", "chen", "dora", "emil", "fatima"];
const TEST_LINES = Array.from(
  { length: 40 },
  (_, i) => `  ✓ test/unit/module-${i}.test.ts (${5 + i} tests) ${10 + i}ms`,
);
/** Logs written at once (each batch's writes overlap; their names never collide). */
const BATCH = 200;

/**
 * A generator of log records for the team in `teamDir` (its team id is the folder's name): `record(i,
 * startedAt)` is the `i`th log, a `Date` its start. Each generator has its own seed, so that each one
 * gives the same sequence.
 */
export function hookLogRecords(teamDir) {
  const teamId = path.basename(teamDir);
  let seed = 42;
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  const pick = (items) => items[Math.floor(random() * items.length)];

  return function record(i, startedAt) {
    const r = random();
    const event = r < 0.7 ? "task_completed" : r < 0.9 ? "task_failed" : "idle";
    const member = pick(MEMBERS);
    const taskId = String(1 + Math.floor(random() * 400));
    const o = random();
    const outcome = o < 0.8 ? "passed" : o < 0.92 ? "failed" : o < 0.96 ? "timed_out" : "error";
    const hook = `/home/me/.pi/teams/_hooks/on_${event}.sh`;
    const at = startedAt.toISOString();
    const task =
      event === "idle"
        ? null
        : {
            id: taskId,
            subject: `Implement feature ${taskId}: retry uploads with jittered backoff`,
            description: `Uploads fail on transient 503s. Retry up to 5 times with jittered exponential backoff.\nAcceptance: tests in test/upload-${taskId}.test.ts pass.`,
            owner: member,
            status: event === "task_completed" ? "completed" : "pending",
            blocks: [],
            blockedBy: ["1"],
            metadata: { result: `Done: see src/upload-${taskId}.ts`, completedAt: at },
            createdAt: "2026-01-01T09:00:00.000Z",
            updatedAt: at,
          };
    const failed = outcome !== "passed";
    const durationMs = outcome === "timed_out" ? 60_000 + random() * 1000 : 200 + random() * 8000;
    return {
      invocation: {
        event,
        teamId,
        teamDir,
        taskListId: teamId,
        style: "normal",
        memberName: member,
        timestamp: at,
        completedTask: task,
      },
      result: {
        ran: true,
        hookPath: hook,
        command: ["bash", hook],
        outcome: outcome === "timed_out" ? "error" : outcome,
        exitCode: outcome === "passed" ? 0 : outcome === "failed" ? 1 : null,
        signal: outcome === "timed_out" ? "SIGTERM" : null,
        timedOut: outcome === "timed_out",
        durationMs,
        stdout: `> npm test --silent\n\n${TEST_LINES.slice(0, 10 + (i % 30)).join("\n")}\n`,
        stderr: failed
          ? `FAIL test/upload-${taskId}.test.ts > retries on 503\nAssertionError: expected 2 to be 5\n    at test/upload-${taskId}.test.ts:42:17\n`
          : "",
        stdoutDroppedBytes: 0,
        stderrDroppedBytes: 0,
        ...(outcome === "error" ? { error: "spawn bash ENOENT", errorCode: "ENOENT" } : {}),
        leftoverProcesses: 0,
        contextTruncated: false,
        runId: `run-${i}`,
        contractVersion: 1,
      },
      key: event === "idle" ? `idle:${member}:${at}` : `${event}:${taskId}:${at}`,
      startedAt: at,
      ...(event === "idle"
        ? {}
        : {
            policy: {
              failureAction: "reopen_followup",
              maxReopensPerTask: 3,
              followupOwner: "member",
              passed: !failed,
              summary: failed ? "exit code 1 • FAIL test/upload.test.ts > retries on 503" : "passed",
              alreadyApplied: false,
              reopen: failed ? { kind: "reopened", count: 1, max: 3 } : null,
              followupTaskId: failed ? String(500 + i) : null,
              nudged: failed ? member : null,
              actions: failed ? ["reopened (1/3)", `follow-up #${500 + i} for ${member}`, `nudge ${member}`] : ["none"],
              errors: [],
            },
          }),
    };
  };
}

/**
 * Writes logs `from` … `count - 1` of a fresh generator into `teamDir` (which must exist: the log
 * writer never makes a team dir up), the `i`th started at `startedAt(i)`.
 */
export async function writeHookLogs(teamDir, { from = 0, count, startedAt }) {
  const record = hookLogRecords(teamDir);
  for (let i = from; i < count; i += BATCH) {
    await Promise.all(
      Array.from({ length: Math.min(BATCH, count - i) }, (_, j) =>
        writeHookLog(teamDir, record(i + j, startedAt(i + j))),
      ),
    );
  }
}
