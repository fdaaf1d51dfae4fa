/**
 * The example in examples/remote-gate/ runs as its README says: the built `watch` posts each completion
 * to gate-service.mjs (an HTTP handler, signed), the service answers defer, runs its check in the
 * background and posts the decision to the built `serve` with a gates:decide key, and the leader
 * applies the policy: the task whose check passes is passed, the one whose check fails is reopened.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { REPO_ROOT, readLogs, readTaskFile, useLeaderRig, waitUntil } from "../helpers/leader-rig.js";
import { teamKey, startServeFor } from "../helpers/serve-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const rig = useLeaderRig();
const SERVICE = path.join(REPO_ROOT, "examples", "remote-gate", "gate-service.mjs");
/** The example's check: a subject that says WIP fails; anything else passes. */
const CHECK = 'case "$GATE_TASK_SUBJECT" in *WIP*) echo "the subject says WIP" >&2; exit 1;; esac; echo checked';

interface Service {
  child: ChildProcess;
  url: string;
  output(): string;
}

async function startService(env: Record<string, string>): Promise<Service> {
  const child = spawn(process.execPath, [SERVICE], {
    env: { ...process.env, GATE_LISTEN: "127.0.0.1:0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  const url = await waitUntil("the service's listening line", () => /listening on (http:\/\/\S+)/.exec(output)?.[1], {
    timeoutMs: 10_000,
    abort: () => (child.exitCode !== null ? `gate-service exited ${child.exitCode}: ${output}` : null),
  });
  return { child, url, output: () => output };
}

describe("examples/remote-gate", () => {
  it("handler → defer → background check → decision through the API → policy applied", async ({
    expect,
    onTestFinished,
  }) => {
    const team = await rig.team({
      tasks: [
        makeTask({ id: "1", subject: "Add the login page", owner: "ada", status: "in_progress" }),
        makeTask({ id: "2", subject: "WIP: rate limits", owner: "ada", status: "in_progress" }),
      ],
    });
    const secret = "a-signing-secret-for-the-example";
    const key = await teamKey(team.teamsRoot, "gate-service", "gates:decide", team.teamId);
    const serve = await startServeFor({ onTestFinished }, team.teamsRoot);
    const service = await startService({
      GATE_HMAC_SECRET: secret,
      TEAMS_API_URL: serve.url,
      TEAMS_API_KEY: key,
      CHECK_CMD: CHECK,
    });
    onTestFinished(() => void service.child.kill("SIGKILL"));

    const config = {
      version: 1,
      teamId: team.teamId,
      taskListId: team.taskListId,
      leadName: team.leadName,
      members: [],
      hooks: {
        failureAction: "reopen",
        handlers: [
          {
            name: "remote",
            events: ["task_completed"],
            url: service.url,
            signingSecretEnv: "GATE_HMAC",
            timeoutMs: 5000,
          },
        ],
      },
    };
    await writeFile(path.join(team.teamDir, "config.json"), `${JSON.stringify(config, null, 2)}\n`);
    const leader = await rig.leader(team, ["--reconcile-ms", "200"], { env: { GATE_HMAC: secret } });
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1", "2"] });

    const decided = await leader.waitForEvents(2, (e) => e.decision !== undefined);
    expect(
      leader
        .events()
        .filter((e) => e.outcome === "deferred")
        .map((e) => e.taskId)
        .sort(),
    ).toEqual(["1", "2"]);
    expect(decided.map((e) => [e.taskId, e.decision?.decision, e.decision?.by]).sort()).toEqual([
      ["1", "allow", "api:gate-service"],
      ["2", "deny", "api:gate-service"],
    ]);
    expect(await readTaskFile(team, "1")).toMatchObject({
      status: "completed",
      metadata: { qualityGateStatus: "passed", qualityGateHook: "http:remote", qualityGateDecision: "allow" },
    });
    const denied = await readTaskFile(team, "2");
    expect(denied).toMatchObject({
      status: "pending",
      metadata: { qualityGateStatus: "failed", qualityGateCode: "check.failed", reopenedByQualityGateCount: 1 },
    });
    expect(denied.metadata?.qualityGateSummary).toContain("the subject says WIP");

    const logs = await readLogs(team.teamDir);
    expect(logs).toHaveLength(4); // each task: the deferred run, then its decision
    expect(
      logs
        .filter((l) => l.result.outcome === "deferred")
        .every((l) => l.result.http?.signed === true && l.result.http.status === 202),
    ).toBe(true);
    // The service checked the signature (it refuses unsigned or wrongly signed requests) and posted both decisions.
    expect(service.output()).not.toContain("refused");
    await waitUntil(
      "both decisions reported posted by the service",
      () => (service.output().match(/posted for run .*: 20[02] /g)?.length ?? 0) >= 2 || null,
      { timeoutMs: 10_000 },
    );
  });
});
