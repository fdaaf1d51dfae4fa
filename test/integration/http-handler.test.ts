/**
 * HTTP handlers against a real receiver on 127.0.0.1 (one node:http server for the file): every class
 * of answer (a 2xx verdict, empty, malformed, an unsupported decision, 3xx, 4xx, 5xx, a body over
 * 64 KiB, slow past the timeout, no connection), the request (body byte for byte the context
 * document, context headers, static and secret headers, a missing secret, a signature the receiver
 * verifies with the secret), keep-alive, the leader's stop, and the handler as the last gate of an
 * event's chain under its failure modes and limits (invokeEvent, real hooks and files), and the
 * handler as a gate of the trust record (its definition's hash, new, changed, gone, `trust`).
 */
import { createHmac } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { HookEventName, HookInvocation } from "../../extensions/teams-hooks/contract/contract.js";
import { prepareContext } from "../../extensions/teams-hooks/contract/hook-run.js";
import { invokeEvent, type InvokeRequest } from "../../extensions/teams-hooks/event/invoke.js";
import { HANDLER_BODY_LIMIT_BYTES, runHandler } from "../../extensions/teams-hooks/runner/http.js";
import { listHookLogs, readHookLog } from "../../extensions/teams-hooks/logs/hook-log.js";
import { terminateAllRuns } from "../../extensions/teams-hooks/runner/run-hook.js";
import { discoverChain, type ChainHook } from "../../extensions/teams-hooks/gates/chain.js";
import {
  checkChainTrust,
  entryOf,
  handlerDefinitionText,
  handlerFingerprint,
  type TrustEntry,
  type TrustRecord,
} from "../../extensions/teams-hooks/trust/trust.js";
import { main as runCli } from "../../extensions/teams-hooks/cli/main.js";
import { HandlerSchema, type HandlerDef, type HandlerInput } from "../../extensions/teams-hooks/settings/handlers.js";
import type { FailureMode, HookLimits } from "../../extensions/teams-hooks/settings/team-settings.js";
import { closedPort, startReceiver, type Receiver } from "../helpers/http-receiver.js";
import { makeInvocation } from "../helpers/invocation.js";
import { eventRequest } from "../helpers/invoke-request.js";
import { makeTask, makeTempTeam, type TempTeam } from "../helpers/temp-team.js";

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

/** A validated handler posting to `route` of the receiver. */
function handler(route: string, over: Partial<HandlerInput> = {}): HandlerDef {
  return HandlerSchema.parse({
    name: route.replace(/\W/g, "") || "h",
    events: ["task_completed", "task_failed", "idle"],
    url: `${receiver.url}${route}`,
    ...over,
  });
}

const json =
  (status: number, body: string, statusText?: string) => (_req: unknown, res: import("node:http").ServerResponse) => {
    if (statusText) res.statusMessage = statusText;
    res.writeHead(status, { "content-type": "application/json" }).end(body);
  };

describe("what the answer makes of the run", () => {
  it.each([
    [
      "a 200 allow",
      200,
      '{"decision":"allow"}',
      { outcome: "passed", verdict: { decision: "allow", source: "http" }, http: { status: 200, body: "verdict" } },
    ],
    [
      "a 200 DENY (any case) with code and reason",
      200,
      '{"decision":"DENY","code":"tests_failed","reason":"3 tests fail"}',
      { outcome: "failed", verdict: { decision: "deny", code: "tests_failed", reason: "3 tests fail" } },
    ],
    [
      "a 202 defer on a task event",
      202,
      '{"decision":"defer","reason":"CI run 812 queued"}',
      { outcome: "deferred", verdict: { decision: "defer", reason: "CI run 812 queued" } },
    ],
    ["a 204 with no body", 204, "", { outcome: "passed", http: { status: 204, body: "empty" } }],
    ["a 200 with a blank body", 200, "  \n", { outcome: "passed", http: { body: "empty" } }],
    [
      "a 200 with a body that is not JSON",
      200,
      "<html>ok</html>",
      { outcome: "passed", http: { body: "malformed" }, stdout: "<html>ok</html>" },
    ],
    ["a 200 with JSON and no decision", 200, '{"status":"queued"}', { outcome: "passed", http: { body: "malformed" } }],
    [
      "a 200 with an unsupported decision",
      200,
      '{"decision":"maybe"}',
      {
        outcome: "error",
        errorKind: "http",
        error: `HTTP 200 OK: invalid verdict in the handler's answer: decision: "maybe" is not one of allow, deny, defer, patch`,
      },
    ],
    [
      "a 200 deny with a bad code (an invalid verdict, as in a file)",
      200,
      '{"decision":"deny","code":"Bad Code"}',
      { outcome: "error", errorKind: "invalid_verdict" },
    ],
    [
      "a 404",
      404,
      "no such pipeline: web\nsecond line",
      {
        outcome: "error",
        errorKind: "http",
        error: "HTTP 404 Not Found: no such pipeline: web",
        http: { status: 404, statusText: "Not Found" },
      },
    ],
    [
      "a 500 with an empty body (the reason phrase is the diagnostic)",
      500,
      "",
      { outcome: "error", errorKind: "http", error: "HTTP 500 Internal Server Error" },
    ],
    [
      "a 503 with its own reason phrase",
      503,
      "",
      { outcome: "error", errorKind: "http", error: "HTTP 503 Down For Maintenance" },
      "Down For Maintenance",
    ],
  ] as const)("%s", async (_name, status, body, expected, statusText?: string) => {
    const route = `/answer-${status}-${receiver.requests().length}`;
    receiver.route(route, json(status, body, statusText));
    const result = await runHandler(handler(route), makeInvocation(), { timeoutMs: 5_000, env: {} });
    expect(result).toMatchObject({
      ran: true,
      exitCode: null,
      timedOut: false,
      hookPath: `http:${route.replace(/\W/g, "")}`,
      command: ["POST", `${receiver.url}${route}`],
      ...expected,
    });
    expect(result.http?.url).toBe(`${receiver.url}${route}`);
  });

  it("a defer on idle is a denial with code deferral_not_supported", async () => {
    receiver.route("/defer-idle", json(202, '{"decision":"defer","reason":"later"}'));
    const result = await runHandler(handler("/defer-idle"), makeInvocation({ event: "idle", task: null }), {
      timeoutMs: 5_000,
      env: {},
    });
    expect(result).toMatchObject({
      outcome: "failed",
      verdict: {
        decision: "deny",
        code: "deferral_not_supported",
        reason: "this event cannot be deferred: later",
        source: "http",
      },
    });
  });

  it("a defer on task_started is a denial with code deferral_not_supported: a claim cannot wait", async () => {
    receiver.route("/defer-start", json(202, '{"decision":"defer","reason":"later"}'));
    const claim = makeInvocation({ event: "task_started", task: { status: "in_progress", metadata: {} } });
    const result = await runHandler(handler("/defer-start", { events: ["task_started"] }), claim, {
      timeoutMs: 5_000,
      env: {},
    });
    expect(result).toMatchObject({
      outcome: "failed",
      verdict: {
        decision: "deny",
        code: "deferral_not_supported",
        reason: "this event cannot be deferred: later",
        source: "http",
      },
    });
    expect(JSON.parse(receiver.requests("/defer-start")[0]?.body.toString("utf8") ?? "{}")).toMatchObject({
      version: 1,
      event: "task_started",
      task: { status: "in_progress" },
    });
  });

  it("a redirect is not followed: a hook error naming where it pointed", async () => {
    receiver.route("/moved", (_req, res) => res.writeHead(302, { location: `${receiver.url}/target` }).end());
    receiver.route("/target", json(200, '{"decision":"allow"}'));
    const result = await runHandler(handler("/moved"), makeInvocation(), { timeoutMs: 5_000, env: {} });
    expect(result).toMatchObject({ outcome: "error", errorKind: "http", http: { status: 302 } });
    expect(result.error).toBe(
      `HTTP 302 Found: a redirect to ${receiver.url}/target, not followed (set the handler's url to the final address)`,
    );
    expect(receiver.requests("/target")).toEqual([]);
  });

  it("a body over 64 KiB is a hook error, read no further than the cap (the rest is never buffered)", async () => {
    let finished: boolean | null = null;
    const closed = new Promise<void>((resolve) => {
      receiver.route("/huge", (_req, res) => {
        res.writeHead(200, { "content-type": "application/json" });
        // 16 MiB, written as the socket takes it: a client that kept reading would take it all.
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        let left = 256;
        const pump = (): void => {
          while (left > 0) {
            left -= 1;
            if (!res.write(chunk)) return void res.once("drain", pump);
          }
          res.end();
        };
        res.on("close", () => {
          finished = res.writableFinished;
          resolve();
        });
        pump();
      });
    });
    const result = await runHandler(handler("/huge"), makeInvocation(), { timeoutMs: 10_000, env: {} });
    expect(result).toMatchObject({ outcome: "error", errorKind: "http", http: { status: 200 } });
    expect(result.error).toBe(
      `HTTP 200 OK: the answer's body is over ${HANDLER_BODY_LIMIT_BYTES} bytes (64 KiB); not read further`,
    );
    await closed;
    expect(finished).toBe(false); // the connection went away before the server could send it all
    expect(result.stdout.length).toBeLessThan(13_000);
  });

  it("slow past the timeout: a hook error with timedOut, within the timeout and a little", async () => {
    receiver.route("/hang", () => undefined); // never answers
    const began = performance.now();
    const result = await runHandler(handler("/hang", { timeoutMs: 1_000 }), makeInvocation(), {
      timeoutMs: 1_000,
      env: {},
    });
    const ms = performance.now() - began;
    expect(result).toMatchObject({ outcome: "error", errorKind: "http", timedOut: true, http: { status: null } });
    expect(result.error).toBe("no answer within 1000ms (the handler's timeoutMs, or the chain's deadline)");
    expect(ms).toBeGreaterThanOrEqual(990);
    expect(ms).toBeLessThan(1_000 + 1_500);
  });

  it("connection refused: a hook error with the errno code", async () => {
    const port = await closedPort();
    const result = await runHandler(
      HandlerSchema.parse({ name: "gone", events: ["idle"], url: `http://127.0.0.1:${port}/hook` }),
      makeInvocation(),
      { timeoutMs: 5_000, env: {} },
    );
    expect(result).toMatchObject({
      outcome: "error",
      errorKind: "http",
      errorCode: "ECONNREFUSED",
      http: { status: null },
    });
    expect(result.error).toMatch(new RegExp(`^no connection to http://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`));
  });

  it("the leader's stop (terminateAllRuns) ends a live request: errorKind stopped", async () => {
    receiver.route("/hang-stop", () => undefined);
    const arrived = receiver.nextRequest("/hang-stop");
    const running = runHandler(handler("/hang-stop", { timeoutMs: 60_000 }), makeInvocation(), {
      timeoutMs: 60_000,
      env: {},
    });
    await arrived;
    const began = performance.now();
    await terminateAllRuns();
    const result = await running;
    expect(performance.now() - began).toBeLessThan(1_000);
    expect(result).toMatchObject({
      outcome: "error",
      errorKind: "stopped",
      error: "stopped: the leader is shutting down",
      timedOut: false,
    });
  });
});

describe("what the request carries", () => {
  const SECRET = "s3cr3t-token-value";
  const HMAC_KEY = "hmac-key-for-tests";

  it("the context document byte for byte, the context headers, static and secret headers, and a signature the receiver verifies", async () => {
    receiver.route("/headers", json(200, '{"decision":"allow"}'));
    const invocation = makeInvocation({ task: { subject: "Ünïcode — ✓", metadata: { note: "x".repeat(5_000) } } });
    const context = prepareContext(invocation);
    const def = handler("/headers", {
      headers: { "X-Team": "alpha" },
      secretHeaders: { Authorization: "CI_GATE_TOKEN" },
      signingSecretEnv: "CI_GATE_HMAC",
    });
    const result = await runHandler(def, invocation, {
      runId: "run-1",
      timeoutMs: 5_000,
      env: { CI_GATE_TOKEN: `Bearer ${SECRET}`, CI_GATE_HMAC: HMAC_KEY },
      context,
      eventKey: "task_completed:3:2025-01-15T10:42:07.123Z",
      attempt: 2,
    });
    expect(result).toMatchObject({ outcome: "passed", http: { signed: true } });
    expect(result.http?.missingSecrets).toBeUndefined();
    const [got] = receiver.requests("/headers");
    expect(got?.method).toBe("POST");
    expect(got?.body.equals(Buffer.from(context.json, "utf8"))).toBe(true);
    expect(got?.headers).toMatchObject({
      "content-type": "application/json",
      "x-pi-teams-hook-event": "task_completed",
      "x-pi-teams-hook-run-id": "run-1",
      "x-pi-teams-hook-version": "1",
      "x-pi-teams-hook-team-id": "demo",
      "x-pi-teams-hook-task-id": "3",
      "x-pi-teams-hook-member": "alice",
      "x-pi-teams-hook-event-key": "task_completed:3:2025-01-15T10:42:07.123Z",
      "x-pi-teams-hook-attempt": "2",
      "x-team": "alpha",
      authorization: `Bearer ${SECRET}`,
    });
    expect(Date.parse(String(got?.headers["x-pi-teams-hook-timestamp"]))).not.toBeNaN();
    // The receiver's side: HMAC-SHA256 of the raw body with the shared secret, compared in constant time by real
    // receivers.
    const expected = `sha256=${createHmac("sha256", HMAC_KEY)
      .update(got?.body ?? Buffer.alloc(0))
      .digest("hex")}`;
    expect(got?.headers["x-pi-teams-signature"]).toBe(expected);
    // No secret value anywhere in what is recorded.
    expect(JSON.stringify(result)).not.toContain(SECRET);
    expect(JSON.stringify(result)).not.toContain(HMAC_KEY);
  });

  it("a missing variable leaves its header out (and the signature), names the variable, and still sends", async () => {
    receiver.route("/missing", json(200, ""));
    const def = handler("/missing", {
      secretHeaders: { Authorization: "CI_GATE_TOKEN", "X-Api-Key": "CI_API_KEY" },
      signingSecretEnv: "CI_GATE_HMAC",
    });
    const result = await runHandler(def, makeInvocation(), {
      timeoutMs: 5_000,
      env: { CI_API_KEY: "k-123456", CI_GATE_TOKEN: "" },
    });
    expect(result).toMatchObject({
      outcome: "passed",
      http: { missingSecrets: ["CI_GATE_TOKEN", "CI_GATE_HMAC"], signed: false },
    });
    const [got] = receiver.requests("/missing");
    expect(got?.headers.authorization).toBeUndefined();
    expect(got?.headers["x-pi-teams-signature"]).toBeUndefined();
    expect(got?.headers["x-api-key"]).toBe("k-123456");
  });

  it("leaves out the context headers whose value is unknown (idle without a task or member)", async () => {
    receiver.route("/idle", json(200, ""));
    const invocation: HookInvocation = {
      event: "idle",
      teamId: "tëam",
      teamDir: "/tmp/x",
      taskListId: "t",
      style: "normal",
      completedTask: null,
    };
    await runHandler(handler("/idle"), invocation, { timeoutMs: 5_000, env: {} });
    const [got] = receiver.requests("/idle");
    expect(got?.headers["x-pi-teams-hook-task-id"]).toBeUndefined();
    expect(got?.headers["x-pi-teams-hook-member"]).toBeUndefined();
    expect(got?.headers["x-pi-teams-hook-event-key"]).toBeUndefined();
    // A value outside visible ASCII travels percent-encoded (the body has it exactly).
    expect(got?.headers["x-pi-teams-hook-team-id"]).toBe("t%C3%ABam");
  });

  it("a receiver that echoes the secret back never gets it into the result", async () => {
    receiver.route("/echo", (req, res) =>
      res.writeHead(401, { "content-type": "text/plain" }).end(`bad token: ${String(req.headers.authorization)}\n`),
    );
    const result = await runHandler(
      handler("/echo", { secretHeaders: { Authorization: "CI_GATE_TOKEN" } }),
      makeInvocation(),
      { timeoutMs: 5_000, env: { CI_GATE_TOKEN: SECRET } },
    );
    expect(result).toMatchObject({
      outcome: "error",
      errorKind: "http",
      error: "HTTP 401 Unauthorized: bad token: [redacted]",
      stdout: "bad token: [redacted]\n",
    });
    expect(JSON.stringify(result)).not.toContain(SECRET);
  });

  it("a secret echoed JSON-escaped (PHP's \\/), percent-encoded or in the reason phrase is redacted too", async () => {
    // A base64 token holds `/` and `+`; a debug endpoint answers the request's headers as JSON.
    const token = 'Zm9v/YmFy+"q"\\x';
    receiver.route("/echo-encoded", (req, res) => {
      const got = String(req.headers.authorization);
      res.statusMessage = `Refused ${got}`;
      const php = JSON.stringify({ authorization: got }).replaceAll("/", "\\/");
      res
        .writeHead(403, { "content-type": "application/json" })
        .end(`${php} ${JSON.stringify(got)} ${encodeURIComponent(got)}\n`);
    });
    const result = await runHandler(
      handler("/echo-encoded", { secretHeaders: { Authorization: "CI_GATE_TOKEN" } }),
      makeInvocation(),
      { timeoutMs: 5_000, env: { CI_GATE_TOKEN: token } },
    );
    expect(result.http?.statusText).toBe("Refused [redacted]");
    expect(result.stdout).toBe('{"authorization":"[redacted]"} "[redacted]" [redacted]\n');
    expect(result.error).toBe('HTTP 403 Refused [redacted]: {"authorization":"[redacted]"} "[redacted]" [redacted]');
    const recorded = JSON.stringify(result);
    for (const form of ["Zm9v", "YmFy", encodeURIComponent(token)]) expect(recorded).not.toContain(form);
  });

  it("a secret that is short, or also in the task's subject: redacted where it stands, never inside words or in our own words", async () => {
    receiver.route("/echo-short", (req, res, body) => {
      const subject = (JSON.parse(body.toString("utf8")) as { task: { subject: string } }).task.subject;
      const reason = `task "${subject}" refused for key ${String(req.headers["x-api-key"])}`;
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ decision: "deny", reason, message: `token ${String(req.headers.authorization)}` }));
    });
    const invocation = makeInvocation({ task: { subject: "rotate the s3cr3t-token-value today" } });
    const def = handler("/echo-short", {
      secretHeaders: { Authorization: "CI_GATE_TOKEN", "X-Api-Key": "CI_API_KEY" },
    });
    const result = await runHandler(def, invocation, {
      timeoutMs: 5_000,
      env: { CI_GATE_TOKEN: SECRET, CI_API_KEY: "t" },
    });
    // The long secret goes wherever it is (the subject too: it is the secret); the 1-character one only where it
    // stands alone.
    expect(result.verdict).toMatchObject({
      decision: "deny",
      reason: 'task "rotate the [redacted] today" refused for key [redacted]',
      message: "token [redacted]",
    });
    // Our own words are never redacted: a secret "1" leaves the status and the URL alone.
    receiver.route("/down-1", json(401, "", "Unauthorized"));
    const down = await runHandler(handler("/down-1", { secretHeaders: { Authorization: "ONE" } }), makeInvocation(), {
      timeoutMs: 5_000,
      env: { ONE: "1" },
    });
    expect(down.error).toBe("HTTP 401 Unauthorized");
    const port = await closedPort();
    const refused = await runHandler(
      HandlerSchema.parse({
        name: "gone",
        events: ["task_completed"],
        url: `http://127.0.0.1:${port}/x`,
        secretHeaders: { Authorization: "ONE" },
      }),
      makeInvocation(),
      { timeoutMs: 5_000, env: { ONE: "1" } },
    );
    expect(refused.error).toMatch(new RegExp(`^no connection to http://127\\.0\\.0\\.1:${port}: `));
  });

  it("keeps the connection alive: two requests, one connection", async () => {
    receiver.route("/keep", json(200, '{"decision":"allow"}'));
    const before = receiver.connections();
    for (let i = 0; i < 2; i++) await runHandler(handler("/keep"), makeInvocation(), { timeoutMs: 5_000, env: {} });
    const got = receiver.requests("/keep");
    expect(got).toHaveLength(2);
    expect(got[0]?.connection).toBe(got[1]?.connection);
    expect(receiver.connections() - before).toBeLessThanOrEqual(1);
  });

  it("a kept-alive connection the receiver closed, found closed only as a request goes out, is not a failure: sent once more on a new one", async () => {
    // The receiver drops (without an answer) any request that comes on a connection it answered before:
    // what a server that closes idle connections without saying so does when the close and a request cross.
    const answeredOn = new Set<number>();
    receiver.route("/idle-close", (req, res) => {
      const connection = receiver.requests("/idle-close").at(-1)?.connection ?? 0;
      if (answeredOn.has(connection)) return void req.socket.destroy();
      answeredOn.add(connection);
      json(200, '{"decision":"allow"}')(req, res);
    });
    const first = await runHandler(handler("/idle-close"), makeInvocation(), { timeoutMs: 5_000, env: {} });
    const second = await runHandler(handler("/idle-close"), makeInvocation(), {
      timeoutMs: 5_000,
      env: {},
      runId: "run-2",
    });
    expect(first).toMatchObject({ outcome: "passed" });
    expect(first.http?.resent).toBeUndefined();
    expect(second, second.error).toMatchObject({ outcome: "passed", http: { status: 200, resent: true } });
    // The dropped request and the one sent again carry the same run id: a receiver can tell them apart from two runs.
    const got = receiver.requests("/idle-close");
    expect(got.map((r) => r.headers["x-pi-teams-hook-run-id"]).slice(-2)).toEqual(["run-2", "run-2"]);
    expect(got.at(-1)?.connection).not.toBe(got.at(-2)?.connection);
  });
});

describe("in an event's chain (invokeEvent)", () => {
  let team: TempTeam;
  let globalDir: string;
  beforeEach(async () => {
    team = await makeTempTeam({ teamId: "http", tasks: [makeTask({ id: "1", status: "completed", owner: "alice" })] });
    globalDir = path.join(team.teamsRoot, "_hooks");
    fs.mkdirSync(globalDir, { recursive: true });
  });
  afterEach(async () => {
    await team.cleanup();
  });

  function fileHook(name: string, body: string): void {
    fs.writeFileSync(path.join(globalDir, name), `#!/usr/bin/env bash\n${body}\n`, { mode: 0o755 });
  }

  /**
   * `handlers`, `failureMode`, `limits` and `timeoutMs` are the team's settings (config.json `hooks`, `--timeout-ms`).
   */
  type Over = Partial<InvokeRequest> & {
    handlers?: HandlerDef[];
    failureMode?: FailureMode;
    limits?: HookLimits;
    timeoutMs?: number;
  };

  function request({ handlers, failureMode, limits, timeoutMs = 5_000, ...over }: Over = {}): InvokeRequest {
    const hooks = {
      ...(handlers ? { handlers } : {}),
      ...(failureMode ? { failureMode } : {}),
      ...(limits ? { limits } : {}),
    };
    return eventRequest({ team, hooksDir: globalDir, settings: { hooks, timeoutMs }, env: {} }, over);
  }

  it("runs after the file hooks, in declaration order, each with its own log", async () => {
    fileHook("on_task_completed.sh", 'echo "$PI_TEAMS_HOOK_RUN_ID" > "$PI_TEAMS_TEAM_DIR/file-ran"');
    receiver.route("/chain-a", json(200, '{"decision":"allow"}'));
    receiver.route("/chain-b", json(200, ""));
    const before = receiver.requests().length;
    const outcome = await invokeEvent(
      request({
        runId: "ev-1",
        handlers: [
          handler("/chain-a", { name: "a" }),
          handler("/chain-b", { name: "b" }),
          handler("/chain-c", { name: "c", events: ["idle"] }),
        ],
      }),
    );
    expect(outcome.runs.map((r) => [r.hook.name, r.result.outcome, r.result.runId])).toEqual([
      ["on_task_completed.sh", "passed", "ev-1"],
      ["http:a", "passed", "ev-1.2"],
      ["http:b", "passed", "ev-1.3"],
    ]);
    expect(
      receiver
        .requests()
        .slice(before)
        .map((r) => r.path),
    ).toEqual(["/chain-a", "/chain-b"]);
    expect(receiver.requests("/chain-a")[0]?.headers["x-pi-teams-hook-run-id"]).toBe("ev-1.2");
    const logs = await Promise.all((await listHookLogs(team.teamDir)).map(async (e) => (await readHookLog(e.file)).ok));
    expect(logs).toEqual([true, true, true]);
  });

  it("is not asked when a file hook denied a task event first", async () => {
    fileHook("on_task_completed.sh", "exit 1");
    receiver.route("/not-asked", json(200, ""));
    const outcome = await invokeEvent(request({ handlers: [handler("/not-asked")] }));
    expect(outcome.runs.map((r) => r.hook.name)).toEqual(["on_task_completed.sh"]);
    expect(receiver.requests("/not-asked")).toEqual([]);
  });

  it.each([
    ["a 503, failure mode closed", 503, "", "closed", "failed"],
    ["a 503, failure mode open", 503, "", "open", "passed"],
    ["an explicit deny, failure mode open", 200, '{"decision":"deny","reason":"no"}', "open", "failed"],
    ["a malformed 2xx, failure mode closed", 200, "not json", "closed", "passed"],
  ] as const)("%s counts as %s", async (_name, status, body, mode, counted) => {
    const route = `/mode-${mode}-${status}-${body.length}`;
    receiver.route(route, json(status, body));
    const outcome = await invokeEvent(request({ failureMode: mode, handlers: [handler(route, { name: "ci" })] }));
    expect(outcome.counted).toEqual({ state: counted });
    expect(outcome.hook?.name).toBe("http:ci");
    if (status === 503)
      expect(outcome.summary).toBe(
        mode === "open" ? "allowed (failure mode open): HTTP 503 Service Unavailable" : "HTTP 503 Service Unavailable",
      );
  });

  it("a timed-out handler's summary names its own timeout, not the run's", async () => {
    receiver.route("/slow-summary", () => undefined);
    const outcome = await invokeEvent(
      request({ timeoutMs: 60_000, handlers: [handler("/slow-summary", { name: "slow", timeoutMs: 1_000 })] }),
    );
    expect(outcome.result).toMatchObject({ errorKind: "http", timedOut: true });
    expect(outcome.summary).toBe("no answer within 1000ms (the handler's timeoutMs, or the chain's deadline)");
  });

  it("is cut at the chain's deadline (a limit, closed) when that comes before its own timeout", async () => {
    receiver.route("/slow-deadline", () => undefined);
    const limits = { maxHooksPerEvent: 16, maxPayloadBytes: 1024 * 1024, chainDeadlineMs: 1_000 };
    const outcome = await invokeEvent(
      request({ failureMode: "open", limits, handlers: [handler("/slow-deadline", { timeoutMs: 30_000 })] }),
    );
    expect(outcome.result).toMatchObject({ outcome: "error", errorKind: "limit", timedOut: true });
    expect(outcome.counted).toEqual({ state: "failed" });
  });
});

describe("a handler as a gate of the trust record", () => {
  const base: HandlerInput = {
    name: "ci",
    events: ["task_completed", "idle"],
    url: "https://ci.example.com/hook",
    secretHeaders: { Authorization: "CI_GATE_TOKEN" },
  };

  it("hashes its definition: key order, event order and empty maps do not count; every field that changes where or how it posts does", () => {
    const sha = (input: HandlerInput): string => handlerFingerprint(HandlerSchema.parse(input)).sha256;
    const same = sha(base);
    expect(sha({ ...base, events: ["idle", "task_completed"] })).toBe(same);
    expect(sha({ ...base, headers: {} })).toBe(same);
    expect(
      sha({ url: base.url, secretHeaders: base.secretHeaders, events: base.events, name: "ci", timeoutMs: 10_000 }),
    ).toBe(same);
    for (const changed of [
      { url: "https://ci.example.com/other" },
      { events: ["task_completed"] as const },
      { headers: { "X-Skip": "1" } },
      { secretHeaders: { Authorization: "OTHER_VARIABLE" } },
      { signingSecretEnv: "CI_GATE_HMAC" },
      { timeoutMs: 20_000 },
    ]) {
      expect(sha({ ...base, ...changed } as HandlerInput), JSON.stringify(changed)).not.toBe(same);
    }
    // Variable names only: the text never holds a value, whatever the environment.
    expect(handlerDefinitionText(HandlerSchema.parse(base))).toBe(
      '{\n  "events": [\n    "idle",\n    "task_completed"\n  ],\n  "name": "ci",\n  "secretHeaders": {\n    "Authorization": "CI_GATE_TOKEN"\n  },\n  "timeoutMs": 10000,\n  "url": "https://ci.example.com/hook"\n}\n',
    );
  });

  it("new and changed are untrusted_hook; one gone is gate_missing for the events it was trusted for only", async () => {
    const handlerDef = HandlerSchema.parse(base);
    const layers = { global: "/nonexistent/_hooks", team: null };
    const chainOf = (event: HookEventName, handlers: HandlerDef[]) =>
      discoverChain({ globalDir: layers.global, teamDir: null, event, handlers });
    const check = async (event: HookEventName, handlers: HandlerDef[], record: TrustRecord) =>
      checkChainTrust(await chainOf(event, handlers), event, layers, {
        record,
        allowInsecure: false,
        uid: null,
      }).problems.map((p) => [p.kind, p.path]);

    expect(await check("task_completed", [handlerDef], { version: 1, gates: {} })).toEqual([
      ["untrusted_hook", "http:ci"],
    ]);
    const found = entryOf(
      (await chainOf("task_completed", [handlerDef])).hooks[0] as ChainHook,
      "2026-01-01T00:00:00.000Z",
      "test",
      "task_completed",
    );
    const record: TrustRecord = { version: 1, gates: { "http:ci": found?.entry as TrustEntry } };
    expect(found?.entry).toMatchObject({ mode: 0, events: ["task_completed", "idle"] });
    expect(await check("task_completed", [handlerDef], record)).toEqual([]);
    expect(
      await check("task_completed", [HandlerSchema.parse({ ...base, url: "https://evil.example/allow" })], record),
    ).toEqual([["untrusted_hook", "http:ci"]]);
    expect(await check("task_completed", [], record)).toEqual([["gate_missing", "http:ci"]]);
    expect(await check("idle", [], record)).toEqual([["gate_missing", "http:ci"]]);
    expect(await check("task_failed", [], record)).toEqual([]); // never trusted for task_failed
    // Its events narrowed: changed where it still runs, missing where it no longer does.
    const narrowed = [HandlerSchema.parse({ ...base, events: ["task_completed"] })];
    expect(await check("task_completed", narrowed, record)).toEqual([["untrusted_hook", "http:ci"]]);
    expect(await check("idle", narrowed, record)).toEqual([["gate_missing", "http:ci"]]);
    // An entry without events (hand-written, or from before events were recorded) stands for every
    // event but task_started, which came later: it does not turn a start gate on.
    const { events: _events, ...bare } = record.gates["http:ci"] as TrustEntry;
    const old: TrustRecord = { version: 1, gates: { "http:ci": bare } };
    expect(await check("task_failed", [], old)).toEqual([["gate_missing", "http:ci"]]);
    expect(await check("task_started", [], old)).toEqual([]);
    expect(
      await check("task_started", [], { version: 1, gates: { "http:ci": { ...bare, events: ["task_started"] } } }),
    ).toEqual([["gate_missing", "http:ci"]]);
  });

  it("trust shows a new handler whole, then records it by its gate name; the record keeps its events", async () => {
    const team = await makeTempTeam({ teamId: "trusting", config: { hooks: { handlers: [base] } } });
    try {
      const out: string[] = [];
      const io = {
        stdout: (t: string) => void out.push(t),
        stderr: (t: string) => void out.push(t),
        env: {},
        cwd: team.teamsRoot,
        isTTY: false,
        stopSignal: new Promise<string>(() => undefined),
      };
      fs.mkdirSync(path.join(team.teamDir, "hook-state"), { recursive: true });
      fs.writeFileSync(path.join(team.teamDir, "hook-state", "trust.json"), '{"version":1,"gates":{}}\n');
      expect(await runCli(["trust", "--team-dir", team.teamDir], io)).toBe(1);
      const shown = out.join("");
      expect(shown).toMatch(
        /^new {6}http:ci \(task_completed, idle\): sha256 [0-9a-f]{64}\n {9}\{\n {9} {2}"events": \[\n/,
      );
      expect(shown).not.toContain("mode");
      out.length = 0;
      expect(await runCli(["trust", "--team-dir", team.teamDir, "http:ci", "--yes"], io)).toBe(0);
      const record = JSON.parse(
        fs.readFileSync(path.join(team.teamDir, "hook-state", "trust.json"), "utf8"),
      ) as TrustRecord;
      expect(Object.keys(record.gates)).toEqual(["http:ci"]);
      expect(record.gates["http:ci"]?.events).toEqual(["task_completed", "idle"]);
      // The copy of the trusted definition is kept, for a later diff.
      expect(
        fs.readFileSync(
          path.join(team.teamDir, "hook-state", "trusted", record.gates["http:ci"]?.sha256 ?? ""),
          "utf8",
        ),
      ).toBe(handlerDefinitionText(HandlerSchema.parse(base)));
    } finally {
      await team.cleanup();
    }
  });
});
