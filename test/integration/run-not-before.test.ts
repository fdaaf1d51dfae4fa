/**
 * `notBefore`: the leader's ledger record of an event must be on disk before its hook starts, and the
 * leader lets the flush run while the hook is prepared. The hook starts only once the promise
 * resolves, and never if it rejects; invokeEvent then applies and logs nothing.
 */
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { elapse } from "../helpers/leader-rig.js";
import type { HookCommand } from "../../extensions/teams-hooks/contract/hook-run.js";
import { listHookLogs } from "../../extensions/teams-hooks/logs/hook-log.js";
import { invokeEvent } from "../../extensions/teams-hooks/event/invoke.js";
import { runHook } from "../../extensions/teams-hooks/runner/run-hook.js";
import { makeInvocation } from "../helpers/invocation.js";
import { eventRequest } from "../helpers/invoke-request.js";
import { makeTask, makeTempTeam, fileTempDir } from "../helpers/temp-team.js";

const tmp = fileTempDir("not-before-");

/** A hook whose only action is to create `marker`. */
function touching(marker: string): HookCommand {
  const file = path.join(tmp, `touch-${path.basename(marker)}.sh`);
  writeFileSync(file, `touch "${marker}"\n`);
  return { hookPath: file, command: "bash", args: [file] };
}

describe("notBefore", () => {
  it("the hook starts only once the promise resolves", async () => {
    const marker = path.join(tmp, "started-late");
    let release = (): void => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const running = runHook(touching(marker), makeInvocation(), { cwd: tmp, timeoutMs: 10_000, notBefore: gate });
    await elapse(300); // a negative check: the time it would need to start (it must not)
    expect(existsSync(marker)).toBe(false);
    release();
    expect(await running).toMatchObject({ outcome: "passed", exitCode: 0 });
    expect(existsSync(marker)).toBe(true);
  });

  it("a rejected promise: the hook never starts", async () => {
    const marker = path.join(tmp, "never");
    const result = await runHook(touching(marker), makeInvocation(), {
      cwd: tmp,
      timeoutMs: 10_000,
      notBefore: Promise.reject(new Error("ledger: no space left on device")),
    });
    expect(result).toMatchObject({ outcome: "error", errorKind: "internal" });
    expect(result.error).toContain("no space left on device");
    expect(existsSync(marker)).toBe(false);
  });

  it("invokeEvent with a rejected promise throws, and nothing is applied or logged", async () => {
    const team = await makeTempTeam({
      teamId: "nb",
      tasks: [makeTask({ id: "1", status: "completed", owner: "alice" })],
    });
    try {
      const hooksDir = path.join(team.teamsRoot, "_hooks");
      const marker = path.join(tmp, "never-invoked");
      const hook = touching(marker);
      mkdirSync(hooksDir, { recursive: true });
      copyFileSync(hook.hookPath, path.join(hooksDir, "on_task_completed.sh"));
      const failed = Promise.reject(new Error("ledger: no space left on device"));
      failed.catch(() => undefined);
      await expect(
        invokeEvent(
          eventRequest(
            { team, hooksDir, teamHooksDir: path.join(team.teamDir, "hooks"), settings: { timeoutMs: 10_000 } },
            { notBefore: failed },
          ),
        ),
      ).rejects.toThrow("no space left on device");
      expect(existsSync(marker)).toBe(false);
      expect(await listHookLogs(team.teamDir)).toEqual([]);
    } finally {
      await team.cleanup();
    }
  });
});
