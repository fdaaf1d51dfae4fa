/**
 * The deferral files (deferrals/record.ts) and the check that holds each to what its gate held
 * (event/deferral-check.ts), on a real temp team whose real gate (a bash file, a child process) answered `defer`
 * through `invokeEvent`: what a lead or a decider checks when an agent of the team edits `hook-state/deferrals/` by
 * hand.
 */
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  changedFields,
  checkDeferral,
  decisionLogProblem,
  describeChanges,
  heldFields,
  ledgerHoldOf,
} from "../../extensions/teams-hooks/event/deferral-check.js";
import {
  type DeferralRecord,
  deferralFile,
  deferralRunIds,
  isRunId,
  readDeferral,
  sameDecision,
  updateDeferral,
  writeDeferral,
} from "../../extensions/teams-hooks/deferrals/record.js";
import { invokeEvent } from "../../extensions/teams-hooks/event/invoke.js";
import { hookLogsDir } from "../../extensions/teams-hooks/team/paths.js";
import { eventRequest } from "../helpers/invoke-request.js";
import { makeTask, tempTeams, type TempTeam, writeDeferringGate } from "../helpers/temp-team.js";

const team = tempTeams({ teamId: "deferrals-unit" });
const AT = "2026-12-02T10:00:00.000Z";
const KEY = `task_completed:1:${AT}`;
/** A real gate process per test. */
const TIMEOUT = 20_000;

interface Held {
  team: TempTeam;
  runId: string;
  /** The held run's log, as the deferral names it. */
  log: string;
  /** The file as the gate held it. */
  record: DeferralRecord;
}

/** Task 1 completed, its gate answers defer (held for an hour), with the policy applied as `run --apply-policy` does. */
async function held(): Promise<Held> {
  const completed = makeTask({ id: "1", status: "completed", owner: "alice", metadata: { completedAt: AT } });
  const made = await team({ tasks: [completed] });
  const hooksDir = await writeDeferringGate(made.teamsRoot);
  const settings = { hooks: { failureAction: "reopen", deferTimeoutMs: 3_600_000 }, timeoutMs: 5_000 };
  const outcome = await invokeEvent(
    eventRequest({ team: made, hooksDir, settings, key: KEY, timestamp: AT, applyPolicy: true }),
  );
  const runId = outcome.deferral?.runId;
  if (!runId || !outcome.logFile) throw new Error(`the gate did not hold the task: ${outcome.summary}`);
  const read = await readDeferral(made.teamDir, runId);
  if (!read?.ok) throw new Error(`no deferral file for ${runId}`);
  return { team: made, runId, log: outcome.logFile, record: read.value };
}

/** What an agent does: rewrites the file by hand. */
async function edit(h: Held, change: (record: DeferralRecord) => Record<string, unknown>): Promise<DeferralRecord> {
  const file = deferralFile(h.team.teamDir, h.runId);
  const record = JSON.parse(await readFile(file, "utf8")) as DeferralRecord;
  await writeFile(file, `${JSON.stringify(change(record), null, 2)}\n`);
  const read = await readDeferral(h.team.teamDir, h.runId);
  if (!read?.ok) throw new Error("the edited file does not read");
  return read.value;
}

describe("a deferral file held to what its gate held", () => {
  it(
    "agrees as written; a decision added by hand is no change, for only the decision is the deciders' to write",
    async () => {
      const h = await held();
      expect(h.record).toMatchObject({ runId: h.runId, key: KEY, taskId: "1", code: "ci.pending", logFile: h.log });
      const check = await checkDeferral(h.record, { teamDir: h.team.teamDir });
      expect(check.kind).toBe("agrees");
      const decided = await edit(h, (r) => ({ ...r, decision: { decision: "allow", by: "ci", at: AT } }));
      expect((await checkDeferral(decided, { teamDir: h.team.teamDir })).kind).toBe("agrees");
    },
    TIMEOUT,
  );

  it(
    "finds a deadline pushed out and a key moved to another task, names both with what was held, and puts them back",
    async () => {
      const h = await held();
      const edited = await edit(h, (r) => ({
        ...r,
        key: `task_completed:9:${AT}`,
        expiresAt: "2099-01-01T00:00:00.000Z",
      }));
      const check = await checkDeferral(edited, { teamDir: h.team.teamDir });
      if (check.kind !== "differs") throw new Error(`expected differs, got ${check.kind}`);
      expect(check.fields).toEqual(["key", "expiresAt"]);
      expect(describeChanges(edited, check.reference, check.fields)).toBe(
        `key "task_completed:9:${AT}" (held: "${KEY}"), expiresAt "2099-01-01T00:00:00.000Z" (held: "${h.record.expiresAt}")`,
      );
      const repaired = { ...edited, ...heldFields(check.reference) } as DeferralRecord;
      expect(changedFields(repaired, h.record)).toEqual([]);
      expect((await checkDeferral(repaired, { teamDir: h.team.teamDir })).kind).toBe("agrees");
    },
    TIMEOUT,
  );

  it(
    "refuses a deferral no gate held: one planted under a new run id, or naming a log outside the team's",
    async () => {
      const h = await held();
      const planted = { ...h.record, runId: "0b0e5c1e-0000-4000-8000-00000000beef" };
      const other = await checkDeferral(planted, { teamDir: h.team.teamDir });
      expect(other).toEqual({
        kind: "refused",
        problem: `no gate held run ${planted.runId}: the ledger has no such deferral, and its logFile (${h.log}) is not the log of a held run of that id`,
      });
      const elsewhere = { ...h.record, logFile: path.join(h.team.teamsRoot, "my-own-log.json") };
      const outside = await checkDeferral(elsewhere, { teamDir: h.team.teamDir });
      expect(outside.kind).toBe("refused");
      if (outside.kind === "refused")
        expect(outside.problem).toContain(`is not a log of this team's (${hookLogsDir(h.team.teamDir)})`);
    },
    TIMEOUT,
  );

  it(
    "goes by the leader's ledger when the held run's log is gone: its key and deadline still stand",
    async () => {
      const h = await held();
      const ledger = path.join(h.team.teamDir, "hook-state", "ledger.jsonl");
      const defer = { op: "defer", key: KEY, at: AT, runId: h.record.eventRunId, deferral: h.runId };
      const line = JSON.stringify({ ...defer, expiresAt: h.record.expiresAt, log: h.log });
      // a torn last line (a crash mid-append) is not a record
      await writeFile(
        ledger,
        `${line}\n{"op":"defer","key":"task_completed:1:x","deferral":${JSON.stringify(h.runId)}`,
      );
      const hold = ledgerHoldOf(h.team.teamDir, h.runId);
      expect(hold).toEqual({ key: KEY, eventRunId: h.record.eventRunId, expiresAt: h.record.expiresAt, log: h.log });
      await rm(h.log);
      const edited = await edit(h, (r) => ({ ...r, expiresAt: "2099-01-01T00:00:00.000Z" }));
      const check = await checkDeferral(edited, { teamDir: h.team.teamDir, ledger: hold });
      expect(check).toMatchObject({ kind: "differs", fields: ["expiresAt"] });
      expect(check.kind === "differs" && check.reference.expiresAt).toBe(h.record.expiresAt);
      expect(ledgerHoldOf(h.team.teamDir, "0b0e5c1e-0000-4000-8000-00000000beef")).toBeNull();
    },
    TIMEOUT,
  );

  it(
    "believes `applied` only with the deferral's own decision log in the team's hook-logs",
    async () => {
      const h = await held();
      const dir = hookLogsDir(h.team.teamDir);
      const { teamDir } = h.team;
      expect(await decisionLogProblem(teamDir, h.runId, null)).toBe("it names no decision log");
      const outside = path.join(h.team.teamsRoot, "decision.json");
      expect(await decisionLogProblem(teamDir, h.runId, outside)).toBe(`its log ${outside} is not in ${dir}`);
      const missing = path.join(dir, "2026-12-02T10-00-00-000Z_task_completed_task-1-decision.json");
      expect(await decisionLogProblem(teamDir, h.runId, missing)).toBe(`its log ${missing} does not exist`);
      // The held run's own log is a log of the team's, but not a decision's.
      expect(await decisionLogProblem(teamDir, h.runId, h.log)).toBe(
        `its log ${h.log} is not the decision log of run ${h.runId}`,
      );
    },
    TIMEOUT,
  );
});

describe("the deferral files", () => {
  it(
    "are found by the short id `logs` shows, in any case; an unknown id or a team with none finds nothing",
    async () => {
      const h = await held();
      const short = h.runId.slice(0, 8);
      expect(await deferralRunIds(h.team.teamDir, short.toUpperCase())).toEqual([h.runId]);
      expect(await deferralRunIds(h.team.teamDir, h.runId)).toEqual([h.runId]);
      expect(await deferralRunIds(h.team.teamDir, "ffffffff")).toEqual([]);
      const empty = await team();
      expect(await deferralRunIds(empty.teamDir, short)).toEqual([]);
    },
    TIMEOUT,
  );

  it(
    "are written once: a write tried again keeps what a decider added since; an update of an unknown run is none",
    async () => {
      const h = await held();
      const decision = { decision: "deny" as const, by: "ci", at: AT, reason: "2 tests fail" };
      const updated = await updateDeferral(h.team.teamDir, h.runId, (r) => ({ ...r, decision }));
      expect(updated?.decision).toEqual(decision);
      const again = await writeDeferral(h.team.teamDir, h.record);
      expect(again.decision).toEqual(decision);
      const read = await readDeferral(h.team.teamDir, h.runId);
      expect(read?.ok && read.value.decision).toEqual(decision);
      expect(await updateDeferral(h.team.teamDir, "0b0e5c1e-0000-4000-8000-00000000beef", (r) => r)).toBeNull();
    },
    TIMEOUT,
  );
});

describe("run ids and decisions, as deciders send them", () => {
  it("takes a run id this project writes, and nothing that could climb out of the folder", () => {
    expect(isRunId("0b0e5c1e-0000-4000-8000-000000000000")).toBe(true);
    expect(isRunId("0b0e5c1e-0000-4000-8000-000000000000.2")).toBe(true);
    for (const bad of ["../x", "a/b", ".hidden", "", "x".repeat(129)]) expect(isRunId(bad)).toBe(false);
  });

  it("counts a decision sent again as the same, also when the record's copy was redacted since", () => {
    const recorded = { decision: "deny" as const, reason: "token [redacted] leaked in the log" };
    expect(sameDecision(recorded, { decision: "deny", reason: "token s3cr3t-value leaked in the log" })).toBe(true);
    expect(sameDecision(recorded, { decision: "deny", reason: "another reason" })).toBe(false);
    expect(sameDecision(recorded, { decision: "allow", reason: "token s3cr3t-value leaked in the log" })).toBe(false);
    expect(sameDecision({ decision: "allow" }, { decision: "allow", code: "ci.ok" })).toBe(false);
  });
});
