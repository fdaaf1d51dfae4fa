/**
 * Projection and redaction through the built bin, from config.json: `run --apply-policy` of a gate
 * that config.json projects to the task id and that prints secrets; what it saw, and every file
 * of the team dir afterwards; `policy get --json` shows the settings (names, never values).
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../helpers/leader-rig.js";
import { makeTask, makeTempTeam, type TempTeam } from "../helpers/temp-team.js";

const execFileAsync = promisify(execFile);
const BIN = path.resolve("dist/teams-hooks/bin.js");

async function cli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const base: Record<string, string | undefined> = { ...process.env };
  for (const name of Object.keys(base)) if (name.startsWith("PI_TEAMS_")) delete base[name];
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [BIN, ...args], { env: { ...base, ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof e.code !== "number") throw error;
    return { code: e.code, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

beforeAll(() => ensureBuilt(), 240_000);

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
      config: { teamId: "e2e-priv", hooks: { failureAction: "reopen_followup", projection: { on_task_completed: ["task.id"] }, redactEnv: ["DEPLOY_TOKEN"] } },
      tasks: [makeTask({ id: "3", status: "completed", owner: "bob", description, metadata: { completedAt: "2026-12-02T10:00:00.000Z" } })],
    });
    const hooksDir = path.join(team.teamsRoot, "_hooks");
    const seen = path.join(team.teamsRoot, "seen");
    fs.mkdirSync(hooksDir);
    fs.writeFileSync(
      path.join(hooksDir, "on_task_completed.sh"),
      `#!/usr/bin/env bash\n{ cat; echo; env | grep '^PI_TEAMS_'; printf '%s' "$PI_TEAMS_HOOK_CONTEXT_JSON"; cat "$PI_TEAMS_HOOK_CONTEXT_FILE"; } > '${seen}'\necho "push with ${ghp} as $DEPLOY_TOKEN" >&2\nexit 1\n`,
      { mode: 0o755 },
    );
    const env = { DEPLOY_TOKEN: deploy };
    const run = await cli(["run", "task_completed", "--team-dir", team.teamDir, "--task", "3", "--apply-policy"], env);
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
    const log = JSON.parse(fs.readFileSync(path.join(team.teamDir, "hook-logs", logName ?? ""), "utf8")) as { result: { redactions: number }; shown: { projection: string[] } };
    expect(log.result.redactions).toBe(2);
    expect(log.shown.projection).toEqual(["task.id"]);

    const policy = await cli(["policy", "get", "--json", "--team-dir", team.teamDir], env);
    const report = JSON.parse(policy.stdout) as Record<string, { value: unknown; origin: string }>;
    expect(report.projection).toMatchObject({ value: { on_task_completed: ["task.id"] }, origin: "config.json hooks.projection" });
    expect(report.redactEnv).toMatchObject({ value: ["DEPLOY_TOKEN"], origin: "config.json hooks.redactEnv" });
    expect(report.confidential).toMatchObject({ value: false, origin: "default" });
    expect(policy.stdout).not.toContain(deploy);
  });
});
