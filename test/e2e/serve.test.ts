/**
 * `pi-teams-hooks serve` as a real process on 127.0.0.1 with real requests: every answer the API
 * gives (200, 202, 400, 401, 403, 404, 405, 409, 413, 429), keys without the scope, for another team,
 * outside their templates, revoked while the server runs; a template rendered with a value that
 * holds `{{parameters.x}}`; retries with an Idempotency-Key. One server for the whole file.
 */
import { request } from "node:http";
import { readFile, readdir, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, runBin } from "../helpers/leader-rig.js";
import { type ServeProcess, api, codeOf, createKey, makeTeamsRoot, startServe } from "../helpers/serve-rig.js";

const TEMPLATES = {
  deploy: {
    subject: "Deploy {{parameters.branch}}",
    description:
      "Deploy {{parameters.branch}} to {{parameters.env}} with {{parameters.flags}} (dry run: {{parameters.dry}})",
    owner: "ada",
    parameters: {
      branch: { type: "string", required: true },
      env: { type: "string", required: true },
      flags: { type: "array" },
      dry: { type: "boolean" },
    },
  },
  review: { subject: "Review {{parameters.pr}}", parameters: { pr: { type: "number", required: true } } },
};

let root: string;
let cleanup: () => Promise<void>;
let serve: ServeProcess;
const keys: Record<string, string> = {};
const TASKS = "/api/v1/teams/alpha/tasks";

beforeAll(async () => {
  await ensureBuilt();
  ({ root, cleanup } = await makeTeamsRoot({
    alpha: { hooks: { templates: TEMPLATES } },
    beta: { hooks: { templates: TEMPLATES } },
  }));
  const specs: Record<string, string[]> = {
    full: ["--scopes", "tasks:create,tasks:read", "--teams", "alpha", "--all-templates"],
    reader: ["--scopes", "tasks:read", "--teams", "alpha", "--all-templates"],
    beta: ["--scopes", "tasks:create,tasks:read", "--teams", "beta", "--all-templates"],
    deployOnly: ["--scopes", "tasks:create,tasks:read", "--teams", "alpha", "--templates", "DEPLOY"],
    ghost: ["--scopes", "tasks:create,tasks:read", "--teams", "alpha,ghost", "--all-templates"],
    slow: ["--scopes", "tasks:read", "--teams", "alpha", "--all-templates", "--rate-limit", "3/min"],
    doomed: ["--scopes", "tasks:read", "--teams", "alpha", "--all-templates"],
  };
  for (const [name, args] of Object.entries(specs)) keys[name] = await createKey(root, ["--name", name, ...args]);
  serve = await startServe(root);
}, 240_000);

afterAll(async () => {
  if (serve) expect(await serve.stop()).toMatchObject({ code: 0, signal: null });
  await cleanup?.();
});

describe("keys", () => {
  it("create prints the key alone on its last line; the file, 0600 in a 0700 folder, keeps a salted hash only", async () => {
    const { code, stdout } = await runBin([
      "serve",
      "keys",
      "create",
      "--teams-root",
      root,
      "--name",
      "shown",
      "--scopes",
      "tasks:read",
      "--teams",
      "alpha",
      "--all-templates",
    ]);
    expect(code).toBe(0);
    const key = stdout.trimEnd().split("\n").pop() ?? "";
    expect(key).toMatch(/^pth_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    expect(stdout.split("\n").filter((line) => line.includes(key))).toEqual([key]);
    const file = path.join(root, ".pi-teams-hooks", "keys.json");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(path.dirname(file))).mode & 0o777).toBe(0o700);
    const text = await readFile(file, "utf8");
    // no secret part of any key
    for (const k of [key, ...Object.values(keys)]) expect(text).not.toContain(k.slice(17));
    const list = await runBin(["serve", "keys", "list", "--teams-root", root]);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(key.slice(0, 16)); // the prefix pth_<id>
    expect(list.stdout).not.toContain(key);
    const json = await runBin(["serve", "keys", "list", "--teams-root", root, "--json"]);
    expect((JSON.parse(json.stdout) as Array<{ name: string }>).map((k) => k.name)).toContain("shown");
  });

  it("refuses bad specs and a name taken (exit 2), and revoking an unknown name (exit 1)", async () => {
    const create = (args: string[]) => runBin(["serve", "keys", "create", "--teams-root", root, ...args]);
    expect(
      (await create(["--name", "x", "--scopes", "tasks:nope", "--teams", "alpha", "--all-templates"])).stderr,
    ).toMatch(/unknown scope "tasks:nope"/);
    expect((await create(["--name", "x", "--scopes", "tasks:read", "--teams", "_hooks", "--all-templates"])).code).toBe(
      2,
    );
    expect((await create(["--name", "x", "--scopes", "tasks:read"])).stderr).toMatch(/--teams is required/);
    expect(
      (await create(["--name", "full", "--scopes", "tasks:read", "--teams", "alpha", "--all-templates"])).stderr,
    ).toMatch(/exists already/);
    const revoke = await runBin(["serve", "keys", "revoke", "nobody", "--teams-root", root]);
    expect(revoke).toMatchObject({ code: 1 });
    expect(revoke.stderr).toMatch(/no key named "nobody"/);
  });
});

describe("serve", () => {
  it("prints the real port once it listens; /healthz needs no key", async () => {
    expect(serve.url).toMatch(/^http:\/\/127\.0\.0\.1:[1-9]\d*$/);
    expect(await api(serve.url, "GET", "/healthz")).toMatchObject({ status: 200, json: { status: "ok" } });
  });

  it("--help names every flag the command accepts; a flag of another form is a usage error", async () => {
    const { code, stdout } = await runBin(["serve", "--help"]);
    expect(code).toBe(0);
    for (const flag of [
      "--teams-root",
      "--listen",
      "--allow-remote",
      "--rate-limit",
      "keys create",
      "--name",
      "--scopes",
      "--teams ",
      "--templates",
      "keys list",
      "--json",
      "keys revoke NAME",
    ]) {
      expect(stdout).toContain(flag);
    }
    expect((await runBin(["--help"])).stdout).toMatch(/^ {2}serve +the task API/m);
    const wrong = await runBin(["serve", "keys", "list", "--teams-root", root, "--name", "x"]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain("--name does not apply to serve keys list");
  });

  it("refuses an address beyond loopback without --allow-remote, and a teams root that is not there", async () => {
    const remote = await runBin(["serve", "--teams-root", root, "--listen", "0.0.0.0:0"]);
    expect(remote.code).toBe(2);
    expect(remote.stderr).toMatch(/not a loopback address.*--allow-remote.*TLS/);
    const missing = await runBin(["serve", "--teams-root", path.join(root, "nope")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no such directory/);
  });
});

describe("answers", () => {
  it("202: the task is written, rendered in one pass (a value's {{parameters.x}} stays literal), its owner told", async () => {
    const body = {
      template: "Deploy",
      parameters: { BRANCH: "fix-{{parameters.env}}", env: "prod", flags: ["-v", 2], dry: false },
    };
    const created = await api(serve.url, "POST", TASKS, { key: keys.full, body });
    expect(created).toMatchObject({ status: 202, json: { status: "pending" } });
    const id = String(created.json.taskId);
    expect(created.json.statusUrl).toBe(`${TASKS}/${id}`);
    expect(created.headers.get("location")).toBe(`${TASKS}/${id}`);
    const task = JSON.parse(await readFile(path.join(root, "alpha", "tasks", "alpha", `${id}.json`), "utf8")) as Record<
      string,
      unknown
    >;
    expect(task).toMatchObject({
      id,
      subject: "Deploy fix-{{parameters.env}}",
      description: 'Deploy fix-{{parameters.env}} to prod with ["-v",2] (dry run: false)',
      owner: "ada",
      status: "pending",
      metadata: {
        taskApi: {
          template: "deploy",
          key: "full",
          parameters: { branch: "fix-{{parameters.env}}", env: "prod", flags: ["-v", 2], dry: false },
        },
      },
    });
    const inbox = JSON.parse(
      await readFile(path.join(root, "alpha", "mailboxes", "alpha", "inboxes", "ada.json"), "utf8"),
    ) as Array<{ from: string; text: string }>;
    const told = inbox
      .map((m): Record<string, unknown> => ({ from: m.from, ...(JSON.parse(m.text) as Record<string, unknown>) }))
      .filter((m) => m.taskId === id);
    expect(told).toEqual([
      expect.objectContaining({
        from: "team-lead",
        type: "task_assignment",
        subject: task.subject,
        description: task.description,
        assignedBy: "team-lead",
      }),
    ]);

    const status = await api(serve.url, "GET", `${TASKS}/${id}`, { key: keys.reader });
    expect(status).toMatchObject({ status: 200 });
    expect(status.json).toEqual({
      id,
      status: "pending",
      qualityGateStatus: null,
      gateState: { state: "unjudged" },
      startDenial: null,
      updatedAt: task.updatedAt,
      decidingRun: null,
      createdBy: { kind: "api", template: "deploy", key: "full" },
    });
    // A gate's verdict shows on the next poll.
    await writeFile(
      path.join(root, "alpha", "tasks", "alpha", `${id}.json`),
      `${JSON.stringify({ ...task, metadata: { qualityGateStatus: "passed" } }, null, 2)}\n`,
    );
    expect((await api(serve.url, "GET", `${TASKS}/${id}`, { key: keys.reader })).json).toMatchObject({
      qualityGateStatus: "passed",
    });
  });

  it("401: no key, a malformed one, a made-up one, another scheme — the same answer", async () => {
    const fake = `${keys.full?.slice(0, 17)}${"A".repeat(43)}`;
    const tries: Array<Record<string, string>> = [
      {},
      { Authorization: "Bearer nope" },
      { Authorization: `Bearer ${fake}` },
      { Authorization: `Basic ${keys.full}` },
    ];
    for (const headers of tries) {
      const answer = await api(serve.url, "GET", `${TASKS}/1`, { headers });
      expect(answer).toMatchObject({ status: 401, json: { error: { code: "unauthorized" } } });
      expect(answer.headers.get("www-authenticate")).toMatch(/^Bearer/);
    }
  });

  it("403: without the scope, for another team (existing or not: the same answer), outside its templates", async () => {
    const deploy = { template: "deploy", parameters: { branch: "b", env: "e" } };
    expect(codeOf(await api(serve.url, "POST", TASKS, { key: keys.reader, body: deploy }))).toBe("scope_not_allowed");
    const beta = await api(serve.url, "POST", "/api/v1/teams/beta/tasks", { key: keys.full, body: deploy });
    const nowhere = await api(serve.url, "POST", "/api/v1/teams/nowhere/tasks", { key: keys.full, body: deploy });
    expect([beta.status, nowhere.status]).toEqual([403, 403]);
    expect(codeOf(beta)).toBe("team_not_allowed");
    expect(beta.json.error).toEqual({
      ...(nowhere.json.error as object),
      message: (nowhere.json.error as { message: string }).message.replace("nowhere", "beta"),
    });
    expect((await api(serve.url, "GET", "/api/v1/teams/alpha/tasks/1", { key: keys.beta })).status).toBe(403);
    expect(
      codeOf(
        await api(serve.url, "POST", TASKS, {
          key: keys.deployOnly,
          body: { template: "review", parameters: { pr: 1 } },
        }),
      ),
    ).toBe("template_not_allowed");
    // A template-limited key reads only tasks of its templates.
    const review = await api(serve.url, "POST", TASKS, {
      key: keys.full,
      body: { template: "review", parameters: { pr: 7 } },
    });
    expect(
      codeOf(await api(serve.url, "GET", `${TASKS}/${String(review.json.taskId)}`, { key: keys.deployOnly })),
    ).toBe("template_not_allowed");
    const mine = await api(serve.url, "POST", TASKS, { key: keys.deployOnly, body: deploy });
    expect(await api(serve.url, "GET", `${TASKS}/${String(mine.json.taskId)}`, { key: keys.deployOnly })).toMatchObject(
      { status: 200 },
    );
  });

  it("404 inside the key's scope: task, template, team; an unknown route; 405 for a wrong method", async () => {
    expect(codeOf(await api(serve.url, "GET", `${TASKS}/9999`, { key: keys.full }))).toBe("task_not_found");
    expect(codeOf(await api(serve.url, "GET", `${TASKS}/..%2F..%2Fconfig`, { key: keys.full }))).toBe("task_not_found");
    expect(codeOf(await api(serve.url, "POST", TASKS, { key: keys.full, body: { template: "nope" } }))).toBe(
      "template_not_found",
    );
    expect(
      codeOf(
        await api(serve.url, "POST", "/api/v1/teams/ghost/tasks", { key: keys.ghost, body: { template: "deploy" } }),
      ),
    ).toBe("team_not_found");
    expect(await api(serve.url, "GET", "/api/v2/else", { key: keys.full })).toMatchObject({
      status: 404,
      json: { error: { code: "not_found" } },
    });
    const wrong = await api(serve.url, "DELETE", `${TASKS}/1`, { key: keys.full });
    expect(wrong).toMatchObject({ status: 405, json: { error: { code: "method_not_allowed" } } });
    expect(wrong.headers.get("allow")).toBe("GET");
  });

  it("400: bad JSON, not the request's shape, every bad parameter named, a bad Idempotency-Key", async () => {
    expect(codeOf(await api(serve.url, "POST", TASKS, { key: keys.full, body: '{"template": "deploy",' }))).toBe(
      "invalid_json",
    );
    expect(codeOf(await api(serve.url, "POST", TASKS, { key: keys.full, body: "[1]" }))).toBe("invalid_request");
    const shape = await api(serve.url, "POST", TASKS, {
      key: keys.full,
      body: { template: 3, parameters: [], extra: 1 },
    });
    expect(shape).toMatchObject({ status: 400, json: { error: { code: "invalid_request" } } });
    // Each problem as config --json and doctor --json give theirs: {kind, path, message}.
    expect((shape.json.error as { problems: unknown[] }).problems).toEqual([
      { kind: "request_field", path: "extra", message: "extra: unknown field (fields: template, parameters)" },
      {
        kind: "request_field",
        path: "template",
        message: "template: missing, expected the slug of one of the team's templates",
      },
      { kind: "request_field", path: "parameters", message: "parameters: expected an object" },
    ]);
    expect((shape.json.error as { message: string }).message).toBe(
      "extra: unknown field (fields: template, parameters); template: missing, expected the slug of one of the team's templates; parameters: expected an object",
    );
    const params = await api(serve.url, "POST", TASKS, {
      key: keys.full,
      body: { template: "deploy", parameters: { branch: 1, dry: "no", colour: "red" } },
    });
    expect(params).toMatchObject({ status: 400, json: { error: { code: "invalid_parameters" } } });
    expect((params.json.error as { problems: unknown[] }).problems).toEqual([
      { kind: "request_parameter", path: "parameters.branch", message: "branch: expected string, got number" },
      { kind: "request_parameter", path: "parameters.dry", message: "dry: expected boolean, got string" },
      {
        kind: "request_parameter",
        path: "parameters.colour",
        message: "colour: unknown parameter (declared: branch, env, flags, dry)",
      },
      { kind: "request_parameter", path: "parameters.env", message: "env: missing (required, string)" },
    ]);
    const idem = await api(serve.url, "POST", TASKS, {
      key: keys.full,
      body: { template: "review", parameters: { pr: 1 } },
      headers: { "Idempotency-Key": "x".repeat(256) },
    });
    expect(codeOf(idem)).toBe("invalid_idempotency_key");
  });

  it("413 over 64 KiB, declared or streamed", async () => {
    const big = JSON.stringify({ template: "review", parameters: { pr: 1 }, pad: "x".repeat(70_000) });
    expect(await api(serve.url, "POST", TASKS, { key: keys.full, body: big })).toMatchObject({
      status: 413,
      json: { error: { code: "payload_too_large" } },
    });
    // Chunked, without Content-Length: cut off at the cap.
    const streamed = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        `${serve.url}${TASKS}`,
        { method: "POST", headers: { Authorization: `Bearer ${keys.full}`, "Content-Type": "application/json" } },
        (res) => {
          let text = "";
          res
            .setEncoding("utf8")
            .on("data", (c: string) => (text += c))
            .on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on("error", reject);
      for (let i = 0; i < 10; i++) req.write("x".repeat(10_000));
      req.end();
    });
    expect(streamed.status).toBe(413);
    expect(JSON.parse(streamed.body)).toMatchObject({ error: { code: "payload_too_large" } });
  });

  it("429 past the key's own rate, with Retry-After; other keys go on", async () => {
    const statuses: number[] = [];
    let limited: Awaited<ReturnType<typeof api>> | null = null;
    for (let i = 0; i < 4; i++) {
      const answer = await api(serve.url, "GET", `${TASKS}/9999`, { key: keys.slow });
      statuses.push(answer.status);
      if (answer.status === 429) limited = answer;
    }
    expect(statuses).toEqual([404, 404, 404, 429]);
    expect(codeOf(limited ?? { status: 0, headers: new Headers(), json: {} })).toBe("rate_limited");
    expect(Number(limited?.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect((await api(serve.url, "GET", `${TASKS}/9999`, { key: keys.reader })).status).toBe(404);
  });

  it("Idempotency-Key: a retry gets the same task, another body a 409, another key its own task", async () => {
    const body = { template: "review", parameters: { pr: 42 } };
    const headers = { "Idempotency-Key": "retry-42" };
    const first = await api(serve.url, "POST", TASKS, { key: keys.full, body, headers });
    // The same request in other words: key order, case of the template and of a parameter name.
    const again = await api(serve.url, "POST", TASKS, {
      key: keys.full,
      body: { parameters: { PR: 42 }, template: "REVIEW" },
      headers,
    });
    expect(first.status).toBe(202);
    expect(again).toMatchObject({ status: 202, json: first.json });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const conflict = await api(serve.url, "POST", TASKS, {
      key: keys.full,
      body: { template: "review", parameters: { pr: 43 } },
      headers,
    });
    expect(conflict).toMatchObject({ status: 409, json: { error: { code: "idempotency_conflict" } } });
    const other = await api(serve.url, "POST", TASKS, {
      key: keys.deployOnly,
      body: { template: "deploy", parameters: { branch: "b", env: "e" } },
      headers,
    });
    expect(other.status).toBe(202);
    expect(other.json.taskId).not.toBe(first.json.taskId);
    const tasks = await readdir(path.join(root, "alpha", "tasks", "alpha"));
    const made = tasks.filter((n) => n.endsWith(".json"));
    const withPr42 = await Promise.all(
      made.map(async (n) =>
        (await readFile(path.join(root, "alpha", "tasks", "alpha", n), "utf8")).includes('"pr": 42'),
      ),
    );
    expect(withPr42.filter(Boolean)).toHaveLength(1);
  });

  it("a key revoked while the server runs is refused from its next request", async () => {
    expect((await api(serve.url, "GET", `${TASKS}/1`, { key: keys.doomed })).status).toBe(200);
    const revoke = await runBin(["serve", "keys", "revoke", "doomed", "--teams-root", root]);
    expect(revoke).toMatchObject({ code: 0 });
    expect(await api(serve.url, "GET", `${TASKS}/1`, { key: keys.doomed })).toMatchObject({
      status: 401,
      json: { error: { code: "unauthorized" } },
    });
    // Whoever can write the teams root can change the keys: every change is said.
    expect(serve.stdout()).toMatch(
      /^key added: "shown" \(pth_[0-9a-f]{12}\): scopes tasks:read; teams alpha; templates \(all\)$/m,
    );
    expect(serve.stdout()).toMatch(/^key removed: "doomed" \(pth_[0-9a-f]{12}\)$/m);
  });

  it("said nothing of the keys on its output", () => {
    for (const key of Object.values(keys)) expect(serve.stdout() + serve.stderr()).not.toContain(key.slice(17));
    expect(serve.stderr()).toBe("");
  });
});
