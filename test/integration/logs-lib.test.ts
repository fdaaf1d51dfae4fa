// The logs*.ts modules as a library: the file-name pre-filter never drops a log the record would keep (checked
// against reading everything, on awkward task ids and member names), time bounds, percentiles,
// lookup, prune plans, following a folder in-process, listing in time order, logs written in another
// form than the leader's, and streaming.
import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { elapse, waitUntil } from "../helpers/leader-rig.js";
import type { HookEventName } from "../../extensions/teams-hooks/contract/contract.js";
import {
  type HookLogEntry,
  type HookLogProblem,
  type HookLogRecordInput,
  listHookLogNames,
  listHookLogs,
  readHookLog,
  writeHookLog,
} from "../../extensions/teams-hooks/logs/hook-log.js";
import {
  type LogFilter,
  parseAge,
  parseFilterText,
  parseLogName,
  parseTimeBound,
  recordMatches,
} from "../../extensions/teams-hooks/logs/filter.js";
import { followLogs } from "../../extensions/teams-hooks/logs/follow.js";
import { percentile } from "../../extensions/teams-hooks/logs/stats.js";
import { taskIdOf } from "../../extensions/teams-hooks/logs/record.js";
import { type LogRow, planPrune, queryLogs, streamLogs } from "../../extensions/teams-hooks/logs/query.js";
import { SampleCache } from "../../extensions/teams-hooks/dashboard/overview.js";
import { makeRunResult } from "../helpers/invocation.js";
import { makeTask, makeTempTeam, type TempTeam } from "../helpers/temp-team.js";

const teams: TempTeam[] = [];
afterEach(async () => {
  for (const team of teams.splice(0)) await team.cleanup();
});

function rec(
  teamDir: string,
  at: string,
  event: HookEventName,
  task: string | null,
  member: string | undefined,
  outcome: "passed" | "failed" | "timed_out",
): HookLogRecordInput {
  return {
    invocation: {
      event,
      teamId: "t",
      teamDir,
      taskListId: "t",
      style: "normal",
      ...(member === undefined ? {} : { memberName: member }),
      completedTask: task === null || event === "idle" ? null : makeTask({ id: task }),
    },
    result: makeRunResult({
      ran: true,
      hookPath: `/h/on_${event}.sh`,
      outcome: outcome === "passed" ? "passed" : outcome === "failed" ? "failed" : "error",
      exitCode: outcome === "passed" ? 0 : outcome === "failed" ? 1 : null,
      timedOut: outcome === "timed_out",
      durationMs: 10,
    }),
    key: event === "idle" ? `idle:${member ?? "unknown"}:${at}` : `${event}:${task ?? "9"}:${at}`,
    startedAt: at,
  };
}

describe("parseLogName", () => {
  it.each([
    [
      "2026-03-01T09-12-44-123Z_task_completed_task-3.json",
      { timeMs: Date.parse("2026-03-01T09:12:44.123Z"), event: "task_completed", suffix: { kind: "task", raw: "3" } },
    ],
    [
      "2026-03-01T09-12-44-123Z_task_failed_task-3_2.json",
      { timeMs: Date.parse("2026-03-01T09:12:44.123Z"), event: "task_failed", suffix: { kind: "task", raw: "3_2" } },
    ],
    [
      "2026-03-01T09-12-44-123Z_idle_member-ada.json",
      { timeMs: Date.parse("2026-03-01T09:12:44.123Z"), event: "idle", suffix: { kind: "member", raw: "ada" } },
    ],
    [
      "2026-03-01T09-12-44-123Z_idle.json",
      { timeMs: Date.parse("2026-03-01T09:12:44.123Z"), event: "idle", suffix: null },
    ],
    [
      "2026-03-01T09-12-44-123Z_idle_7.json",
      { timeMs: Date.parse("2026-03-01T09:12:44.123Z"), event: "idle", suffix: null },
    ],
  ])("%s", (name, expected) => {
    expect(parseLogName(name)).toEqual(expected);
  });

  it.each([
    "notes.json",
    "2026-03-01T09-12-44-123Z_deploy.json",
    "2026-03-01T09-12-44-123Z_idle_other.json",
    "2026-13-45T99-12-44-123Z_idle.json",
    "2026-03-01T09-12-44-123Z_idle.txt",
  ])("%s is not a name this project writes", (name) => {
    expect(parseLogName(name)).toBeNull();
  });
});

describe("the name pre-filter against reading every file", () => {
  it("keeps exactly the logs a full read keeps, for every filter, on awkward ids and names", async () => {
    const team = await makeTempTeam();
    teams.push(team);
    const long = "x".repeat(70);
    const tasks = ["3", "31", "3_2", "a.b", "a-b", long, `${long}y`, null];
    const members = ["ada", "ada_2", "Ada Lovelace", "a.b", undefined];
    const events: HookEventName[] = ["task_completed", "task_failed", "idle"];
    const outcomes = ["passed", "failed", "timed_out"] as const;
    const base = Date.parse("2026-03-01T00:00:00.000Z");
    let i = 0;
    for (const task of tasks) {
      for (const member of members) {
        for (const event of events) {
          const outcome = outcomes[i % 3] ?? "passed";
          // Every third log shares its millisecond with the previous one: collision names (`_2`).
          const at = new Date(base + Math.floor(i / 3) * 2 * 60_000).toISOString();
          await writeHookLog(team.teamDir, rec(team.teamDir, at, event, task, member, outcome));
          i += 1;
        }
      }
    }
    const all: LogRow[] = [];
    for (const entry of await listHookLogs(team.teamDir)) {
      const read = await readHookLog(entry.file);
      if (read.ok) all.push({ file: entry.file, name: entry.name, record: read.record });
    }
    expect(all).toHaveLength(i);

    const filters: LogFilter[] = [
      {},
      ...tasks.filter((t): t is string => t !== null).map((taskId) => ({ taskId })),
      { taskId: "9" }, // only in the keys of task logs without a task file
      { taskId: "a" },
      { taskId: long.slice(0, 64) },
      ...members.filter((m): m is string => m !== undefined).map((member) => ({ member })),
      { member: "ada_3" },
      { member: "Ada-Lovelace" },
      ...events.map((e) => ({ events: [e] })),
      { outcomes: ["timed_out" as const] },
      { hook: "on_idle.sh" },
      { hook: "on_task_failed.sh", member: "ada" },
      { hook: "idle" },
      { sinceMs: base + 60 * 60_000 },
      { taskId: "3", member: "ada", events: ["task_completed" as const] },
      { member: "ada", events: ["idle" as const], sinceMs: base + 10 * 60_000 },
    ];
    for (const filter of filters) {
      const problems: HookLogProblem[] = [];
      const { rows } = await queryLogs(team.teamDir, { filter, onProblem: (p) => problems.push(p) });
      const expected = all.filter((row) => recordMatches(row.record, filter)).map((r) => r.name);
      expect({ filter, names: rows.map((r) => r.name) }).toEqual({ filter, names: expected });
      expect(problems).toEqual([]);
    }
  });
});

describe("time bounds", () => {
  const now = Date.parse("2026-03-10T12:00:00.000Z");
  it.each([
    ["45s", 45_000],
    ["30m", 1_800_000],
    ["2h", 7_200_000],
    ["3d", 259_200_000],
    ["1w", 604_800_000],
    [" 2 h ", 7_200_000],
  ])("age %j", (text, ms) => {
    expect(parseAge(text)).toBe(ms);
    expect(parseTimeBound(text, now)).toBe(now - ms);
  });

  it.each([
    ["2026-03-01", Date.parse("2026-03-01T00:00:00.000Z")],
    ["2026-03-01T09:00:00Z", Date.parse("2026-03-01T09:00:00.000Z")],
    ["2026-03-01T11:00:00+02:00", Date.parse("2026-03-01T09:00:00.000Z")],
    // at the offset given (default Z), never at JavaScript's local time
    ["2026-03-01T09:00", Date.parse("2026-03-01T09:00:00.000Z")],
    ["2026-03-01T09:00:00.250", Date.parse("2026-03-01T09:00:00.250Z")],
  ])("ISO %s", (text, ms) => {
    expect(parseTimeBound(text, now)).toBe(ms);
  });

  it.each([
    ["2026-03-01", "+09:00", Date.parse("2026-02-28T15:00:00.000Z")], // midnight in Tokyo
    ["2026-03-01T09:00", "+09:00", Date.parse("2026-03-01T00:00:00.000Z")],
    ["2026-03-01 09:00:30", "-03:30", Date.parse("2026-03-01T12:30:30.000Z")], // as the table prints it
    ["2026-03-01T09:00:00Z", "+09:00", Date.parse("2026-03-01T09:00:00.000Z")], // its own offset wins
    ["2026-03-01T11:00:00+02:00", "+09:00", Date.parse("2026-03-01T09:00:00.000Z")],
  ])("ISO %s read at %s, the offset the table shows", (text, offset, ms) => {
    expect(parseTimeBound(text, now, offset)).toBe(ms);
  });

  it.each(["", "2", "2y", "-2h", "yesterday", "03/01/2026", "2026-02-30T99:00:00Z"])("%j is neither", (text) => {
    expect(parseTimeBound(text, now)).toBeNull();
  });
});

describe("percentile (nearest rank)", () => {
  it.each([
    [[], 0.5, 0],
    [[7], 0.95, 7],
    [[10, 20, 30, 40], 0.5, 20],
    [[10, 20, 30, 40], 0.95, 40],
    [Array.from({ length: 100 }, (_, i) => i + 1), 0.95, 95],
    [Array.from({ length: 100 }, (_, i) => i + 1), 0.5, 50],
  ])("%j at %d is %d", (sorted, q, expected) => {
    expect(percentile(sorted, q)).toBe(expected);
  });
});

describe("planPrune", () => {
  const day = 86_400_000;
  const base = Date.parse("2026-03-01T00:00:00.000Z");
  const entries: HookLogEntry[] = [
    ...Array.from({ length: 5 }, (_, i) => `${new Date(base + i * day).toISOString().replace(/[:.]/g, "-")}_idle.json`),
    "notes.json",
  ].map((name) => ({ file: `/d/${name}`, name }));
  const removed = (rule: Parameters<typeof planPrune>[1]): number[] =>
    planPrune(entries, rule).remove.map((e) => entries.indexOf(e));

  it.each([
    [{ keep: 2 }, [0, 1, 2]],
    [{ keep: 0 }, [0, 1, 2, 3, 4]],
    [{ keep: 9 }, []],
    [{ beforeMs: base + 2 * day }, [0, 1]],
    [{ beforeMs: base + 2 * day + 1 }, [0, 1, 2]],
    [{ keep: 4, beforeMs: base + 3 * day }, [0]],
    [{ keep: 1, beforeMs: base + 2 * day }, [0, 1]],
    [{}, []],
  ])("%j removes %j and never notes.json", (rule, expected) => {
    expect(removed(rule)).toEqual(expected);
    expect(planPrune(entries, rule)).toMatchObject({ keep: 5 - expected.length, foreign: 1 });
  });
});

describe("followLogs", () => {
  it("reports each new matching log once, in order, reports corrupt ones, and ends when stopped", async () => {
    const team = await makeTempTeam();
    teams.push(team);
    const first = await writeHookLog(
      team.teamDir,
      rec(team.teamDir, "2026-03-01T08:00:00.000Z", "task_completed", "1", "ada", "passed"),
    );
    const seen: string[] = [];
    const problems: string[] = [];
    let stop: (value: string) => void = () => {};
    const stopped = new Promise<string>((resolve) => (stop = resolve));
    const following = followLogs(team.teamDir, {
      filter: { events: ["task_completed"] },
      seen: [path.basename(first)],
      onRow: (row) => seen.push(row.name),
      onProblem: (p) => problems.push(p.file),
      onWarning: (m) => problems.push(m),
      stop: stopped,
      rescanMs: 100,
    });
    const waitFor = (predicate: () => boolean): Promise<true> =>
      waitUntil("the rows and the problem", predicate, {
        timeoutMs: 5_000,
        context: () => `seen ${JSON.stringify(seen)}, problems ${JSON.stringify(problems)}`,
      });
    const second = await writeHookLog(
      team.teamDir,
      rec(team.teamDir, "2026-03-01T08:01:00.000Z", "task_completed", "2", "ada", "failed"),
    );
    // filtered out
    await writeHookLog(team.teamDir, rec(team.teamDir, "2026-03-01T08:02:00.000Z", "idle", null, "ada", "passed"));
    const third = await writeHookLog(
      team.teamDir,
      rec(team.teamDir, "2026-03-01T08:03:00.000Z", "task_completed", "3", "bob", "passed"),
    );
    const corrupt = path.join(team.teamDir, "hook-logs", "2026-03-01T08-04-00-000Z_task_completed_task-4.json");
    await writeFile(corrupt, "{", "utf8");
    await waitFor(() => seen.length >= 2 && problems.length >= 1);
    await elapse(250); // a negative check: a rescan or two, and nothing is reported twice
    stop("SIGINT");
    await following;
    expect(seen).toEqual([path.basename(second), path.basename(third)]);
    expect(problems).toEqual([corrupt]);
  });
});

describe("listHookLogs", () => {
  // Names with equal time stamps, digit runs of different widths, and (in the second folder) names
  // that do not start with a stamp: both ways the listing sorts must give the folder's order, which
  // is plain name order once every run of digits is padded to one width (so `_10` comes after `_9`;
  // `task-9` and `task-09` are equal in it, and may come either way round).
  const padded = (name: string): string => name.replace(/\d+/g, (digits) => digits.padStart(12, "0"));
  const outOfOrder = (listed: readonly string[]): string[] =>
    listed.flatMap((name, i) =>
      i > 0 && padded(listed[i - 1] ?? "") > padded(name) ? [`${listed[i - 1]} before ${name}`] : [],
    );
  const stamped = [
    "2026-03-01T09-00-00-000Z_task_completed_task-10.json",
    "2026-03-01T09-00-00-000Z_task_completed_task-9.json",
    "2026-03-01T09-00-00-000Z_task_completed_task-9_2.json",
    "2026-03-01T09-00-00-000Z_task_completed_task-9_10.json",
    "2026-03-01T09-00-00-000Z_task_completed_task-09.json",
    "2026-03-01T09-00-00-000Z_task_completed_task-1.json",
    "2026-03-01T09-00-00-000Z_task_completed_task-01.json",
    "2026-03-01T09-00-00-000Z_idle.json",
    "2026-03-01T09-00-00-000Z_idle_2.json",
    "2026-03-01T09-00-00-000Z_idle_member-b2.json",
    "2026-03-01T09-00-00-000Z_idle_member-b10.json",
    "2026-03-01T08-59-59-999Z_task_failed.json",
    "2026-03-01T10-00-00-000Z_task_failed_task-123456789012345.json",
    "2026-03-01T10-00-00-000Z_task_failed_task-23456789012345.json",
    "2025-12-31T23-59-59-999Z_task_completed_task-3.json",
    "2026-03-01T09-00-00-000Zzz.json",
  ];
  const foreign = ["notes.json", "10.json", "9.json", "a-2026.json", "2026.json", "Z.json", "2026-03-01.json"];
  const ignored = [".hidden.json", "x.json.tmp.1.2", "x.lock", "notes.txt"];

  it.each([
    ["only stamped names", stamped],
    ["stamped and other names", [...stamped, ...foreign]],
  ])("lists %s in the folder's order", async (_, names) => {
    const team = await makeTempTeam();
    teams.push(team);
    const dir = path.join(team.teamDir, "hook-logs");
    // a folder: not listed
    await mkdir(path.join(dir, "2026-03-01T09-00-00-000Z_idle_member-dir.json"), { recursive: true });
    for (const name of [...names, ...ignored]) await writeFile(path.join(dir, name), "{}", "utf8");
    const listed = await listHookLogNames(team.teamDir);
    expect([...listed].sort()).toEqual([...names].sort());
    expect(outOfOrder(listed)).toEqual([]);
    expect(await listHookLogs(team.teamDir)).toEqual(listed.map((name) => ({ file: path.join(dir, name), name })));
    expect(await listHookLogs(team.teamDir, { limit: 3 })).toEqual(
      listed.slice(-3).map((name) => ({ file: path.join(dir, name), name })),
    );
  });

  it("is empty without hook-logs/", async () => {
    const team = await makeTempTeam();
    teams.push(team);
    expect(await listHookLogs(team.teamDir)).toEqual([]);
    expect(await listHookLogNames(team.teamDir)).toEqual([]);
  });
});

describe("logs written in another form than the leader's", () => {
  it("lists a log whose startedAt has an offset, or that holds a __proto__ key, like any other", async () => {
    const team = await makeTempTeam();
    teams.push(team);
    const dir = path.join(team.teamDir, "hook-logs");
    await writeHookLog(
      team.teamDir,
      rec(team.teamDir, "2026-03-01T08:00:00.000Z", "task_completed", "1", "ada", "passed"),
    );
    const offset = {
      ...rec(team.teamDir, "2026-03-01T08:01:00.000Z", "task_completed", "2", "ada", "passed"),
      startedAt: "2026-03-01T10:01:00+02:00",
    };
    await writeFile(
      path.join(dir, "2026-03-01T08-01-00-000Z_task_completed_task-2.json"),
      JSON.stringify(offset),
      "utf8",
    );
    const proto = JSON.stringify(
      rec(team.teamDir, "2026-03-01T08:02:00.000Z", "task_completed", "3", "ada", "passed"),
    ).replace('"runId"', '"__proto__":{"x":1},"runId"');
    await writeFile(path.join(dir, "2026-03-01T08-02-00-000Z_task_completed_task-3.json"), proto, "utf8");
    const problems: HookLogProblem[] = [];
    const { rows } = await queryLogs(team.teamDir, { filter: {}, onProblem: (p) => problems.push(p) });
    expect(rows.map((r) => taskIdOf(r.record))).toEqual(["1", "2", "3"]);
    expect(rows[1]?.record.startedAt).toBe("2026-03-01T10:01:00+02:00");
    expect(problems).toEqual([]);
  });
});

describe("streamLogs", () => {
  it("emits the newest `limit` matches oldest first, as queryLogs returns them, for limits around the number of matches", async () => {
    const team = await makeTempTeam();
    teams.push(team);
    const base = Date.parse("2026-03-01T00:00:00.000Z");
    for (let i = 0; i < 40; i++) {
      const at = new Date(base + i * 60_000).toISOString();
      await writeHookLog(
        team.teamDir,
        rec(
          team.teamDir,
          at,
          i % 4 === 0 ? "idle" : "task_completed",
          String(i % 7),
          "ada",
          i % 3 === 0 ? "failed" : "passed",
        ),
      );
    }
    await writeFile(
      path.join(team.teamDir, "hook-logs", "2026-03-01T00-10-30-000Z_task_completed_task-1.json"),
      "{",
      "utf8",
    );
    const filters: LogFilter[] = [
      {},
      { outcomes: ["failed"] },
      { taskId: "3" },
      { events: ["idle"], sinceMs: base + 20 * 60_000 },
    ];
    for (const filter of filters) {
      // Every match, from a full read: what each limit must cut.
      const everything: string[] = [];
      for (const entry of await listHookLogs(team.teamDir)) {
        const read = await readHookLog(entry.file);
        if (read.ok && recordMatches(read.record, filter)) everything.push(entry.name);
      }
      expect(everything.length).toBeGreaterThan(1);
      for (const limit of [undefined, 1, 5, 17, everything.length - 1, everything.length, everything.length + 1, 100]) {
        const opts = { filter, ...(limit === undefined ? {} : { limit }), onProblem: () => {} };
        const emitted: string[] = [];
        const result = await streamLogs(
          team.teamDir,
          opts,
          (row) => row.name,
          (name) => emitted.push(name),
        );
        const expected = limit === undefined ? everything : everything.slice(-limit);
        expect({ filter, limit, emitted, total: result.total }).toEqual({
          filter,
          limit,
          emitted: expected,
          total: 41,
        });
        if (expected.length < everything.length) expect(result.truncated).toBe(true);
        if (limit === undefined) expect(result.truncated).toBe(false);
        const queried = await queryLogs(team.teamDir, opts, (row) => row.name);
        expect(queried).toEqual({ rows: emitted, total: result.total, truncated: result.truncated });
      }
    }
  });
});

describe("paging with a cursor", () => {
  it("pages through every match once, newest first, whatever lands above the first page meanwhile", async () => {
    const team = await makeTempTeam();
    teams.push(team);
    const base = Date.parse("2026-03-01T00:00:00.000Z");
    // Pairs share a millisecond (collision names), so the cursor must order by name within one.
    for (let i = 0; i < 30; i++)
      await writeHookLog(
        team.teamDir,
        rec(
          team.teamDir,
          new Date(base + Math.floor(i / 2) * 1000).toISOString(),
          "task_completed",
          String(i),
          "ada",
          i % 5 === 0 ? "failed" : "passed",
        ),
      );
    const filter: LogFilter = { outcomes: ["passed"] };
    const all = (await queryLogs(team.teamDir, { filter, onProblem: () => {} })).rows.map((r) => r.name).reverse();
    const pages: string[][] = [];
    let before: { timeMs: number; name: string } | undefined;
    for (let n = 0; n < 10; n++) {
      const { rows } = await queryLogs(team.teamDir, {
        filter,
        limit: 7,
        onProblem: () => {},
        ...(before ? { before } : {}),
      });
      const page = rows.map((r) => r.name).reverse();
      if (page.length === 0) break;
      pages.push(page);
      const last = page.at(-1) ?? "";
      before = { timeMs: parseLogName(last)?.timeMs ?? 0, name: last };
      if (n === 0)
        await writeHookLog(
          team.teamDir,
          rec(team.teamDir, new Date(base + 60_000).toISOString(), "task_completed", "new", "ada", "passed"),
        );
    }
    expect(pages.flat()).toEqual(all);
    expect(all).toHaveLength(24);
  });

  it("reaches every log of one millisecond, whose names' numbers differ in length (task-9, task-10; _9, _10)", async () => {
    const team = await makeTempTeam();
    teams.push(team);
    const at = "2026-03-01T00:00:00.000Z";
    for (let i = 1; i <= 24; i++)
      await writeHookLog(team.teamDir, rec(team.teamDir, at, "task_completed", String(i), "ada", "passed"));
    for (let i = 0; i < 12; i++)
      // task-3_2 … task-3_13
      await writeHookLog(team.teamDir, rec(team.teamDir, at, "task_completed", "3", "ada", "passed"));
    const all = (await queryLogs(team.teamDir, { filter: {}, onProblem: () => {} })).rows.map((r) => r.name).reverse();
    const seen: string[] = [];
    let before: { timeMs: number; name: string } | undefined;
    for (let n = 0; n < 20; n++) {
      const page = (
        await queryLogs(team.teamDir, { filter: {}, limit: 5, onProblem: () => {}, ...(before ? { before } : {}) })
      ).rows
        .map((r) => r.name)
        .reverse();
      if (page.length === 0) break;
      seen.push(...page);
      before = { timeMs: Date.parse(at), name: page.at(-1) ?? "" };
    }
    expect(seen).toEqual(all);
    expect(new Set(seen).size).toBe(36);
  });
});

describe("parseFilterText", () => {
  const now = Date.parse("2026-03-10T12:00:00.000Z");
  it("reads the fields as logs' flags and the dashboard's form give them", () => {
    expect(
      parseFilterText(
        {
          event: "idle, task_completed",
          outcome: "failed,timed-out",
          task: "#12",
          member: "ada",
          hook: "on_idle.sh",
          since: "2h",
        },
        now,
      ),
    ).toEqual({
      filter: {
        events: ["idle", "task_completed"],
        outcomes: ["failed", "timed_out"],
        taskId: "12",
        member: "ada",
        hook: "on_idle.sh",
        sinceMs: now - 7_200_000,
      },
      problems: [],
    });
    expect(parseFilterText({ since: "2026-03-01" }, now, "+09:00").filter.sinceMs).toBe(
      Date.parse("2026-03-01T00:00+09:00"),
    );
  });

  it("names each field it cannot read, and keeps the others", () => {
    const { filter, problems } = parseFilterText(
      { event: "done", outcome: ",", task: " ", member: "bob", since: "soon" },
      now,
    );
    expect(filter).toEqual({ member: "bob" });
    expect(problems.map((p) => p.field)).toEqual(["event", "outcome", "task", "since"]);
    expect(problems[0]?.text).toBe('"done" must be one of task_completed, task_failed, idle, task_started');
    expect(problems[1]?.text).toBe("must not be empty");
    expect(problems[3]?.text).toMatch(/^"soon" must be an age \(/);
  });
});

describe("the dashboard's sample cache", () => {
  it("after logs land and go, holds what a fresh read of the folder holds", async () => {
    const team = await makeTempTeam();
    teams.push(team);
    const base = Date.parse("2026-03-01T00:00:00.000Z");
    const write = (i: number) =>
      writeHookLog(
        team.teamDir,
        rec(
          team.teamDir,
          new Date(base + i * 60_000).toISOString(),
          i % 3 ? "task_completed" : "idle",
          String(i),
          "ada",
          i % 4 ? "passed" : "failed",
        ),
      );
    for (let i = 0; i < 12; i++) await write(i);
    const cache = new SampleCache();
    const since = base + 3 * 60_000;
    const fresh = async () => (await new SampleCache().samples(team.teamDir, since)).samples;
    const sorted = (samples: readonly { timeMs: number; outcome: string }[]) =>
      [...samples].sort((a, b) => a.timeMs - b.timeMs);
    expect((await cache.samples(team.teamDir, since)).samples).toHaveLength(9);
    for (let i = 12; i < 15; i++) await write(i);
    const files = await listHookLogs(team.teamDir);
    await rm(files[5]?.file ?? "");
    await writeFile(
      path.join(team.teamDir, "hook-logs", "2026-03-01T00-07-30-000Z_task_completed_task-1.json"),
      "{",
      "utf8",
    );
    const after = await cache.samples(team.teamDir, since);
    expect(sorted(after.samples)).toEqual(sorted(await fresh()));
    expect(after.samples).toHaveLength(11);
    expect(after.unreadable).toBe(1);
  });
});
