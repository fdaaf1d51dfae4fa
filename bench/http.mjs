#!/usr/bin/env node
// What an HTTP handler's first request costs a process that has not made one, and what each later one
// costs, for the three ways to send it: Node 20's global fetch (undici, loaded on first use), node:http
// with a keep-alive agent, and runHandler (runner/http.ts: node:http behind the contract). Each client
// runs in a fresh process, against a receiver in this one, alternating which goes first each round.
// Build first: `npm run build && node bench/http.mjs [rounds] [requests]`.
import "./lib/help.mjs";
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { percentile } from "./lib/stats.mjs";

const median = (samples) => percentile(samples, 0.5);

const MODES = ["fetch", "node-http", "runHandler"];
const here = path.dirname(fileURLToPath(import.meta.url));

if (process.argv[2] === "--child") await child(process.argv[3], process.argv[4], Number(process.argv[5]));
else await parent(Number(process.argv[2] ?? 5), Number(process.argv[3] ?? 200));

async function parent(rounds, requests) {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end('{"decision":"allow"}'));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${server.address().port}/hook`;
  const results = Object.fromEntries(MODES.map((m) => [m, []]));
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? MODES : [...MODES].reverse();
    for (const mode of order) results[mode].push(await runChild(mode, url, requests));
  }
  server.close();
  console.log(`${rounds} rounds, ${requests} requests after the first, Node ${process.version}`);
  console.log("mode        first request (ms)  RSS after it (MB)  later request median (ms)  p95 (ms)");
  for (const mode of MODES) {
    const pick = (key) => median(results[mode].map((r) => r[key]));
    console.log(
      `${mode.padEnd(11)} ${pick("first").toFixed(1).padStart(18)}  ${pick("rssMb").toFixed(1).padStart(17)}  ${pick("median").toFixed(2).padStart(25)}  ${pick("p95").toFixed(2).padStart(8)}`,
    );
  }
}

function runChild(mode, url, requests) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [fileURLToPath(import.meta.url), "--child", mode, url, String(requests)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    proc.stdout.on("data", (chunk) => (out += chunk));
    proc.on("close", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`${mode} exited ${code}`))));
  });
}

async function child(mode, url, requests) {
  const body = Buffer.from(JSON.stringify({ version: 1, event: "task_completed" }));
  // A leader has the runner loaded before its first event (event/chain-run.ts imports it): so here too,
  // untimed. What the first request adds is node:http, its agent and the connection.
  const runner =
    mode === "runHandler"
      ? await import(path.join(here, "../dist/teams-hooks/event/chain-run.js")).then(
          () => import(path.join(here, "../dist/teams-hooks/runner/http.js")),
        )
      : null;
  const rss0 = process.memoryUsage().rss;
  let send;
  const started = performance.now();
  if (mode === "fetch") {
    send = async () =>
      (
        await fetch(url, { method: "POST", body, headers: { "content-type": "application/json" }, redirect: "manual" })
      ).text();
  } else if (mode === "node-http") {
    const http = await import("node:http");
    const agent = new http.Agent({ keepAlive: true });
    send = () =>
      new Promise((resolve, reject) => {
        const req = http.request(
          url,
          { method: "POST", agent, headers: { "content-type": "application/json", "content-length": body.length } },
          (res) => {
            let text = "";
            res
              .setEncoding("utf8")
              .on("data", (c) => (text += c))
              .on("end", () => resolve(text));
          },
        );
        req.on("error", reject).end(body);
      });
  } else {
    const { runHandler } = runner;
    const handler = { name: "bench", events: ["task_completed"], url, timeoutMs: 10_000 };
    const invocation = {
      event: "task_completed",
      teamId: "bench",
      teamDir: "/tmp/bench",
      taskListId: "bench",
      style: "normal",
      completedTask: null,
    };
    send = async () => {
      const result = await runHandler(handler, invocation, { timeoutMs: 10_000, env: {} });
      if (result.outcome !== "passed") throw new Error(result.error);
    };
  }
  await send();
  const first = performance.now() - started;
  const rssMb = (process.memoryUsage().rss - rss0) / 1e6;
  const times = [];
  for (let i = 0; i < requests; i++) {
    const t = performance.now();
    await send();
    times.push(performance.now() - t);
  }
  process.stdout.write(JSON.stringify({ first, rssMb, median: median(times), p95: percentile(times, 0.95) }));
}
