/**
 * Patch verdicts end to end through invokeEvent, with real hooks (bash scripts), a real HTTP handler on
 * 127.0.0.1 and a real worker process writing the same task through the lock protocol: what a patch
 * may write (the writable fields, the default, the never-writable paths), what the logs say of it,
 * how a three-hook chain folds deny > defer > patch > allow, and a held chain's patches waiting for
 * the decision.
 */
import { withoutGateNote } from "../../extensions/teams-hooks/contract/gate-note.js";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startLeaderHere } from "../helpers/leader-here.js";
import type { Task, TeamIdentity } from "../../extensions/teams-hooks/contract/team-files.js";
import { decideDeferral } from "../../extensions/teams-hooks/event/deferral-decision.js";
import type { DeferralRecord } from "../../extensions/teams-hooks/deferrals/record.js";
import { deferralFile } from "../../extensions/teams-hooks/deferrals/record.js";
import { invokeEvent, type InvokeRequest } from "../../extensions/teams-hooks/event/invoke.js";
import type { HookLogRecord } from "../../extensions/teams-hooks/logs/hook-log.js";
import { HandlerSchema, type HandlerDef } from "../../extensions/teams-hooks/settings/handlers.js";
import { DEFAULT_LIMITS, type HookLimits } from "../../extensions/teams-hooks/settings/team-settings.js";
import type { EffectivePolicy } from "../../extensions/teams-hooks/settings/options.js";
import type { Leader } from "../../extensions/teams-hooks/leader/leader.js";
import type { EventReport } from "../../extensions/teams-hooks/leader/notices.js";
import { resolveTeamSetup } from "../../extensions/teams-hooks/team/setup.js";
import { startReceiver, type Receiver } from "../helpers/http-receiver.js";
import { eventRequest, teamIdentity } from "../helpers/invoke-request.js";
import { readLogs, waitUntil, workerOp, elapse } from "../helpers/leader-rig.js";
import { teamSettings } from "../helpers/team-settings.js";
import { makeTask, makeTempTeam, type TempTeam } from "../helpers/temp-team.js";

const KEY = "task_completed:1:2026-12-04T10:00:00.000Z";
const POLICY: EffectivePolicy = { failureAction: "reopen_followup", maxReopensPerTask: 3, followupOwner: "member" };
const WORKER = path.join(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/workers/team-worker.mjs");

let team: TempTeam;
let identity: TeamIdentity;
let hooksDir: string;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});
beforeEach(async () => {
  const completed = makeTask({
    id: "1",
    status: "completed",
    owner: "alice",
    description: "the original",
    metadata: { completedAt: "2026-12-04T10:00:00.000Z", labels: ["old"], draft: true },
  });
  team = await makeTempTeam({ teamId: "patch", tasks: [completed] });
  identity = teamIdentity(team);
  hooksDir = path.join(team.teamsRoot, "_hooks");
  fs.mkdirSync(hooksDir, { recursive: true });
});
afterEach(async () => {
  await team.cleanup();
});

/** `policy`, `writableFields`, `limits` and `handlers` are the team's settings (config.json `hooks`). */
type Over = Partial<InvokeRequest> & {
  policy?: EffectivePolicy | null;
  writableFields?: string[];
  limits?: HookLimits;
  handlers?: HandlerDef[];
};

function request({ policy = POLICY, writableFields, limits, handlers, ...over }: Over = {}): InvokeRequest {
  const hooks = {
    ...policy,
    ...(writableFields ? { writableFields } : {}),
    ...(limits ? { limits } : {}),
    ...(handlers ? { handlers } : {}),
  };
  const base = {
    team,
    hooksDir,
    settings: { hooks, timeoutMs: 5_000 },
    key: KEY,
    timestamp: "2026-12-04T10:00:00.000Z",
  };
  return eventRequest({ ...base, applyPolicy: policy !== null }, over);
}

/** What applying a decision needs of the team: its identity and settings. */
const decisionSettings = () => ({ setup: { identity, settings: teamSettings({ hooks: POLICY, timeoutMs: 5_000 }) } });

/** A bash hook at `name` under the global layer (`on_task_completed.d/20-x.sh` makes the folder). */
function hook(name: string, body: string): void {
  const file = path.join(hooksDir, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `#!/usr/bin/env bash\n${body}\n`, { mode: 0o755 });
}

/** A hook body that prints `verdict` as its last stdout line. */
const says = (verdict: unknown): string => `cat > /dev/null\necho '${JSON.stringify(verdict)}'`;

const task = (): Task => JSON.parse(fs.readFileSync(team.taskFile("1"), "utf8")) as Task;

async function logs(): Promise<HookLogRecord[]> {
  return (await readLogs(team.teamDir)).sort((a, b) =>
    (a.result.hookPath ?? "").localeCompare(b.result.hookPath ?? ""),
  );
}

/**
 * A leader in this process on `watched` (reconciling every 200 ms), started and past its start-up scan; its event
 * reports.
 */
async function watchTeam(
  watched: TempTeam,
  leaders: Leader[],
): Promise<{ leader: Leader; events: () => EventReport[] }> {
  const env = { PATH: process.env.PATH ?? "" };
  const setup = await resolveTeamSetup({
    teamDir: watched.teamDir,
    env,
    processCwd: watched.teamsRoot,
    policyFlags: {},
  });
  const { leader, events } = await startLeaderHere(setup, env, {}, leaders);
  return { leader, events };
}

describe("what a patch may write", () => {
  it("by default metadata only: the inside is written with the gate's metadata, the outside dropped and named in the log", async () => {
    hook(
      "on_task_completed.sh",
      says({
        decision: "patch",
        patch: {
          description: "rewritten",
          status: "pending",
          owner: "mallory",
          metadata: {
            labels: ["reviewed"],
            ci: { run: 7 },
            qualityGateStatus: "forged",
            reopenedByQualityGateCount: 0,
            taskApi: { template: "x" },
            completedAt: "2030-01-01T00:00:00.000Z",
            draft: null,
          },
        },
      }),
    );
    const outcome = await invokeEvent(request());
    expect(outcome.counted).toEqual({ state: "passed" });
    const after = task();
    expect(after.metadata).toMatchObject({
      labels: ["reviewed"],
      ci: { run: 7 },
      qualityGateStatus: "passed",
      qualityGateEventKey: KEY,
    });
    expect(after.metadata).not.toHaveProperty("draft"); // null deletes, within the fields
    // the event's stamp: a new one would be a new completion
    expect(after.metadata?.completedAt).toBe("2026-12-04T10:00:00.000Z");
    expect(after.metadata).not.toHaveProperty("reopenedByQualityGateCount");
    expect(after.metadata).not.toHaveProperty("taskApi");
    expect([after.description, after.status, after.owner]).toEqual(["the original", "completed", "alice"]);
    const [log] = await logs();
    expect(log?.result.patchApplied).toEqual(["metadata.labels", "metadata.ci", "metadata.draft"]);
    expect(log?.result.patchRejected).toEqual([
      "description",
      "status",
      "owner",
      "metadata.qualityGateStatus",
      "metadata.reopenedByQualityGateCount",
      "metadata.taskApi",
      "metadata.completedAt",
    ]);
    expect(log?.result.verdict).toMatchObject({ decision: "patch", source: "stdout" });
  });

  it("hooks.writableFields replaces the default: the description is writable, metadata.x is not", async () => {
    const PATCH = { decision: "PATCH", patch: { description: "rewritten", metadata: { x: 1, labels: ["new"] } } };
    hook("on_task_completed.sh", `cat > /dev/null\necho '${JSON.stringify(PATCH)}' > "$PI_TEAMS_HOOK_RESULT_FILE"`);
    await invokeEvent(request({ writableFields: ["description", "metadata.labels"] }));
    expect(task()).toMatchObject({ description: "rewritten", metadata: { labels: ["new"] } });
    expect(task().metadata).not.toHaveProperty("x");
    const [log] = await logs();
    expect(log?.result).toMatchObject({
      patchApplied: ["description", "metadata.labels"],
      patchRejected: ["metadata.x"],
      verdict: { decision: "patch", source: "file" },
    });
  });

  it("a configured top-level field is deleted by null (gone from the file, not written as null)", async () => {
    const file = team.taskFile("1");
    fs.writeFileSync(file, JSON.stringify({ ...task(), notes: "scratch", review: { by: "bob" } }));
    hook(
      "on_task_completed.sh",
      says({ decision: "patch", patch: { notes: null, review: { by: null, state: "ok" } } }),
    );
    await invokeEvent(request({ writableFields: ["notes", "review"] }));
    const raw = JSON.parse(fs.readFileSync(file, "utf8")) as Record<string, unknown>;
    expect(raw).not.toHaveProperty("notes");
    expect(raw.review).toEqual({ state: "ok" });
  });

  it("the never-writable fields stay so even when configured", async () => {
    const fields = [
      "id",
      "status",
      "owner",
      "blocks",
      "blockedBy",
      "metadata.qualityGateStatus",
      "metadata.reopenedByQualityGateCount",
      "metadata.qualityGateStartDeniedAt",
      "metadata.taskApi",
    ];
    hook(
      "on_task_completed.sh",
      says({
        decision: "patch",
        patch: {
          id: "9",
          status: "pending",
          owner: "eve",
          blocks: ["2"],
          blockedBy: ["3"],
          metadata: {
            qualityGateStatus: "forged",
            reopenedByQualityGateCount: 0,
            qualityGateStartDeniedAt: "x",
            taskApi: {},
          },
        },
      }),
    );
    const before = task();
    const outcome = await invokeEvent(request({ writableFields: fields }));
    expect(outcome.counted).toEqual({ state: "passed" });
    const after = task();
    expect([after.id, after.status, after.owner, after.blocks, after.blockedBy]).toEqual([
      before.id,
      before.status,
      before.owner,
      before.blocks,
      before.blockedBy,
    ]);
    expect(after.metadata).toMatchObject({ qualityGateStatus: "passed" });
    expect(after.metadata).not.toHaveProperty("qualityGateStartDeniedAt");
    const [log] = await logs();
    expect(log?.result.patchRejected).toEqual([
      "id",
      "status",
      "owner",
      "blocks",
      "blockedBy",
      "metadata.qualityGateStatus",
      "metadata.reopenedByQualityGateCount",
      "metadata.qualityGateStartDeniedAt",
      "metadata.taskApi",
    ]);
    expect(log?.result.patchIgnored).toBe("nothing of the patch is inside the writable fields");
    expect(log?.result.patchApplied).toBeUndefined();
  });

  it("an invalid patch is an invalid verdict (not an object; a task left without a description)", async () => {
    hook("on_task_completed.sh", says({ decision: "patch", patch: ["metadata"] }));
    const first = await invokeEvent(request());
    expect(first.result).toMatchObject({ outcome: "error", errorKind: "invalid_verdict" });
    expect(first.result?.error).toContain("patch: must be a JSON object, got an array");
    expect(first.counted).toEqual({ state: "failed" });
    hook("on_task_completed.sh", says({ decision: "patch", patch: { description: null } }));
    const second = await invokeEvent(request({ key: `${KEY}.2`, writableFields: ["description"] }));
    expect(second.result).toMatchObject({ outcome: "error", errorKind: "invalid_verdict" });
    expect(second.result?.error).toContain("invalid patch: the patched task is not a task (description:");
    // The patch wrote nothing: the description is the original (under the gate's note of the reopen).
    expect(withoutGateNote(task().description)).toBe("the original");
  });

  it("a patch on idle is ignored and logged", async () => {
    hook("on_idle.sh", says({ decision: "patch", patch: { metadata: { x: 1 } } }));
    const outcome = await invokeEvent(request({ event: "idle", taskId: null, key: "idle:alice:t" }));
    expect(outcome.counted).toEqual({ state: "passed" });
    const [log] = await logs();
    expect(log?.result).toMatchObject({
      outcome: "passed",
      patchIgnored: "idle has no task to patch: the patch was ignored",
    });
    expect(task().metadata).not.toHaveProperty("x");
  });

  it("a start gate's patch is ignored and logged: it judges the claim, it does not change the task", async () => {
    fs.writeFileSync(
      team.taskFile("1"),
      JSON.stringify({ ...task(), status: "in_progress", metadata: { labels: ["old"] } }),
    );
    hook("on_task_started.sh", says({ decision: "patch", patch: { metadata: { x: 1 } } }));
    const outcome = await invokeEvent(
      request({ event: "task_started", key: "task_started:1:2026-12-04T10:00:00.000Z" }),
    );
    expect(outcome.counted).toEqual({ state: "passed" });
    const [log] = await logs();
    expect(log?.result).toMatchObject({
      outcome: "passed",
      patchIgnored: "task_started does not take patches: the patch was ignored",
    });
    expect(task()).toMatchObject({ status: "in_progress", owner: "alice" });
    expect(task().metadata).not.toHaveProperty("x");
  });

  it("without a policy (run without --apply-policy) nothing is written, and the log says why", async () => {
    hook("on_task_completed.sh", says({ decision: "patch", patch: { metadata: { x: 1 } } }));
    await invokeEvent(request({ policy: null }));
    expect(task().metadata).not.toHaveProperty("x");
    const [log] = await logs();
    expect(log?.result.patchIgnored).toMatch(/^no failure policy applied/);
  });
});

describe("under the task lock", () => {
  it("a worker writing the same task all the while loses nothing, and neither does any patch", async () => {
    const stopFile = path.join(team.teamsRoot, "stop-touch");
    const worker = spawn(
      process.execPath,
      [
        WORKER,
        "touch",
        JSON.stringify({
          tasksDir: team.tasksDir,
          ids: ["1"],
          field: "comment",
          stopFile,
          rounds: 100_000,
          pauseMs: 2,
        }),
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    worker.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    const exited = new Promise<number | null>((resolve) => worker.on("exit", (code) => resolve(code)));
    try {
      // The worker has written at least once before the first gate runs.
      await waitUntil("the worker's first write", () => task().metadata?.comment !== undefined, { timeoutMs: 5_000 });
      expect(task().metadata?.comment).toBeDefined();
      const startedAt = task().metadata?.comment as number;
      const rounds = 5;
      for (let i = 1; i <= rounds; i++) {
        hook("on_task_completed.sh", says({ decision: "patch", patch: { metadata: { [`patch${i}`]: i } } }));
        const outcome = await invokeEvent(request({ key: `${KEY}#${i}` }));
        expect(outcome.policyApplied).toBe(true);
      }
      // The worker kept writing while the gates wrote their patches.
      expect(task().metadata?.comment as number).toBeGreaterThan(startedAt);
      fs.writeFileSync(stopFile, "");
      expect(await exited).toBe(0);
      const final = (JSON.parse(stdout.trim().split("\n").pop() ?? "{}") as { final: Record<string, number> }).final[
        "1"
      ];
      const after = task() as Task & { commentTop?: number };
      // The worker's last write is there, and so is every patch: neither overwrote the other.
      expect(after.metadata?.comment).toBe(final);
      expect(after.commentTop).toBe(final);
      for (let i = 1; i <= rounds; i++) expect(after.metadata?.[`patch${i}`]).toBe(i);
      expect(after.metadata?.qualityGateEventKey).toBe(`${KEY}#${rounds}`);
    } finally {
      fs.writeFileSync(stopFile, "");
      if (worker.exitCode === null) worker.kill("SIGKILL");
      await exited;
    }
  }, 40_000);
});

describe("a three-hook chain folds deny > defer > patch > allow", () => {
  const d = "on_task_completed.d";

  it("patch, patch, allow: both patches written in chain order, and the later hook saw the earlier patch in stdin, the context file and the environment", async () => {
    const seen = path.join(team.teamsRoot, "seen");
    fs.mkdirSync(seen);
    hook(
      `${d}/10-label.sh`,
      says({ decision: "patch", patch: { metadata: { stage: "ten", labels: ["ten"], keep: 1 } } }),
    );
    hook(
      `${d}/20-look.sh`,
      `cat > ${seen}/stdin.json\ncp "$PI_TEAMS_HOOK_CONTEXT_FILE" ${seen}/file.json\nprintf '%s' "$PI_TEAMS_HOOK_CONTEXT_JSON" > ${seen}/env.json\necho '${JSON.stringify({ decision: "patch", patch: { metadata: { stage: "twenty", labels: null } } })}'`,
    );
    hook(`${d}/30-allow.sh`, `cat > ${seen}/third.json\necho '{"decision":"allow"}'`);
    const outcome = await invokeEvent(request());
    expect(outcome.counted).toEqual({ state: "passed" });
    for (const where of ["stdin", "file", "env"]) {
      const doc = JSON.parse(fs.readFileSync(path.join(seen, `${where}.json`), "utf8")) as { task: Task };
      expect(doc.task.metadata, where).toMatchObject({ stage: "ten", labels: ["ten"], keep: 1 });
    }
    const third = JSON.parse(fs.readFileSync(path.join(seen, "third.json"), "utf8")) as { task: Task };
    expect(third.task.metadata).toMatchObject({ stage: "twenty", keep: 1 });
    expect(third.task.metadata).not.toHaveProperty("labels");
    const after = task();
    expect(after.metadata).toMatchObject({ stage: "twenty", keep: 1, qualityGateStatus: "passed" });
    expect(after.metadata).not.toHaveProperty("labels");
    const logged = await logs();
    expect(logged.map((l) => [path.basename(l.result.hookPath ?? ""), l.result.patchApplied ?? null])).toEqual([
      ["10-label.sh", ["metadata.stage", "metadata.labels", "metadata.keep"]],
      ["20-look.sh", ["metadata.stage", "metadata.labels"]],
      ["30-allow.sh", null],
    ]);
  });

  it("a patch that grows the document past the payload limit: the next hook is refused (closed), nothing written", async () => {
    hook(`${d}/10-grow.sh`, says({ decision: "patch", patch: { metadata: { blob: "x".repeat(3_000) } } }));
    hook(`${d}/20-never.sh`, says({ decision: "allow" }));
    const outcome = await invokeEvent(request({ limits: { ...DEFAULT_LIMITS, maxPayloadBytes: 2_048 } }));
    expect(outcome.runs.map((r) => [r.hook.name, r.result.outcome, r.result.errorKind ?? null])).toEqual([
      ["10-grow.sh", "passed", null],
      ["20-never.sh", "error", "limit"],
    ]);
    expect(outcome.result?.error).toMatch(
      /^the context document, patched by the hooks before, is \d+ bytes; the limit is 2048/,
    );
    expect(outcome.counted).toEqual({ state: "failed" });
    expect(task().metadata).not.toHaveProperty("blob");
  });

  it("patch, defer, deny: the chain goes on past the defer, the denial wins, and no patch is written", async () => {
    hook(`${d}/10-patch.sh`, says({ decision: "patch", patch: { metadata: { x: 1 } } }));
    hook(`${d}/20-defer.sh`, says({ decision: "defer", reason: "waiting for CI" }));
    hook(`${d}/30-deny.sh`, says({ decision: "deny", code: "review", reason: "changes requested" }));
    const outcome = await invokeEvent(request());
    expect(outcome.runs.map((r) => r.result.outcome)).toEqual(["passed", "deferred", "failed"]);
    expect(outcome.counted).toEqual({ state: "failed" });
    expect(outcome.hook?.name).toBe("30-deny.sh");
    expect(outcome.deferral).toBeNull();
    expect(fs.existsSync(path.join(team.teamDir, "hook-state", "deferrals"))).toBe(false);
    const after = task();
    expect(after.metadata).not.toHaveProperty("x");
    expect(after.metadata).toMatchObject({ qualityGateStatus: "failed", qualityGateCode: "review" });
    const [first] = await logs();
    expect(first?.result.patchIgnored).toBe("the chain was denied: the patch was discarded");
  });

  it("patch, defer, allow: held; the patch waits with the deferral and is written when the decision allows", async () => {
    hook(`${d}/10-patch.sh`, says({ decision: "patch", patch: { metadata: { ci: "pending" } } }));
    hook(`${d}/20-defer.sh`, says({ decision: "defer", reason: "waiting for CI" }));
    hook(
      `${d}/30-patch.sh`,
      says({ decision: "patch", patch: { metadata: { ci: "green", qualityGateStatus: "forged" } } }),
    );
    const outcome = await invokeEvent(request());
    expect(outcome.counted).toEqual({ state: "held", cause: "deferral" });
    expect(outcome.hook?.name).toBe("20-defer.sh");
    const runId = outcome.result?.runId ?? "";
    const record = JSON.parse(fs.readFileSync(deferralFile(team.teamDir, runId), "utf8")) as DeferralRecord;
    expect(record.patches).toEqual([{ metadata: { ci: "pending" } }, { metadata: { ci: "green" } }]);
    expect(task().metadata).toMatchObject({ qualityGateStatus: "deferred" });
    expect(task().metadata).not.toHaveProperty("ci");
    const held = await logs();
    expect(held[0]?.result.patchIgnored).toMatch(/^the gate is held/);
    expect(held[2]?.result.patchRejected).toEqual(["metadata.qualityGateStatus"]);

    const decided = await decideDeferral(
      team.teamDir,
      runId,
      { decision: "allow", by: "ci" },
      { env: {}, settings: decisionSettings() },
    );
    expect(decided.kind).toBe("applied");
    expect(task().metadata).toMatchObject({ ci: "green", qualityGateStatus: "passed", qualityGateDecision: "allow" });
    const decisionLog = (await logs()).find((l) => l.decision !== undefined);
    expect(decisionLog?.decision).toMatchObject({
      patchApplied: [{ metadata: { ci: "pending" } }, { metadata: { ci: "green" } }],
    });
  });

  it("patch, defer: a deny decision discards the held patches", async () => {
    hook(`${d}/10-patch.sh`, says({ decision: "patch", patch: { metadata: { ci: "pending" } } }));
    hook(`${d}/20-defer.sh`, says({ decision: "defer" }));
    const outcome = await invokeEvent(request());
    const runId = outcome.result?.runId ?? "";
    const decided = await decideDeferral(
      team.teamDir,
      runId,
      { decision: "deny", reason: "CI failed", by: "ci" },
      { env: {}, settings: decisionSettings() },
    );
    expect(decided.kind).toBe("applied");
    expect(task().metadata).toMatchObject({ qualityGateStatus: "failed" });
    expect(task().metadata).not.toHaveProperty("ci");
    const decisionLog = (await logs()).find((l) => l.decision !== undefined);
    expect(decisionLog?.decision).toMatchObject({
      patchIgnored: "the decision is not allow: the held chain's patches were discarded",
    });
  });
});

describe("an HTTP handler's patch", () => {
  it("a handler answering PATCH after a file hook's patch: both written, the handler saw the first", async () => {
    receiver.route("/patch", (_req, res) =>
      res
        .writeHead(200, { "content-type": "application/json" })
        .end('{"decision":"PATCH","patch":{"metadata":{"ci":"green","qualityGateCode":"x"}}}'),
    );
    hook("on_task_completed.sh", says({ decision: "patch", patch: { metadata: { labels: ["from-file"] } } }));
    const handler = HandlerSchema.parse({ name: "ci", events: ["task_completed"], url: `${receiver.url}/patch` });
    const outcome = await invokeEvent(request({ handlers: [handler] }));
    expect(outcome.counted).toEqual({ state: "passed" });
    const sent = JSON.parse(receiver.requests("/patch")[0]?.body.toString("utf8") ?? "{}") as { task: Task };
    expect(sent.task.metadata).toMatchObject({ labels: ["from-file"] });
    expect(task().metadata).toMatchObject({ labels: ["from-file"], ci: "green", qualityGateStatus: "passed" });
    expect(task().metadata).not.toHaveProperty("qualityGateCode");
    const handlerLog = (await logs()).find((l) => l.result.http !== undefined);
    expect(handlerLog?.result).toMatchObject({
      verdict: { decision: "patch", source: "http" },
      patchApplied: ["metadata.ci"],
      patchRejected: ["metadata.qualityGateCode"],
    });
  });
});

describe("the leader", () => {
  it("applies hooks.writableFields from config.json, and its own patched write is no new completion", async () => {
    const watched = await makeTempTeam({
      teamId: "watched",
      config: { teamId: "watched", hooks: { writableFields: ["description", "metadata.labels"] } },
      tasks: [
        makeTask({ id: "1", owner: "alice", status: "in_progress" }),
        makeTask({ id: "2", owner: "bob", status: "in_progress" }),
      ],
    });
    const leaders: Leader[] = [];
    try {
      const hooks = path.join(watched.teamsRoot, "_hooks");
      fs.mkdirSync(hooks, { recursive: true });
      // Patches task 1 only; a fresh value each run, so a second run would show.
      fs.writeFileSync(
        path.join(hooks, "on_task_completed.sh"),
        `#!/usr/bin/env bash\ncat > /dev/null\n[ "$PI_TEAMS_TASK_ID" = 1 ] || exit 0\necho "{\\"decision\\":\\"patch\\",\\"patch\\":{\\"description\\":\\"checked by the gate\\",\\"metadata\\":{\\"labels\\":[\\"$(date +%s%N)\\"],\\"other\\":1}}}"\n`,
        { mode: 0o755 },
      );
      const { leader, events } = await watchTeam(watched, leaders);

      await workerOp("complete", { tasksDir: watched.tasksDir, ids: ["1"] });
      await waitUntil("task 1's gate", () => events().length === 1);
      const patched = JSON.parse(fs.readFileSync(watched.taskFile("1"), "utf8")) as Task;
      expect(patched).toMatchObject({
        status: "completed",
        description: "checked by the gate",
        metadata: { qualityGateStatus: "passed" },
      });
      expect(patched.metadata?.labels).toHaveLength(1);
      expect(patched.metadata).not.toHaveProperty("other");
      // Task 2 afterwards: once its gate is done, the leader has long seen its own write of task 1.
      await workerOp("complete", { tasksDir: watched.tasksDir, ids: ["2"] });
      await waitUntil("task 2's gate", () => events().some((e) => e.taskId === "2"));
      await leader.stop();
      expect(events().filter((e) => e.taskId === "1")).toHaveLength(1);
      const logged = (await readLogs(watched.teamDir)).filter((l) => l.invocation.completedTask?.id === "1");
      expect(logged).toHaveLength(1);
      expect(logged[0]?.result).toMatchObject({
        patchApplied: ["description", "metadata.labels"],
        patchRejected: ["metadata.other"],
      });
      expect((JSON.parse(fs.readFileSync(watched.taskFile("1"), "utf8")) as Task).metadata?.labels).toEqual(
        patched.metadata?.labels,
      );
    } finally {
      for (const leader of leaders) await leader.stop();
      await watched.cleanup();
    }
  }, 30_000);

  it("never lets a patch move the times and stamps it keys events by, even when configured: no gate running again and again", async () => {
    // A completion without metadata.completedAt is keyed by its updatedAt: a patched updatedAt would be a new
    // completion.
    const watched = await makeTempTeam({
      teamId: "stamps",
      config: { teamId: "stamps", hooks: { writableFields: ["updatedAt", "createdAt", "metadata"] } },
      tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })],
    });
    const leaders: Leader[] = [];
    try {
      const hooks = path.join(watched.teamsRoot, "_hooks");
      fs.mkdirSync(hooks, { recursive: true });
      fs.writeFileSync(
        path.join(hooks, "on_task_completed.sh"),
        `#!/usr/bin/env bash\ncat > /dev/null\nnow=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)\necho "{\\"decision\\":\\"patch\\",\\"patch\\":{\\"updatedAt\\":\\"$now\\",\\"createdAt\\":\\"$now\\",\\"metadata\\":{\\"claimedAt\\":\\"$now\\",\\"unassignedAt\\":\\"$now\\",\\"__proto__\\":{\\"x\\":1},\\"labels\\":[\\"$now\\"]}}}"\n`,
        { mode: 0o755 },
      );
      const { leader, events } = await watchTeam(watched, leaders);

      const before = JSON.parse(fs.readFileSync(watched.taskFile("1"), "utf8")) as Task;
      fs.writeFileSync(
        watched.taskFile("1"),
        JSON.stringify({ ...before, status: "completed", updatedAt: new Date().toISOString() }),
      );
      await waitUntil("the gate", () => events().length === 1);
      // A negative check: long enough for a few reconcile scans (a patched updatedAt ran the gate again every 20 ms).
      await elapse(1_500);
      await leader.stop();
      expect(events()).toHaveLength(1);
      const after = JSON.parse(fs.readFileSync(watched.taskFile("1"), "utf8")) as Task;
      expect(after.updatedAt).toBe(after.metadata?.qualityGateAt);
      expect(after.createdAt).toBe(before.createdAt);
      expect(after.metadata).not.toHaveProperty("claimedAt");
      expect(after.metadata).not.toHaveProperty("unassignedAt");
      expect(after.metadata?.labels).toHaveLength(1);
      const [logged] = await readLogs(watched.teamDir);
      expect(logged?.result).toMatchObject({
        patchApplied: ["metadata.labels"],
        patchRejected: ["updatedAt", "createdAt", "metadata.claimedAt", "metadata.unassignedAt", "metadata.__proto__"],
      });
    } finally {
      for (const leader of leaders) await leader.stop();
      await watched.cleanup();
    }
  }, 30_000);
});
