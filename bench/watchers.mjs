#!/usr/bin/env node
// Which file watcher should the leader use? A directory `fs.watch` (one inotify watch) against
// chokidar 5 with its default options, each in a fresh child process so that memory and inotify
// watches are its own, in a small task list and in a large one:
// - ready: from creating the watcher to being able to report changes (chokidar: its `ready` event);
// - notice: a task file renamed into place (new task, and an existing task replaced, as a worker's
//   atomic write does) → the watcher's callback for that name, in the same process (one clock);
// - inotify watches held (/proc/self/fdinfo) and RSS (VmRSS / VmHWM) once ready;
// - a storm: every task of the list rewritten atomically while the event loop is blocked (as a busy
//   leader's would be): how many of the changed names the watcher still reports. The kernel queues at
//   most /proc/sys/fs/inotify/max_queued_events events per inotify instance and drops the rest.
//
//   node bench/watchers.mjs [--quick] [--big 10000] [--samples 50]
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { inotifyWatchesOf, memoryOf } from "./lib/proc.mjs";
import { ms, sleep, summarize, table } from "./lib/stats.mjs";
import { fillTasks, makeTeam, makeTempRoot, removeQuietly, task, taskText } from "./lib/team.mjs";
import { benchArgs } from "./lib/args.mjs";

const here = fileURLToPath(import.meta.url);
const { values: opt } = benchArgs(import.meta.url, {
  options: {
    quick: { type: "boolean", default: false },
    big: { type: "string" },
    samples: { type: "string" },
    child: { type: "string" },
    dir: { type: "string" },
    count: { type: "string" },
  },
});

if (opt.child) await child(opt.child, opt.dir, Number(opt.count), Number(opt.samples));
else await parent();

async function parent() {
  const BIG = Number(opt.big ?? 10_000);
  const SAMPLES = Number(opt.samples ?? (opt.quick ? 20 : 50));
  const queued = readFileSync("/proc/sys/fs/inotify/max_queued_events", "utf8").trim();
  console.log(
    `watchers bench — node ${process.version}, ${os.availableParallelism()} CPUs, load ${os.loadavg()[0].toFixed(2)}; max_queued_events ${queued}; ${SAMPLES} renames per case\n`,
  );
  const root = makeTempRoot("bench-watchers-");
  const results = [];
  try {
    for (const count of [10, BIG]) {
      for (const kind of ["fs.watch", "chokidar"]) {
        const team = makeTeam(root, `${kind.replace(".", "")}-${count}`);
        fillTasks(team, count, { completed: Math.floor(count / 2) });
        const r = await runChild(kind, team.tasksDir, count, SAMPLES);
        results.push({ kind, count, ...r });
        process.stderr.write(
          `  ${kind} ${count}: ready ${ms(r.readyMs)}, new ${ms(r.added.median, 2)}, replaced ${ms(r.replaced.median, 2)}, ${r.watches} watches, RSS ${r.rssMB.toFixed(1)} MB, storm ${r.storm.seen}/${r.storm.written}\n`,
        );
        removeQuietly(team.teamDir);
      }
    }
  } finally {
    removeQuietly(root);
  }
  console.log(
    table([
      [
        "watcher, tasks",
        "ready",
        "new: median",
        "p99",
        "replaced: median",
        "p99",
        "inotify watches",
        "RSS",
        "peak RSS",
        "storm: names seen",
      ],
      ...results.map((r) => [
        `${r.kind}, ${r.count.toLocaleString("en")}`,
        ms(r.readyMs, 0),
        ms(r.added.median, 2),
        ms(r.added.p99, 2),
        ms(r.replaced.median, 2),
        ms(r.replaced.p99, 2),
        r.watches,
        `${r.rssMB.toFixed(1)} MB`,
        `${r.hwmMB.toFixed(1)} MB`,
        `${r.storm.seen.toLocaleString("en")} / ${r.storm.written.toLocaleString("en")}`,
      ]),
    ]),
  );
  console.log(
    "\nnew: a task file renamed into the list for the first time; replaced: an existing task file renamed over (a worker's update).",
  );
  console.log(
    "storm: every task rewritten (temp file + rename) while the watcher's event loop is blocked, then 2 s to catch up.",
  );
}

function runChild(kind, dir, count, samples) {
  return new Promise((resolve, reject) => {
    const proc = spawn(
      process.execPath,
      [here, "--child", kind, "--dir", dir, "--count", String(count), "--samples", String(samples)],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    let out = "";
    proc.stdout.on("data", (c) => (out += c));
    proc.on("exit", (code) => {
      if (code !== 0) return reject(new Error(`${kind} child exited ${code}: ${out}`));
      resolve(JSON.parse(out.trim().split("\n").at(-1)));
    });
  });
}

async function child(kind, dir, count, samples) {
  const seen = [];
  let onName = () => {};
  const note = (name) => {
    const now = performance.now();
    seen.push(name);
    onName(name, now);
  };
  const began = performance.now();
  let close;
  if (kind === "fs.watch") {
    const { watch } = await import("node:fs");
    const w = watch(dir, { persistent: true }, (_type, name) => {
      if (typeof name === "string") note(name);
    });
    close = async () => w.close();
  } else {
    const { watch } = await import("chokidar");
    const w = watch(dir); // default options, as in the measurement
    w.on("all", (_event, file) => note(path.basename(file)));
    w.on("error", () => {});
    await new Promise((resolve) => w.once("ready", resolve));
    close = () => w.close();
  }
  const readyMs = performance.now() - began;
  const mem = memoryOf(process.pid);
  const watches = inotifyWatchesOf(process.pid);
  await sleep(200);

  // Each sample: rename a prepared file into place, then wait for the watcher to report its name.
  const noticed = async (name, act) => {
    let resolveIt;
    const done = new Promise((r) => (resolveIt = r));
    onName = (n, at) => {
      if (n === name) resolveIt(at);
    };
    const t0 = performance.now();
    act();
    const at = await Promise.race([done, sleep(5_000).then(() => NaN)]);
    onName = () => {};
    return at - t0;
  };
  const added = [];
  const replaced = [];
  let seq = 0;
  for (let i = 0; i < samples; i++) {
    const id = count + 1 + i;
    const file = path.join(dir, `${id}.json`);
    const tmp = `${file}.tmp.${process.pid}.${++seq}`;
    writeFileSync(tmp, taskText(task(id)));
    added.push(await noticed(`${id}.json`, () => renameSync(tmp, file)));
    await sleep(20 + Math.random() * 30);
    const old = 1 + Math.floor(Math.random() * count);
    const oldFile = path.join(dir, `${old}.json`);
    const tmp2 = `${oldFile}.tmp.${process.pid}.${++seq}`;
    writeFileSync(tmp2, taskText(task(old, { completedAt: new Date(Date.now() + seq).toISOString() })));
    replaced.push(await noticed(`${old}.json`, () => renameSync(tmp2, oldFile)));
    await sleep(20 + Math.random() * 30);
  }

  // Storm: rewrite every task synchronously (the loop is blocked throughout), then let it catch up.
  await sleep(300);
  seen.length = 0;
  const total = count + samples;
  for (let id = 1; id <= total; id++) {
    const file = path.join(dir, `${id}.json`);
    const tmp = `${file}.tmp.${process.pid}.${++seq}`;
    writeFileSync(tmp, taskText(task(id, { completedAt: new Date(Date.now() + seq).toISOString() })));
    renameSync(tmp, file);
  }
  await sleep(2_000);
  const names = new Set(seen.filter((n) => /^\d+\.json$/.test(n)));
  await close();
  const finite = (a) => a.filter(Number.isFinite);
  process.stdout.write(
    `${JSON.stringify({
      readyMs,
      watches,
      rssMB: mem.rssMB,
      hwmMB: mem.hwmMB,
      added: { ...summarize(finite(added)), missed: added.length - finite(added).length },
      replaced: { ...summarize(finite(replaced)), missed: replaced.length - finite(replaced).length },
      storm: { written: total, seen: names.size },
    })}\n`,
  );
  process.exit(0);
}
