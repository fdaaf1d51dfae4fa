#!/usr/bin/env node
// A gate on another machine, in one file: the service an HTTP handler of pi-teams-hooks calls.
//
// 1. The leader POSTs the event (the context document a file hook reads on stdin) to /gate.
// 2. This service checks the signature, answers 202 {"decision":"defer"} at once, and queues a check.
// 3. The check runs in the background (CHECK_CMD, in CHECK_CWD) while the leader holds the gate.
// 4. Its result goes back to the team's task API (`pi-teams-hooks serve`) as the run's decision,
//    with a key that has the gates:decide scope: allow when the check exits 0, deny otherwise.
//
// Plain Node (no dependencies), so it runs wherever the check should: next to the code, in CI, on a
// review box. Settings, all from the environment:
//   GATE_LISTEN        host:port to listen on (default 127.0.0.1:7421; port 0 picks a free one)
//   GATE_HMAC_SECRET   the handler's signing secret (its signingSecretEnv's value); unset: unsigned
//                      requests are accepted, and the service says so at start
//   TEAMS_API_URL      where `pi-teams-hooks serve` listens (default http://127.0.0.1:7420)
//   TEAMS_API_KEY      a key with the gates:decide scope for the team (`serve keys create …`)
//   CHECK_CMD          the check, run with sh -c (default: npm test --silent); it gets the event in
//                      GATE_CONTEXT_FILE (the context document), GATE_TEAM_ID, GATE_TASK_ID and
//                      GATE_TASK_SUBJECT
//   CHECK_CWD          where it runs (default: this process's working directory)
//   CHECK_TIMEOUT_MS   a check still running after this fails (default 600000)
// It prints one line per request and per decision, and stops on SIGINT or SIGTERM.
import { spawn } from "node:child_process";
import { createHmac, timingSafeEqual } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";

const env = process.env;
const [host, portText] = splitListen(env.GATE_LISTEN ?? "127.0.0.1:7421");
const secret = env.GATE_HMAC_SECRET ?? "";
const apiUrl = (env.TEAMS_API_URL ?? "http://127.0.0.1:7420").replace(/\/+$/, "");
const apiKey = env.TEAMS_API_KEY ?? "";
const checkCmd = env.CHECK_CMD ?? "npm test --silent";
const checkCwd = env.CHECK_CWD ?? process.cwd();
const checkTimeoutMs = Number(env.CHECK_TIMEOUT_MS ?? 600_000);
/** Bodies are the context document: a few KiB, at most the leader's payload limit. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

if (!apiKey) console.error("gate-service: TEAMS_API_KEY is not set: decisions cannot be posted back");
if (!secret) console.error("gate-service: GATE_HMAC_SECRET is not set: requests are not verified");

let jobs = 0;
const running = new Set();

const server = http.createServer((req, res) => {
  if (req.method !== "POST" || req.url !== "/gate") return answer(res, 404, { error: "POST /gate only" });
  const chunks = [];
  let size = 0;
  req.on("data", (chunk) => {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) req.destroy();
    else chunks.push(chunk);
  });
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    if (secret && !signatureMatches(req.headers["x-pi-teams-signature"], body)) {
      console.log(`refused: bad or missing signature (run ${req.headers["x-pi-teams-hook-run-id"] ?? "?"})`);
      return answer(res, 401, { error: "bad signature" });
    }
    let doc;
    try {
      doc = JSON.parse(body.toString("utf8"));
    } catch {
      return answer(res, 400, { error: "body is not JSON" });
    }
    const team = header(req, "x-pi-teams-hook-team-id") ?? doc.team?.id;
    const runId = header(req, "x-pi-teams-hook-run-id");
    if (!team || !runId) return answer(res, 400, { error: "no team id or run id" });
    if (doc.event === "idle") return answer(res, 200, { decision: "allow" }); // nothing to check
    const job = ++jobs;
    const task = doc.task ? `task #${doc.task.id}` : "no task";
    console.log(`job ${job}: ${doc.event} ${task} of ${team} (run ${runId}): deferred, checking`);
    answer(res, 202, { decision: "defer", reason: `check queued as job ${job} on ${host}` });
    const work = check(job, body, {
      GATE_TEAM_ID: team,
      GATE_TASK_ID: doc.task?.id ?? "",
      GATE_TASK_SUBJECT: doc.task?.subject ?? "",
    }).then((verdict) => postDecision(team, runId, job, verdict));
    running.add(work);
    work.finally(() => running.delete(work));
  });
});

server.listen(Number(portText), host, () => {
  const address = server.address();
  console.log(`gate-service listening on http://${address.address}:${address.port}/gate`);
});

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    server.close();
    // Checks under way finish and post their decision first (each is bounded by CHECK_TIMEOUT_MS).
    Promise.allSettled([...running]).then(() => process.exit(0));
  });
}

/** Runs the check; exit 0 allows, anything else denies with the output's last line as the reason. */
function check(job, body, vars) {
  const contextFile = path.join(os.tmpdir(), `gate-service-${process.pid}-${job}.json`);
  writeFileSync(contextFile, body, { mode: 0o600 });
  const done = new Promise((resolve) => {
    const env = { ...process.env, ...vars, GATE_CONTEXT_FILE: contextFile };
    const child = spawn("sh", ["-c", checkCmd], {
      cwd: checkCwd,
      env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let tail = "";
    const keep = (chunk) => {
      tail = (tail + chunk.toString("utf8")).slice(-4096);
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid, "SIGKILL"); // the check and everything it started
      } catch {}
    }, checkTimeoutMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      resolve({ decision: "deny", code: "check.error", reason: `job ${job}: ${error.message}` });
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolve({ decision: "allow", reason: `job ${job}: the check passed` });
      const last =
        tail
          .split(/\r?\n/)
          .map((l) => l.trim())
          .filter(Boolean)
          .pop() ?? "";
      const why = signal ? `killed by ${signal}` : `exit code ${code}`;
      resolve({
        decision: "deny",
        code: "check.failed",
        reason: oneLine(`job ${job}: ${why}${last ? ` • ${last}` : ""}`),
      });
    });
  });
  return done.finally(() => rmSync(contextFile, { force: true }));
}

/** Posts the decision to the team's task API; says what the API answered. */
async function postDecision(team, runId, job, verdict) {
  const url = `${apiUrl}/api/v1/teams/${encodeURIComponent(team)}/runs/${encodeURIComponent(runId)}/decision`;
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
      body: JSON.stringify(verdict),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    console.log(`job ${job}: ${verdict.decision} posted for run ${runId}: ${res.status} ${text.trim()}`);
  } catch (error) {
    console.log(`job ${job}: decision for run ${runId} not posted: ${error.cause?.message ?? error.message}`);
  }
}

function signatureMatches(given, body) {
  if (typeof given !== "string" || !given.startsWith("sha256=")) return false;
  const expected = Buffer.from(`sha256=${createHmac("sha256", secret).update(body).digest("hex")}`);
  const actual = Buffer.from(given);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

function header(req, name) {
  const value = req.headers[name];
  return typeof value === "string" && value !== "" ? value : undefined;
}

function answer(res, status, body) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

/** A reason is one line of at most 1,024 bytes (the verdict's limit). */
function oneLine(text) {
  let flat = text.replace(/[\u0000-\u001f\u007f]+/g, " ").trim();
  if (Buffer.byteLength(flat) <= 1000) return flat;
  while (Buffer.byteLength(flat) > 1000) flat = flat.slice(0, -16);
  return `${flat}…`;
}

function splitListen(value) {
  const at = value.lastIndexOf(":");
  if (at < 0) return [value, "7421"];
  return [value.slice(0, at).replace(/^\[|\]$/g, ""), value.slice(at + 1)];
}
