/**
 * An error in a gate names the file its author wrote and the line, wherever it is said: `run`'s line,
 * the log's stderr, and a running leader's event summary; never the run's private copy of the gate
 * (the leader runs a copy of the checked bytes from its runs folder) nor Node's own internals. For a
 * bash gate (a command that is not there), an .mjs gate (an error it throws) and a .ts gate that does
 * not parse, run by tsx.
 *
 * tsx cannot be installed here (no network): the .ts gate's tsx is a stand-in in the gate's own
 * node_modules (where tsx is taken from: gates/typescript.ts) that does what tsx's CLI does, with the
 * TypeScript compiler of this repository instead of esbuild: a module loader hook (node:module
 * register) that transpiles the .ts file, and on a syntax error throws as esbuild's transform does
 * (`Transform failed with 1 error:` and `<file>:<line>:<column>: ERROR: <message>`). Thrown in the
 * loader, Node reports it starting with its own `node:internal/modules/run_main:123`, as it does
 * tsx's errors.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { REPO_ROOT, readLogs, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask, type TempTeam } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();

const TYPESCRIPT = path.join(REPO_ROOT, "node_modules", "typescript", "lib", "typescript.js");
const STAND_IN_CLI = `import { register } from "node:module";
import { pathToFileURL } from "node:url";
register("./hooks.mjs", import.meta.url);
await import(pathToFileURL(process.argv[2]).href);
`;
const STAND_IN_HOOKS = `import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
const ts = createRequire(import.meta.url)(${JSON.stringify(TYPESCRIPT)});
export async function load(url, context, next) {
  if (!url.endsWith(".ts")) return next(url, context);
  const file = fileURLToPath(url);
  const out = ts.transpileModule(readFileSync(file, "utf8"), {
    fileName: file,
    reportDiagnostics: true,
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  const errors = (out.diagnostics ?? []).filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length > 0) {
    const lines = errors.map((d) => {
      const at = d.file.getLineAndCharacterOfPosition(d.start ?? 0);
      const message = ts.flattenDiagnosticMessageText(d.messageText, " ");
      return \`\${file}:\${at.line + 1}:\${at.character}: ERROR: \${message}\`;
    });
    const count = \`\${errors.length} error\${errors.length > 1 ? "s" : ""}\`;
    throw new Error(\`Transform failed with \${count}:\\n\${lines.join("\\n")}\`);
  }
  return { format: "module", source: out.outputText, shortCircuit: true };
}
`;

async function installTsx(dir: string): Promise<void> {
  const tsx = path.join(dir, "node_modules", "tsx");
  await mkdir(path.join(tsx, "dist"), { recursive: true });
  const manifest = { name: "tsx", version: "0.0.0-stand-in", type: "module", bin: "./dist/cli.mjs" };
  await writeFile(
    path.join(tsx, "package.json"),
    JSON.stringify({ ...manifest, exports: { "./cli": "./dist/cli.mjs", "./package.json": "./package.json" } }),
  );
  await writeFile(path.join(tsx, "dist", "cli.mjs"), STAND_IN_CLI);
  await writeFile(path.join(tsx, "dist", "hooks.mjs"), STAND_IN_HOOKS);
}

const CASES = [
  {
    name: "on_task_completed.sh",
    body: "echo checking\nlint-the-work --strict",
    said: (gate: string) => `${gate}: line 3: lint-the-work: command not found`,
    where: (gate: string) => `${gate}: line 3`,
  },
  {
    name: "on_task_completed.mjs",
    body: 'console.log("checking");\nthrow new Error("the work has no tests");',
    said: (gate: string) => `file://${gate}:2`,
    where: (gate: string) => `file://${gate}:2`,
  },
  {
    name: "on_task_completed.ts",
    // Line 1 is the #! line the rig writes.
    body: "const checked: number = 1;\nconsole.log(checked);\nconst verdict = ;\n",
    said: (gate: string) => `Error: Transform failed with 1 error: ${gate}:4:16: ERROR: Expression expected.`,
    where: (gate: string) => `${gate}:4:16`,
  },
] as const;

describe("a gate's error names the file its author wrote, and the line", () => {
  it("a gate whose #! interpreter is missing: the error that it cannot start names the gate, not the run's copy", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", status: "completed", owner: "ada" })] });
    const hooks = path.join(team.teamsRoot, "_hooks");
    await mkdir(hooks, { recursive: true });
    const gate = path.join(hooks, "on_task_completed");
    await writeFile(gate, "#!/usr/bin/no-such-interpreter\necho checking\n", { mode: 0o755 });
    const ran = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"]);
    expect(ran.stdout).toContain(`task_completed #1 on_task_completed error`);
    expect(ran.stdout).toContain(`spawn ${gate} ENOENT`);
    expect(ran.stdout).not.toMatch(/pi-teams-hooks\/runs\//);
    const [log] = await readLogs(team.teamDir);
    expect(log?.result.error).toContain(`spawn ${gate} ENOENT`);
  });

  for (const c of CASES) {
    it(`${c.name}: run's line, the log and the leader's event`, async (context) => {
      const { expect } = context;
      const rig = outerRig.scoped(context);
      const team: TempTeam = await rig.team({
        tasks: [
          makeTask({ id: "1", status: "completed", owner: "ada" }),
          makeTask({ id: "2", status: "in_progress", owner: "ada" }),
        ],
      });
      const gate = await rig.hook(team, c.name, c.body);
      if (c.name.endsWith(".ts")) await installTsx(path.dirname(gate));
      const said = c.said(gate);

      const ran = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"]);
      expect(ran.stdout).toContain(`task_completed #1 ${c.name} failed`);
      expect(ran.stdout).toContain(said);
      expect(ran.stdout).not.toContain("node:internal");
      const [log] = await readLogs(team.teamDir);
      expect(log?.result.stderr).toContain(c.where(gate));
      expect(log?.result.stderr).not.toMatch(/pi-teams-hooks\/runs\//);

      const leader = await rig.leader(team);
      await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["2"] });
      const [event] = await leader.waitForEvents(1, (e) => e.event === "task_completed" && e.taskId === "2");
      expect(event?.outcome).toBe("failed");
      expect(event?.summary).toContain(said);
      expect(await leader.stop()).toMatchObject({ code: 0 });
    });
  }
});
