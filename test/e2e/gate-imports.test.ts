/**
 * A JavaScript gate that imports a package not installed beside it (a hooks dir with no
 * node_modules): through the built bin and a real leader, it is a gate that cannot start, named to
 * the lead (doctor, the leader's line, the lead's note) and held, never a Node stack line in a
 * failure blamed on the worker. Once the package is there (a restart), the gate runs.
 * `pi-teams-hooks` itself is never missing: a gate's import of it resolves to the leader's own package.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readInboxFile, readTaskFile, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask, type TempTeam } from "../helpers/temp-team.js";

const rig = useLeaderRig();

/** A package of the gate's own, which the hooks dir does not have until the test installs it. */
const PACKAGE = "gate-kit";
const HELPER_GATE = `import { runGate } from "pi-teams-hooks/hook";
import { allow } from "${PACKAGE}";
await runGate(async () => allow());
`;
/** The same import made at run time: no look at the text sees it, Node's own error does. */
const DYNAMIC_GATE = `const { allow } = await import(["gate", "kit"].join("-"));
process.exit(allow().decision === "allow" ? 0 : 1);
`;

async function team(
  gate: string,
  status: "in_progress" | "completed" = "in_progress",
): Promise<{ team: TempTeam; file: string }> {
  const made = await rig.team({ tasks: ["1", "2"].map((id) => makeTask({ id, owner: "ada", status })) });
  const file = await rig.hook(made, "on_task_completed.mjs", gate);
  return { team: made, file };
}

const texts = async (t: TempTeam, namespace: string, member: string): Promise<string[]> =>
  (await readInboxFile(t, namespace, member)).map((m) => m.text);

describe("a gate whose import cannot be found", () => {
  it("is named by doctor and held by the leader, with the fix for the lead, no stack line for the worker", async () => {
    const { team: t, file } = await team(HELPER_GATE);
    const hooks = path.dirname(file);
    const why = `on_task_completed.mjs imports "${PACKAGE}", but ${PACKAGE} is not installed in ${hooks}/node_modules (a gate's packages are those beside it) (cd ${hooks} && npm install ${PACKAGE})`;
    const doctor = await runBin(["doctor", "--team-dir", t.teamDir]);
    expect(doctor.stdout).toContain(`FAIL on_task_completed.mjs: cannot start: ${why}`);
    expect(doctor.code).toBe(1);

    const leader = await rig.leader(t);
    await rig.worker("complete", { tasksDir: t.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1);
    expect(event).toMatchObject({
      outcome: "error",
      held: "approval",
      summary: `held: waiting for the team lead: ${why}`,
    });
    await leader.waitFor("the lead's note", async () =>
      (await texts(t, "team", t.leadName)).some((m) => m.includes(why)),
    );
    expect((await texts(t, "team", t.leadName)).find((m) => m.includes(why))).toContain(
      "Once the gate can start, restart the leader",
    );
    await leader.waitFor("the worker's note", async () => (await texts(t, t.taskListId, "ada")).length > 0);
    const told = (await texts(t, t.taskListId, "ada")).join("\n");
    expect(told).toContain("Nothing for you to fix");
    expect(told).not.toContain("node:internal");
    expect((await readTaskFile(t, "1")).metadata).toMatchObject({ qualityGateStatus: "held" });
    await leader.stop();

    // Installed beside the gates, the next start runs what was held, and it passes.
    await installPackage(hooks);
    expect((await runBin(["doctor", "--team-dir", t.teamDir])).stdout).toContain(
      "ok   on_task_completed.mjs runs with node",
    );
    const again = await rig.leader(t);
    const [released] = await again.waitForEvents(1);
    expect(released).toMatchObject({ taskId: "1", outcome: "passed", retry: true });
  });

  it("made at run time, is read from Node's own error: a gate that cannot start, not a denial", async () => {
    const { team: t, file } = await team(DYNAMIC_GATE, "completed");
    const run = await runBin(["run", "task_completed", "--team-dir", t.teamDir, "--task", "1", "--apply-policy"]);
    expect(run.stdout).toContain(`Cannot find package '${PACKAGE}' imported from ${file} (ERR_MODULE_NOT_FOUND)`);
    expect(run.stdout).not.toContain(".pi-run-");
    expect(run.stdout).not.toContain("node:internal");
    expect((await readTaskFile(t, "1")).metadata).toMatchObject({
      qualityGateStatus: "held",
      qualityGateHeld: "approval",
    });
  });
});

/** `npm install gate-kit` in the hooks dir, by hand: a one-file ES module package. */
async function installPackage(hooks: string): Promise<void> {
  const dir = path.join(hooks, "node_modules", PACKAGE);
  await mkdir(dir, { recursive: true });
  await writeFile(
    path.join(dir, "package.json"),
    `${JSON.stringify({ name: PACKAGE, version: "1.0.0", type: "module", exports: "./index.js" })}\n`,
  );
  await writeFile(path.join(dir, "index.js"), 'export const allow = () => ({ decision: "allow" });\n');
}
