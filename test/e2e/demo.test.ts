import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../helpers/leader-rig.js";

const run = promisify(execFile);
beforeAll(() => ensureBuilt(), 240_000);

describe("demo (npm start)", () => {
  it("shows a pass, a failure with reopen, follow-up and nudge, and the fix passing", async () => {
    const { stdout } = await run(process.execPath, [path.resolve("dist/teams-hooks/bin.js"), "demo"], { env: { ...process.env, NO_COLOR: "1" } });
    expect(stdout).toMatch(/task_completed #1 ada on_task_completed\.sh passed/);
    expect(stdout).toMatch(/task_completed #2 brian on_task_completed\.sh failed .*FAIL: task-2\.txt does not say ok → reopened \(1\/2\), reassigned to brian, follow-up #3 for brian, nudge brian/);
    expect(stdout).toMatch(/reads his inbox: "Quality gate on_task_completed failed for task #2/);
    const afterFix = stdout.slice(stdout.indexOf("fixes task-2.txt"));
    expect(afterFix).toMatch(/task_completed #2 brian on_task_completed\.sh passed/);

    const teamDir = /team dir: (\S+)/.exec(stdout)?.[1] ?? "";
    const task2 = JSON.parse(fs.readFileSync(path.join(teamDir, "tasks/demo/2.json"), "utf8")) as { status: string; metadata: Record<string, unknown> };
    expect(task2.status).toBe("completed");
    expect(task2.metadata).toMatchObject({ qualityGateStatus: "passed", qualityGateFailureCount: 1, reopenedByQualityGateCount: 1 });
    const followup = JSON.parse(fs.readFileSync(path.join(teamDir, "tasks/demo/3.json"), "utf8")) as { subject: string; owner: string };
    expect(followup).toMatchObject({ subject: "Quality gate failed: on_task_completed (task #2)", owner: "brian" });
    expect(fs.readdirSync(path.join(teamDir, "hook-logs"))).toHaveLength(4);
    fs.rmSync(path.dirname(teamDir), { recursive: true, force: true });
  });
});
