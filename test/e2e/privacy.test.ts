/**
 * Projection and redaction through the built bin, from config.json: `run --apply-policy` of a gate
 * that config.json projects to the task id and that prints secrets; what it saw, and every file
 * of the team dir afterwards; `policy get --json` shows the settings (names, never values). Then a
 * real leader (`watch`) of a confidential team: a worker completes a task, a projected chain file
 * and an HTTP handler on 127.0.0.1 see only what they may, and the secrets both of them print or
 * answer reach no file of the team dir, though the policy reopens, files a follow-up and nudges.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, readLogs, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { startReceiver, type Receiver } from "../helpers/http-receiver.js";
import { makeTask, makeTempTeam, type TempTeam } from "../helpers/temp-team.js";

beforeAll(() => ensureBuilt(), 240_000);
const rig = useLeaderRig();
let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

/** The files under `dir` (recursively) whose content holds `value`: what `grep -rl` would say. */
function grep(dir: string, value: string): string[] {
  const hits: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    if (fs.readFileSync(file, "utf8").includes(value)) hits.push(path.relative(dir, file));
  }
  return hits;
}

let team: TempTeam | null = null;
afterEach(async () => {
  await team?.cleanup();
  team = null;
});

describe("privacy through the bin", () => {
  it("a projected gate that prints secrets: it never saw the description, and no secret is on disk", async () => {
    const description = `DESC-${randomBytes(8).toString("hex")}`;
    const ghp = `ghp_${randomBytes(18).toString("hex").slice(0, 36)}`;
    const deploy = `deploy-${randomBytes(8).toString("hex")}`;
    team = await makeTempTeam({
      teamId: "e2e-priv",
      config: {
        teamId: "e2e-priv",
        hooks: {
          failureAction: "reopen_followup",
          projection: { on_task_completed: ["task.id"] },
          redactEnv: ["DEPLOY_TOKEN"],
        },
      },
      tasks: [
        makeTask({
          id: "3",
          status: "completed",
          owner: "bob",
          description,
          metadata: { completedAt: "2026-12-02T10:00:00.000Z" },
        }),
      ],
    });
    const hooksDir = path.join(team.teamsRoot, "_hooks");
    const seenDir = path.join(team.teamsRoot, "seen");
    const seen = path.join(seenDir, "all");
    fs.mkdirSync(hooksDir);
    fs.mkdirSync(seenDir);
    // The sandboxed gate gets DEPLOY_TOKEN and may write its dump only as its settings line declares.
    fs.writeFileSync(
      path.join(hooksDir, "on_task_completed.sh"),
      `#!/usr/bin/env bash\n# pi-teams-hooks: env=DEPLOY_TOKEN sandbox-write=${seenDir}\n{ cat; echo; env | grep '^PI_TEAMS_'; printf '%s' "$PI_TEAMS_HOOK_CONTEXT_JSON"; cat "$PI_TEAMS_HOOK_CONTEXT_FILE"; } > '${seen}'\necho "push with ${ghp} as $DEPLOY_TOKEN" >&2\nexit 1\n`,
      { mode: 0o755 },
    );
    const env = { DEPLOY_TOKEN: deploy };
    const run = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "3", "--apply-policy"], {
      env,
    });
    expect(run.code).toBe(1);
    expect(run.stdout).toContain("exit code 1 • push with [redacted] as [redacted]");
    expect(run.stdout + run.stderr).not.toMatch(new RegExp(`${ghp}|${deploy}`));

    const what = fs.readFileSync(seen, "utf8");
    expect(what).toContain('"projection":["task.id"]');
    expect(what).toMatch(/^PI_TEAMS_TASK_ID=3$/m);
    expect(what).not.toContain(description);

    const hits: string[] = [];
    for (const entry of fs.readdirSync(team.teamDir, { withFileTypes: true, recursive: true })) {
      if (!entry.isFile()) continue;
      const text = fs.readFileSync(path.join(entry.parentPath, entry.name), "utf8");
      if (text.includes(ghp) || text.includes(deploy)) hits.push(entry.name);
    }
    expect(hits).toEqual([]);
    const [logName] = fs.readdirSync(path.join(team.teamDir, "hook-logs"));
    const log = JSON.parse(fs.readFileSync(path.join(team.teamDir, "hook-logs", logName ?? ""), "utf8")) as {
      result: { redactions: number };
      shown: { projection: string[] };
    };
    expect(log.result.redactions).toBe(2);
    expect(log.shown.projection).toEqual(["task.id"]);

    const policy = await runBin(["policy", "get", "--json", "--team-dir", team.teamDir], { env });
    const report = JSON.parse(policy.stdout) as Record<string, { value: unknown; origin: string }>;
    expect(report.projection).toMatchObject({
      value: { on_task_completed: ["task.id"] },
      origin: "config.json hooks.projection",
    });
    expect(report.redactEnv).toMatchObject({ value: ["DEPLOY_TOKEN"], origin: "config.json hooks.redactEnv" });
    expect(report.confidential).toMatchObject({ value: false, origin: "default" });
    expect(policy.stdout).not.toContain(deploy);
  });

  it("a hooks block refused for a typo still redacts what it names, and a confidential team's log keeps no content", async () => {
    const deploy = `deploy-${randomBytes(8).toString("hex")}`;
    const subject = `SUBJ-${randomBytes(8).toString("hex")}`;
    team = await makeTempTeam({
      teamId: "e2e-refused",
      // task.title names no field: the whole block is refused.
      config: {
        teamId: "e2e-refused",
        hooks: { confidential: true, redactEnv: ["DEPLOY_TOKEN"], projection: { on_task_completed: ["task.title"] } },
      },
      tasks: [
        makeTask({
          id: "3",
          status: "completed",
          owner: "bob",
          subject,
          metadata: { completedAt: "2026-12-02T10:00:00.000Z" },
        }),
      ],
    });
    const hooksDir = path.join(team.teamsRoot, "_hooks");
    fs.mkdirSync(hooksDir);
    fs.writeFileSync(
      path.join(hooksDir, "on_task_completed.sh"),
      `#!/usr/bin/env bash\n# pi-teams-hooks: env=DEPLOY_TOKEN\necho "pushed with $DEPLOY_TOKEN" >&2\nexit 1\n`,
      { mode: 0o755 },
    );
    const run = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "3", "--apply-policy"], {
      env: { DEPLOY_TOKEN: deploy },
    });
    expect(run.stderr).toContain('the "hooks" block is refused whole');
    expect(run.stdout).toContain("pushed with [redacted]");
    expect(grep(team.teamDir, deploy)).toEqual([]);
    const logs = await readLogs(team.teamDir);
    expect(JSON.stringify(logs)).not.toContain(subject);
  });

  it("a projection naming no gate (a typo: the file is 10-lint.sh) is said before the gate runs, shown everything", async () => {
    team = await makeTempTeam({
      teamId: "e2e-typo",
      config: { teamId: "e2e-typo", hooks: { projection: { "on_task_completed.d/10-lint": ["task.id"] } } },
      tasks: [
        makeTask({
          id: "3",
          status: "completed",
          owner: "bob",
          metadata: { completedAt: "2026-12-02T10:00:00.000Z" },
        }),
      ],
    });
    const chainDir = path.join(team.teamsRoot, "_hooks", "on_task_completed.d");
    fs.mkdirSync(chainDir, { recursive: true });
    fs.writeFileSync(path.join(chainDir, "10-lint.sh"), "#!/usr/bin/env bash\nexit 0\n", { mode: 0o755 });
    const run = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "3"]);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain(
      "warning: hooks.projection names on_task_completed.d/10-lint, which runs for no event: the projection applies to nothing, and the gates see the whole document (gates: on_task_completed.d/10-lint.sh)",
    );
  });
});

describe("privacy in the leader", () => {
  it("a confidential team: a projected chain file and a handler see only what they may; what they leak reaches no file", async () => {
    const description = `DESC-${randomBytes(8).toString("hex")} the payroll migration`;
    const subject = `SUBJ-${randomBytes(8).toString("hex")}`;
    const meta = `META-${randomBytes(8).toString("hex")}`;
    const ghp = `ghp_${randomBytes(18).toString("hex").slice(0, 36)}`;
    const deploy = `deploy-${randomBytes(8).toString("hex")}`; // hooks.redactEnv
    const ciToken = `citok-${randomBytes(8).toString("hex")}`; // the handler's secret header
    receiver.route("/priv-ci", (req, res) => {
      // A receiver that echoes the credential it was sent, and finds a token in the diff.
      const echoed = String(req.headers.authorization ?? "");
      res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({
          decision: "deny",
          code: "ci.leak",
          reason: `found ${ghp} in the diff`,
          message: `request had ${echoed}`,
        }),
      );
    });
    const team = await rig.team({
      teamId: "leader-priv",
      tasks: [
        makeTask({
          id: "1",
          owner: "alice",
          status: "in_progress",
          subject,
          description,
          metadata: { files: ["src/a.ts"], note: meta },
        }),
      ],
      config: {
        hooks: {
          failureAction: "reopen_followup",
          confidential: true,
          redactEnv: ["DEPLOY_TOKEN"],
          handlers: [
            {
              name: "ci",
              events: ["task_completed"],
              url: `${receiver.url}/priv-ci`,
              secretHeaders: { Authorization: "CI_GATE_TOKEN" },
            },
          ],
          projection: { "on_task_completed.d/10-lint.sh": ["task.id", "task.metadata.files"] },
        },
      },
    });
    const seen = path.join(team.teamsRoot, "seen"); // outside the team dir: what the hook got, by channel
    fs.mkdirSync(seen);
    fs.mkdirSync(path.join(team.teamsRoot, "_hooks", "on_task_completed.d"), { recursive: true });
    await rig.hook(
      team,
      "on_task_completed.d/10-lint.sh",
      [
        // The leader's variables it prints, declared; `seen` lies in the leader's cwd, which the gate may write.
        "# pi-teams-hooks: env=GITHUB_TOKEN,DEPLOY_TOKEN,CI_GATE_TOKEN",
        `cat > '${seen}/stdin'`,
        `cat "$PI_TEAMS_HOOK_CONTEXT_FILE" > '${seen}/file'`,
        `printf '%s' "$PI_TEAMS_HOOK_CONTEXT_JSON" > '${seen}/json'`,
        `env | grep '^PI_TEAMS_' > '${seen}/env'`,
        // GITHUB_TOKEN is named nowhere in config.json (only on the gate's own line): only its shape gives it away.
        'echo "lint ok; pushed with $GITHUB_TOKEN as $DEPLOY_TOKEN via $CI_GATE_TOKEN"',
      ].join("\n"),
    );
    const leader = await rig.leader(team, ["--reconcile-ms", "200"], {
      env: { GITHUB_TOKEN: ghp, DEPLOY_TOKEN: deploy, CI_GATE_TOKEN: `Bearer ${ciToken}` },
    });
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1);
    expect(event).toMatchObject({ taskId: "1", hook: "http:ci", outcome: "failed" });
    expect(await leader.stop()).toMatchObject({ code: 0 });

    // The projected file: the description, subject and other metadata in none of the four channels.
    for (const channel of ["stdin", "file", "json", "env"]) {
      const got = fs.readFileSync(path.join(seen, channel), "utf8");
      for (const value of [description, subject, meta]) expect(got, `${channel}: ${value}`).not.toContain(value);
    }
    expect(JSON.parse(fs.readFileSync(path.join(seen, "stdin"), "utf8"))).toMatchObject({
      task: { id: "1", subject: "", description: "", metadata: { files: ["src/a.ts"] } },
      projection: ["task.id", "task.metadata.files"],
    });
    expect(fs.readFileSync(path.join(seen, "env"), "utf8")).toMatch(/^PI_TEAMS_TASK_ID=1$/m);

    // The handler of a confidential team: identity and lifecycle, the subject replaced by the id.
    const [request] = receiver.requests("/priv-ci");
    const body = request?.body.toString("utf8") ?? "";
    for (const value of [description, subject, meta]) expect(body).not.toContain(value);
    expect(JSON.parse(body)).toMatchObject({
      task: { id: "1", subject: "1", description: "", metadata: {} },
      confidential: true,
    });

    // Nothing raw on disk: logs, the task's metadata, the follow-up, the nudge, hook-state.
    for (const value of [ghp, deploy, ciToken]) expect(grep(team.teamDir, value), value).toEqual([]);
    const redacted = grep(team.teamDir, "[redacted]").map((f) => f.split(path.sep)[0]);
    expect(new Set(redacted)).toEqual(new Set(["hook-logs", "tasks", "mailboxes"]));
    const logs = await readLogs(team.teamDir);
    expect(logs).toHaveLength(2);
    for (const log of logs) {
      // Confidential: no description, no metadata, the subject is the id, in every log.
      expect(log.invocation.completedTask).toMatchObject({ id: "1", subject: "1", description: "" });
      expect(log.invocation.completedTask).not.toHaveProperty("metadata");
      expect(log.result.redactions).toBeGreaterThan(0);
    }
    const lint = logs.find((l) => l.result.hookPath?.endsWith("10-lint.sh"));
    expect(lint?.result.stdout).toBe("lint ok; pushed with [redacted] as [redacted] via [redacted]\n");
    expect(lint?.result.redactions).toBe(3);
    expect(lint?.shown).toMatchObject({ projection: ["task.id", "task.metadata.files"] });
    const ci = logs.find((l) => l.result.hookPath === "http:ci");
    expect(ci?.result.verdict).toMatchObject({
      reason: "found [redacted] in the diff",
      message: "request had [redacted]",
    });
    expect(ci?.shown).toMatchObject({ confidential: true });
    expect(JSON.stringify(logs)).not.toMatch(new RegExp(`${description}|${subject}|${meta}`));

    // `logs show` says what each was shown and how much was redacted.
    const show = await runBin(["logs", "show", path.basename(lint?.file ?? ""), "--team-dir", team.teamDir]);
    expect(show.stdout).toMatch(
      /^shown: {8}task\.id, task\.metadata\.files \(projection\); \d+ bytes, sha256 [0-9a-f]{12}…$/m,
    );
    expect(show.stdout).toContain(
      "redacted:     3 secret(s) or credential(s) in what the hook said, replaced by [redacted]\n",
    );
    expect(show.stdout).toContain("task:         #1 1\n");
    const showCi = await runBin(["logs", "show", path.basename(ci?.file ?? ""), "--team-dir", team.teamDir]);
    expect(showCi.stdout).toMatch(
      /^shown: {8}no description, no metadata, the subject replaced by the id \(confidential\); \d+ bytes/m,
    );
  });
});

describe("a decision from a process without the team's secrets", () => {
  it("decide, run where DEPLOY_TOKEN is not set, while the leader (which has it) runs: the deferral file keeps no raw value once applied", async () => {
    const deploy = `deploy-${randomBytes(8).toString("hex")}`;
    const team = await rig.team({
      teamId: "leader-decide",
      tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })],
      config: { hooks: { failureAction: "reopen_followup", redactEnv: ["DEPLOY_TOKEN"] } },
    });
    await rig.hook(
      team,
      "on_task_completed.sh",
      `echo '{"decision":"defer","code":"ci.pending","reason":"waiting for CI"}'`,
    );
    const leader = await rig.leader(team, ["--reconcile-ms", "200"], { env: { DEPLOY_TOKEN: deploy } });
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [held] = await leader.waitForEvents(1, (e) => e.outcome === "deferred");
    const runId = held?.deferral?.runId ?? "";
    // The decider's shell has no DEPLOY_TOKEN: it cannot know the value to redact.
    const answer = await runBin([
      "decide",
      "--yes",
      "--team-dir",
      team.teamDir,
      runId,
      "deny",
      "--reason",
      `deploy ${deploy} rejected`,
      "--by",
      "ci",
    ]);
    expect(answer.code).toBe(0);
    await leader.waitForEvents(1, (e) => e.decision !== undefined);
    expect(await leader.stop()).toMatchObject({ code: 0 });
    expect(grep(team.teamDir, deploy)).toEqual([]);
    const deferral = JSON.parse(
      fs.readFileSync(path.join(team.teamDir, "hook-state", "deferrals", `${runId}.json`), "utf8"),
    ) as { decision: { reason: string; redactions: number } };
    expect(deferral.decision).toMatchObject({ reason: "deploy [redacted] rejected", redactions: 1 });
    // The same decision sent again from that shell is the same one, not a conflict with the rewritten record.
    const again = await runBin([
      "decide",
      "--yes",
      "--team-dir",
      team.teamDir,
      runId,
      "deny",
      "--reason",
      `deploy ${deploy} rejected`,
      "--by",
      "ci",
    ]);
    expect(again).toMatchObject({ code: 0 });
    expect(grep(team.teamDir, deploy)).toEqual([]);
  });
});
