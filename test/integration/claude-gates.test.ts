/**
 * Gates written for Claude Code's agent teams, run unchanged with `format=claude` (contract/claude.ts):
 * the TaskCompleted and TeammateIdle examples of Claude Code's hooks documentation (exit 2 with the
 * reason on stderr; a gate whose check passes), the JSON answers (`decision: "block"`,
 * `continue: false`), an exit code that Claude Code treats as a non-blocking error, and the input
 * shape and `CLAUDE_PROJECT_DIR` a gate reads. Real bash gates, real team files. The examples pick
 * their fields with node rather than jq, which not every machine has; their logic is the documented one.
 */
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { invokeEvent, type InvokeRequest } from "../../extensions/teams-hooks/event/invoke.js";
import { eventRequest } from "../helpers/invoke-request.js";
import type { SettingsFor } from "../helpers/team-settings.js";
import { makeTask, makeTempTeam, type TempTeam } from "../helpers/temp-team.js";

const POLICY = { failureAction: "reopen_followup", maxReopensPerTask: 3, followupOwner: "member" };
/** Reads one field of the JSON on stdin, as `jq -r .FIELD` would. */
const FIELD = (field: string) =>
  `node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s)[${JSON.stringify(field)}] ?? ""))'`;

let team: TempTeam;
let hooksDir: string;
let project: string;

beforeEach(async () => {
  team = await makeTempTeam({
    teamId: "crew",
    tasks: [
      makeTask({
        id: "7",
        status: "completed",
        owner: "impl-1",
        subject: "Add the login form",
        description: "Form, validation, tests.",
      }),
    ],
  });
  hooksDir = path.join(team.teamsRoot, "_hooks");
  project = path.join(team.teamsRoot, "project");
  fs.mkdirSync(hooksDir, { recursive: true });
  fs.mkdirSync(project, { recursive: true });
});
afterEach(async () => {
  await team.cleanup();
});

/** A Claude Code gate; `settings` adds to its settings line (`env=NAME`: a variable of the leader's it reads). */
function claudeGate(name: string, body: string, settings = ""): void {
  const line = `# pi-teams-hooks: format=claude${settings ? ` ${settings}` : ""}`;
  fs.writeFileSync(path.join(hooksDir, name), `#!/bin/bash\n${line}\n${body}\n`, { mode: 0o755 });
}

function request({ hooks, timeoutMs = 20_000, ...over }: Partial<InvokeRequest> & SettingsFor = {}): InvokeRequest {
  const base = { team, hooksDir, cwd: project, settings: { hooks, timeoutMs } };
  return eventRequest({ ...base, key: "task_completed:7:a", taskId: "7", member: "impl-1" }, over);
}

/** Claude Code's documented TaskCompleted example: the task may not complete while the test command fails. */
const TASK_COMPLETED_EXAMPLE = `INPUT=$(cat)
TASK_SUBJECT=$(echo "$INPUT" | ${FIELD("task_subject")})

# Run the test suite
if ! bash -c "$TEST_COMMAND" 2>&1; then
  echo "Tests not passing. Fix failing tests before completing: $TASK_SUBJECT" >&2
  exit 2
fi

exit 0`;

/** Claude Code's documented TeammateIdle example: a teammate may not go idle without its build artifact. */
const TEAMMATE_IDLE_EXAMPLE = `if [ ! -f "./dist/output.js" ]; then
  echo "Build artifact missing. Run the build before stopping." >&2
  exit 2
fi

exit 0`;

describe("Claude Code's documentation examples", () => {
  it("TaskCompleted: exit 2 with stderr denies with that reason, and the failure policy applies; a passing check allows", async () => {
    // The example reads TEST_COMMAND from the leader's environment: a sandboxed gate declares it.
    claudeGate("on_task_completed.sh", TASK_COMPLETED_EXAMPLE, "env=TEST_COMMAND");
    const denied = await invokeEvent(
      request({ applyPolicy: true, hooks: POLICY, env: { ...process.env, TEST_COMMAND: "exit 1" } }),
    );
    expect(denied.result).toMatchObject({
      outcome: "failed",
      exitCode: 2,
      verdict: {
        decision: "deny",
        code: "claude.exit_2",
        reason: "Tests not passing. Fix failing tests before completing: Add the login form",
        source: "claude",
      },
      hookSettings: "format=claude env=TEST_COMMAND",
    });
    expect(denied.counted).toEqual({ state: "failed" });
    expect(denied.summary).toBe(
      "denied (claude.exit_2) • Tests not passing. Fix failing tests before completing: Add the login form",
    );
    expect(denied.actions).toContain("follow-up #8 for impl-1");

    const allowed = await invokeEvent(
      request({ key: "task_completed:7:b", env: { ...process.env, TEST_COMMAND: "true" } }),
    );
    expect(allowed.result).toMatchObject({
      outcome: "passed",
      exitCode: 0,
      verdict: { decision: "allow", source: "claude" },
    });
  });

  it("TeammateIdle: the idle gate denies until the artifact exists in the project dir", async () => {
    claudeGate("on_idle.sh", TEAMMATE_IDLE_EXAMPLE);
    const idle = { event: "idle" as const, key: "idle:impl-1:1", taskId: null };
    const denied = await invokeEvent(request(idle));
    expect(denied.result).toMatchObject({
      outcome: "failed",
      verdict: {
        decision: "deny",
        code: "claude.exit_2",
        reason: "Build artifact missing. Run the build before stopping.",
      },
    });
    fs.mkdirSync(path.join(project, "dist"));
    fs.writeFileSync(path.join(project, "dist", "output.js"), "");
    expect((await invokeEvent(request({ ...idle, key: "idle:impl-1:2" }))).result).toMatchObject({ outcome: "passed" });
  });
});

describe("answers", () => {
  it.each([
    [
      "decision block on stdout denies with its reason",
      `echo '{"decision":"block","reason":"Coverage dropped below 80%"}'`,
      { outcome: "failed", verdict: { decision: "deny", code: "claude.block", reason: "Coverage dropped below 80%" } },
    ],
    [
      "continue false denies with its stopReason",
      `echo '{"continue":false,"stopReason":"Stop: the spec changed"}'`,
      { outcome: "failed", verdict: { decision: "deny", code: "claude.stop", reason: "Stop: the spec changed" } },
    ],
    [
      "exit 0 with other output allows",
      "echo 'all checks pass'",
      { outcome: "passed", verdict: { decision: "allow" } },
    ],
    [
      "exit 2 with nothing on stderr still denies",
      "exit 2",
      { outcome: "failed", verdict: { reason: "exit code 2 (nothing on stderr)" } },
    ],
    [
      "exit 1 is a non-blocking error: logged, allowed",
      "echo 'linter crashed' >&2; exit 1",
      {
        outcome: "passed",
        exitCode: 1,
        nonBlocking: "exit code 1 is a non-blocking error for a Claude Code gate: allowed (stderr: linter crashed)",
      },
    ],
  ])("%s", async (_name, body, expected) => {
    claudeGate("on_task_completed.sh", body);
    expect((await invokeEvent(request())).result).toMatchObject(expected);
  });

  it("a non-blocking error that quotes a secret on stderr keeps it nowhere", async () => {
    claudeGate("on_task_completed.sh", 'echo "token $DEPLOY_TOKEN refused" >&2; exit 1', "env=DEPLOY_TOKEN");
    const env = { ...process.env, DEPLOY_TOKEN: "s3cr3t-value-12345" };
    const outcome = await invokeEvent(request({ env, hooks: { redactEnv: ["DEPLOY_TOKEN"] } }));
    expect(outcome.result).toMatchObject({
      outcome: "passed",
      nonBlocking:
        "exit code 1 is a non-blocking error for a Claude Code gate: allowed (stderr: token [redacted] refused)",
    });
    expect(JSON.stringify(outcome.result)).not.toContain("s3cr3t-value-12345");
  });

  it("a v1 verdict line is not read from a Claude Code gate: it is ordinary output there", async () => {
    claudeGate("on_task_completed.sh", `echo '{"decision":"deny","reason":"v1 style"}'`);
    expect((await invokeEvent(request())).result).toMatchObject({
      outcome: "passed",
      verdict: { decision: "allow", source: "claude" },
    });
  });

  it("a timeout is still the run's error, as for any gate", async () => {
    fs.writeFileSync(
      path.join(hooksDir, "on_task_completed.sh"),
      "#!/bin/bash\n# pi-teams-hooks: format=claude timeout=1s\nsleep 30\n",
      { mode: 0o755 },
    );
    expect((await invokeEvent(request())).result).toMatchObject({ outcome: "error", errorKind: "timeout" });
  });
});

describe("input", () => {
  // What the gate got goes into its working directory (the project): the one folder a sandboxed gate may write.
  it("stdin has Claude Code's shape, and CLAUDE_PROJECT_DIR is the working directory", async () => {
    const seen = path.join(project, "input.json");
    claudeGate(
      "on_task_completed.sh",
      `cat > ${JSON.stringify(seen)}\necho "$CLAUDE_PROJECT_DIR" > ${JSON.stringify(`${seen}.dir`)}`,
    );
    await invokeEvent(request());
    expect(JSON.parse(fs.readFileSync(seen, "utf8"))).toEqual({
      session_id: "crew",
      cwd: project,
      hook_event_name: "TaskCompleted",
      task_id: "7",
      task_subject: "Add the login form",
      task_description: "Form, validation, tests.",
      teammate_name: "impl-1",
      team_name: "crew",
    });
    expect(fs.readFileSync(`${seen}.dir`, "utf8").trim()).toBe(project);

    claudeGate("on_idle.sh", `cat > ${JSON.stringify(seen)}`);
    await invokeEvent(request({ event: "idle", key: "idle:impl-1:1", taskId: null }));
    expect(JSON.parse(fs.readFileSync(seen, "utf8"))).toEqual({
      session_id: "crew",
      cwd: project,
      hook_event_name: "TeammateIdle",
      teammate_name: "impl-1",
      team_name: "crew",
    });
  });

  it("a projection still holds: a Claude Code gate sees only what its v1 document would show", async () => {
    const seen = path.join(project, "input.json");
    claudeGate("on_task_completed.sh", `cat > ${JSON.stringify(seen)}`);
    await invokeEvent(request({ hooks: { projection: { on_task_completed: ["task.id"] } } }));
    const input = JSON.parse(fs.readFileSync(seen, "utf8")) as Record<string, unknown>;
    expect(input).toMatchObject({ task_id: "7", task_subject: "" });
    expect(input.task_description).toBeUndefined();
  });
});
