/**
 * HTTP handlers that speak another API (docs/ci-gates.md), against a real receiver on 127.0.0.1: a
 * body template filled from the document the handler is shown and from its run, sent with the
 * handler's method and signed as sent; a `{{secret.…}}` read from the environment, named when
 * missing and redacted from what is kept; and `answer: "held"`, where any 2xx holds the gate (the
 * answer's `web_url` in the reason) and anything else is a hook error as before.
 */
import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareContext } from "../../extensions/teams-hooks/contract/hook-run.js";
import { HANDED_OFF, runHandler } from "../../extensions/teams-hooks/runner/http.js";
import { HandlerSchema, type HandlerDef, type HandlerInput } from "../../extensions/teams-hooks/settings/handlers.js";
import { startReceiver, type Receiver } from "../helpers/http-receiver.js";
import { makeInvocation } from "../helpers/invocation.js";

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

function handler(route: string, over: Partial<HandlerInput> = {}): HandlerDef {
  return HandlerSchema.parse({
    name: route.replace(/\W/g, "") || "h",
    events: ["task_completed", "task_failed"],
    url: `${receiver.url}${route}`,
    ...over,
  });
}

const answer =
  (status: number, body: string, headers: Record<string, string> = { "content-type": "application/json" }) =>
  (_req: unknown, res: import("node:http").ServerResponse) =>
    void res.writeHead(status, headers).end(body);

describe("a body template", () => {
  it("is sent instead of the document, with the handler's method, filled from the run and the document it is shown, and signed as sent", async () => {
    receiver.route("/tpl", answer(200, '{"decision":"allow"}'));
    const invocation = makeInvocation({
      task: { subject: 'Ship "it"\non Friday', metadata: { ci: { ref: "main" } } },
    });
    const def = handler("/tpl", {
      method: "PUT",
      signingSecretEnv: "HMAC",
      body: {
        ref: "{{task.metadata.ci.ref}}",
        variables: {
          RUN: "{{runId}}",
          KEY: "{{eventKey}}",
          TRY: "{{attempt}}",
          TEAM: "{{team.id}}",
          TASK: "{{task.id}}",
          SUBJECT: "{{task.subject}}",
          WHO: "{{member}}",
        },
      },
    });
    const result = await runHandler(def, invocation, {
      runId: "run-7",
      timeoutMs: 5_000,
      env: { HMAC: "k" },
      eventKey: "task_completed:3:t",
      attempt: 2,
    });
    expect(result).toMatchObject({
      outcome: "passed",
      command: ["PUT", `${receiver.url}/tpl`],
      http: { signed: true },
    });
    const [got] = receiver.requests("/tpl");
    expect(got?.method).toBe("PUT");
    expect(got?.headers["content-type"]).toBe("application/json");
    expect(got?.headers["x-pi-teams-hook-run-id"]).toBe("run-7");
    expect(JSON.parse(got?.body.toString("utf8") ?? "")).toEqual({
      ref: "main",
      variables: {
        RUN: "run-7",
        KEY: "task_completed:3:t",
        TRY: "2",
        TEAM: "demo",
        TASK: "3",
        SUBJECT: 'Ship "it"\non Friday',
        WHO: "alice",
      },
    });
    expect(got?.headers["x-pi-teams-signature"]).toBe(
      `sha256=${createHmac("sha256", "k")
        .update(got?.body ?? Buffer.alloc(0))
        .digest("hex")}`,
    );
  });

  it("fills from the handler's view: a projection hides the subject and hashes the event key it is given", async () => {
    receiver.route("/tpl-view", answer(204, ""));
    const view = { projection: ["task.id"], confidential: false };
    const context = prepareContext(makeInvocation(), view);
    await runHandler(handler("/tpl-view", { body: { s: "{{task.subject}}", i: "{{task.id}}" } }), makeInvocation(), {
      timeoutMs: 5_000,
      env: {},
      context,
    });
    expect(JSON.parse(receiver.requests("/tpl-view")[0]?.body.toString("utf8") ?? "")).toEqual({ s: "", i: "3" });
  });

  it("a {{secret.…}} is read from the environment, named when missing, and redacted from whatever the answer echoes", async () => {
    const TOKEN = "glptt-0123456789abcdef";
    receiver.route(
      "/tpl-secret",
      (_req, res, body) =>
        void res
          .writeHead(400, { "content-type": "application/json" })
          .end(`{"message":"bad request ${body.toString("utf8").replaceAll('"', "'")}"}`),
    );
    const def = handler("/tpl-secret", {
      body: { token: "{{secret.TRIGGER_TOKEN}}", other: "{{secret.UNSET_ONE}}" },
    });
    const result = await runHandler(def, makeInvocation(), { timeoutMs: 5_000, env: { TRIGGER_TOKEN: TOKEN } });
    const [got] = receiver.requests("/tpl-secret");
    expect(JSON.parse(got?.body.toString("utf8") ?? "")).toEqual({ token: TOKEN, other: "" });
    expect(result).toMatchObject({
      outcome: "error",
      errorKind: "http",
      http: { status: 400, missingSecrets: ["UNSET_ONE"] },
    });
    expect(result.error).toContain("[redacted]");
    expect(JSON.stringify(result)).not.toContain(TOKEN);
  });
});

describe('answer "held"', () => {
  it.each<[string, number, string, RegExp]>([
    ["GitHub's 204 No Content", 204, "", /^handed off to 127\.0\.0\.1:\d+ \(HTTP 204 No Content\)$/],
    [
      "GitLab's 201 with the pipeline",
      201,
      '{"id":4711,"status":"created","web_url":"https://gitlab.example.com/g/p/-/pipelines/4711"}',
      /^handed off to 127\.0\.0\.1:\d+ \(HTTP 201 Created\): https:\/\/gitlab\.example\.com\/g\/p\/-\/pipelines\/4711$/,
    ],
    [
      "a 200 whose body says deny: held all the same",
      200,
      '{"decision":"deny","reason":"no"}',
      /^handed off to 127\.0\.0\.1:\d+ \(HTTP 200 OK\)$/,
    ],
  ])("%s holds the gate: a deferral with code handed_off", async (_name, status, body, reason) => {
    const route = `/held-${status}-${receiver.requests().length}`;
    receiver.route(route, answer(status, body));
    const result = await runHandler(handler(route, { answer: "held" }), makeInvocation(), {
      timeoutMs: 5_000,
      env: {},
    });
    expect(result).toMatchObject({
      outcome: "deferred",
      verdict: { decision: "defer", code: HANDED_OFF, source: "http" },
      http: { status },
    });
    expect(result.verdict?.reason).toMatch(reason);
  });

  it.each<[string, number, string, RegExp]>([
    ["a 401", 401, '{"message":"401 Unauthorized"}', /^HTTP 401 Unauthorized: \{"message":"401 Unauthorized"\}$/],
    [
      "a 422",
      422,
      '{"message":"No more than 10 properties are allowed; 11 were supplied."}',
      /^HTTP 422 Unprocessable Entity: /,
    ],
    ["a redirect", 302, "", /not followed/],
  ])("%s is a hook error, as without it", async (_name, status, body, error) => {
    const route = `/held-err-${status}`;
    receiver.route(
      route,
      answer(status, body, { "content-type": "application/json", location: "https://elsewhere.example/" }),
    );
    const result = await runHandler(handler(route, { answer: "held" }), makeInvocation(), {
      timeoutMs: 5_000,
      env: {},
    });
    expect(result).toMatchObject({ outcome: "error", errorKind: "http" });
    expect(result.error).toMatch(error);
  });

  it("the answer's web_url is redacted like anything else it says", async () => {
    receiver.route("/held-echo", answer(201, '{"web_url":"https://ci.example/p/1?token=tok-abcdef0123456789"}'));
    const result = await runHandler(
      handler("/held-echo", { answer: "held", secretHeaders: { Authorization: "CI_TOKEN" } }),
      makeInvocation(),
      { timeoutMs: 5_000, env: { CI_TOKEN: "tok-abcdef0123456789" } },
    );
    expect(result.verdict?.reason).toMatch(/: https:\/\/ci\.example\/p\/1\?token=\[redacted\]$/);
  });
});
