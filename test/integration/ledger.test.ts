import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Ledger, ledgerFile, memoryWord } from "../../extensions/teams-hooks/leader/ledger.js";

const dirs: string[] = [];
function tempTeam(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ledger-"));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe("Ledger", () => {
  it("keeps the state each event's gate life reached, across reopen and compaction, and says where each key is", async () => {
    const team = tempTeam();
    const ledger = await Ledger.open(team);
    const at = "2026-12-07T08:00:00.000Z";
    await ledger.baseline(["h"], at);
    for (const [key, gate] of [
      ["p", "passed"],
      ["r", "reopened"],
      ["e", "escalated"],
    ] as const) {
      await ledger.begin(key, `run-${key}`, at);
      await ledger.finish(key, at, {
        runId: `run-${key}`,
        outcome: gate === "passed" ? "passed" : "failed",
        log: null,
        gate,
      });
    }
    await ledger.begin("idle", "run-i", at);
    await ledger.finish("idle", at, { runId: "run-i", outcome: "passed", log: null });
    await ledger.begin("f", "run-f", at);
    await ledger.begin("d", "run-d", at);
    await ledger.defer("d", at, { runId: "run-d", deferral: "run-d", expiresAt: at, log: null });
    await ledger.begin("a", "run-a", at);
    await ledger.hold("a", at, {
      runId: "run-a",
      cause: "approval",
      log: null,
      event: { event: "task_completed", taskId: "1", member: null, timestamp: null },
    });
    // A word an agent appended that is no gate state: the line counts, the word does not.
    fs.appendFileSync(
      ledgerFile(team),
      `${JSON.stringify({ op: "done", key: "x", at, runId: null, outcome: "passed", log: null, gate: "approved" })}\n`,
    );
    await ledger.close();

    const places = (l: Ledger) =>
      Object.fromEntries(["h", "p", "r", "e", "idle", "f", "d", "a", "x", "none"].map((k) => [k, l.place(k)]));
    const expected = {
      h: null,
      p: { state: "passed" },
      r: { state: "reopened" },
      e: { state: "escalated" },
      idle: null,
      f: { state: "running" },
      d: { state: "held", cause: "deferral" },
      a: { state: "held", cause: "approval" },
      x: null,
      none: null,
    };
    const reopened = await Ledger.open(team);
    expect(places(reopened)).toEqual(expected);
    expect(reopened.get("r")).toMatchObject({ state: "reopened", outcome: "failed" });
    await reopened.compact();
    await reopened.close();
    const compacted = await Ledger.open(team);
    expect(places(compacted)).toEqual(expected);
    await compacted.close();
  });

  it("reads a ledger written before it kept gate states, and compacts it into lines of the same format", async () => {
    const team = tempTeam();
    const ev = { event: "task_completed", taskId: "1", member: "ann", timestamp: null };
    const old = [
      { op: "baseline", key: "h", at: "t0" },
      { op: "begin", key: "d1", at: "t1", runId: "r1", attempt: 1 },
      { op: "done", key: "d1", at: "t2", runId: "r1", outcome: "failed", log: "l1" },
      { op: "begin", key: "q", at: "t1", runId: "rq", attempt: 1, event: ev },
      { op: "defer", key: "q", at: "t2", runId: "rq", deferral: "rq.2", expiresAt: "t9", log: "lq" },
      { op: "begin", key: "a", at: "t1", runId: "ra", attempt: 1, event: ev },
      { op: "hold", key: "a", at: "t2", runId: "ra", cause: "fault", log: null },
      { op: "begin", key: "f", at: "t3", runId: "rf", attempt: 3, event: ev },
      { op: "spawn", key: "f", runId: "rf", pid: 12 },
      // A state no judgement leads to: the event is done, with no gate life.
      { op: "done", key: "g", at: "t2", runId: null, outcome: "passed", log: null, gate: "running" },
    ];
    fs.mkdirSync(path.dirname(ledgerFile(team)), { recursive: true });
    fs.writeFileSync(ledgerFile(team), old.map((r) => JSON.stringify(r)).join("\n") + "\n");
    const ledger = await Ledger.open(team);
    const words = (l: Ledger) => ["h", "d1", "q", "a", "f", "g", "none"].map((k) => memoryWord(l.get(k)));
    const said = ["baseline", "done", "held (deferral)", "held (fault)", "running", "done", "unknown"];
    expect(words(ledger)).toEqual(said);
    expect(ledger.get("d1")).toEqual({ state: null, attempt: 1, outcome: "failed", log: "l1" });
    expect(ledger.held()).toEqual([
      { key: "a", state: "held", cause: "fault", attempt: 1, runId: "ra", at: "t2", log: null, event: ev },
    ]);
    expect(ledger.inFlight()).toEqual([{ key: "f", runId: "rf", attempt: 3, startedAt: "t3", pid: 12, event: ev }]);
    // The next run of a key counts on from what it was.
    expect(await ledger.begin("d1", "r1b", "t4")).toBe(2);
    await ledger.finish("d1", "t5", { runId: "r1b", outcome: "passed", log: "l2", gate: "passed" });
    await ledger.compact();
    await ledger.close();
    const lines = fs
      .readFileSync(ledgerFile(team), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    // Each op keeps the fields it always had; `gate` is the one field added, on a judged event's `done` only.
    const fields: Record<string, string[]> = {
      baseline: ["op", "key", "at"],
      begin: ["op", "key", "at", "runId", "attempt", "event"],
      spawn: ["op", "key", "runId", "pid"],
      defer: ["op", "key", "at", "runId", "deferral", "expiresAt", "log"],
      hold: ["op", "key", "at", "runId", "cause", "log", "event"],
      done: ["op", "key", "at", "runId", "outcome", "log", "gate"],
    };
    for (const line of lines) for (const k of Object.keys(line)) expect(fields[String(line.op)]).toContain(k);
    expect(lines.filter((l) => l.gate !== undefined)).toEqual([
      { op: "done", key: "d1", at: expect.any(String), runId: null, outcome: "passed", log: "l2", gate: "passed" },
    ]);
    const again = await Ledger.open(team);
    expect(words(again)).toEqual(["baseline", "passed", ...said.slice(2)]);
    expect(again.get("d1")).toMatchObject({ state: "passed", attempt: 2 });
    await again.close();
  });

  it("is fresh on first open and remembers keys across reopen", async () => {
    const team = tempTeam();
    const first = await Ledger.open(team);
    expect(first.fresh).toBe(true);
    await first.baseline(["task_completed:1:a", "task_completed:2:b"], "2026-12-02T00:00:00.000Z");
    const attempt = await first.begin("task_completed:3:c", "run-3", "2026-12-02T00:00:01.000Z");
    expect(attempt).toBe(1);
    await first.spawned("task_completed:3:c", "run-3", 4242);
    await first.begin("task_completed:4:d", "run-4", "2026-12-02T00:00:02.000Z");
    await first.finish("task_completed:4:d", "2026-12-02T00:00:03.000Z", {
      runId: "run-4",
      outcome: "passed",
      log: "x.json",
    });
    await first.close();

    const second = await Ledger.open(team);
    expect(second.fresh).toBe(false);
    expect(second.get("task_completed:1:a")).toEqual({ state: null, attempt: 0, outcome: null, log: null });
    expect(second.get("task_completed:4:d")).toMatchObject({ state: null, outcome: "passed", log: "x.json" });
    expect(second.inFlight()).toEqual([
      {
        key: "task_completed:3:c",
        runId: "run-3",
        attempt: 1,
        startedAt: "2026-12-02T00:00:01.000Z",
        pid: 4242,
        event: null,
      },
    ]);
    expect(await second.begin("task_completed:3:c", "run-3b", "2026-12-02T00:00:04.000Z")).toBe(2);
    await second.close();
  });

  it("ignores a torn last line and keeps appending on a line of its own", async () => {
    const team = tempTeam();
    const ledger = await Ledger.open(team);
    await ledger.begin("k1", "r1", "t");
    await ledger.close();
    fs.appendFileSync(ledgerFile(team), '{"op":"done","key":"k1","at":"t","runI');
    const warnings: string[] = [];
    const reopened = await Ledger.open(team, (m) => warnings.push(m));
    expect(warnings).toEqual([]);
    expect(reopened.get("k1")).toMatchObject({ state: "running" });
    await reopened.finish("k1", "t2", { runId: "r1", outcome: "passed", log: null });
    await reopened.close();
    const again = await Ledger.open(team);
    expect(again.get("k1")).toMatchObject({ state: null, outcome: "passed" });
    await again.close();
  });

  it("warns about a corrupt line in the middle and keeps the rest", async () => {
    const team = tempTeam();
    fs.mkdirSync(path.dirname(ledgerFile(team)), { recursive: true });
    fs.writeFileSync(
      ledgerFile(team),
      '{"op":"baseline","key":"a","at":"t"}\nnot json\n{"op":"baseline","key":"b","at":"t"}\n',
    );
    const warnings: string[] = [];
    const ledger = await Ledger.open(team, (m) => warnings.push(m));
    expect(ledger.has("a") && ledger.has("b")).toBe(true);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/ledger\.jsonl:2/);
    await ledger.close();
  });

  it("skips, with a warning each, lines that are JSON but not a record, and keeps the good ones", async () => {
    const team = tempTeam();
    fs.mkdirSync(path.dirname(ledgerFile(team)), { recursive: true });
    const bad = [
      '{"op":"begin","key":"b1","at":"t","runId":"r","attempt":"1"}', // attempt not a number
      '{"op":"begin","key":"b2","at":"t","runId":"r","attempt":1.5}', // not a whole number
      '{"op":"begin","key":"b3","at":"t","runId":"r","attempt":1,"event":{"event":"deploy","taskId":null,"member":null,"timestamp":null}}',
      '{"op":"done","key":"b4","at":"t","runId":null,"log":null}', // no outcome
      '{"op":"spawn","key":"b5","runId":"r"}', // no pid
      '{"op":"rewind","key":"b6","at":"t"}', // no such op
      '{"op":"baseline","at":"t"}', // no key
      "[1,2]",
    ];
    const good = [
      '{"op":"begin","key":"g1","at":"t","runId":"r1","attempt":2,"event":{"event":"idle","taskId":null,"member":"ann","timestamp":"ts"}}',
      '{"op":"spawn","key":"g1","runId":"r1","pid":77}',
      '{"op":"done","key":"g2","at":"t","runId":null,"outcome":"no_hook","log":null}',
    ];
    fs.writeFileSync(ledgerFile(team), [...bad, ...good].join("\n") + "\n");
    const warnings: string[] = [];
    const ledger = await Ledger.open(team, (m) => warnings.push(m));
    expect(warnings.map((w) => Number(/ledger\.jsonl:(\d+)/.exec(w)?.[1]))).toEqual(bad.map((_, i) => i + 1));
    for (let i = 1; i <= 6; i++) expect(ledger.has(`b${i}`)).toBe(false);
    expect(ledger.inFlight()).toEqual([
      {
        key: "g1",
        runId: "r1",
        attempt: 2,
        startedAt: "t",
        pid: 77,
        event: { event: "idle", taskId: null, member: "ann", timestamp: "ts" },
      },
    ]);
    expect(ledger.get("g2")).toEqual({ state: null, outcome: "no_hook", log: null, attempt: 1 });
    await ledger.close();
  });

  it("many records flushed at once (grouped fdatasyncs) all resolve, in order, and all reach the file", async () => {
    const team = tempTeam();
    const ledger = await Ledger.open(team);
    const attempts = await Promise.all(
      Array.from({ length: 200 }, (_, i) => ledger.begin(`k${i % 100}`, `r${i}`, "t")),
    );
    expect(attempts.slice(0, 100).every((a) => a === 1) && attempts.slice(100).every((a) => a === 2)).toBe(true);
    await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        ledger.finish(`k${i}`, "t", { runId: `r${i + 100}`, outcome: "passed", log: null }),
      ),
    );
    await ledger.close();
    const lines = fs
      .readFileSync(ledgerFile(team), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { op: string; runId: string });
    expect(lines.map((r) => r.runId)).toEqual([
      ...Array.from({ length: 200 }, (_, i) => `r${i}`),
      ...Array.from({ length: 100 }, (_, i) => `r${i + 100}`),
    ]);
    const reopened = await Ledger.open(team);
    expect(reopened.inFlight()).toEqual([]);
    expect(reopened.get("k42")).toMatchObject({ state: null, outcome: "passed", attempt: 2 });
    await reopened.close();
  });

  it("compaction keeps every key's state in fewer lines", async () => {
    const team = tempTeam();
    const ledger = await Ledger.open(team);
    for (let i = 0; i < 300; i++) {
      await ledger.begin(`k${i}`, `r${i}`, "t");
      await ledger.finish(`k${i}`, "t", { runId: `r${i}`, outcome: i % 2 ? "passed" : "failed", log: `l${i}` });
    }
    await ledger.begin("live", "r-live", "t");
    await ledger.compact();
    await ledger.finish("k0", "t", { runId: "r0", outcome: "passed", log: "again" });
    await ledger.close();
    const reopened = await Ledger.open(team);
    expect(reopened.size).toBe(301);
    expect(reopened.get("k0")).toMatchObject({ outcome: "passed", log: "again" });
    expect(reopened.get("k7")).toMatchObject({ outcome: "passed", log: "l7" });
    expect(reopened.inFlight().map((e) => e.key)).toEqual(["live"]);
    await reopened.close();
  });

  it("a deferred key is neither in flight nor done, survives a reopen and compaction, and `done` closes it", async () => {
    const team = tempTeam();
    const ledger = await Ledger.open(team);
    await ledger.begin("task_completed:1:a", "run-1", "2026-12-02T00:00:01.000Z");
    await ledger.defer("task_completed:1:a", "2026-12-02T00:00:02.000Z", {
      runId: "run-1",
      deferral: "run-1.2",
      expiresAt: "2026-12-03T00:00:02.000Z",
      log: "l1",
    });
    expect(ledger.inFlight()).toEqual([]);
    expect(ledger.has("task_completed:1:a")).toBe(true);
    expect(ledger.deferred()).toMatchObject([
      {
        key: "task_completed:1:a",
        state: "held",
        cause: "deferral",
        runId: "run-1",
        deferral: "run-1.2",
        expiresAt: "2026-12-03T00:00:02.000Z",
        log: "l1",
      },
    ]);
    await ledger.compact();
    await ledger.close();

    const reopened = await Ledger.open(team);
    expect(reopened.get("task_completed:1:a")).toEqual({
      state: "held",
      cause: "deferral",
      runId: "run-1",
      deferral: "run-1.2",
      expiresAt: "2026-12-03T00:00:02.000Z",
      log: "l1",
      attempt: 1,
      at: "2026-12-02T00:00:02.000Z",
    });
    await reopened.finish("task_completed:1:a", "2026-12-02T01:00:00.000Z", {
      runId: "run-1",
      outcome: "passed",
      log: "l2",
    });
    expect(reopened.deferred()).toEqual([]);
    await reopened.close();
    const again = await Ledger.open(team);
    expect(again.get("task_completed:1:a")).toMatchObject({
      state: null,
      outcome: "passed",
      log: "l2",
      attempt: 1,
    });
    await again.close();
  });
});
