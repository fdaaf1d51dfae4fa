/**
 * The gate-life model (policy/gate-life.ts): the states a task's metadata shows, which runs hold an
 * event instead of judging it, the round a reopen moves to, the tree's budget; and docs/gate-life.md's
 * table of transitions held equal to the model's.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { RunResult } from "../../extensions/teams-hooks/contract/hook-run.js";
import type { Task } from "../../extensions/teams-hooks/contract/team-files.js";
import { taskEvent } from "../../extensions/teams-hooks/contract/events.js";
import {
  GateTransitionError,
  transitions,
  type GateInput,
  type GatePlace,
  gateStateOf,
  inputReaching,
  next,
  heldFor,
  holdCauseOf,
  isJudged,
  recordedPlaceOf,
  nextRound,
  placeOfLog,
  rootOf,
  treeBudget,
} from "../../extensions/teams-hooks/policy/gate-life.js";

function task(metadata: Record<string, unknown> = {}, status: Task["status"] = "completed"): Task {
  return {
    id: "3",
    subject: "s",
    description: "d",
    owner: "alice",
    status,
    blocks: [],
    blockedBy: [],
    metadata: { completedAt: "2026-12-01T10:00:00.000Z", ...metadata },
    createdAt: "2026-12-01T09:00:00.000Z",
    updatedAt: "2026-12-01T10:00:00.000Z",
  };
}
const KEY = "task_completed:3:2026-12-01T10:00:00.000Z";

describe("holdCauseOf: a run that could not judge the work holds the event", () => {
  it.each<[string, Partial<RunResult>, boolean, "approval" | "fault" | null]>([
    ["untrusted", { outcome: "error", errorKind: "untrusted_hook" }, false, "approval"],
    ["missing", { outcome: "error", errorKind: "gate_missing" }, false, "approval"],
    ["not executable", { outcome: "error", errorKind: "gate_not_executable" }, false, "approval"],
    ["insecure", { outcome: "error", errorKind: "insecure_hook" }, false, "approval"],
    ["an unreadable settings line", { outcome: "error", errorKind: "hook_settings" }, false, "approval"],
    ["cannot start (ENOENT)", { outcome: "error", errorKind: "spawn", errorCode: "ENOENT" }, false, "approval"],
    ["out of processes (EAGAIN)", { outcome: "error", errorKind: "spawn", errorCode: "EAGAIN" }, false, "fault"],
    ["an internal error", { outcome: "error", errorKind: "internal" }, false, "fault"],
    ["an internal error let through by failure mode open", { outcome: "error", errorKind: "internal" }, true, null],
    ["a timeout is the gate's", { outcome: "error", errorKind: "timeout" }, false, null],
    ["a denial is the worker's", { outcome: "failed" }, false, null],
    ["a pass", { outcome: "passed" }, true, null],
  ])("%s", (_name, result, passes, cause) => {
    expect(holdCauseOf(result as RunResult, passes)).toBe(cause);
  });
});

describe("heldFor: what waits for the lead or a retry", () => {
  it("is the cause of an approval or fault hold, and nothing for a deferral or any other place", () => {
    expect(heldFor({ state: "held", cause: "approval" })).toBe("approval");
    expect(heldFor({ state: "held", cause: "fault" })).toBe("fault");
    expect(heldFor({ state: "held", cause: "deferral" })).toBeNull();
    for (const state of ["passed", "failed", "running", "unjudged"] as const) expect(heldFor({ state })).toBeNull();
    expect(heldFor(null)).toBeNull();
  });
});

describe("gateStateOf: the state a task's metadata records", () => {
  it.each<[string, Task, string, string | undefined]>([
    ["no gate yet", task(), "unjudged", undefined],
    ["passed", task({ qualityGateEventKey: KEY, qualityGateStatus: "passed" }), "passed", undefined],
    ["failed, kept completed", task({ qualityGateEventKey: KEY, qualityGateStatus: "failed" }), "failed", undefined],
    [
      "failed and reopened",
      task(
        { qualityGateEventKey: KEY, qualityGateStatus: "failed", reopenedByQualityGateKey: KEY, qualityGateRound: 1 },
        "pending",
      ),
      "reopened",
      undefined,
    ],
    [
      "escalated",
      task({ qualityGateEventKey: KEY, qualityGateStatus: "failed", qualityGateEscalated: true }),
      "escalated",
      undefined,
    ],
    ["held for a decision", task({ qualityGateEventKey: KEY, qualityGateStatus: "deferred" }), "held", "deferral"],
    [
      "held for approval",
      task({ qualityGateEventKey: KEY, qualityGateStatus: "held", qualityGateHeld: "approval" }),
      "held",
      "approval",
    ],
    [
      "held for our fault",
      task({ qualityGateEventKey: KEY, qualityGateStatus: "held", qualityGateHeld: "fault" }),
      "held",
      "fault",
    ],
    [
      "completed again since its gate (a new stamp)",
      task({ completedAt: "2026-12-01T11:00:00.000Z", qualityGateEventKey: KEY, qualityGateStatus: "passed" }),
      "unjudged",
      undefined,
    ],
    [
      "completed again in a later round (the same stamp)",
      task({ qualityGateEventKey: KEY, qualityGateStatus: "failed", qualityGateRound: 1 }),
      "unjudged",
      undefined,
    ],
  ])("%s", (_name, t, state, cause) => {
    expect(gateStateOf(t)).toEqual(cause ? { state, cause } : { state });
  });

  it("recordedPlaceOf says where the record puts a given event, current or not; isJudged, whether a judgement put it there", () => {
    const later = "task_completed:3:2026-12-01T11:00:00.000Z";
    const judged = task({
      completedAt: "2026-12-01T11:00:00.000Z",
      qualityGateEventKey: KEY,
      qualityGateStatus: "failed",
    });
    expect(gateStateOf(judged)).toEqual({ state: "unjudged" });
    expect(recordedPlaceOf(judged, KEY)).toEqual({ state: "failed" });
    expect(recordedPlaceOf(judged, later)).toBeNull();
    expect(isJudged(recordedPlaceOf(judged, KEY))).toBe(true);
    const held = task({ qualityGateEventKey: KEY, qualityGateStatus: "held", qualityGateHeld: "fault" });
    expect(isJudged(recordedPlaceOf(held, KEY))).toBe(false);
    expect(isJudged(recordedPlaceOf(task({ qualityGateEventKey: KEY, qualityGateStatus: "weird" }), KEY))).toBe(false);
    for (const state of ["passed", "failed", "reopened", "escalated"] as const) expect(isJudged({ state })).toBe(true);
    expect(isJudged(null)).toBe(false);
  });
});

describe("rounds: what the leader ends, the next completion does not share", () => {
  it("a reopen moves past the file's round, the key's and the leader's memory", () => {
    expect(nextRound(task(), KEY)).toBe(1);
    expect(nextRound(task({ qualityGateRound: 2 }), KEY)).toBe(3);
    expect(nextRound(task(), `${KEY}#r4`)).toBe(5);
    expect(nextRound(task(), KEY, 6)).toBe(7);
  });

  it("a completion in round 1 has a key of its own, the stamp the same", () => {
    expect(taskEvent(task())?.key).toBe(KEY);
    expect(taskEvent(task({ qualityGateRound: 1 }))?.key).toBe(`${KEY}#r1`);
    // The leader's memory wins over an old copy of the metadata written back (round 0).
    expect(taskEvent(task(), { minRound: 2 })?.key).toBe(`${KEY}#r2`);
    // Without completedAt, right after the leader's write: the recorded key's stamp, not a new one.
    const written = task({
      completedAt: undefined,
      qualityGateEventKey: `task_completed:3:2026-12-01T10:00:00.000Z#r1`,
      qualityGateAt: "2026-12-01T10:05:00.000Z",
      qualityGateRound: 1,
    });
    expect(taskEvent({ ...written, updatedAt: "2026-12-01T10:05:00.000Z" })?.key).toBe(`${KEY}#r1`);
  });
});

describe("the tree's budget", () => {
  it("a follow-up's root is the one it names (only as a follow-up); a task is its own root otherwise", () => {
    expect(rootOf(task())).toBe("3");
    expect(
      rootOf(task({ qualityGateFollowupFor: "k", qualityGateSourceTaskId: "2", qualityGateRootTaskId: "1" })),
    ).toBe("1");
    expect(rootOf(task({ qualityGateFollowupFor: "k", qualityGateSourceTaskId: "2" }))).toBe("2");
    expect(rootOf(task({ qualityGateRootTaskId: "1" }))).toBe("3"); // not a follow-up: the field is a worker's word
    // with the leader's memory, its record alone: the metadata's root is a worker's word
    expect(rootOf(task({ qualityGateFollowupFor: "k", qualityGateRootTaskId: "1" }), { root: "9" })).toBe("9");
    expect(rootOf(task({ qualityGateFollowupFor: "k", qualityGateRootTaskId: "1" }), { root: undefined })).toBe("3");
  });

  it("without the leader's memory (a hand run), spent is the higher of the keys on the root and an older reopen count", () => {
    expect(treeBudget("3", task({ qualityGateBudgetKeys: ["a", "b"] }), 3).spent).toBe(2);
    expect(treeBudget("3", task({ reopenedByQualityGateCount: 2 }), 3).spent).toBe(2);
    expect(treeBudget("3", task({ qualityGateBudgetKeys: ["a"] }), 3).spentBy("a")).toBe(true);
  });

  it("with the leader's memory, spent is what it recorded, whatever the root's metadata says", () => {
    const forged = task({ qualityGateBudgetKeys: ["x", "y", "z"], reopenedByQualityGateCount: 3 });
    expect(treeBudget("3", forged, 3, { spent: 1 }).spent).toBe(1);
    expect(treeBudget("3", task({ qualityGateBudgetKeys: [] }), 3, { spent: 3 }).spent).toBe(3);
    expect(treeBudget("3", forged, 3, { spent: 1, spentBy: (k) => k === "a" }).spentBy("x")).toBe(false);
  });
});

describe("next: the one function that moves a gate life", () => {
  const running: GatePlace = { state: "running" };
  const deferral: GatePlace = { state: "held", cause: "deferral" };
  const deny = (reopens: boolean, spent: boolean): GateInput => ({
    on: "judge",
    judgement: { pass: false, reopens, spent },
  });

  it("a completion's life: taken, judged, reopened, completed again, taken again, passed", () => {
    let at: GatePlace = { state: "unjudged" };
    const path: string[] = [];
    for (const input of [
      { on: "take" },
      deny(true, false),
      { on: "complete_again" },
      { on: "take" },
      { on: "judge", judgement: { pass: true } },
    ] as GateInput[]) {
      const move = next(at, input);
      at = move.cause ? { state: move.to, cause: move.cause } : { state: move.to };
      path.push(at.state);
    }
    expect(path).toEqual(["running", "reopened", "unjudged", "running", "passed"]);
  });

  it("a denial goes where the policy and the budget say; a spent budget escalates whatever the policy", () => {
    expect(next(running, deny(true, false)).to).toBe("reopened");
    expect(next(running, deny(false, false)).to).toBe("failed");
    expect(next(running, deny(true, true)).to).toBe("escalated");
    expect(next(running, deny(false, true)).to).toBe("escalated");
    expect(next(running, { on: "defer" })).toMatchObject({ to: "held", cause: "deferral" });
    expect(next(running, { on: "hold", cause: "fault" })).toMatchObject({ to: "held", cause: "fault" });
  });

  it("a newer completion supersedes an approval or fault hold only: the held event ends unrun", () => {
    for (const cause of ["approval", "fault"] as const)
      expect(next({ state: "held", cause }, { on: "supersede" })).toEqual({
        to: "unjudged",
        writes: ["ledger done", "holds file"],
      });
    for (const from of [deferral, running, { state: "passed" }] as GatePlace[])
      expect(() => next(from, { on: "supersede" })).toThrow(GateTransitionError);
  });

  it("placeOfLog reads the place a log's policy block records, and nothing else", () => {
    expect(placeOfLog("reopened", undefined)).toEqual({ state: "reopened" });
    expect(placeOfLog("held", "fault")).toEqual({ state: "held", cause: "fault" });
    expect(placeOfLog("held", undefined)).toBeNull();
    expect(placeOfLog("approved", undefined)).toBeNull();
    expect(placeOfLog(undefined, "approval")).toBeNull();
  });

  it("a decision settles a held deferral only; an approval or fault hold ends by running its gate again", () => {
    expect(next(deferral, { on: "judge", judgement: { pass: true } }).writes[0]).toBe("deferral file");
    expect(next(deferral, deny(true, false)).to).toBe("reopened");
    expect(() => next({ state: "held", cause: "approval" }, { on: "judge", judgement: { pass: true } })).toThrow(
      GateTransitionError,
    );
    expect(next({ state: "held", cause: "approval" }, { on: "take" }).to).toBe("running");
    expect(() => next(deferral, { on: "take" })).toThrow(GateTransitionError);
  });

  it.each<[string, GatePlace, GateInput]>([
    ["a verdict on an event nobody took", { state: "unjudged" }, { on: "judge", judgement: { pass: true } }],
    ["a verdict twice", { state: "passed" }, deny(true, false)],
    ["a second take of a running event", running, { on: "take" }],
    ["a deferral of a judged event", { state: "failed" }, { on: "defer" }],
    ["a hold of a reopened event", { state: "reopened" }, { on: "hold", cause: "approval" }],
    ["giving up what never ran", { state: "unjudged" }, { on: "give_up" }],
    ["a new completion of a held event (it supersedes it instead)", deferral, { on: "complete_again" }],
    ["judging again what no gate judged", { state: "unjudged" }, { on: "rejudge" }],
  ])("refuses %s", (_name, from, input) => {
    expect(() => next(from, input)).toThrow(/gate life: no transition from /);
  });

  it("the input that reaches each state a run leads to takes a running gate there (what the leader records)", () => {
    for (const place of [
      { state: "passed" },
      { state: "failed" },
      { state: "reopened" },
      { state: "escalated" },
      { state: "held", cause: "deferral" },
      { state: "held", cause: "approval" },
      { state: "held", cause: "fault" },
      { state: "given_up" },
    ] as GatePlace[]) {
      const input = inputReaching(place);
      expect(input).not.toBeNull();
      const move = next(running, input as GateInput);
      expect(move.cause ? { state: move.to, cause: move.cause } : { state: move.to }).toEqual(place);
    }
    expect(inputReaching({ state: "unjudged" })).toBeNull();
  });

  it("the table is next's: each row is a move next makes, and each state is left somehow", () => {
    for (const t of transitions()) expect(t.to).toBeTruthy();
    const left = new Set(transitions().map((t) => t.from));
    expect([...left].sort()).toEqual(
      ["unjudged", "running", "passed", "failed", "reopened", "held", "escalated", "given_up"].sort(),
    );
  });
});

describe("docs/gate-life.md", () => {
  it("lists every transition of the model, as the model says it", () => {
    const doc = fs.readFileSync(path.resolve("docs/gate-life.md"), "utf8");
    const table = /<!-- transitions:begin -->\n([\s\S]*?)\n<!-- transitions:end -->/.exec(doc)?.[1] ?? "";
    const side = (state: string, cause: string | undefined): string =>
      state === "held" && cause ? `held (${cause})` : state;
    const rows = transitions().map(
      (t) =>
        `| ${side(t.from, t.cause)} | ${t.on} | ${side(t.to, t.cause)} | ${t.writes.length > 0 ? t.writes.join(", ") : "—"} |`,
    );
    expect(table).toBe(["| from | on | to | writes |", "|---|---|---|---|", ...rows].join("\n"));
  });

  it("opens with the model's state diagram", () => {
    const doc = fs.readFileSync(path.resolve("docs/gate-life.md"), "utf8");
    const source = fs.readFileSync(path.resolve("extensions/teams-hooks/policy/gate-life.ts"), "utf8");
    // The diagram in the module's header: from its first line to the given_up line, ` * ` taken off.
    const header = source.split("\n").map((line) => line.replace(/^ \* ?/, ""));
    const first = header.findIndex((line) => line.includes("a new completion"));
    const last = header.findIndex((line) => line.includes("given_up"));
    const opening = /^# .*\n\n```\n([\s\S]*?)\n```/.exec(doc)?.[1]?.split("\n") ?? [];
    expect(first).toBeGreaterThan(0);
    expect(dedent(opening)).toEqual(dedent(header.slice(first, last + 1)));
  });
});

/** The lines without the indentation they all share. */
function dedent(lines: readonly string[]): string[] {
  const indent = Math.min(...lines.filter((l) => l.trim()).map((l) => l.length - l.trimStart().length));
  return lines.map((l) => l.slice(indent).trimEnd());
}
