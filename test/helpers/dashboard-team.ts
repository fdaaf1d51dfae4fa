/**
 * A teams root for the dashboard's tests, made by real runs of real gates (`pi-teams-hooks run
 * --apply-policy`, so the logs, the deferral and the trust record are the product's own):
 *
 *   alpha  on_task_completed.sh  tasks 1–5: 2 and 4 fail (their output holds markup and a script tag)
 *          on_task_failed.sh     task 6 failed: the gate defers, so it is held for a decision
 *          on_idle.sh            passes once, then is edited: untrusted (changed since approved)
 *   beta   no gates, no runs
 */
import { chmod, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { runBin } from "./leader-rig.js";
import { makeTeamsRoot } from "./serve-rig.js";

export const HOSTILE_OUTPUT = `<script>alert(1)</script><img src=x onerror=alert(2)>`;

const COMPLETED_GATE = `#!/usr/bin/env bash
if [ "$PI_TEAMS_TASK_ID" = 2 ] || [ "$PI_TEAMS_TASK_ID" = 4 ]; then
  echo "checking task $PI_TEAMS_TASK_ID: <b>not bold</b>"
  echo '${HOSTILE_OUTPUT}' >&2
  exit 1
fi
echo "task $PI_TEAMS_TASK_ID: all checks passed"
`;
const FAILED_GATE = `#!/usr/bin/env bash
echo '{"decision":"defer","reason":"waiting for the nightly run"}'
`;
const IDLE_GATE = `#!/usr/bin/env bash
echo idle ok
`;

export interface DashboardTeams {
  root: string;
  alpha: string;
  cleanup(): Promise<void>;
  /** `run <event> --apply-policy` on alpha; throws when the run could not be made at all. */
  run(event: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }>;
}

export async function makeDashboardTeams(): Promise<DashboardTeams> {
  const { root, cleanup } = await makeTeamsRoot({ alpha: {}, beta: {} });
  const alpha = path.join(root, "alpha");
  const hooks = path.join(alpha, "hooks");
  await mkdir(hooks, { recursive: true });
  const gate = async (name: string, text: string): Promise<void> => {
    await writeFile(path.join(hooks, name), text);
    await chmod(path.join(hooks, name), 0o755);
  };
  await gate("on_task_completed.sh", COMPLETED_GATE);
  await gate("on_task_failed.sh", FAILED_GATE);
  await gate("on_idle.sh", IDLE_GATE);
  const tasks = path.join(alpha, "tasks", "alpha");
  await mkdir(tasks, { recursive: true });
  const now = new Date().toISOString();
  for (let id = 1; id <= 8; id++) {
    const status = id === 6 ? "pending" : "completed";
    const task = { id: String(id), subject: `Task ${id} <i>of alpha</i>`, description: `Do part ${id}.`, status, owner: id % 2 ? "ada" : "brian", blocks: [], blockedBy: [], metadata: {}, createdAt: now, updatedAt: now };
    await writeFile(path.join(tasks, `${id}.json`), `${JSON.stringify(task, null, 2)}\n`);
  }
  const env = { PI_TEAMS_ROOT_DIR: root };
  const trust = await runBin(["trust", "--team-dir", alpha, "--all"], { env });
  if (trust.code !== 0) throw new Error(`trust --all failed (${trust.code}): ${trust.stderr}`);
  const run = async (event: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> => {
    const result = await runBin(["run", event, "--team-dir", alpha, "--apply-policy", ...args], { env });
    if (result.code === null || result.code === 2 || result.code > 3) throw new Error(`run ${event} ${args.join(" ")} exited ${result.code}: ${result.stderr}`);
    return result;
  };
  for (let id = 1; id <= 5; id++) await run("task_completed", ["--task", String(id), "--member", id % 2 ? "ada" : "brian"]);
  await run("task_failed", ["--task", "6", "--member", "brian"]);
  await run("idle", ["--member", "ada"]);
  await gate("on_idle.sh", `${IDLE_GATE}echo changed after it was approved\n`);
  return { root, alpha, cleanup, run };
}
