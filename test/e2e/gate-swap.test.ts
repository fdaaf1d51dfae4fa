/**
 * What runs is what was trusted, end to end through `pi-teams-hooks watch` (the built CLI): a gate
 * replaced between the trust check and the start — renamed over, its symlink flipped, edited in place
 * — does not run; the checked bytes do, and the log's hookSha256 is theirs. The race is made
 * deterministic with the runner's test pause (PI_TEAMS_HOOKS_TEST_PAUSE_DIR: a run writes
 * `<run id>.paused` once its gate is checked and copied, and starts at `<run id>.go`); and the attack
 * as an agent would run it, from another process watching the leader's runs folder for each run's
 * private folder (`<runs root>/<run id>.XXXXXX`, where its context file and the copy that runs are:
 * runner/run-dir.ts), is tried 20 times. Every gate appends to runs.txt what it is when it really runs.
 */
import { createHash } from "node:crypto";
import { existsSync, type FSWatcher, watch } from "node:fs";
import { chmod, mkdtemp, readFile, readdir, rename, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, it } from "vitest";
import { runsRoot } from "../../extensions/teams-hooks/runner/run-dir.js";
import { type LeaderProcess, readLogs, readTaskFile, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask, runs } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
const GATE = "on_task_completed.sh";
/** The real gate: it records itself and fails the work. */
const REAL = `#!/usr/bin/env bash\necho "real $PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/runs.txt"\necho "FAIL: not done" >&2\nexit 1\n`;
/** What an agent would put in its place. */
const FAKE = `#!/usr/bin/env bash\necho "fake $PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/runs.txt"\nexit 0\n`;

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/**
 * The private folders of run `runId` in the leader's runs folder (`<runs root>/<runId>.XXXXXX`). The
 * leaders here inherit this process's XDG_STATE_HOME, and run the same package: the same runs root.
 */
async function runFolders(runId: string): Promise<string[]> {
  return (await readdir(runsRoot())).filter((name) => name.startsWith(`${runId}.`));
}

/** Waits for the paused run's marker; returns its run id. */
async function paused(leader: LeaderProcess, dir: string): Promise<string> {
  const name = await leader.waitFor("the run paused after its check", async () =>
    (await readdir(dir)).find((n) => n.endsWith(".paused")),
  );
  return name.slice(0, -".paused".length);
}

describe.concurrent("a gate replaced between the check and the start", () => {
  const swaps: Array<[string, (gate: string, hooksDir: string) => Promise<void>]> = [
    [
      "renamed over",
      async (gate, hooksDir) => {
        await writeFile(path.join(hooksDir, "fake.tmp"), FAKE, { mode: 0o755 });
        await rename(path.join(hooksDir, "fake.tmp"), gate);
      },
    ],
    ["edited in place", (gate) => writeFile(gate, FAKE)],
    [
      "a symlink flipped",
      async (gate, hooksDir) => {
        await writeFile(path.join(hooksDir, "fake.sh"), FAKE, { mode: 0o755 });
        await symlink(path.join(hooksDir, "fake.sh"), path.join(hooksDir, "flip.tmp"));
        await rename(path.join(hooksDir, "flip.tmp"), gate);
      },
    ],
  ];
  it.for(swaps)(
    "%s: the checked bytes run, the fake never does, and the log's hash is the real gate's",
    async ([how, swap], context) => {
      const { expect } = context;
      const rig = outerRig.scoped(context);
      const pauseDir = await mkdtemp(path.join(os.tmpdir(), "gate-pause-"));
      const team = await rig.team({
        tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })],
        config: { hooks: { failureAction: "reopen" } },
      });
      const hooksDir = path.join(team.teamsRoot, "_hooks");
      const gate = path.join(hooksDir, GATE);
      await rig.hook(team, "real.sh", "");
      await writeFile(path.join(hooksDir, "real.sh"), REAL, { mode: 0o755 });
      if (how === "a symlink flipped") await symlink(path.join(hooksDir, "real.sh"), gate);
      else await writeFile(gate, REAL, { mode: 0o755 });
      const leader = await rig.leader(team, [], { env: { PI_TEAMS_HOOKS_TEST_PAUSE_DIR: pauseDir } });
      try {
        await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
        const runId = await paused(leader, pauseDir);
        await swap(gate, hooksDir);
        await writeFile(path.join(pauseDir, `${runId}.go`), "");
        const [event] = await leader.waitForEvents(1);
        expect(event).toMatchObject({ outcome: "failed", summary: "exit code 1 • FAIL: not done" });
        expect(await runs(team)).toEqual(["real 1"]);
        const [log] = await readLogs(team.teamDir);
        expect(log?.result).toMatchObject({ hookPath: gate, hookSha256: sha256(REAL) });
        expect((await readTaskFile(team, "1")).status).toBe("pending"); // judged by the real gate
        // Nothing of the run is left beside the gate, nor in the leader's runs folder.
        expect((await readdir(hooksDir)).filter((n) => n.startsWith("."))).toEqual([]);
        expect(await runFolders(runId)).toEqual([]);
      } finally {
        await rm(pauseDir, { recursive: true, force: true });
      }
    },
  );

  it("the copy that runs changed while the run was paused: the run counts for nothing and is held for the lead", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const pauseDir = await mkdtemp(path.join(os.tmpdir(), "gate-pause-"));
    const team = await rig.team({
      tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })],
      config: { hooks: { failureAction: "reopen" } },
    });
    const hooksDir = path.dirname(await rig.hook(team, GATE, ""));
    await writeFile(path.join(hooksDir, GATE), REAL, { mode: 0o755 });
    const leader = await rig.leader(team, [], { env: { PI_TEAMS_HOOKS_TEST_PAUSE_DIR: pauseDir } });
    try {
      await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
      const runId = await paused(leader, pauseDir);
      // The copy is in the run's private folder, not beside the gate: an agent of the leader's user
      // can still find it there, make it writable (it is 0500) and write it.
      expect((await readdir(hooksDir)).filter((n) => n.startsWith("."))).toEqual([]);
      const [folder] = await runFolders(runId);
      expect(folder).toBeDefined();
      const copy = path.join(runsRoot(), folder ?? "?", GATE);
      expect(await readFile(copy, "utf8")).toBe(REAL);
      await chmod(copy, 0o700);
      await writeFile(copy, FAKE); // the agent found the copy in time
      await writeFile(path.join(pauseDir, `${runId}.go`), "");
      const [event] = await leader.waitForEvents(1);
      expect(event).toMatchObject({
        outcome: "error",
        held: "approval",
        summary: expect.stringContaining("was written while it ran: the run counts for nothing"),
      });
      expect((await readTaskFile(team, "1")).status).toBe("completed"); // neither passed nor failed: held
    } finally {
      await rm(pauseDir, { recursive: true, force: true });
    }
  });
});

describe("the targeted swap attack, from another process", () => {
  it("failing completions until 20 were swapped for an `exit 0` gate the moment their run's folder (with its context file) appeared (put back after): none passes, the fake never runs", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    // A watcher of the runs folder may miss a folder that comes and goes fast: more tasks than swaps wanted.
    const ids = Array.from({ length: 80 }, (_, i) => String(i + 1));
    const team = await rig.team({
      tasks: ids.map((id) => makeTask({ id, owner: "alice", status: "in_progress" })),
      config: { hooks: { failureAction: "warn" } },
    });
    const gate = await rig.hook(team, GATE, REAL.replace("#!/usr/bin/env bash\n", ""));
    const hooksDir = path.dirname(gate);
    await writeFile(path.join(hooksDir, "fake.sh"), FAKE, { mode: 0o755 });
    const leader = await rig.leader(team);
    // The agent: on each new run folder (made just before the run's context file is written in it), and on each
    // context file made in a folder seen, swap the gate in, and back 50 ms later. One swap at a time: a second
    // swap while the first is out would hide the fake as the "real" gate. Only this test's leader runs gates
    // meanwhile: its tests are not concurrent.
    let swaps = 0;
    const seen = new Set<string>();
    // The swap out and back in; one at a time, so that a second swap never hides the fake as the "real" gate
    // (on a busy machine the 50 ms put-back can come after the next run's folder).
    let swapping: Promise<void> = Promise.resolve();
    let out = false;
    const swap = (): void => {
      if (out) return;
      swaps += 1;
      out = true;
      swapping = (async () => {
        await rename(gate, path.join(hooksDir, "real.hidden")).catch(() => undefined);
        await writeFile(path.join(hooksDir, "fake.tmp"), FAKE, { mode: 0o755 });
        await rename(path.join(hooksDir, "fake.tmp"), gate).catch(() => undefined);
        // the attacker's window, not a wait: the fake stays in place a while
        await new Promise((resolve) => setTimeout(resolve, 50));
        await rename(path.join(hooksDir, "real.hidden"), gate).catch(() => undefined);
        out = false;
      })();
    };
    const folders: FSWatcher[] = [];
    const attacker: FSWatcher = watch(runsRoot(), (_event, name) => {
      // A leader's run may start from a standby made after the run before (runner/standby.ts): its folder too.
      if (!name || !/^(?:[0-9a-f-]{36}|standby)\.[A-Za-z0-9]{6}$/.test(name) || seen.has(name)) return;
      seen.add(name);
      swap();
      // A standby's folder serves its gate's next runs too, each run's context file made anew in it: each one a swap.
      try {
        const folder = path.join(runsRoot(), name);
        folders.push(
          watch(folder, (_change, file) => {
            if (file === "context.json" && existsSync(path.join(folder, file))) swap();
          }),
        );
      } catch {
        // gone already
      }
    });
    try {
      for (const id of ids) {
        if (swaps >= 20) break;
        await rig.worker("complete", { tasksDir: team.tasksDir, ids: [id] });
        await leader.waitForEvents(Number(id));
        await swapping; // the attacker has put the real gate back
      }
    } finally {
      attacker.close();
      for (const folder of folders) folder.close();
      await swapping;
    }
    expect(await readFile(gate, "utf8")).toBe(`${REAL}\n`); // the real gate is back
    expect(
      swaps,
      JSON.stringify(leader.events().map((e) => [e.taskId, e.outcome, e.summary.slice(0, 80)])),
    ).toBeGreaterThanOrEqual(20);
    const events = leader.events();
    // Each run either ran the real gate (failed) or found the gate not as trusted (held): never passed.
    expect(events.filter((e) => e.outcome === "passed")).toEqual([]);
    expect((await runs(team)).filter((line) => line.startsWith("fake"))).toEqual([]);
  });
});
