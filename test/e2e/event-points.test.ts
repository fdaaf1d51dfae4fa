/**
 * Per-event declarations, `hooks.events.<event>` in config.json, through the built bin with real
 * gates: an event's own writable fields, modes (no transform: a patch writes nothing; no defer: a
 * defer is a denial), limits (capped as the team's are), failure mode and participation, each over
 * the team's defaults for that event alone; a per-event change that can weaken a verdict is held for
 * the lead's approval like the team-wide one, and one that can only make it stricter applies at once.
 */
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask, type TempTeam } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
const base = { version: 1, teamId: "test-team", taskListId: "test-team", leadName: "team-lead" };
const done = (id: string) => makeTask({ id, owner: "alice", status: "completed" });

async function setHooks(team: TempTeam, hooks: Record<string, unknown>): Promise<void> {
  await writeFile(path.join(team.teamDir, "config.json"), `${JSON.stringify({ ...base, hooks })}\n`);
}
async function metadataOf(team: TempTeam, id: string): Promise<Record<string, unknown>> {
  return ((JSON.parse(await readFile(team.taskFile(id), "utf8")) as { metadata?: Record<string, unknown> }).metadata ??
    {}) as Record<string, unknown>;
}
/** task_completed's failure mode in force, as `config --json` gives it. */
async function failureMode(team: TempTeam): Promise<string> {
  const json = await runBin(["config", "--team-dir", team.teamDir, "--json"]);
  const view = JSON.parse(json.stdout) as {
    settings: { failureModes: Record<string, { value: string; origin: string }> };
  };
  return view.settings.failureModes.task_completed?.value ?? "";
}
const run = (team: TempTeam, event: string, id: string) =>
  runBin(["run", event, "--team-dir", team.teamDir, "--task", id, "--apply-policy"]);

const PATCH = `echo '{"decision":"patch","reason":"labelled","patch":{"metadata":{"x":1,"y":2}}}'`;

describe.concurrent("hooks.events.<event>", () => {
  it("an event's writable fields and modes over the team's: transform left out, a patch writes nothing", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ config: { ...base, hooks: {} }, tasks: [done("1"), done("2"), done("3")] });
    await rig.hook(team, "on_task_completed.sh", PATCH);
    await rig.hook(team, "on_task_failed.sh", PATCH);

    // The team writes metadata; task_completed's own point writes metadata.y only.
    await setHooks(team, {
      writableFields: ["metadata"],
      events: { task_completed: { writableFields: ["metadata.y"] } },
    });
    expect((await run(team, "task_completed", "1")).code).toBe(0);
    expect(await metadataOf(team, "1")).toMatchObject({ y: 2 });
    expect(await metadataOf(team, "1")).not.toHaveProperty("x");
    // task_failed has no declaration of its own: the team's fields.
    expect((await run(team, "task_failed", "2")).code).toBe(0);
    expect(await metadataOf(team, "2")).toMatchObject({ x: 1, y: 2 });

    // Modes without transform: nothing of a patch is written.
    await setHooks(team, { events: { task_completed: { modes: ["admit", "defer"] } } });
    const shown = await runBin(["config", "--team-dir", team.teamDir]);
    expect(shown.stdout).toContain("hook point: modes admit, defer; no transform: a patch writes nothing");
    expect((await run(team, "task_completed", "3")).code).toBe(0);
    expect(await metadataOf(team, "3")).not.toHaveProperty("x");
    expect(await metadataOf(team, "3")).not.toHaveProperty("y");
  });

  it("modes without defer make a defer a denial; an event's limits cap its chain; its failure mode is its own", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ config: { ...base, hooks: {} }, tasks: [done("1"), done("2"), done("3")] });
    await rig.hook(team, "on_task_completed.sh", `echo '{"decision":"defer","reason":"ask ops"}'`);
    await setHooks(team, { events: { task_completed: { modes: ["admit", "transform"] } } });
    const denied = await run(team, "task_completed", "1");
    expect(denied.code).toBe(1);
    expect(denied.stdout).toContain("deferral_not_supported");

    // Two gates for task_completed, a limit of one for that event alone (500 for idle: capped to 64, said).
    await rig.hook(team, "on_task_completed.sh", "exit 0");
    await mkdir(path.join(team.teamsRoot, "_hooks", "on_task_completed.d"), { recursive: true });
    await rig.hook(team, "on_task_completed.d/10-second.sh", "exit 0");
    await setHooks(team, {
      events: { task_completed: { limits: { maxHooksPerEvent: 1 } }, idle: { limits: { maxHooksPerEvent: 500 } } },
    });
    const json = JSON.parse((await runBin(["config", "--team-dir", team.teamDir, "--json"])).stdout) as {
      problems: Array<{ kind: string; path: string }>;
      settings: { events: Record<string, { limits: Record<string, { value: number }> }> };
    };
    expect(json.settings.events.idle?.limits.maxHooksPerEvent?.value).toBe(64);
    expect(json.problems).toContainEqual(
      expect.objectContaining({ kind: "setting_capped", path: "hooks.events.idle.limits.maxHooksPerEvent" }),
    );
    const limited = await run(team, "task_completed", "2");
    expect(limited.code).not.toBe(0);
    expect(limited.stdout + limited.stderr).toContain(
      "2 hooks for task_completed; the limit is 1 (hooks.events.task_completed.limits.maxHooksPerEvent)",
    );

    // Its failure mode, over hooks.failureMode: an error of its gate is let through.
    await rig.hook(team, "on_task_completed.sh", "echo 'not a verdict {'; exit 7");
    await rm(path.join(team.teamsRoot, "_hooks", "on_task_completed.d"), { recursive: true });
    await setHooks(team, {
      failureMode: "closed",
      exitCodes: "strict",
      events: { task_completed: { failureMode: "open" } },
    });
    expect(await failureMode(team)).toBe("open");
    const passed = await run(team, "task_completed", "3");
    expect(passed.code).toBe(0);
    expect(passed.stdout).toContain("failure mode open");
  });

  it("a per-event change that can weaken a verdict waits for the lead's approval; a stricter one applies at once", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      config: { ...base, hooks: { events: { task_completed: { failureMode: "closed", participation: "both" } } } },
    });
    await rig.hook(team, "on_task_completed.sh", "exit 0");
    // The leader's first start approves the settings as they are.
    const leader = await rig.leader(team, ["--once"], { waitForWatching: false });
    await leader.exited;

    await setHooks(team, { events: { task_completed: { failureMode: "open", participation: "optional" } } });
    const held = await runBin(["config", "--team-dir", team.teamDir]);
    expect(held.stderr).toContain("hooks.events changed from");
    expect(held.stderr).toContain("which can weaken a gate's verdict: it waits for the team lead's approval");
    expect(await failureMode(team)).toBe("closed");

    const trust = await runBin(["trust", "--team-dir", team.teamDir, "settings", "--yes"]);
    expect(trust.code, trust.stderr).toBe(0);
    const approved = await runBin(["config", "--team-dir", team.teamDir]);
    expect(approved.stderr).not.toContain("waits for the team lead's approval");
    expect(await failureMode(team)).toBe("open");

    // Stricter: closed again, participation required, fewer modes: no approval needed.
    await setHooks(team, {
      events: { task_completed: { failureMode: "closed", participation: "required", modes: ["admit"] } },
    });
    const stricter = await runBin(["config", "--team-dir", team.teamDir]);
    expect(stricter.stderr).not.toContain("waits for the team lead's approval");
    expect(stricter.stdout).toContain("hook point: modes admit; participation required");
  });

  it("participation required: an optional global gate the team drops is missing there, not dropped", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ config: { ...base, hooks: {} }, tasks: [done("1")] });
    await rig.hook(team, "on_task_completed.sh", "# pi-teams-hooks: required=false\nexit 0");
    expect((await runBin(["trust", "--team-dir", team.teamDir, "--all", "--yes"])).code).toBe(0);
    await mkdir(path.join(team.teamDir, "hooks"), { recursive: true });
    await writeFile(path.join(team.teamDir, "hooks", "on_task_completed.sh.disabled"), "");
    type View = { events: Record<string, { missing: unknown[]; dropped: unknown[] }> };
    const view = async (): Promise<View> =>
      JSON.parse((await runBin(["config", "--team-dir", team.teamDir, "--json"])).stdout) as View;
    // As the gate says: optional, dropped without an approval.
    expect((await view()).events.task_completed).toMatchObject({ missing: [], dropped: [expect.anything()] });
    expect((await run(team, "task_completed", "1")).code).toBe(0);
    // The point says every gate of it is required: the same drop now waits for the lead.
    await setHooks(team, { events: { task_completed: { participation: "required" } } });
    expect((await view()).events.task_completed).toMatchObject({ missing: [expect.anything()], dropped: [] });
    const held = await run(team, "task_completed", "1");
    expect(held.code).not.toBe(0);
    expect(held.stdout + held.stderr).toContain("gate_missing");
  });

  it("a bad declaration refuses the block, naming the field", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ config: { ...base, hooks: {} } });
    await setHooks(team, { events: { idle: { modes: ["admit", "defer"] }, task_failed: { modez: ["admit"] } } });
    const shown = await runBin(["config", "--team-dir", team.teamDir]);
    expect(shown.code).toBe(1);
    expect(shown.stdout).toContain("hooks.events.idle.modes: defer: idle cannot be held");
    expect(shown.stdout).toContain(`hooks.events.task_failed: Unrecognized key: "modez" (did you mean modes?)`);
  });
});
