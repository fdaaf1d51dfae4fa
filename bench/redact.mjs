#!/usr/bin/env node
// What redaction costs per hook output: a 12,000-character stream (the cap a log keeps) with three
// team secrets configured, clean and with 200 credentials in it, against two baselines measured in
// the same run: one `String.prototype.includes` of a team secret over the same text (the least any
// redaction must do) and `JSON.stringify` of the text (what writing it into the log costs anyway).
// Build first: `npm run build && node bench/redact.mjs [rounds]`.
import "./lib/help.mjs";
import { teamRedactor } from "../dist/teams-hooks/runner/redact.js";
import { ms, ratio, table, timeCalls } from "./lib/stats.mjs";

const rounds = Number(process.argv[2] ?? 2_000);
const env = { A: "secret-value-0001", B: "another-secret-02", C: "third-secret-003" };
const redact = teamRedactor(env, ["A", "B", "C"]);
const line =
  "src/task-list/parser.ts:12:4 error  Unexpected any. Specify a different type  @typescript-eslint/no-explicit-any\n";
const clean = line.repeat(Math.ceil(12_000 / line.length)).slice(0, 12_000);
const dirtyLine = "token ghp_0123456789abcdefghijABCDEFGHIJ012345 key AKIAIOSFODNN7EXAMPLE\n";
const dirty = dirtyLine.repeat(100).padEnd(12_000, "x").slice(0, 12_000);

const time = (fn) => timeCalls(fn, rounds);

let sink = 0;
const includes = time(() => (sink += clean.includes(env.A) ? 1 : 0));
const stringify = time(() => (sink += JSON.stringify(clean).length));
const cleanRun = time(() => (sink += redact(clean).count));
const dirtyRun = time(() => (sink += redact(dirty).count));
if (redact(dirty).count !== 200) throw new Error(`expected 200 replacements, got ${redact(dirty).count}`);

const row = (name, s) => [
  name,
  ms(s.median, 4),
  ms(s.p99, 4),
  ratio(s.median, includes.median),
  ratio(s.median, stringify.median),
];
console.log(`${rounds} rounds of 12,000 characters (sink ${sink > 0 ? "ok" : "empty"})`);
console.log(
  table([
    ["", "median", "p99", "vs includes", "vs JSON.stringify"],
    row("includes (one secret)", includes),
    row("JSON.stringify", stringify),
    row("redact, clean", cleanRun),
    row("redact, 200 credentials", dirtyRun),
  ]),
);
