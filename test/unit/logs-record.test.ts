// logs-record.ts `checkLogRecord` is a zod-free copy of hook-log.ts `HookLogRecordSchema`. These tests
// hold the copy to the schema: the same keys in the same order, every enum value, and probes of every
// field with wrong values. Wherever the quick check says yes, the schema must say yes and return the
// very same JSON; it may say "not sure" (null), never yes to something the schema refuses.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { HOOK_EVENTS, HookInvocationSchema } from "../../extensions/teams-hooks/contract/contract.js";
import { RunResultSchema } from "../../extensions/teams-hooks/contract/hook-run.js";
import { TaskSchema } from "../../extensions/teams-hooks/contract/team-files.js";
import { HOOK_TRIGGERS, HookLogRecordSchema } from "../../extensions/teams-hooks/runner/hook-log.js";
import { CHECKED_KEYS, LOG_EVENTS, LOG_TRIGGERS, checkLogRecord } from "../../extensions/teams-hooks/logs/record.js";
import { makeRunResult } from "../helpers/invocation.js";

const task = {
  id: "7",
  subject: "Write the upload retry",
  description: "Retry on 503.\nWith jitter.",
  owner: "ada",
  status: "completed",
  blocks: ["8"],
  blockedBy: [],
  metadata: { result: "done", nested: { n: 1 } },
  createdAt: "2026-03-01T09:00:00.000Z",
  updatedAt: "2026-03-01T09:30:00.000Z",
};
const result = {
  ran: true,
  hookPath: "/h/on_task_completed.sh",
  command: ["bash", "/h/on_task_completed.sh"],
  outcome: "failed",
  exitCode: 1,
  signal: null,
  timedOut: false,
  durationMs: 1234.5,
  stdout: "✓ one\n",
  stderr: "FAIL two\n",
  stdoutDroppedBytes: 0,
  stderrDroppedBytes: 12,
  error: "spawn bash ENOENT",
  errorCode: "ENOENT",
  leftoverProcesses: 0,
  contextTruncated: false,
  errorKind: "spawn",
  verdict: { decision: "deny", code: "E1", reason: "no", message: "m", source: "stdout" },
  runId: "run-1",
  contractVersion: 1,
};
/** Every field of the schema present. */
const full = {
  invocation: { event: "task_completed", teamId: "alpha", teamDir: "/t/alpha", taskListId: "alpha", style: "normal", memberName: "ada", timestamp: "2026-03-01T09:30:00.000Z", completedTask: task },
  result,
  key: "task_completed:7:2026-03-01T09:30:00.000Z",
  startedAt: "2026-03-01T09:30:01.234Z",
  retry: false,
  trigger: "hand",
  policy: { failureAction: "reopen", actions: ["reopened (1/3)"] },
};
/** Only what the schema requires. */
const minimal = {
  invocation: { event: "idle", teamId: "alpha", teamDir: "/t/alpha", taskListId: "alpha", style: "normal", completedTask: null },
  result: makeRunResult(),
  startedAt: "2026-03-01T09:30:01.234Z",
};
/** Keys in reverse order and unknown fields at every level the schema rebuilds. */
const reversed = (value: Record<string, unknown>): Record<string, unknown> => Object.fromEntries(Object.entries(value).reverse());
const shuffled = reversed({
  ...full,
  zExtra: [1],
  "0": "an index-like key",
  invocation: reversed({ ...full.invocation, extra: true, completedTask: reversed({ ...task, extra: { a: 1 } }) }),
  result: reversed({ ...result, extra: null, verdict: reversed({ ...result.verdict, extra: 2 }) }),
});
/** In order outside, not inside: the copy must reach the inner objects. */
const innerShuffled = { ...full, invocation: { ...full.invocation, completedTask: reversed(task) }, result: { ...result, verdict: reversed(result.verdict) } };
const BASES = { full, minimal, shuffled, innerShuffled } as const;

/** What the schema makes of `data`, as JSON, or null when it refuses it. */
function viaSchema(data: unknown): string | null {
  const parsed = HookLogRecordSchema.safeParse(data);
  return parsed.success ? JSON.stringify(parsed.data) : null;
}

/** Passes when the quick check agrees with the schema or is not sure; returns whether it was sure. */
function expectAgreement(data: unknown, label: string): boolean {
  const quick = checkLogRecord(data);
  if (quick === null) return false;
  expect(viaSchema(data), `${label}: the quick check accepts what the schema refuses`).not.toBeNull();
  expect(JSON.stringify(quick), `${label}: the quick check returns other JSON than the schema`).toBe(viaSchema(data));
  return true;
}

/** Every path to a field the schema checks (not inside `metadata` or `policy`, which hold anything). */
function fieldPaths(value: unknown, at: string[] = []): string[][] {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return [];
  const paths: string[][] = [];
  for (const [key, child] of Object.entries(value)) {
    paths.push([...at, key]);
    if (key !== "metadata" && key !== "policy") paths.push(...fieldPaths(child, [...at, key]));
  }
  return paths;
}

function withField(base: unknown, at: readonly string[], value: unknown): unknown {
  const copy = structuredClone(base) as Record<string, unknown>;
  let node = copy;
  for (const key of at.slice(0, -1)) node = node[key] as Record<string, unknown>;
  const last = at[at.length - 1] ?? "";
  if (value === DELETE) delete node[last];
  else node[last] = value;
  return copy;
}
const DELETE = Symbol("delete");

const PROBES: unknown[] = [
  DELETE,
  null,
  true,
  0,
  -1,
  1.5,
  2 ** 53,
  "",
  "x",
  "2026-03-01T09:30:01.234Z",
  "2026-02-30T09:30:01.234Z",
  "2026-03-01T09:30:01Z",
  "2026-03-01T11:30:01.234+02:00",
  [],
  ["x"],
  [1],
  {},
  { a: 1 },
  ...HOOK_EVENTS,
  ...HOOK_TRIGGERS,
  "pending",
  "done",
  "deny",
  "file",
  "maybe",
];

describe("checkLogRecord", () => {
  it.each(Object.entries(BASES))("accepts %s records as the schema returns them", (label, base) => {
    expect(viaSchema(base)).not.toBeNull();
    expect(expectAgreement(base, label)).toBe(true);
  });

  it("keeps each object's schema keys first, in schema order, then the others in file order", () => {
    const out = checkLogRecord(shuffled) as unknown as Record<string, Record<string, unknown>>;
    const keys = ["0", "invocation", "result", "key", "startedAt", "retry", "trigger", "policy", "zExtra"];
    expect(Object.keys(out)).toEqual(keys);
    expect(Object.keys(out.invocation ?? {}).slice(-2)).toEqual(["completedTask", "extra"]);
  });

  it.each(Object.entries(BASES))("never accepts a change to a %s record that the schema refuses", (label, base) => {
    let probed = 0;
    for (const at of fieldPaths(base)) {
      for (const probe of PROBES) {
        expectAgreement(withField(base, at, probe), `${label}: ${at.join(".")} = ${String(probe)}`);
        probed += 1;
      }
    }
    expect(probed).toBeGreaterThan(500);
  });

  it("says not sure (null) for what only the schema can word: not an object, a wrong type, an own __proto__", () => {
    for (const data of [null, [], "x", 1, {}, { ...minimal, startedAt: 5 }, JSON.parse('{"__proto__": {"a": 1}}')]) expect(checkLogRecord(data)).toBeNull();
    const proto = JSON.parse(JSON.stringify(full).replace('"runId"', '"__proto__":{"y":2},"runId"'));
    expect(checkLogRecord(proto)).toBeNull();
    expect(viaSchema(proto)).not.toBeNull(); // readHookLog reads it
  });

  it("accepts every value of every enum of the schema", () => {
    const cases: Array<[string[], readonly unknown[]]> = [
      [["invocation", "event"], HookInvocationSchema.shape.event.options],
      [["trigger"], HookLogRecordSchema.shape.trigger.unwrap().options],
      [["invocation", "completedTask", "status"], TaskSchema.shape.status.options],
      [["result", "outcome"], RunResultSchema.shape.outcome.options],
      [["result", "errorKind"], RunResultSchema.shape.errorKind.unwrap().options],
      [["result", "verdict", "decision"], RunResultSchema.shape.verdict.unwrap().shape.decision.options],
      [["result", "verdict", "source"], RunResultSchema.shape.verdict.unwrap().shape.source.options],
    ];
    for (const [at, values] of cases) {
      for (const value of values) expect(expectAgreement(withField(full, at, value), `${at.join(".")} = ${String(value)}`), `${at.join(".")} = ${String(value)}`).toBe(true);
    }
  });

  it("checks the same keys as the schemas, in their order", () => {
    expect(CHECKED_KEYS).toEqual({
      record: Object.keys(HookLogRecordSchema.shape),
      invocation: Object.keys(HookInvocationSchema.shape),
      task: Object.keys(TaskSchema.shape),
      result: Object.keys(RunResultSchema.shape),
      verdict: Object.keys(RunResultSchema.shape.verdict.unwrap().shape),
    });
  });

  it("names the contract's events", () => {
    expect(LOG_EVENTS).toEqual(HOOK_EVENTS);
  });

  it("names the log's triggers", () => {
    expect(LOG_TRIGGERS).toEqual(HOOK_TRIGGERS);
  });
});

/** The modules a module loads when it runs (`import type` and `import()` left out), transitively. */
function loadedModules(start: string): Set<string> {
  const dir = path.resolve("extensions/teams-hooks");
  const seen = new Set<string>();
  const visit = (name: string): void => {
    if (seen.has(name)) return;
    seen.add(name);
    if (!name.startsWith("./")) return;
    const text = fs.readFileSync(path.join(dir, name.replace(/\.js$/, ".ts")), "utf8");
    for (const m of text.matchAll(/^(?:import|export)\s+(?!type\s)[^;]*?from\s+"([^"]+)"/gms)) {
      const spec = m[1] ?? "";
      visit(spec.startsWith(".") ? `./${path.posix.join(path.posix.dirname(name), spec)}` : spec);
    }
  };
  visit(start);
  return seen;
}

describe("the logs command's start-up", () => {
  // zod and the contract's schemas cost a fresh process about 150 ms (docs/logs.md, "Performance").
  it("loads neither zod nor the modules that import it", () => {
    const loaded = [...loadedModules("./cli/logs.js")];
    expect(loaded.filter((m) => m === "zod" || m === "./contract/contract.js" || m === "./runner/hook-log.js" || m === "./text/messages.js" || m === "./cli/io.js")).toEqual([]);
    expect(loaded).toContain("./logs/query.js");
  });
});
