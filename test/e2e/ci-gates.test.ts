/**
 * The recipes of docs/ci-gates.md, end to end with the built `watch` and `serve`: for GitHub
 * Actions, GitLab CI and Buildkite, the team's handler is the recipe's own `examples/ci/<ci>/
 * handler.json` (its vendor's host swapped for a stand-in on 127.0.0.1 that checks the request
 * against the vendor's documented shape and answers as the vendor does), the gate is held, and then
 * the recipe's own CI file plays the CI job: its report step (read from the YAML, its variables
 * filled as the CI fills them) runs in bash against the real `serve` and a real `gates:decide` key,
 * its curl command played by a stand-in first on PATH (test/fixtures/ci-bin/curl: the options the
 * recipes use, sent with node:http; the tests need no curl). The task ends passed or reopened as with
 * a file gate, the decision log names the held run, a CI retry of the same decision is answered again,
 * and another is refused (409).
 * The CI files themselves are checked too: valid YAML, with the events, jobs and steps the doc names.
 */
import { execFile } from "node:child_process";
import { request as httpRequest } from "node:http";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import {
  REPO_ROOT,
  type LeaderProcess,
  type LeaderRig,
  readLogs,
  readTaskFile,
  runBin,
  useLeaderRig,
  holdTask,
} from "../helpers/leader-rig.js";
import { startReceiver, type Received, type Receiver } from "../helpers/http-receiver.js";
import { teamKey, startServeFor, type ServeProcess } from "../helpers/serve-rig.js";
import { startTlsProxy } from "../helpers/tls-proxy.js";
import { makeTask, makeTempTeam, type TempTeam } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
let vendor: Receiver;
beforeAll(async () => {
  vendor = await startReceiver();
});
afterAll(async () => {
  await vendor.close();
});

const EXAMPLES = path.join(REPO_ROOT, "examples", "ci");
const ARGS = ["--reconcile-ms", "200"];
const DOC = path.join(REPO_ROOT, "docs", "ci-gates.md");

type Json = Record<string, unknown>;

/** The recipe's handler block, as the doc shows it, pointed at the stand-in instead of the vendor's host. */
async function recipeHandler(ci: string, vendorOrigin: string): Promise<{ text: string; handler: Json }> {
  const text = await readFile(path.join(EXAMPLES, ci, "handler.json"), "utf8");
  const handler = JSON.parse(text) as Json;
  const url = new URL(String(handler.url));
  expect(url.origin, "the recipe posts to the vendor's API").toBe(vendorOrigin);
  return { text, handler: { ...handler, url: `${vendor.url}${url.pathname}` } };
}

const GITHUB_SHELL = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c"];
/** The curl stand-in's folder, first on every step's PATH. */
const CI_BIN = path.join(REPO_ROOT, "test", "fixtures", "ci-bin");

/**
 * A command run as a CI runner runs a step: bash, the step's variables, nothing of the test's own
 * environment but PATH (the curl stand-in first), and a home of its own (`curlrc`: what the runner's machine knows of the
 * network, e.g. where a name resolves and which CA it trusts).
 */
async function runStep(
  script: string,
  env: Record<string, string>,
  shell: string[] = GITHUB_SHELL,
  curlrc = "",
): Promise<{ code: number; stdout: string; stderr: string }> {
  const home = await mkdtemp(path.join(os.tmpdir(), "ci-home-"));
  try {
    if (curlrc) await writeFile(path.join(home, ".curlrc"), curlrc);
    const [command = "bash", ...args] = shell;
    return await new Promise((resolve) => {
      execFile(
        command,
        [...args, script],
        {
          env: { HOME: home, ...env, PATH: `${CI_BIN}:${env.PATH ?? process.env.PATH ?? "/usr/bin:/bin"}` },
          timeout: 30_000,
        },
        (error, stdout, stderr) => {
          const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
          resolve({ code, stdout, stderr });
        },
      );
    });
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

/**
 * A team with one task at work, the recipe's handler, `serve` on its teams root, a `gates:decide` key, and the leader.
 */
async function setUp(
  rig: LeaderRig,
  handler: Json,
  env: Record<string, string>,
  onFinish: (fn: () => Promise<void>) => void,
): Promise<{ team: TempTeam; leader: LeaderProcess; serve: ServeProcess; key: string }> {
  const team = await rig.team({
    tasks: [makeTask({ id: "1", subject: 'Retry uploads on "503"', owner: "alice", status: "in_progress" })],
    config: { hooks: { failureAction: "reopen", handlers: [handler] } },
  });
  const key = await teamKey(team.teamsRoot, "ci", "gates:decide", team.teamId);
  const serve = await startServeFor({ onTestFinished: onFinish }, team.teamsRoot);
  const leader = await rig.leader(team, ARGS, { env });
  return { team, leader, serve, key };
}

/** The decision applied by the leader, and the two logs that link the held run and its decision. */
async function expectDecided(
  team: TempTeam,
  leader: LeaderProcess,
  runId: string,
  decision: "allow" | "deny",
): Promise<void> {
  const [applied] = await leader.waitForEvents(1, (e) => e.decision !== undefined);
  expect(applied?.decision).toMatchObject({ decision, by: "api:ci", deferredRunId: runId });
  const task = await readTaskFile(team, "1");
  if (decision === "allow") {
    expect(task).toMatchObject({
      status: "completed",
      metadata: {
        qualityGateStatus: "passed",
        qualityGateDecision: "allow",
        qualityGateDecidedBy: "api:ci",
        qualityGateDeferredRunId: runId,
      },
    });
  } else {
    expect(task).toMatchObject({
      status: "pending",
      metadata: {
        qualityGateStatus: "failed",
        qualityGateCode: "ci.failed",
        reopenedByQualityGateCount: 1,
        qualityGateDecision: "deny",
        qualityGateDecidedBy: "api:ci",
      },
    });
  }
  const logs = await readLogs(team.teamDir);
  expect(logs.map((l) => l.result.outcome)).toEqual(["deferred", decision === "allow" ? "passed" : "failed"]);
  expect(logs[0]?.result.runId).toBe(runId);
  expect(logs[0]?.result.verdict).toMatchObject({ decision: "defer", code: "handed_off", source: "http" });
  expect(logs[1]?.decision).toMatchObject({ decision, by: "api:ci", deferredRunId: runId, deferredLog: logs[0]?.file });
}

/** The one request the stand-in received on `route`. */
function received(route: string): Received & { json: Json } {
  const got = vendor.requests(route);
  expect(got, `requests on ${route}`).toHaveLength(1);
  const [first] = got;
  if (!first) throw new Error("no request");
  return { ...first, json: JSON.parse(first.body.toString("utf8")) as Json };
}

const isStringMap = (value: unknown): boolean =>
  value !== null &&
  typeof value === "object" &&
  !Array.isArray(value) &&
  Object.values(value).every((v) => typeof v === "string");

// ---------------------------------------------------------------------------------------------
// How each CI fills a step's variables

/**
 * `${{ a.b.c }}` of a GitHub Actions expression, for property paths only (anything else is not needed by the recipe,
 * and fails).
 */
function githubExpressions(text: string, context: Json): string {
  return text.replace(/\$\{\{\s*(.*?)\s*\}\}/g, (_whole, expr: string) => {
    if (!/^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*$/.test(expr))
      throw new Error(`not a property path: ${expr}`);
    let node: unknown = context;
    for (const key of expr.split("."))
      node = node !== null && typeof node === "object" ? (node as Json)[key] : undefined;
    if (node === undefined || node === null)
      throw new Error(`${expr} has no value in this run (is it in client_payload?)`);
    return String(node);
  });
}

/**
 * The GitHub workflow's report step: its script, and its `env` as the runner fills it for a dispatch with `payload`.
 */
async function githubReportStep(): Promise<{
  workflow: Json;
  steps: Json[];
  report: Json;
  script: string;
  env: (payload: Json, apiUrl: string, key: string, outcome: string) => Record<string, string>;
}> {
  const workflow = parse(await readFile(path.join(EXAMPLES, "github", "pi-gate.yml"), "utf8")) as Json;
  const steps = ((workflow.jobs as Json).gate as Json).steps as Json[];
  const report = steps.find((s) => s.name === "Report the decision to pi-teams-hooks");
  if (!report) throw new Error("no step 'Report the decision to pi-teams-hooks' in pi-gate.yml");
  const env = (payload: Json, apiUrl: string, key: string, outcome: string): Record<string, string> => {
    const context: Json = {
      github: {
        event: { client_payload: payload },
        server_url: "https://github.com",
        repository: "acme/widgets",
        run_id: "4711",
      },
      vars: { PI_TEAMS_API_URL: apiUrl },
      secrets: { PI_TEAMS_DECIDE_KEY: key },
      steps: { checks: { outcome } },
    };
    return Object.fromEntries(
      Object.entries(report.env as Record<string, string>).map(([name, value]) => [
        name,
        githubExpressions(value, context),
      ]),
    );
  };
  return { workflow, steps, report, script: String(report.run), env };
}

/**
 * A stand-in for `buildkite-agent` on PATH: `step get outcome --step checks` answers `outcome`, anything else fails.
 */
async function buildkiteAgent(outcome: string): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "bk-agent-"));
  const file = path.join(dir, "buildkite-agent");
  await writeFile(
    file,
    `#!/usr/bin/env bash\nif [ "$*" = "step get outcome --step checks" ]; then echo ${outcome}; else echo "unexpected: $*" >&2; exit 2; fi\n`,
  );
  await chmod(file, 0o755);
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

describe.concurrent("CI engines as gates: the recipes of docs/ci-gates.md", () => {
  it("GitHub Actions: repository_dispatch with client_payload (204), the workflow's report step allows; a retry is 200, another decision 409", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const { text, handler } = await recipeHandler("github", "https://api.github.com");
    expect(await readFile(DOC, "utf8"), "the doc shows the recipe's handler as it is").toContain(text.trimEnd());
    const route = "/repos/acme/widgets/dispatches";
    vendor.route(route, (_req, res) => void res.writeHead(204).end());
    const TOKEN = "github_pat_11AAAAAAA0test0token";
    const { team, leader, serve, key } = await setUp(rig, handler, { GITHUB_DISPATCH_TOKEN: `Bearer ${TOKEN}` }, (fn) =>
      context.onTestFinished(fn),
    );
    const runId = await holdTask(rig, team, leader);

    // The request, as GitHub's "Create a repository dispatch event" documents it.
    const got = received(route);
    expect(got.method).toBe("POST");
    expect(got.headers).toMatchObject({
      accept: "application/vnd.github+json",
      authorization: `Bearer ${TOKEN}`,
      "x-github-api-version": "2022-11-28",
      "content-type": "application/json",
    });
    expect(got.headers["user-agent"], "GitHub refuses a request without a User-Agent").toBeTruthy();
    expect(Object.keys(got.json)).toEqual(["event_type", "client_payload"]);
    expect(got.json.event_type).toBe("pi-teams-gate");
    const payload = got.json.client_payload as Json;
    expect(Object.keys(payload).length, "client_payload holds at most 10 top-level properties").toBeLessThanOrEqual(10);
    expect(payload).toEqual({
      team: team.teamId,
      run_id: runId,
      event_key: expect.stringMatching(/^task_completed:1:/),
      task_id: "1",
      subject: 'Retry uploads on "503"',
      member: "alice",
    });
    expect(JSON.stringify(await readLogs(team.teamDir))).not.toContain(TOKEN);

    // The workflow: triggered by that event type; its report step runs always, as the runner runs it.
    const { workflow, steps, report, script, env } = await githubReportStep();
    expect(workflow.on).toEqual({ repository_dispatch: { types: [got.json.event_type] } });
    expect(steps.find((s) => s.id === "checks")).toBeTruthy();
    expect(report.if).toBe("always()");
    const stepEnv = (outcome: string): Record<string, string> => env(payload, serve.url, key, outcome);

    const job = await runStep(script, stepEnv("success"));
    expect(job, job.stderr).toMatchObject({ code: 0 });
    expect(JSON.parse(job.stdout)).toMatchObject({ runId, taskId: "1", decision: "allow" });
    await expectDecided(team, leader, runId, "allow");
    expect((await readTaskFile(team, "1")).metadata?.qualityGateSummary).toMatch(/GitHub Actions: the checks passed/);

    // A re-run of the job sends the same decision: answered again. Another outcome is refused.
    const retry = await runStep(script, stepEnv("success"));
    expect(retry, retry.stderr).toMatchObject({ code: 0 });
    expect(JSON.parse(retry.stdout)).toMatchObject({ runId, decision: "allow", state: "applied" });
    const other = await runStep(script, stepEnv("failure"));
    expect(other.code).toBe(22); // curl --fail-with-body: HTTP 409
    expect(JSON.parse(other.stdout)).toMatchObject({ error: { code: "already_decided" } });
    expect((await readTaskFile(team, "1")).status).toBe("completed");
  });

  it("GitLab CI: the pipeline trigger API with variables (201 and the pipeline), the on_failure job denies: the task is reopened", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const { text, handler } = await recipeHandler("gitlab", "https://gitlab.example.com");
    expect(await readFile(DOC, "utf8")).toContain(text.trimEnd());
    const route = "/api/v4/projects/42/trigger/pipeline";
    const pipeline = {
      id: 4711,
      iid: 12,
      project_id: 42,
      sha: "a91957a858320c0e17f3a0eca7cfacbff50ea29a",
      ref: "main",
      status: "created",
      source: "trigger",
      web_url: "https://gitlab.example.com/acme/widgets/-/pipelines/4711",
    };
    vendor.route(
      route,
      (_req, res) => void res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify(pipeline)),
    );
    const TRIGGER = "glptt-0123456789abcdef0123";
    const { team, leader, serve, key } = await setUp(rig, handler, { GITLAB_TRIGGER_TOKEN: TRIGGER }, (fn) =>
      context.onTestFinished(fn),
    );
    const runId = await holdTask(rig, team, leader);

    // The request, as GitLab's "Trigger a pipeline with a token" documents it (JSON form).
    const got = received(route);
    expect(got.method).toBe("POST");
    expect(got.headers["content-type"]).toBe("application/json");
    expect(got.json).toMatchObject({ token: TRIGGER, ref: "main" });
    expect(isStringMap(got.json.variables), "every variable's value is a string").toBe(true);
    const variables = got.json.variables as Record<string, string>;
    expect(variables).toEqual({
      PI_TEAMS_TEAM: team.teamId,
      PI_TEAMS_RUN_ID: runId,
      PI_TEAMS_EVENT_KEY: expect.stringMatching(/^task_completed:1:/),
      PI_TEAMS_TASK_ID: "1",
      PI_TEAMS_MEMBER: "alice",
    });
    // The pipeline's page is in the held gate's reason; the trigger token is in no log.
    const [heldLog] = await readLogs(team.teamDir);
    expect(heldLog?.result.verdict?.reason).toMatch(
      new RegExp(`\\(HTTP 201 Created\\): ${pipeline.web_url.replaceAll(".", "\\.")}$`),
    );
    expect(JSON.stringify(heldLog)).not.toContain(TRIGGER);

    // .gitlab-ci.yml: the jobs run only in a triggered pipeline that carries the run id; a failed check runs the deny
    // job.
    const config = parse(await readFile(path.join(EXAMPLES, "gitlab", ".gitlab-ci.yml"), "utf8")) as Record<
      string,
      Json
    >;
    expect(config.stages).toEqual(["check", "report"]);
    const trigger = '$CI_PIPELINE_SOURCE == "trigger" && $PI_TEAMS_RUN_ID';
    expect(config["pi-gate-checks"]).toMatchObject({ stage: "check", rules: [{ if: trigger }] });
    const template = config[".pi-gate-report"] as Json;
    const jobOf = (when: string): Json => {
      const found = Object.entries(config).find(
        ([name, job]) => !name.startsWith(".") && (job.rules as Json[] | undefined)?.[0]?.when === when,
      );
      if (!found) throw new Error(`no job with when: ${when}`);
      const [, job] = found;
      expect(job.extends).toBe(".pi-gate-report");
      expect(job.rules).toEqual([{ if: trigger, when }]);
      return {
        ...template,
        ...job,
        variables: { ...(template.variables as Json | undefined), ...(job.variables as Json) },
      };
    };
    // What GitLab gives the job: the trigger's variables, the project's CI/CD variables, the predefined ones.
    const jobEnv = (job: Json): Record<string, string> => ({
      ...variables,
      PI_TEAMS_API_URL: serve.url,
      PI_TEAMS_DECIDE_KEY: key,
      CI_PIPELINE_SOURCE: "trigger",
      CI_PIPELINE_ID: String(pipeline.id),
      CI_PIPELINE_URL: pipeline.web_url,
      ...(job.variables as Record<string, string>),
    });
    // `before_script` installs curl in the job's image; here the stand-in plays it.
    const scriptOf = (job: Json): string => (job.script as string[]).join("\n");
    const deny = jobOf("on_failure");
    const job = await runStep(scriptOf(deny), jobEnv(deny));
    expect(job, job.stderr).toMatchObject({ code: 0 });
    expect(JSON.parse(job.stdout)).toMatchObject({ runId, decision: "deny" });
    await expectDecided(team, leader, runId, "deny");
    expect((await readTaskFile(team, "1")).metadata?.qualityGateSummary).toMatch(/GitLab CI: pipeline 4711 failed/);

    const retry = await runStep(scriptOf(deny), jobEnv(deny));
    expect(retry, retry.stderr).toMatchObject({ code: 0 });
    const allow = jobOf("on_success");
    const other = await runStep(scriptOf(allow), jobEnv(allow));
    expect([other.code, (JSON.parse(other.stdout) as { error: { code: string } }).error.code]).toEqual([
      22,
      "already_decided",
    ]);
  });

  it("Buildkite: create a build with env (201 and the build), the report step reads the checks' outcome and denies: the task is reopened", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const { text, handler } = await recipeHandler("buildkite", "https://api.buildkite.com");
    expect(await readFile(DOC, "utf8")).toContain(text.trimEnd());
    const route = "/v2/organizations/acme/pipelines/pi-gate/builds";
    const build = {
      id: "01908131-7d9f-495e-a17b-80ed31276810",
      number: 27,
      state: "scheduled",
      web_url: "https://buildkite.com/acme/pi-gate/builds/27",
      url: "https://api.buildkite.com/v2/organizations/acme/pipelines/pi-gate/builds/27",
    };
    vendor.route(route, (_req, res, body) => {
      const sent = JSON.parse(body.toString("utf8")) as Json;
      res.writeHead(201, { "content-type": "application/json" }).end(
        JSON.stringify({
          ...build,
          commit: sent.commit,
          branch: sent.branch,
          message: sent.message,
          env: sent.env,
          source: "api",
        }),
      );
    });
    const TOKEN = "bkua_0123456789abcdef0123456789abcdef01234567";
    const { team, leader, serve, key } = await setUp(rig, handler, { BUILDKITE_API_TOKEN: `Bearer ${TOKEN}` }, (fn) =>
      context.onTestFinished(fn),
    );
    const runId = await holdTask(rig, team, leader);

    // The request, as Buildkite's "Create a build" documents it.
    const got = received(route);
    expect(got.method).toBe("POST");
    expect(got.headers).toMatchObject({ authorization: `Bearer ${TOKEN}`, "content-type": "application/json" });
    expect(got.json).toMatchObject({
      commit: "HEAD",
      branch: "main",
      message: `pi-teams gate: task #1 of ${team.teamId}`,
    });
    expect(isStringMap(got.json.env) && isStringMap(got.json.meta_data)).toBe(true);
    const env = got.json.env as Record<string, string>;
    expect(env).toEqual({
      PI_TEAMS_TEAM: team.teamId,
      PI_TEAMS_RUN_ID: runId,
      PI_TEAMS_TASK_ID: "1",
      PI_TEAMS_MEMBER: "alice",
    });
    expect(got.json.meta_data).toMatchObject({ "pi-teams-run-id": runId });
    expect((await readLogs(team.teamDir))[0]?.result.verdict?.reason).toContain(build.web_url);

    // pipeline.yml: checks, a wait that goes on past a failure, and the report step.
    const pipeline = parse(await readFile(path.join(EXAMPLES, "buildkite", "pipeline.yml"), "utf8")) as {
      steps: Json[];
    };
    expect(pipeline.steps.map((s) => (s.wait !== undefined ? "wait" : s.key))).toEqual(["checks", "wait", "report"]);
    expect(pipeline.steps[1]).toMatchObject({ continue_on_failure: true });
    // buildkite-agent interpolates the command when it uploads the pipeline: `$$` is a `$` for the shell.
    const command = String(pipeline.steps[2]?.command).replaceAll("$$", "$");
    const agent = await buildkiteAgent("hard_failed");
    context.onTestFinished(agent.cleanup);
    const stepEnv: Record<string, string> = {
      ...env,
      PI_TEAMS_API_URL: serve.url,
      PI_TEAMS_DECIDE_KEY: key,
      BUILDKITE_BUILD_NUMBER: String(build.number),
      BUILDKITE_BUILD_URL: build.web_url,
      PATH: `${agent.dir}:${process.env.PATH ?? ""}`,
    };
    const job = await runStep(command, stepEnv, ["bash", "-e", "-c"]);
    expect(job, job.stderr).toMatchObject({ code: 0 });
    expect(JSON.parse(job.stdout)).toMatchObject({ runId, decision: "deny" });
    await expectDecided(team, leader, runId, "deny");
    expect((await readTaskFile(team, "1")).metadata?.qualityGateSummary).toMatch(
      /Buildkite: build 27: checks hard_failed/,
    );

    const retry = await runStep(command, stepEnv, ["bash", "-e", "-c"]);
    expect(retry, retry.stderr).toMatchObject({ code: 0 });
    const passed = await buildkiteAgent("passed");
    context.onTestFinished(passed.cleanup);
    const other = await runStep(command, { ...stepEnv, PATH: `${passed.dir}:${process.env.PATH ?? ""}` }, [
      "bash",
      "-e",
      "-c",
    ]);
    expect(other.code).toBe(22);
  });
});

/** The decision route as the proxy blocks of docs/ci-gates.md forward it: nothing else of `serve`. */
const DECISION_ROUTE = /^\/api\/v1\/teams\/[^/]+\/runs\/[^/]+\/decision$/;

/** A GET of `path` straight to `serve` with the `Host` a proxy that forwards everything would send. */
async function getWithHost(url: string, route: string, host: string): Promise<number> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: target.hostname, port: target.port, path: route, headers: { host, accept: "text/html" } },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on("error", reject);
    req.end();
  });
}

describe("serve behind a TLS proxy: decisions from the internet", () => {
  it("the CI job's decision goes through the proxy with a gates:decide key, idempotent; other keys are refused, the dashboard is not forwarded and needs a key", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const { handler } = await recipeHandler("github", "https://api.github.com");
    // Its own path on the shared stand-in: the GitHub test above uses the recipe's.
    const own = "/proxy/repos/acme/widgets/dispatches";
    vendor.route(own, (_req, res) => void res.writeHead(204).end());
    const team = await rig.team({
      tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })],
      config: { hooks: { failureAction: "reopen", handlers: [{ ...handler, url: `${vendor.url}${own}` }] } },
    });
    const key = await teamKey(team.teamsRoot, "ci", "gates:decide", team.teamId);
    const reader = await teamKey(team.teamsRoot, "reader", "tasks:read", team.teamId);
    const elsewhere = await teamKey(team.teamsRoot, "beta-ci", "gates:decide", "beta");
    // Loopback, and --allow-remote: what reaches it through the proxy is the internet's.
    const serve = await startServeFor(context, team.teamsRoot, ["--allow-remote"]);
    const proxy = await startTlsProxy({ hostname: "gates.example.test", target: serve.url, allow: DECISION_ROUTE });
    context.onTestFinished(() => proxy.close());
    const leader = await rig.leader(team, ARGS, { env: { GITHUB_DISPATCH_TOKEN: "Bearer github_pat_proxy" } });
    const runId = await holdTask(rig, team, leader);
    const payload = (JSON.parse(vendor.requests(own)[0]?.body.toString("utf8") ?? "{}") as Json).client_payload as Json;
    expect(payload.run_id).toBe(runId);

    // The runner's machine resolves the proxy's name and trusts its CA (here through its .curlrc).
    const curlrc = `resolve = gates.example.test:${proxy.port}:127.0.0.1\ncacert = ${proxy.certFile}\n`;
    const { script, env } = await githubReportStep();
    const job = await runStep(script, env(payload, proxy.url, key, "success"), GITHUB_SHELL, curlrc);
    expect(job, job.stderr).toMatchObject({ code: 0 });
    expect(JSON.parse(job.stdout)).toMatchObject({ runId, taskId: "1", decision: "allow" });
    await expectDecided(team, leader, runId, "allow");
    const retry = await runStep(script, env(payload, proxy.url, key, "success"), GITHUB_SHELL, curlrc);
    expect([retry.code, JSON.parse(retry.stdout)]).toMatchObject([0, { runId, decision: "allow", state: "applied" }]);
    const other = await runStep(script, env(payload, proxy.url, key, "failure"), GITHUB_SHELL, curlrc);
    expect([other.code, (JSON.parse(other.stdout) as Json).error]).toMatchObject([22, { code: "already_decided" }]);

    // A key without gates:decide, and one for another team, are refused through the proxy too.
    for (const [wrong, code] of [
      [reader, "scope_not_allowed"],
      [elsewhere, "team_not_allowed"],
    ] as const) {
      const refused = await runStep(script, env(payload, proxy.url, wrong, "success"), GITHUB_SHELL, curlrc);
      expect([refused.code, (JSON.parse(refused.stdout) as Json).error]).toMatchObject([22, { code }]);
    }
    // Only the decision route is forwarded: the dashboard (and the rest of the API) is not on the internet.
    const dashboard = await runStep(
      `curl --silent --output /dev/null --write-out '%{http_code}' "$URL/"`,
      { URL: proxy.url },
      GITHUB_SHELL,
      curlrc,
    );
    expect(dashboard.stdout).toBe("404");
    expect(proxy.refused).toEqual(["GET /"]);
    // And a proxy that forwarded everything would still not open it: with --allow-remote the dashboard needs a
    // logs:read key, whatever the Host.
    expect(await getWithHost(serve.url, "/", `gates.example.test:${proxy.port}`)).toBe(401);
    expect(await getWithHost(serve.url, "/", "127.0.0.1")).toBe(401);
    expect((await readTaskFile(team, "1")).status).toBe("completed");
  });
});

describe("the example CI files", () => {
  it.each([["github/pi-gate.yml"], ["gitlab/.gitlab-ci.yml"], ["buildkite/pipeline.yml"]])(
    "%s is valid YAML whose report step posts to the decision route with the key from the CI's secrets; the doc shows it whole",
    async (file) => {
      const text = await readFile(path.join(EXAMPLES, file), "utf8");
      expect(await readFile(DOC, "utf8")).toContain(text.trimEnd());
      const doc = parse(text, { strict: true, uniqueKeys: true }) as unknown;
      expect(doc).toBeTypeOf("object");
      expect(text).toContain("/api/v1/teams/");
      expect(text).toMatch(/runs\/\$\$?PI_TEAMS_RUN_ID\/decision/);
      expect(text).toMatch(/Authorization: Bearer \$\$?PI_TEAMS_DECIDE_KEY/);
    },
  );

  it("a team whose config.json teamId is not its folder's name: doctor says which name the recipes' team must be", async () => {
    const handlers = await Promise.all(
      ["github", "gitlab", "buildkite"].map(
        async (ci) => JSON.parse(await readFile(path.join(EXAMPLES, ci, "handler.json"), "utf8")) as Json,
      ),
    );
    const team = await makeTempTeam({ teamId: "alpha", config: { teamId: "alpha-team", hooks: { handlers } } });
    try {
      const doctor = await runBin(["doctor", "--team-dir", team.teamDir]);
      const config = path.join(team.teamDir, "config.json");
      for (const ci of ["github", "gitlab", "buildkite"]) {
        expect(doctor.stdout).toContain(
          `warn http:${ci}: its body sends {{team.id}}, config.json's teamId "alpha-team", but serve, its keys and the task API know this team by its folder's name "alpha": a job that reports back to /api/v1/teams/alpha-team/… is refused (403 team_not_allowed with a key for alpha); set "teamId": "alpha" in ${config}, or rename the folder to alpha-team`,
        );
      }
      // The two the same: nothing to say.
      await writeFile(config, JSON.stringify({ teamId: "alpha", hooks: { handlers } }));
      expect((await runBin(["doctor", "--team-dir", team.teamDir])).stdout).not.toContain("{{team.id}}");
    } finally {
      await team.cleanup();
    }
  });

  it("every handler.json is a handler the settings accept, answering held, for task_completed", async () => {
    const { HandlerSchema } = await import("../../extensions/teams-hooks/settings/handlers.js");
    for (const ci of ["github", "gitlab", "buildkite"]) {
      const handler = HandlerSchema.parse(JSON.parse(await readFile(path.join(EXAMPLES, ci, "handler.json"), "utf8")));
      expect(handler).toMatchObject({ name: ci, events: ["task_completed"], answer: "held" });
    }
  });
});
