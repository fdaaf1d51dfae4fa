/**
 * TypeScript gates (`on_<event>.ts`) through the built bin: with neither tsx nor Node's type stripping
 * the gate does not run and `run` and `doctor` name it with the fix; with a tsx found from the hooks
 * dir it runs with tsx's CLI; trust covers it like any gate; a `.js` compiled beside it runs first.
 *
 * tsx itself cannot be installed here (no network), so the "tsx found" case uses a stand-in package
 * named `tsx` in the gate's own node_modules (the only place tsx is taken from: gates/typescript.ts): a
 * CLI that blanks the type-only lines of a gate and runs it. It checks what is ours (tsx is looked up
 * in the gate's folder, its CLI started with the leader's node and the gate's path, the gate's output
 * and exit code kept), not tsx.
 */
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { nodeStripsTypes } from "../../extensions/teams-hooks/gates/typescript.js";
import { readLogs, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask, type TempTeam } from "../helpers/temp-team.js";

const rig = useLeaderRig();

const GATE = `// on_task_completed.ts
import { readFileSync } from "node:fs";

interface Task { id: string; subject: string; metadata: Record<string, unknown> }
const context = JSON.parse(readFileSync(0, "utf8")) as { task: Task | null };
const result: string = String(context.task?.metadata.result ?? "");
if (!/\\btest/i.test(result)) {
  console.error(\`task #\${context.task?.id}: the result does not mention tests\`);
  process.exit(1);
}
console.log(\`task #\${context.task?.id} mentions its tests\`);
`;

const STAND_IN_CLI = `// A stand-in for tsx's CLI (see the test): blanks the type-only lines of the gate, then runs it.
import { readFileSync } from "node:fs";
const source = readFileSync(process.argv[2], "utf8")
  .replace(/^interface .*$/gm, "")
  .replace(/ as \\{[^}]*\\}/g, "")
  .replace(/: string =/g, " =");
await import("data:text/javascript;base64," + Buffer.from(source).toString("base64"));
`;

async function teamWithGate(): Promise<{ team: TempTeam; hooks: string; gate: string }> {
  const team = await rig.team({
    tasks: [
      makeTask({ id: "1", status: "completed", owner: "ada", metadata: { result: "done" } }),
      makeTask({ id: "2", status: "completed", owner: "ada", metadata: { result: "unit tests pass" } }),
    ],
  });
  const hooks = path.join(team.teamsRoot, "_hooks");
  await mkdir(hooks, { recursive: true });
  const gate = path.join(hooks, "on_task_completed.ts");
  await writeFile(gate, GATE);
  return { team, hooks, gate };
}

/** Installs the stand-in tsx in `gateDir`'s own node_modules; returns its CLI's path. */
async function installStandIn(gateDir: string): Promise<string> {
  const dir = path.join(gateDir, "node_modules", "tsx");
  await mkdir(path.join(dir, "dist"), { recursive: true });
  await writeFile(
    path.join(dir, "package.json"),
    JSON.stringify({
      name: "tsx",
      version: "0.0.0-stand-in",
      type: "module",
      bin: "./dist/cli.mjs",
      exports: { "./cli": "./dist/cli.mjs", "./package.json": "./package.json" },
    }),
  );
  await writeFile(path.join(dir, "dist", "cli.mjs"), STAND_IN_CLI);
  return path.join(dir, "dist", "cli.mjs");
}

describe("a .ts gate", () => {
  it.skipIf(nodeStripsTypes())(
    "with neither tsx nor type stripping does not run, and run and doctor say why with the fix",
    async () => {
      const { team, hooks, gate } = await teamWithGate();
      const fix = `a .ts gate needs tsx where it can be found from ${hooks} (cd ${hooks} && npm install --save-dev tsx) or a Node with type stripping (this is Node ${process.versions.node}); or compile it to on_task_completed.js with tsc`;
      const run = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"]);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`skipped ${gate}: ${fix}`);
      expect(run.stderr).toContain(`warning: ${gate} never runs: ${fix}`);
      const doctor = await runBin(["doctor", "--team-dir", team.teamDir]);
      expect(doctor.stdout).toContain(`FAIL skipped on_task_completed.ts: ${fix}: no gate runs for this event`);
      expect(await readLogs(team.teamDir)).toEqual([]);
    },
  );

  it.skipIf(nodeStripsTypes())("without tsx, one with an execute bit runs by its own #! line", async () => {
    const { team, gate } = await teamWithGate();
    await writeFile(gate, `#!${process.execPath}\nconsole.log("ran by its #! line");\n`, { mode: 0o755 });
    await chmod(gate, 0o755);
    const run = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"]);
    expect(run.stdout).toContain("task_completed #1 on_task_completed.ts passed");
    expect((await readLogs(team.teamDir)).map((l) => l.result.command)).toEqual([[gate]]);
    expect(run.stderr).not.toContain("never runs");
  });

  it("with tsx found from the hooks dir runs with tsx's CLI, and its verdict counts", async () => {
    const { team, hooks, gate } = await teamWithGate();
    const cli = await installStandIn(hooks);
    const denied = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"]);
    expect(denied.code).toBe(1);
    expect(denied.stdout).toContain("task_completed #1 on_task_completed.ts failed");
    expect(denied.stdout).toContain("task #1: the result does not mention tests");
    const passed = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "2"]);
    expect(passed.code).toBe(0);
    expect(passed.stdout).toContain("task_completed #2 on_task_completed.ts passed");
    const logs = await readLogs(team.teamDir);
    expect(logs.map((l) => l.result.command)).toEqual([
      [process.execPath, cli, gate],
      [process.execPath, cli, gate],
    ]);
    expect(passed.stderr).not.toContain("never runs");
  });

  it("that runs with tsx is one doctor agrees runs, in the hooks dir and in a chain dir", async () => {
    const { team, hooks, gate } = await teamWithGate();
    const cli = await installStandIn(hooks);
    const chain = path.join(hooks, "on_task_completed.d");
    await mkdir(chain);
    await writeFile(path.join(chain, "10-types.ts"), GATE);
    // A chain gate's tsx is the one in its own folder's node_modules, not the hooks dir's.
    const chainCli = await installStandIn(chain);
    const doctor = await runBin(["doctor", "--team-dir", team.teamDir]);
    expect(doctor.stdout).toContain(`ok   on_task_completed.ts runs with tsx (${process.execPath} ${cli})`);
    expect(doctor.stdout).toContain(`runs with tsx (${process.execPath} ${chainCli})`);
    expect(doctor.stdout).not.toContain("no #! line");
    expect(doctor.code).toBe(0);
    const run = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "2"]);
    expect(run.code).toBe(0);
    // The chain gate's packages folder is where its tsx must be: not a gate, so not one skipped either.
    expect(run.stderr).not.toContain("on_task_completed.d/node_modules");
    expect((await readLogs(team.teamDir)).map((l) => l.result.command)).toEqual([
      [process.execPath, cli, gate],
      [process.execPath, chainCli, path.join(chain, "10-types.ts")],
    ]);
  });

  it("that runs is covered by trust: new, then trusted, then changed", async () => {
    const { team, hooks, gate } = await teamWithGate();
    await installStandIn(hooks); // trust covers the gates that run: with nothing to run it, it is none
    const shown = await runBin(["trust", "--team-dir", team.teamDir]);
    expect(shown.stdout).toMatch(
      new RegExp(`new +${gate.replaceAll(/[.*+?^${}()|[\]\\/]/g, "\\$&")} \\(task_completed\\): sha256 [0-9a-f]{64}`),
    );
    expect((await runBin(["trust", "--team-dir", team.teamDir, "--all", "--yes"])).code).toBe(0);
    await writeFile(gate, `${GATE}// changed\n`);
    const changed = await runBin(["trust", "--team-dir", team.teamDir]);
    expect(changed.stdout).toContain(`changed  ${gate}`);
  });

  it("a .js compiled beside it runs first, and the .ts is not named as a gate that never runs", async () => {
    const { team, hooks } = await teamWithGate();
    await writeFile(path.join(hooks, "on_task_completed.js"), `console.log("compiled");\n`);
    const run = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("task_completed #1 on_task_completed.js passed");
    expect(run.stderr).not.toContain("never runs");
    const doctor = await runBin(["doctor", "--team-dir", team.teamDir]);
    expect(doctor.stdout).toContain("not used: on_task_completed.ts (on_task_completed.js comes first)");
    expect(await readFile(path.join(hooks, "on_task_completed.ts"), "utf8")).toBe(GATE);
  });
});
