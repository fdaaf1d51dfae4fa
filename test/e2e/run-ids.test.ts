/**
 * One dispatch, one run id, through the built bin: `run` gives the hooks of an event's chain the ids
 * the leader gives them, `<id>`, `<id>.2`, `<id>.3`…, in each hook's environment
 * (`PI_TEAMS_HOOK_RUN_ID`), in a handler's `X-Pi-Teams-Hook-Run-Id` header and in every log.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { startReceiver, type Receiver } from "../helpers/http-receiver.js";
import { readLogs, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

const SAY_RUN_ID = 'echo "run id $PI_TEAMS_HOOK_RUN_ID" >&2; exit 0';

describe("run ids of one dispatch", () => {
  it("run: the v1 file, a chain file and a handler share the event's id as <id>, <id>.2, <id>.3", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    receiver.route("/run-ids", (_req, res) =>
      res.writeHead(200, { "content-type": "application/json" }).end('{"decision":"allow"}'),
    );
    const team = await rig.team({
      tasks: [makeTask({ id: "1", owner: "alice", status: "completed" })],
      config: { hooks: { handlers: [{ name: "ci", events: ["task_completed"], url: `${receiver.url}/run-ids` }] } },
    });
    await rig.hook(team, "on_task_completed.sh", SAY_RUN_ID);
    const chainFile = path.join(team.teamsRoot, "_hooks", "on_task_completed.d", "10-lint.sh");
    await mkdir(path.dirname(chainFile), { recursive: true });
    await writeFile(chainFile, `${SAY_RUN_ID}\n`, { mode: 0o755 });

    const ran = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--json"]);
    expect(ran.code, ran.stdout + ran.stderr).toBe(0);
    const record = JSON.parse(ran.stdout) as { runIds?: string[] };
    const [first, second, third] = record.runIds ?? [];
    expect(first).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(record.runIds).toEqual([first, `${first}.2`, `${first}.3`]);

    // What each hook was given, and what its log says.
    const logs = await readLogs(team.teamDir);
    const byPath = (end: string) => logs.find((log) => log.result.hookPath?.endsWith(end));
    expect(byPath("on_task_completed.sh")?.result.runId).toBe(first);
    expect(byPath("on_task_completed.sh")?.result.stderr).toContain(`run id ${first}\n`);
    expect(byPath("10-lint.sh")?.result.runId).toBe(second);
    expect(byPath("10-lint.sh")?.result.stderr).toContain(`run id ${second}\n`);
    expect(byPath("http:ci")?.result.runId).toBe(third);
    const [request] = receiver.requests("/run-ids");
    expect(request?.headers["x-pi-teams-hook-run-id"]).toBe(third);
  });

  it("run twice: each dispatch its own id", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "completed" })] });
    await rig.hook(team, "on_task_completed.sh", SAY_RUN_ID);
    const chainFile = path.join(team.teamsRoot, "_hooks", "on_task_completed.d", "10-lint.sh");
    await mkdir(path.dirname(chainFile), { recursive: true });
    await writeFile(chainFile, `${SAY_RUN_ID}\n`, { mode: 0o755 });
    const ids: string[][] = [];
    for (const _ of [1, 2]) {
      const ran = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--json"]);
      expect(ran.code, ran.stdout + ran.stderr).toBe(0);
      ids.push((JSON.parse(ran.stdout) as { runIds: string[] }).runIds);
    }
    const [a, b] = ids;
    expect(a?.[1]).toBe(`${a?.[0]}.2`);
    expect(b?.[1]).toBe(`${b?.[0]}.2`);
    expect(a?.[0]).not.toBe(b?.[0]);
  });
});
