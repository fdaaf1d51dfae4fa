/**
 * What hooks are shown and what is kept of what they say, through invokeEvent with real hooks, real
 * files and a real HTTP receiver on 127.0.0.1: a projected hook (a file and a handler) cannot see
 * the task's description in any of its channels; a confidential team's handler and logs get no
 * content; secrets a hook prints never reach the disk (the whole team dir is searched), whatever
 * path they take: the log, the task's metadata, the follow-up, the nudge, a deferral and its decision,
 * a start gate's denial of a claim.
 */
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { taskEvent } from "../../extensions/teams-hooks/contract/events.js";
import type { TeamIdentity } from "../../extensions/teams-hooks/contract/team-files.js";
import { decideDeferral } from "../../extensions/teams-hooks/event/deferral-decision.js";
import { invokeEvent, type InvokeRequest } from "../../extensions/teams-hooks/event/invoke.js";
import { eventRequest, teamIdentity } from "../helpers/invoke-request.js";
import { readLogs } from "../helpers/leader-rig.js";
import { settingsRedactor } from "../../extensions/teams-hooks/runner/redact.js";
import { HandlerSchema, type HandlerDef, type HandlerInput } from "../../extensions/teams-hooks/settings/handlers.js";
import type { PrivacySettings } from "../../extensions/teams-hooks/settings/privacy.js";
import type { EffectivePolicy } from "../../extensions/teams-hooks/settings/options.js";
import { startReceiver, type Receiver } from "../helpers/http-receiver.js";
import { teamSettings } from "../helpers/team-settings.js";
import { makeTask, makeTempTeam, type TempTeam } from "../helpers/temp-team.js";

const POLICY: EffectivePolicy = { failureAction: "reopen_followup", maxReopensPerTask: 3, followupOwner: "member" };
// Unique per run, so that a match can only come from this test.
const DESCRIPTION = `DESC-${randomBytes(6).toString("hex")} the payroll migration plan`;
const SUBJECT = `SUBJ-${randomBytes(6).toString("hex")} rotate keys`;
const META = `META-${randomBytes(6).toString("hex")}`;

let receiver: Receiver;
let team: TempTeam;
let identity: TeamIdentity;
let hooksDir: string;
let dumps: string;

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});
beforeEach(async () => {
  const task = makeTask({
    id: "7",
    status: "completed",
    owner: "alice",
    subject: SUBJECT,
    description: DESCRIPTION,
    metadata: { completedAt: "2026-12-02T10:00:00.000Z", files: ["src/a.ts"], note: META },
  });
  team = await makeTempTeam({ teamId: "priv", tasks: [task] });
  identity = teamIdentity(team);
  hooksDir = path.join(team.teamsRoot, "_hooks");
  dumps = path.join(team.teamsRoot, "dumps"); // outside the team dir: what the hooks saw
  fs.mkdirSync(hooksDir, { recursive: true });
  fs.mkdirSync(dumps);
});
afterEach(async () => {
  await team.cleanup();
});

/**
 * A bash hook. `env`: the leader's variables it reads, declared on its settings line (`env=`), as a
 * sandboxed gate must; none undeclared reaches it.
 */
function hook(name: string, body: string, env: string[] = []): void {
  const file = path.join(hooksDir, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const settings = env.length > 0 ? `# pi-teams-hooks: env=${env.join(",")}\n` : "";
  fs.writeFileSync(file, `#!/usr/bin/env bash\n${settings}${body}\n`, { mode: 0o755 });
}

/** A hook that writes what it got in each of the four channels to `<dumps>/<tag>.*`. */
function dumpingHook(name: string, tag: string): void {
  hook(
    name,
    [
      `cat > "$DUMPS/${tag}.stdin"`,
      `cat "$PI_TEAMS_HOOK_CONTEXT_FILE" > "$DUMPS/${tag}.file"`,
      `printf '%s' "$PI_TEAMS_HOOK_CONTEXT_JSON" > "$DUMPS/${tag}.json"`,
      `env | grep '^PI_TEAMS_' > "$DUMPS/${tag}.env"`,
    ].join("\n"),
    ["DUMPS"],
  );
}

function handler(
  name: string,
  route: string,
  over: Partial<HandlerInput> = {},
): ReturnType<typeof HandlerSchema.parse> {
  return HandlerSchema.parse({ name, events: ["task_completed"], url: `${receiver.url}${route}`, ...over });
}

/** `policy`, `handlers` and `privacy` are the team's settings: config.json's `hooks` block holds them. */
function request({
  policy = null,
  handlers,
  privacy: shown,
  ...over
}: Partial<InvokeRequest> & {
  policy?: EffectivePolicy | null;
  handlers?: HandlerDef[];
  privacy?: PrivacySettings;
} = {}): InvokeRequest {
  const hooks = { ...policy, ...(handlers ? { handlers } : {}), ...shown };
  const base = {
    team,
    hooksDir,
    settings: { hooks, timeoutMs: 10_000 },
    taskId: "7",
    key: "task_completed:7:2026-12-02T10:00:00.000Z",
  };
  const env = { ...process.env, DUMPS: dumps };
  return eventRequest({ ...base, timestamp: "2026-12-02T10:00:00.000Z", applyPolicy: policy !== null, env }, over);
}

function privacy(over: Partial<PrivacySettings>): PrivacySettings {
  return { projection: {}, confidential: false, redactEnv: [], ...over };
}

const logs = () => readLogs(team.teamDir);

/** Every regular file under `dir`, with its content (the whole team dir, hook-state/ included). */
function filesUnder(dir: string): Array<{ file: string; text: string }> {
  const out: Array<{ file: string; text: string }> = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const file = path.join(entry.parentPath, entry.name);
    if (entry.isFile()) out.push({ file, text: fs.readFileSync(file, "utf8") });
  }
  return out;
}

/** The files under `dir` that hold `value`: what `grep -rl` would say. */
function grep(dir: string, value: string): string[] {
  return filesUnder(dir)
    .filter((f) => f.text.includes(value))
    .map((f) => path.relative(dir, f.file));
}

describe("hooks.projection", () => {
  it("a projected file hook and HTTP handler cannot see the description in any channel; an unprojected one can", async () => {
    dumpingHook("on_task_completed.sh", "v1");
    dumpingHook("on_task_completed.d/20-full.sh", "full");
    receiver.route("/projected", (_req, res) => res.writeHead(200).end('{"decision":"allow"}'));
    receiver.route("/no-id", (_req, res) => res.writeHead(200).end('{"decision":"allow"}'));
    const outcome = await invokeEvent(
      request({
        handlers: [handler("ci", "/projected"), handler("bare", "/no-id")],
        privacy: privacy({
          projection: {
            on_task_completed: ["task.id", "task.metadata.files"],
            "http:ci": ["task.id", "task.status"],
            "http:bare": ["task.status"],
          },
        }),
      }),
    );
    expect(outcome.runs.map((r) => r.result.outcome)).toEqual(["passed", "passed", "passed", "passed"]);

    // The file hook: stdin, the context file, PI_TEAMS_HOOK_CONTEXT_JSON and the PI_TEAMS_* variables.
    for (const channel of ["stdin", "file", "json", "env"]) {
      const seen = fs.readFileSync(path.join(dumps, `v1.${channel}`), "utf8");
      expect(seen, channel).not.toContain(DESCRIPTION.slice(0, 17));
      expect(seen, channel).not.toContain(SUBJECT.slice(0, 17));
      expect(seen, channel).not.toContain(META);
    }
    const doc = JSON.parse(fs.readFileSync(path.join(dumps, "v1.stdin"), "utf8")) as Record<string, unknown> & {
      task: Record<string, unknown>;
    };
    expect(doc.task).toMatchObject({ id: "7", subject: "", description: "", metadata: { files: ["src/a.ts"] } });
    expect(doc.projection).toEqual(["task.id", "task.metadata.files"]);
    expect(fs.readFileSync(path.join(dumps, "v1.file"), "utf8")).toBe(
      fs.readFileSync(path.join(dumps, "v1.stdin"), "utf8"),
    );
    const env = fs.readFileSync(path.join(dumps, "v1.env"), "utf8");
    expect(env).toMatch(/^PI_TEAMS_TASK_ID=7$/m);
    expect(env).not.toMatch(/^PI_TEAMS_TASK_(SUBJECT|STATUS|OWNER)=/m);
    expect(env).toMatch(/^PI_TEAMS_MEMBER=alice$/m);

    // The chain's unprojected hook got the whole v1 document, as before.
    expect(fs.readFileSync(path.join(dumps, "full.stdin"), "utf8")).toContain(DESCRIPTION);
    expect(fs.readFileSync(path.join(dumps, "full.env"), "utf8")).toContain(`PI_TEAMS_TASK_SUBJECT=${SUBJECT}`);

    // The handlers: the body, and the task id header only where the id is shown.
    const [projected] = receiver.requests("/projected");
    const [bare] = receiver.requests("/no-id");
    for (const got of [projected, bare]) {
      const body = got?.body.toString("utf8") ?? "";
      expect(body).not.toContain(DESCRIPTION.slice(0, 17));
      expect(body).not.toContain(SUBJECT.slice(0, 17));
      expect(body).not.toContain(META);
    }
    expect(JSON.parse(projected?.body.toString("utf8") ?? "{}")).toMatchObject({
      task: { id: "7", status: "completed", description: "" },
      projection: ["task.id", "task.status"],
    });
    expect(projected?.headers["x-pi-teams-hook-task-id"]).toBe("7");
    expect(bare?.headers["x-pi-teams-hook-task-id"]).toBeUndefined();

    // The event key spells out the task's id and completion stamp: a projected hook gets its digest, as stable.
    const key = request().key;
    const digest = `sha256:${createHash("sha256").update(key).digest("hex")}`;
    expect(env).toMatch(new RegExp(`^PI_TEAMS_HOOK_EVENT_KEY=${digest}$`, "m"));
    expect(bare?.headers["x-pi-teams-hook-event-key"]).toBe(digest);
    expect(`${env}\n${JSON.stringify(bare?.headers)}`).not.toContain("task_completed:7:");
    expect(bare?.body.toString("utf8")).not.toContain(key);
    expect(fs.readFileSync(path.join(dumps, "full.env"), "utf8")).toContain(`PI_TEAMS_HOOK_EVENT_KEY=${key}\n`);

    // Each log says what its hook was shown: the fields, and the exact document's hash.
    const byHook = new Map((await logs()).map((l) => [path.basename(l.result.hookPath ?? ""), l]));
    const sha = (text: string): string => createHash("sha256").update(text).digest("hex");
    expect(byHook.get("on_task_completed.sh")?.shown).toEqual({
      projection: ["task.id", "task.metadata.files"],
      bytes: Buffer.byteLength(fs.readFileSync(path.join(dumps, "v1.stdin"))),
      sha256: sha(fs.readFileSync(path.join(dumps, "v1.stdin"), "utf8")),
    });
    expect(byHook.get("http:ci")?.shown).toMatchObject({
      projection: ["task.id", "task.status"],
      sha256: sha(projected?.body.toString("utf8") ?? ""),
    });
    expect(byHook.get("20-full.sh")?.shown).toBeUndefined();
  });
});

describe("hooks.confidential", () => {
  it("a handler is sent identity and lifecycle only, the logs keep no content; a file hook still gets the whole document", async () => {
    dumpingHook("on_task_completed.sh", "local");
    receiver.route("/confidential", (_req, res) => res.writeHead(200).end('{"decision":"allow"}'));
    await invokeEvent(
      request({ handlers: [handler("ci", "/confidential")], privacy: privacy({ confidential: true }) }),
    );

    const [got] = receiver.requests("/confidential");
    const body = JSON.parse(got?.body.toString("utf8") ?? "{}") as Record<string, unknown>;
    expect(body).toMatchObject({
      member: "alice",
      task: {
        id: "7",
        subject: "7",
        description: "",
        owner: "alice",
        status: "completed",
        metadata: {},
        blockedBy: [],
        blocks: [],
      },
      confidential: true,
    });
    expect(got?.headers["x-pi-teams-hook-task-id"]).toBe("7");
    expect(fs.readFileSync(path.join(dumps, "local.stdin"), "utf8")).toContain(DESCRIPTION);

    const records = await logs();
    expect(records).toHaveLength(2);
    for (const record of records)
      expect(record.invocation.completedTask).toEqual({
        id: "7",
        subject: "7",
        description: "",
        owner: "alice",
        status: "completed",
        blocks: [],
        blockedBy: [],
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
    // Nothing of the task's content in any log.
    for (const value of [DESCRIPTION, SUBJECT, META])
      expect(grep(path.join(team.teamDir, "hook-logs"), value)).toEqual([]);
  });
});

describe("redaction", () => {
  // Credential shapes, made up here, and secrets in the leader's environment.
  const GHP = `ghp_${randomBytes(18).toString("hex").slice(0, 36)}`;
  const AKIA = `AKIA${randomBytes(8).toString("hex").toUpperCase()}`;
  const JWT =
    `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI${randomBytes(6).toString("hex")}In0.` + randomBytes(16).toString("base64url");
  const DEPLOY = `deploy-${randomBytes(8).toString("hex")}`; // hooks.redactEnv
  const CI_TOKEN = `citok-${randomBytes(8).toString("hex")}`; // a handler's secret header

  it("a hook printing a ghp_ token, an AKIA key, a JWT and two env secrets: none on disk afterwards, the log counts them", async () => {
    hook(
      "on_task_completed.sh",
      [
        'echo "deploying with $DEPLOY_TOKEN and $CI_GATE_TOKEN"',
        `echo "GITHUB_TOKEN=${GHP}"`,
        `echo "aws: ${AKIA}" >&2`,
        `echo "Authorization: Bearer ${JWT}" >&2`,
        `echo '{"decision":"deny","code":"leak","reason":"token ${GHP} is public","message":"also ${AKIA}"}'`,
      ].join("\n"),
      ["DEPLOY_TOKEN", "CI_GATE_TOKEN"],
    );
    receiver.route("/ci", (_req, res) => res.writeHead(200).end('{"decision":"allow"}'));
    const outcome = await invokeEvent(
      request({
        policy: POLICY,
        handlers: [handler("ci", "/ci", { secretHeaders: { Authorization: "CI_GATE_TOKEN" } })],
        privacy: privacy({ redactEnv: ["DEPLOY_TOKEN"] }),
        env: { ...process.env, DEPLOY_TOKEN: DEPLOY, CI_GATE_TOKEN: CI_TOKEN },
      }),
    );
    expect(outcome.counted).toEqual({ state: "failed" });
    expect(outcome.actions).toEqual(["reopened (1/3)", "reassigned to alice", "follow-up #8 for alice", "nudge alice"]);
    expect(outcome.summary).toBe("denied (leak) • token [redacted] is public • also [redacted]");

    // grep -r over the whole team dir: hook-logs/, tasks/ (metadata, the follow-up), mailboxes/, hook-state/.
    for (const value of [GHP, AKIA, JWT, DEPLOY, CI_TOKEN]) expect(grep(team.teamDir, value), value).toEqual([]);
    // Not even a part of one.
    for (const value of [GHP, AKIA, JWT]) expect(grep(team.teamDir, value.slice(0, 12)), value).toEqual([]);

    const [log] = await logs();
    // stdout: DEPLOY, CI_TOKEN, GHP, and in the verdict line GHP and AKIA; stderr: AKIA and the Authorization header
    // (its JWT with it); the verdict's reason and message: 2.
    expect(log?.result.redactions).toBe(9);
    expect(log?.result.stdout).toContain("deploying with [redacted] and [redacted]");
    expect(log?.result.stderr).toBe("aws: [redacted]\nAuthorization: Bearer [redacted]\n");
    const followup = fs.readFileSync(team.taskFile("8"), "utf8");
    expect(followup).toContain("GITHUB_TOKEN=[redacted]");
    const task = JSON.parse(fs.readFileSync(team.taskFile("7"), "utf8")) as { metadata: Record<string, unknown> };
    expect(task.metadata.qualityGateSummary).toBe("denied (leak) • token [redacted] is public • also [redacted]");
    const inbox = fs.readFileSync(team.inboxFile(team.taskListId, "alice"), "utf8");
    expect(inbox).toContain("token [redacted] is public");
  });

  it("a held gate's reason and a decision's words are redacted in the deferral, the task, the logs and the nudge", async () => {
    hook("on_task_completed.sh", `echo '{"decision":"defer","code":"ci.pending","reason":"waiting on ${AKIA}"}'`);
    const env = { ...process.env, DEPLOY_TOKEN: DEPLOY };
    const held = await invokeEvent(request({ policy: POLICY, privacy: privacy({ redactEnv: ["DEPLOY_TOKEN"] }), env }));
    expect(held.deferral?.reason).toBe("waiting on [redacted]");
    const inForce = teamSettings({ hooks: { ...POLICY, redactEnv: ["DEPLOY_TOKEN"] }, timeoutMs: 5_000 });
    const settings = { setup: { identity, settings: inForce }, redact: settingsRedactor(env, inForce) };
    const runId = held.deferral?.runId ?? "";
    const decided = await decideDeferral(
      team.teamDir,
      runId,
      { decision: "deny", code: "ci.failed", reason: `leaked ${DEPLOY}`, message: `see ${GHP}`, by: "ci" },
      { env, settings },
    );
    expect(decided.kind).toBe("applied");
    for (const value of [AKIA, DEPLOY, GHP]) expect(grep(team.teamDir, value), value).toEqual([]);
    const decision = (await logs()).find((l) => l.decision !== undefined);
    expect(decision?.result.verdict).toMatchObject({ reason: "leaked [redacted]", message: "see [redacted]" });
    expect(decision?.result.redactions).toBe(2);
    // The same decision sent again is the same one (compared as recorded, redacted), not a conflict.
    const again = await decideDeferral(
      team.teamDir,
      runId,
      { decision: "deny", code: "ci.failed", reason: `leaked ${DEPLOY}`, message: `see ${GHP}`, by: "ci" },
      { env, settings },
    );
    expect(again.kind).toBe("applied");
  });

  it("a decision through the task API's path (no settings at hand): the team's config.json says what to redact", async () => {
    fs.writeFileSync(
      path.join(team.teamDir, "config.json"),
      JSON.stringify({ teamId: "priv", hooks: { failureAction: "reopen_followup", redactEnv: ["DEPLOY_TOKEN"] } }),
    );
    hook("on_task_completed.sh", `echo '{"decision":"defer","code":"ci.pending","reason":"queued"}'`);
    const env = { ...process.env, DEPLOY_TOKEN: DEPLOY };
    const held = await invokeEvent(request({ policy: POLICY, privacy: privacy({ redactEnv: ["DEPLOY_TOKEN"] }), env }));
    const runId = held.deferral?.runId ?? "";
    // As server/routes.ts calls it: no settings, the server's environment.
    const decided = await decideDeferral(
      team.teamDir,
      runId,
      { decision: "deny", reason: `leaked ${DEPLOY}`, message: `see ${GHP}`, by: "api:ci" },
      { env },
    );
    expect(decided.kind).toBe("applied");
    for (const value of [DEPLOY, GHP]) expect(grep(team.teamDir, value), value).toEqual([]);
    const decision = (await logs()).find((l) => l.decision !== undefined);
    expect(decision?.result.verdict).toMatchObject({ reason: "leaked [redacted]", message: "see [redacted]" });
  });

  it("a start gate that denies a claim with a token in its reason: the put-back task and the member's message say [redacted]", async () => {
    const claimed = makeTask({
      id: "7",
      status: "in_progress",
      owner: "alice",
      subject: SUBJECT,
      description: DESCRIPTION,
    });
    fs.writeFileSync(team.taskFile("7"), JSON.stringify(claimed));
    const claim = taskEvent(claimed); // the key the leader would give this claim
    hook(
      "on_task_started.sh",
      `echo "claiming with $DEPLOY_TOKEN" >&2\necho '{"decision":"deny","code":"deps.open","reason":"blocked: ${GHP} lacks scope"}'`,
      ["DEPLOY_TOKEN"],
    );
    const env = { ...process.env, DEPLOY_TOKEN: DEPLOY };
    const outcome = await invokeEvent(
      request({
        event: "task_started",
        key: claim?.key ?? "",
        timestamp: claim?.timestamp ?? null,
        policy: POLICY,
        privacy: privacy({ redactEnv: ["DEPLOY_TOKEN"] }),
        env,
      }),
    );
    expect(outcome.counted).toEqual({ state: "failed" });
    for (const value of [GHP, DEPLOY]) expect(grep(team.teamDir, value), value).toEqual([]);
    const task = JSON.parse(fs.readFileSync(team.taskFile("7"), "utf8")) as {
      status: string;
      metadata: Record<string, unknown>;
    };
    expect(task.status).toBe("pending");
    expect(String(task.metadata.qualityGateStartDeniedReason)).toContain("blocked: [redacted] lacks scope");
    expect(fs.readFileSync(team.inboxFile(team.taskListId, "alice"), "utf8")).toContain(
      "blocked: [redacted] lacks scope",
    );
    const [log] = await logs();
    expect(log?.result.stderr).toBe("claiming with [redacted]\n");
    expect(log?.result.redactions).toBe(3);
  });

  it("a patch verdict carrying secrets: the task is patched with [redacted], the log keeps no raw value", async () => {
    hook(
      "on_task_completed.sh",
      `echo "{\\"decision\\":\\"patch\\",\\"patch\\":{\\"metadata\\":{\\"deploy\\":\\"$DEPLOY_TOKEN\\",\\"notes\\":[\\"pushed with ${GHP}\\"]}}}"`,
      ["DEPLOY_TOKEN"],
    );
    const env = { ...process.env, DEPLOY_TOKEN: DEPLOY };
    const outcome = await invokeEvent(
      request({ policy: POLICY, privacy: privacy({ redactEnv: ["DEPLOY_TOKEN"] }), env }),
    );
    expect(outcome.counted).toEqual({ state: "passed" });
    for (const value of [GHP, DEPLOY]) expect(grep(team.teamDir, value), value).toEqual([]);
    const task = JSON.parse(fs.readFileSync(team.taskFile("7"), "utf8")) as { metadata: Record<string, unknown> };
    expect(task.metadata).toMatchObject({ deploy: "[redacted]", notes: ["pushed with [redacted]"] });
    const [log] = await logs();
    expect(log?.result.redactions).toBe(4); // stdout: both values; the patch: both again
  });

  it("a patch verdict with secrets in its keys: the keys are redacted too, nothing raw on disk", async () => {
    hook(
      "on_task_completed.sh",
      `echo "{\\"decision\\":\\"patch\\",\\"patch\\":{\\"metadata\\":{\\"$DEPLOY_TOKEN\\":1,\\"seen\\":{\\"pushed with ${GHP}\\":true}}}}"`,
      ["DEPLOY_TOKEN"],
    );
    const env = { ...process.env, DEPLOY_TOKEN: DEPLOY };
    const outcome = await invokeEvent(
      request({ policy: POLICY, privacy: privacy({ redactEnv: ["DEPLOY_TOKEN"] }), env }),
    );
    expect(outcome.counted).toEqual({ state: "passed" });
    for (const value of [GHP, DEPLOY]) expect(grep(team.teamDir, value), value).toEqual([]);
    const task = JSON.parse(fs.readFileSync(team.taskFile("7"), "utf8")) as { metadata: Record<string, unknown> };
    expect(task.metadata).toMatchObject({ "[redacted]": 1, seen: { "pushed with [redacted]": true } });
    const [log] = await logs();
    expect(log?.result.patchApplied).toEqual(["metadata.[redacted]", "metadata.seen"]);
  });

  it("a handler's answer with a credential shape, not its own secret, is redacted too", async () => {
    receiver.route("/leaky", (_req, res) =>
      res.writeHead(200).end(JSON.stringify({ decision: "deny", reason: `found ${GHP} in the diff` })),
    );
    const outcome = await invokeEvent(request({ policy: POLICY, handlers: [handler("leaky", "/leaky")] }));
    expect(outcome.result?.verdict?.reason).toBe("found [redacted] in the diff");
    expect(outcome.result?.redactions).toBe(2); // the body kept as stdout, and the reason
    expect(grep(team.teamDir, GHP)).toEqual([]);
  });

  it("a handler's verdict code holding a secret (it fits the code's pattern): redacted in the log, the task, the follow-up, the nudge and a deferral", async () => {
    const SK = `sk-proj${randomBytes(12).toString("hex")}`; // lower case: a valid code
    const lower = `deploy${randomBytes(8).toString("hex")}`; // hooks.redactEnv, lower case too
    receiver.route("/code-deny", (_req, res) =>
      res.writeHead(200).end(JSON.stringify({ decision: "deny", code: SK, reason: "denied" })),
    );
    const env = { ...process.env, DEPLOY_TOKEN: lower };
    const denied = await invokeEvent(
      request({
        policy: POLICY,
        handlers: [handler("ci", "/code-deny")],
        privacy: privacy({ redactEnv: ["DEPLOY_TOKEN"] }),
        env,
      }),
    );
    expect(denied.counted).toEqual({ state: "failed" });
    expect(denied.result?.verdict?.code).toBe("[redacted]");
    expect(grep(team.teamDir, SK)).toEqual([]);

    receiver.route("/code-defer", (_req, res) =>
      res.writeHead(200).end(JSON.stringify({ decision: "defer", code: lower, reason: "queued" })),
    );
    const held = await invokeEvent(
      request({
        key: "task_completed:7:2026-12-02T11:00:00.000Z",
        timestamp: "2026-12-02T11:00:00.000Z",
        policy: POLICY,
        handlers: [handler("ci", "/code-defer")],
        privacy: privacy({ redactEnv: ["DEPLOY_TOKEN"] }),
        env,
      }),
    );
    expect(held.deferral?.code).toBe("[redacted]");
    expect(grep(team.teamDir, lower)).toEqual([]);
    expect((await logs()).every((l) => (l.result.redactions ?? 0) > 0)).toBe(true);
  });

  it("credentials in the spellings debug output uses: Go's header map, another scheme, escaped JSON, a key cut by the limit", async () => {
    const opaque = `opq${randomBytes(10).toString("hex")}`; // no shape of its own: only the header gives it away
    const ssws = `00${randomBytes(10).toString("hex")}`;
    const keyLine = randomBytes(45).toString("base64");
    hook(
      "on_task_completed.sh",
      [
        `echo "map[Accept:[*/*] Authorization:[Bearer ${opaque}]]"`,
        `echo "Authorization: SSWS ${ssws}" >&2`,
        // A JSON log line quoting a request, then a key in a JSON string that the output limit cuts.
        `printf '%s\n' '{"req":"{\\"authorization\\":\\"Bearer ${opaque}\\"}"}'`,
        `head -c 11900 /dev/zero | tr '\\0' x; printf '%s' ' {"key":"-----BEGIN PRIVATE KEY-----\\n${keyLine}\\n${keyLine}\\n${keyLine}\\n-----END PRIVATE KEY-----"}'`,
        "exit 1",
      ].join("\n"),
    );
    const outcome = await invokeEvent(request({ policy: POLICY }));
    expect(outcome.counted).toEqual({ state: "failed" });
    for (const value of [opaque, ssws, keyLine.slice(0, 16)]) expect(grep(team.teamDir, value), value).toEqual([]);
    const [log] = await logs();
    expect(log?.result.stdout).toContain("Authorization:[Bearer [redacted]]");
    expect(log?.result.stderr).toBe("Authorization: SSWS [redacted]\n");
  });

  it("a team secret with & and < echoed by a Go receiver's JSON, and one mounted with a newline that a hook prints trimmed", async () => {
    const pass = `p&ss<${randomBytes(6).toString("hex")}>`;
    const mounted = `mnt-${randomBytes(8).toString("hex")}`;
    hook("on_task_completed.sh", 'printf "token=%s.\\n" "$(printf %s "$MOUNTED_TOKEN" | tr -d "\\n")"', [
      "MOUNTED_TOKEN",
    ]);
    const escaped = JSON.stringify(pass)
      .slice(1, -1)
      .replace(/[<>&]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
    receiver.route("/go", (_req, res) => res.writeHead(500).end(`{"error":"bad password ${escaped}"}`));
    const env = { ...process.env, DB_PASSWORD: pass, MOUNTED_TOKEN: `${mounted}\n` };
    const outcome = await invokeEvent(
      request({
        policy: POLICY,
        handlers: [handler("go", "/go")],
        privacy: privacy({ redactEnv: ["DB_PASSWORD", "MOUNTED_TOKEN"] }),
        env,
      }),
    );
    expect(outcome.counted).toEqual({ state: "failed" });
    for (const value of [escaped, mounted]) expect(grep(team.teamDir, value), value).toEqual([]);
    const kept = (await logs()).map((l) => `${l.result.stdout} ${l.result.error ?? ""}`).join("\n");
    expect(kept).toContain("token=[redacted].");
    expect(kept).toContain("bad password [redacted]");
  });

  it("a task API key (pth_…) a hook prints, named nowhere: its secret part is on no file", async () => {
    const id = randomBytes(6).toString("hex");
    const key = `pth_${id}_${randomBytes(32).toString("base64url")}`;
    hook("on_task_completed.sh", 'echo "deciding with $API_KEY" >&2\nexit 1', ["API_KEY"]);
    const outcome = await invokeEvent(request({ policy: POLICY, env: { ...process.env, API_KEY: key } }));
    expect(outcome.counted).toEqual({ state: "failed" });
    expect(grep(team.teamDir, key.slice(`pth_${id}_`.length))).toEqual([]);
    const [log] = await logs();
    expect(log?.result.stderr).toBe(`deciding with pth_${id}_[redacted]\n`);
  });

  it("keys of a verdict the contract does not name (kept in the log as given) are redacted too, a file's and a handler's", async () => {
    const SK = `sk-proj${randomBytes(12).toString("hex")}X`;
    hook(
      "on_task_completed.sh",
      `echo "{\\"decision\\":\\"allow\\",\\"debug\\":{\\"token\\":\\"$DEPLOY_TOKEN\\",\\"list\\":[\\"${GHP}\\"]}}"`,
      ["DEPLOY_TOKEN"],
    );
    receiver.route("/extra", (_req, res) =>
      res.writeHead(200).end(JSON.stringify({ decision: "deny", reason: "no", details: `key ${SK}` })),
    );
    const env = { ...process.env, DEPLOY_TOKEN: DEPLOY };
    const outcome = await invokeEvent(
      request({
        policy: POLICY,
        handlers: [handler("extra", "/extra")],
        privacy: privacy({ redactEnv: ["DEPLOY_TOKEN"] }),
        env,
      }),
    );
    expect(outcome.counted).toEqual({ state: "failed" });
    for (const value of [DEPLOY, GHP, SK]) expect(grep(team.teamDir, value), value).toEqual([]);
    const verdicts = (await logs()).map((l) => l.result.verdict as Record<string, unknown> | undefined);
    expect(verdicts).toContainEqual(
      expect.objectContaining({ decision: "allow", debug: { token: "[redacted]", list: ["[redacted]"] } }),
    );
    expect(verdicts).toContainEqual(expect.objectContaining({ decision: "deny", details: "key [redacted]" }));
  });
});
