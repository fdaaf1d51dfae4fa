/**
 * A hand-written task file missing required fields is not a task: through the built bin, the leader
 * warns once per version of the file, naming each missing field and saying that no gate runs for it,
 * and the reconcile scan does not repeat it. Fixed, the file is a task whose completion is gated.
 */
import { rename, writeFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { useLeaderRig, elapse } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const rig = useLeaderRig();
const RECONCILE_MS = 100;

describe("a task file missing required fields", () => {
  it("gets one warning naming the missing fields, not one per reconcile scan; fixed, it is gated", async () => {
    const team = await rig.team({ tasks: [makeTask({ id: "1" })] });
    await rig.hook(team, "on_task_completed.sh", "exit 0");
    const leader = await rig.leader(team, ["--reconcile-ms", String(RECONCILE_MS)]);
    const file = team.taskFile("5");
    const handWritten = {
      id: "5",
      subject: "Write the parser",
      owner: "ada",
      status: "completed",
      metadata: { completedAt: new Date().toISOString() },
    };
    await writeFile(`${file}.tmp.test`, `${JSON.stringify(handWritten)}\n`);
    await rename(`${file}.tmp.test`, file);
    const said = `warning: ${file}: description: missing, expected string; blocks: missing, expected array; blockedBy: missing, expected array; createdAt: missing, expected string; updatedAt: missing, expected string — not a task: no gate runs for it until the file is fixed`;
    await leader.waitFor("the warning", () => leader.warnings().includes(said));
    // Only time can show that nothing more is said: several reconcile scans.
    await elapse(RECONCILE_MS * 8);
    expect(leader.warnings().filter((w) => w.includes(file))).toEqual([said]);

    const now = new Date().toISOString();
    const fixed = { ...handWritten, description: "d", blocks: [], blockedBy: [], createdAt: now, updatedAt: now };
    await writeFile(`${file}.tmp.test`, `${JSON.stringify(fixed)}\n`);
    await rename(`${file}.tmp.test`, file);
    const [event] = await leader.waitForEvents(1);
    expect(event).toMatchObject({ taskId: "5", event: "task_completed", outcome: "passed" });
  });
});
