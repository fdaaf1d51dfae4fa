import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../helpers/leader-rig.js";

const run = promisify(execFile);
beforeAll(() => ensureBuilt(), 240_000);

describe("demo (npm start)", () => {
  it("shows a pass, a failure with reopen, follow-up and nudge, and the fix passing", async () => {
    const { stdout } = await run(process.execPath, [path.resolve("dist/teams-hooks/bin.js"), "demo", "--keep"], {
      env: { ...process.env, NO_COLOR: "1" },
    });
    expect(stdout).toMatch(/task_completed #1 ada on_task_completed\.sh passed/);
    expect(stdout).toMatch(
      /task_completed #2 brian on_task_completed\.sh failed .*FAIL: task-2\.txt does not say ok → reopened \(1\/2\), reassigned to brian, follow-up #3 for brian, nudge brian/,
    );
    expect(stdout).toMatch(/reads his inbox: "Quality gate on_task_completed failed for task #2/);
    const afterFix = stdout.slice(stdout.indexOf("fixes task-2.txt"));
    expect(afterFix).toMatch(/task_completed #2 brian on_task_completed\.sh passed/);

    const teamDir = /team dir: (\S+)/.exec(stdout)?.[1] ?? "";
    const task2 = JSON.parse(fs.readFileSync(path.join(teamDir, "tasks/demo/2.json"), "utf8")) as {
      status: string;
      metadata: Record<string, unknown>;
    };
    expect(task2.status).toBe("completed");
    expect(task2.metadata).toMatchObject({
      qualityGateStatus: "passed",
      qualityGateFailureCount: 1,
      reopenedByQualityGateCount: 1,
    });
    const followup = JSON.parse(fs.readFileSync(path.join(teamDir, "tasks/demo/3.json"), "utf8")) as {
      subject: string;
      owner: string;
    };
    expect(followup).toMatchObject({ subject: "Quality gate failed: on_task_completed (task #2)", owner: "brian" });
    expect(fs.readdirSync(path.join(teamDir, "hook-logs"))).toHaveLength(4);
    fs.rmSync(path.dirname(teamDir), { recursive: true, force: true });
  });

  it("fails the draft and passes the fix with only node, bash, env and the gate's coreutils on PATH (no grep)", async () => {
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), "demo-path-"));
    const state = fs.mkdtempSync(path.join(os.tmpdir(), "demo-state-"));
    for (const name of ["bash", "env", "mktemp", "rm", "tail", "node"]) {
      const found = (process.env.PATH ?? "")
        .split(path.delimiter)
        .map((dir) => path.join(dir, name))
        .find((file) => fs.existsSync(file));
      if (!found) throw new Error(`${name} is not on PATH`);
      fs.symlinkSync(found, path.join(bin, name));
    }
    try {
      const { stdout } = await run(process.execPath, [path.resolve("dist/teams-hooks/bin.js"), "demo"], {
        env: { ...process.env, PATH: bin, NO_COLOR: "1", XDG_STATE_HOME: state },
      });
      expect(stdout).toMatch(/task_completed #1 ada on_task_completed\.sh passed/);
      // The reason is another matter: the example gate finds it with grep ("grep: command not found").
      expect(stdout).toMatch(/task_completed #2 brian on_task_completed\.sh failed .*→ reopened/);
      expect(stdout.slice(stdout.indexOf("fixes task-2.txt"))).toMatch(
        /task_completed #2 brian on_task_completed\.sh passed/,
      );
      // Without --keep, npm start leaves nothing behind in the temp folder.
      const root = /^removed (\S+) \(pi-teams-hooks demo --keep keeps it, to look around\)$/m.exec(stdout)?.[1] ?? "";
      expect(root).toMatch(/pi-teams-demo-/);
      expect(stdout).toContain(`demo team in ${root}/demo`);
      expect(fs.existsSync(root)).toBe(false);
      expect(stdout).not.toContain("team dir:");
      // Nor in the user's state folder: the temp team's approved trust record and settings go with it, and
      // the folders its first run made there (the trust records', the runs folder) too.
      expect(fs.readdirSync(state)).toEqual([]);
    } finally {
      fs.rmSync(bin, { recursive: true, force: true });
      fs.rmSync(state, { recursive: true, force: true });
    }
  });
});
