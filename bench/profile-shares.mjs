#!/usr/bin/env node
// Where a leader's time goes in a burst, from the CPU profiles `node bench/spawn-path.mjs --profile DIR`
// writes (one per leader's thread; the main thread's are read): each step's share of the leader's wall time, and
// its milliseconds per event when the count of events is given (the bench prints it: "(186 in 10 s)").
//
//   node bench/spawn-path.mjs --only reopen --reopen-rounds 1 --side this --side "other 1" \
//     --other /tmp/prev/dist/teams-hooks/bin.js --profile /tmp/prof
//   node bench/profile-shares.mjs --events 186 /tmp/prof/this/*.cpuprofile
//
// A sample counts for the first step (top to bottom below) whose function is on its stack; `idle` is the
// main thread waiting (for the gate, a flush in the thread pool, the next completion). A synchronous
// system call that waits for the disk (a rename, a create) counts for the step that made it.
import { readFileSync } from "node:fs";
import { benchArgs } from "./lib/args.mjs";

const { values: opt, positionals: files } = benchArgs(import.meta.url, {
  options: { events: { type: "string" } },
  allowPositionals: true,
});
if (files.length === 0) {
  console.error("usage: node bench/profile-shares.mjs [--events N] FILE.cpuprofile...");
  process.exit(2);
}

/** Steps, each with the functions that make a sample its own (the first step that matches wins). */
const STEPS = [
  ["idle", (top) => top === "(idle)"],
  ["garbage collector", (top) => top === "(garbage collector)"],
  ["fork of the leader (the standby's or the gate's spawn)", (_, has) => has("spawn") || has("startProcess")],
  [
    "run folder: made, written, removed",
    (_, has) =>
      [
        "makeRunDir",
        "removeRunDir",
        "removeLater",
        "rimraf",
        "_rimraf",
        "rimrafPromises",
        "writeRunFile",
        "writeCopy",
        "linkSiblings",
        "writeView",
        "standbyLayout",
      ].some(has) ||
      (has("release") && has("startFor")),
  ],
  ["hook log, sent log, ledger", (_, has) => ["writeHookLog", "#append", "#datasync", "claim", "confirm"].some(has)],
  [
    "task and inbox writes (lock, read, temp file, rename)",
    (top, has) =>
      top === "rename" ||
      [
        "writeAtomicSync",
        "writeTextAtomicSync",
        "createLockFile",
        "withLock",
        "readJsonFile",
        "appendMessage",
        "updateTask",
      ].some(has),
  ],
  [
    "sandbox checks (the standby's fit, the /proc sweep, exec checks)",
    (_, has) => ["endRun", "takeStandby", "pinsOf", "planOf", "cannotExec", "groupMembers", "copyChanged"].some(has),
  ],
  ["the rest (JavaScript: the event, the policy, parsing, output)", () => true],
];

// `node --cpu-prof` writes a profile per thread, CPU.<date>.<time>.<pid>.<thread>.<n>.cpuprofile: the main
// thread is 0. A leader's other threads (the remover of run folders) are off the event's path: left out.
const isMain = (file) => !/\.\d+\.\d+\.\d+\.\d+\.\d+\.cpuprofile$/.test(file) || /\.0\.\d+\.cpuprofile$/.test(file);
const others = files.filter((file) => !isMain(file));
if (others.length > 0) console.log(`(left out, profiles of other threads than the main one: ${others.join(", ")})`);

const totals = new Map(STEPS.map(([name]) => [name, 0]));
let all = 0;
for (const file of files.filter(isMain)) {
  const profile = JSON.parse(readFileSync(file, "utf8"));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const stepOf = new Map();
  const step = (id) => {
    const known = stepOf.get(id);
    if (known) return known;
    const names = new Set();
    let top = null;
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const name = byId.get(at).callFrame.functionName;
      top ??= name;
      names.add(name);
    }
    const found = STEPS.find(([, test]) => test(top, (name) => names.has(name)))[0];
    stepOf.set(id, found);
    return found;
  };
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    totals.set(step(id), totals.get(step(id)) + dt);
    all += dt;
  });
}
const events = opt.events === undefined ? null : Number(opt.events);
for (const [name, us] of totals) {
  const perEvent = events ? `  ${(us / 1000 / events).toFixed(1).padStart(6)} ms/event` : "";
  console.log(
    `${((100 * us) / all).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(6)} ms${perEvent}  ${name}`,
  );
}
console.log(
  `total ${(all / 1000).toFixed(0)} ms${events ? `, ${events} events: ${(all / 1000 / events).toFixed(1)} ms/event` : ""}`,
);
