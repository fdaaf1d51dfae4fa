/**
 * Issue 5 end to end through invokeEvent (real hooks, real files): verdicts decide, hook errors are
 * told apart from denials and count as the failure mode says, chains run in order and stop where
 * they must, each hook gets its own log, and the limits refuse with a closed error that names them.
 */
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  DEFAULT_LIMITS,
  type FailureMode,
  type HookLimits,
} from "../../extensions/teams-hooks/settings/team-settings.js";
import { invokeEvent, type InvokeRequest } from "../../extensions/teams-hooks/event/invoke.js";
import { readLogs } from "../helpers/leader-rig.js";
import type { EffectivePolicy } from "../../extensions/teams-hooks/settings/options.js";
import { eventRequest } from "../helpers/invoke-request.js";
import { makeTask, makeTempTeam, type TempTeam } from "../helpers/temp-team.js";

let team: TempTeam;
let globalDir: string;
let teamLayer: string;

beforeEach(async () => {
  team = await makeTempTeam({ teamId: "chain", tasks: [makeTask({ id: "1", status: "completed", owner: "alice" })] });
  globalDir = path.join(team.teamsRoot, "_hooks");
  teamLayer = path.join(team.teamDir, "hooks");
  fs.mkdirSync(globalDir, { recursive: true });
});
afterEach(async () => {
  await team.cleanup();
});

function hook(dir: string, name: string, body: string): void {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, name), `#!/usr/bin/env bash\n${body}\n`, { mode: 0o755 });
}

/** `policy`, `failureMode`, `limits` and `timeoutMs` are the team's settings (config.json `hooks`, `--timeout-ms`). */
type Over = Partial<InvokeRequest> & {
  policy?: EffectivePolicy | null;
  failureMode?: FailureMode;
  limits?: HookLimits;
  timeoutMs?: number;
};

function request({ policy = null, failureMode, limits, timeoutMs = 5_000, ...over }: Over = {}): InvokeRequest {
  const hooks = { ...policy, ...(failureMode ? { failureMode } : {}), ...(limits ? { limits } : {}) };
  const base = { team, hooksDir: globalDir, teamHooksDir: teamLayer, settings: { hooks, timeoutMs } };
  return eventRequest({ ...base, applyPolicy: policy !== null }, over);
}

async function logs(): Promise<Array<{ name: string; outcome: string; errorKind?: string }>> {
  return (await readLogs(team.teamDir)).map(({ result }) => ({
    name: path.basename(result.hookPath ?? ""),
    outcome: result.outcome,
    ...(result.errorKind ? { errorKind: result.errorKind } : {}),
  }));
}

describe("verdicts", () => {
  it.each([
    [
      "the result file denies (exit 0)",
      'echo \'{"decision":"deny","code":"tests","reason":"2 tests fail"}\' > "$PI_TEAMS_HOOK_RESULT_FILE"; exit 0',
      "failed",
      "failed",
    ],
    [
      "the last stdout line allows (exit 1)",
      'echo checking; echo \'{"decision":"allow"}\'; exit 1',
      "passed",
      "passed",
    ],
    [
      "both: the file wins",
      'echo \'{"decision":"deny"}\' > "$PI_TEAMS_HOOK_RESULT_FILE"; echo \'{"decision":"allow"}\'',
      "failed",
      "failed",
    ],
    [
      "an invalid code is a hook error",
      'echo \'{"decision":"deny","code":"BAD CODE"}\' > "$PI_TEAMS_HOOK_RESULT_FILE"',
      "error",
      "failed",
    ],
    [
      "an oversize reason is a hook error",
      `printf '{"decision":"deny","reason":"%s"}' "$(head -c 1100 /dev/zero | tr '\\\\0' r)" > "$PI_TEAMS_HOOK_RESULT_FILE"`,
      "error",
      "failed",
    ],
    ["garbage in the file is a hook error", 'echo "garbage" > "$PI_TEAMS_HOOK_RESULT_FILE"; exit 0', "error", "failed"],
  ])("%s", async (_name, body, outcome, counted) => {
    hook(globalDir, "on_task_completed.sh", body);
    const result = await invokeEvent(request());
    expect(result.result?.outcome).toBe(outcome);
    expect(result.counted).toEqual({ state: counted });
    if (outcome === "error") expect(result.result?.errorKind).toBe("invalid_verdict");
  });

  it("the result file is removed after the run", async () => {
    hook(
      globalDir,
      "on_task_completed.sh",
      'echo \'{"decision":"allow"}\' > "$PI_TEAMS_HOOK_RESULT_FILE"; echo "$PI_TEAMS_HOOK_RESULT_FILE" > "$PI_TEAMS_TEAM_DIR/where"',
    );
    await invokeEvent(request());
    const where = fs.readFileSync(path.join(team.teamDir, "where"), "utf8").trim();
    expect(fs.existsSync(where)).toBe(false);
  });
});

describe("hook errors under both failure modes", () => {
  const errors: Array<[string, () => void, string]> = [
    [
      "a missing interpreter",
      () => fs.writeFileSync(path.join(globalDir, "on_task_completed"), "#!/no/such/interpreter\n", { mode: 0o755 }),
      "spawn",
    ],
    [
      "a non-executable interpreter (EACCES)",
      () => {
        fs.writeFileSync(path.join(globalDir, "not-executable-interpreter"), "#!/bin/sh\nexit 0\n", { mode: 0o644 });
        fs.writeFileSync(
          path.join(globalDir, "on_task_completed"),
          `#!${path.join(globalDir, "not-executable-interpreter")}\n`,
          { mode: 0o755 },
        );
      },
      "spawn",
    ],
    [
      "E2BIG (an environment over the kernel's limit)",
      () => {
        // A sandboxed gate gets only the variables it declares: this one asks for the huge one.
        hook(globalDir, "on_task_completed.sh", "# pi-teams-hooks: env=PI_TEAMS_TEST_HUGE\nexit 0");
        process.env.PI_TEAMS_TEST_HUGE = "x".repeat(600 * 1024);
      },
      "spawn",
    ],
    ["a signal", () => hook(globalDir, "on_task_completed.sh", "kill -USR1 $$"), "signal"],
    ["a timeout", () => hook(globalDir, "on_task_completed.sh", "sleep 30"), "timeout"],
  ];
  afterEach(() => {
    delete process.env.PI_TEAMS_TEST_HUGE;
  });

  it.each(errors)("%s: closed counts as a failure, open lets it pass", async (_name, make, kind) => {
    make();
    const closed = await invokeEvent(request({ failureMode: "closed", timeoutMs: 500 }));
    expect(closed.result).toMatchObject({ outcome: "error", errorKind: kind });
    expect(closed.counted).toEqual({ state: "failed" });
    const open = await invokeEvent(request({ failureMode: "open", timeoutMs: 500 }));
    expect(open.result).toMatchObject({ outcome: "error", errorKind: kind });
    expect(open.counted).toEqual({ state: "passed" });
    expect(open.summary).toMatch(/^allowed \(failure mode open\): /);
  });

  it("a non-executable bare file with nothing else is no hook at all, and says why", async () => {
    fs.writeFileSync(path.join(globalDir, "on_task_completed"), "#!/bin/sh\nexit 0\n", { mode: 0o644 });
    const outcome = await invokeEvent(request());
    expect(outcome.result).toBeNull();
    expect(outcome.chain.skipped.map((s) => s.reason).join(" ")).toMatch(/not executable/);
  });

  it("E2BIG forced by a tiny payload-independent env is a spawn error", async () => {
    // The variable reaches a sandboxed gate only when the gate declares it.
    hook(globalDir, "on_task_completed.sh", "# pi-teams-hooks: env=HUGE\nexit 0");
    const outcome = await invokeEvent(request({ env: { ...process.env, HUGE: "x".repeat(600 * 1024) } }));
    expect(outcome.result).toMatchObject({ outcome: "error", errorKind: "spawn", errorCode: "E2BIG" });
    expect(outcome.counted).toEqual({ state: "failed" });
  });

  it("the same variable undeclared never reaches a sandboxed gate, which runs", async () => {
    hook(globalDir, "on_task_completed.sh", 'test -z "$HUGE"');
    const outcome = await invokeEvent(request({ env: { ...process.env, HUGE: "x".repeat(600 * 1024) } }));
    expect(outcome.result).toMatchObject({ outcome: "passed", sandbox: "on" });
    expect(outcome.counted).toEqual({ state: "passed" });
  });

  it("the policy records the outcome apart from the status", async () => {
    hook(globalDir, "on_task_completed.sh", "sleep 30");
    await invokeEvent(
      request({
        timeoutMs: 300,
        failureMode: "open",
        policy: { failureAction: "reopen", maxReopensPerTask: 3, followupOwner: "member" },
      }),
    );
    const task = JSON.parse(fs.readFileSync(team.taskFile("1"), "utf8")) as {
      status: string;
      metadata: Record<string, unknown>;
    };
    expect(task.status).toBe("completed");
    expect(task.metadata).toMatchObject({ qualityGateStatus: "passed", qualityGateOutcome: "error" });
  });
});

describe("chains", () => {
  it("run the v1 file, then on_<event>.d in byte-wise order, each with its own log", async () => {
    hook(globalDir, "on_task_completed.sh", 'echo v1 >> "$PI_TEAMS_TEAM_DIR/order"');
    hook(path.join(globalDir, "on_task_completed.d"), "20-b.sh", 'echo 20-b >> "$PI_TEAMS_TEAM_DIR/order"');
    hook(path.join(globalDir, "on_task_completed.d"), "10-a.sh", 'echo 10-a >> "$PI_TEAMS_TEAM_DIR/order"');
    const outcome = await invokeEvent(request());
    expect(fs.readFileSync(path.join(team.teamDir, "order"), "utf8")).toBe("v1\n10-a\n20-b\n");
    expect(outcome.counted).toEqual({ state: "passed" });
    expect((await logs()).map((l) => l.name).sort()).toEqual(["10-a.sh", "20-b.sh", "on_task_completed.sh"]);
  });

  it("a denial in the middle stops a task event's chain", async () => {
    const d = path.join(globalDir, "on_task_completed.d");
    hook(d, "1-pass.sh", "exit 0");
    hook(d, "2-deny.sh", "echo 'lint: 3 errors' >&2; exit 1");
    hook(d, "3-never.sh", 'touch "$PI_TEAMS_TEAM_DIR/ran-3"');
    const outcome = await invokeEvent(request());
    expect(outcome.counted).toEqual({ state: "failed" });
    expect(outcome.hook?.name).toBe("2-deny.sh");
    expect(outcome.summary).toBe("exit code 1 • lint: 3 errors");
    expect(fs.existsSync(path.join(team.teamDir, "ran-3"))).toBe(false);
    expect(await logs()).toHaveLength(2);
  });

  // The v1 file is an .mjs on purpose: its name is the base name whatever the extension.
  const mjs = (code: number): void =>
    fs.writeFileSync(path.join(globalDir, "on_task_completed.mjs"), `process.exit(${code});\n`, { mode: 0o755 });
  it.each([
    {
      decider: "a chain member",
      make: () => {
        mjs(0);
        hook(path.join(globalDir, "on_task_completed.d"), "10-lint.sh", "echo 'lint: 3 errors' >&2; exit 1");
      },
      name: "on_task_completed.d/10-lint.sh",
      chain: ["on_task_completed.mjs", "10-lint.sh"],
    },
    { decider: "the v1 file", make: () => mjs(1), name: "on_task_completed", chain: null },
  ])("the policy names the gate that decided, $decider, as $name", async ({ make, name, chain }) => {
    make();
    const key = "task_completed:1:2025-01-01T00:00:00.000Z"; // the task's own key: its updatedAt
    const outcome = await invokeEvent(
      request({ key, policy: { failureAction: "reopen_followup", maxReopensPerTask: 3, followupOwner: "member" } }),
    );
    expect(outcome.counted).toEqual({ state: "failed" });
    const task = JSON.parse(fs.readFileSync(team.taskFile("1"), "utf8")) as {
      status: string;
      metadata: Record<string, unknown>;
    };
    expect(task.status).toBe("pending");
    expect(task.metadata).toMatchObject({ qualityGateHook: name, reopenedByQualityGateHook: name });
    const followup = JSON.parse(fs.readFileSync(team.taskFile("2"), "utf8")) as {
      subject: string;
      metadata: Record<string, unknown>;
    };
    expect(followup.subject).toBe(`Quality gate failed: ${name} (task #1)`);
    expect(followup.metadata.qualityGateFollowupHook).toBe(name);
    // The log's chain keeps listing the files as found.
    const record = JSON.parse(fs.readFileSync(outcome.logFile ?? "", "utf8")) as { chain?: { hooks: string[] } };
    expect(record.chain?.hooks ?? null).toEqual(chain);
  });

  it("idle runs every hook, whatever they say", async () => {
    const d = path.join(globalDir, "on_idle.d");
    hook(d, "1-deny.sh", "exit 1");
    hook(d, "2-still.sh", 'touch "$PI_TEAMS_TEAM_DIR/ran-2"');
    const outcome = await invokeEvent(request({ event: "idle", taskId: null, key: "idle:alice:t" }));
    expect(fs.existsSync(path.join(team.teamDir, "ran-2"))).toBe(true);
    expect(outcome.counted).toEqual({ state: "failed" });
    expect(outcome.runs).toHaveLength(2);
  });

  it("the team layer replaces a global hook of the same name, and NAME.disabled switches one off", async () => {
    const g = path.join(globalDir, "on_task_completed.d");
    const t = path.join(teamLayer, "on_task_completed.d");
    hook(g, "lint.sh", 'echo global-lint >> "$PI_TEAMS_TEAM_DIR/order"');
    hook(g, "slow.sh", 'echo global-slow >> "$PI_TEAMS_TEAM_DIR/order"');
    hook(t, "lint.sh", 'echo team-lint >> "$PI_TEAMS_TEAM_DIR/order"');
    fs.writeFileSync(path.join(t, "slow.sh.disabled"), "");
    const outcome = await invokeEvent(request());
    expect(fs.readFileSync(path.join(team.teamDir, "order"), "utf8")).toBe("team-lint\n");
    expect(outcome.runs.map((r) => `${r.hook.layer}:${r.hook.name}`)).toEqual(["team:lint.sh"]);
  });
});

describe("limits", () => {
  it("more hooks than allowed is a closed error naming the limit, and nothing runs", async () => {
    const d = path.join(globalDir, "on_task_completed.d");
    for (let i = 0; i < 3; i++) hook(d, `${i}.sh`, 'touch "$PI_TEAMS_TEAM_DIR/ran"');
    const outcome = await invokeEvent(
      request({ failureMode: "open", limits: { ...DEFAULT_LIMITS, maxHooksPerEvent: 2 } }),
    );
    expect(outcome.result).toMatchObject({ outcome: "error", errorKind: "limit", ran: false });
    expect(outcome.result?.error).toMatch(/hooks\.limits\.maxHooksPerEvent/);
    expect(outcome.counted).toEqual({ state: "failed" });
    expect(fs.existsSync(path.join(team.teamDir, "ran"))).toBe(false);
  });

  it("a payload over the cap is a closed error naming the limit", async () => {
    hook(globalDir, "on_task_completed.sh", "exit 0");
    fs.writeFileSync(
      team.taskFile("1"),
      JSON.stringify(makeTask({ id: "1", status: "completed", description: "d".repeat(4000) })),
    );
    const outcome = await invokeEvent(
      request({ failureMode: "open", limits: { ...DEFAULT_LIMITS, maxPayloadBytes: 1024 } }),
    );
    expect(outcome.result?.error).toMatch(/hooks\.limits\.maxPayloadBytes/);
    expect(outcome.counted).toEqual({ state: "failed" });
  });

  it("the chain deadline stops the chain with a closed error naming it", async () => {
    const d = path.join(globalDir, "on_task_completed.d");
    hook(d, "1-slow.sh", "sleep 30");
    hook(d, "2-never.sh", 'touch "$PI_TEAMS_TEAM_DIR/ran-2"');
    const outcome = await invokeEvent(
      request({ failureMode: "open", limits: { ...DEFAULT_LIMITS, chainDeadlineMs: 400 } }),
    );
    expect(outcome.result).toMatchObject({ outcome: "error", errorKind: "limit" });
    expect(outcome.result?.error).toMatch(/hooks\.limits\.chainDeadlineMs/);
    expect(outcome.counted).toEqual({ state: "failed" });
    expect(fs.existsSync(path.join(team.teamDir, "ran-2"))).toBe(false);
  });
});
