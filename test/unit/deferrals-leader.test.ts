import { afterEach, describe, expect, it, vi } from "vitest";
import type { Task } from "../../extensions/teams-hooks/contract/team-files.js";
import { Deferrals } from "../../extensions/teams-hooks/leader/deferrals.js";
import { readDeferral } from "../../extensions/teams-hooks/deferrals/record.js";
import { invokeEvent } from "../../extensions/teams-hooks/event/invoke.js";
import { LeaderContext } from "../../extensions/teams-hooks/leader/context.js";
import { Ledger } from "../../extensions/teams-hooks/leader/ledger.js";
import type { LeaderNotice } from "../../extensions/teams-hooks/leader/notices.js";
import { resolveTeamSetup } from "../../extensions/teams-hooks/team/setup.js";
import { eventRequest } from "../helpers/invoke-request.js";
import { leaderOptions } from "../helpers/leader-here.js";
import { readLedger, readTaskFile } from "../helpers/leader-rig.js";
import { makeTask, tempTeams, writeDeferringGate } from "../helpers/temp-team.js";
import { createRuntime } from "../../extensions/teams-hooks/runner/runtime.js";

const team = tempTeams({ teamId: "deferrals-leader" });
const AT = "2026-12-02T10:00:00.000Z";
const HOOKS = { failureAction: "reopen", deferTimeoutMs: 60_000 };

afterEach(() => {
  vi.useRealTimers();
});

/**
 * Turns of the event loop (setImmediate is not faked) until `done` holds: the expiry's file work (real I/O) and the
 * queue's application run meanwhile. A bounded wait on a condition; the clock does not move.
 */
async function turnsUntil(what: string, done: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 20_000; i++) {
    if (await done()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`${what}: not after 20000 turns of the event loop`);
}

describe("a watching leader's held gate on a fake clock", () => {
  it("stays open until its deadline, expires at it, and the policy reopens the task", async () => {
    const completed = makeTask({ id: "1", status: "completed", owner: "alice", metadata: { completedAt: AT } });
    const config = { version: 1, teamId: "deferrals-leader", leadName: "team-lead", members: [], hooks: HOOKS };
    const made = await team({ tasks: [completed], config });
    const hooksDir = await writeDeferringGate(made.teamsRoot);
    const key = `task_completed:1:${AT}`;
    const settings = { hooks: HOOKS, timeoutMs: 5_000 };
    const outcome = await invokeEvent(
      eventRequest({ team: made, hooksDir, settings, key, timestamp: AT, applyPolicy: true }),
    );
    const runId = outcome.deferral?.runId ?? "";
    expect(outcome.counted).toEqual({ state: "held", cause: "deferral" });

    const env = { PATH: process.env.PATH, HOME: made.teamsRoot, PI_TEAMS_HOOKS_DIR: hooksDir };
    const setup = await resolveTeamSetup({ teamDir: made.teamDir, env, processCwd: made.teamsRoot });
    const notices: LeaderNotice[] = [];
    const ctx = new LeaderContext(leaderOptions(setup, env, notices), createRuntime());
    const ledger = await Ledger.open(made.teamDir);
    ctx.state = "watching";
    const deferrals = new Deferrals(ctx, ledger);

    const read = await readDeferral(made.teamDir, runId);
    const expiresAt = read?.ok ? Date.parse(read.value.expiresAt) : Number.NaN;
    expect(expiresAt - Date.parse(read?.ok ? read.value.deferredAt : "")).toBe(60_000);
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"], now: expiresAt - 30_000 });
    await deferrals.start();
    // Held by `run --apply-policy`: the leader records it as held in its ledger.
    await turnsUntil("the ledger's hold", async () =>
      (await readLedger(made.teamDir)).some((r) => r.op === "defer" && r.key === key),
    );

    await vi.advanceTimersByTimeAsync(30_000 - 1);
    const before = await readDeferral(made.teamDir, runId);
    expect(before?.ok && before.value.decision).toBeUndefined();
    expect(((await readTaskFile(made, "1")) as Task).metadata?.qualityGateStatus).toBe("deferred");

    await vi.advanceTimersByTimeAsync(1);
    await turnsUntil("the expiry applied", () => notices.some((n) => n.kind === "event"));
    const after = await readDeferral(made.teamDir, runId);
    expect(after?.ok && after.value.decision).toMatchObject({ decision: "expired", by: "pi-teams-hooks" });
    expect(await readTaskFile(made, "1")).toMatchObject({
      status: "pending",
      metadata: { qualityGateStatus: "failed", reopenedByQualityGateCount: 1 },
    });
    await turnsUntil("the key done in the ledger", async () =>
      (await readLedger(made.teamDir)).some((r) => r.op === "done" && r.key === key),
    );
    deferrals.stop?.();
  });
});
