/**
 * `config --json` and `doctor --json` give each problem as `{ kind, path, message }`, kinds from the
 * closed set docs/cli.md documents, through the built bin; the fields they had before stay.
 */
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "vitest";
import { PROBLEM_KINDS } from "../../extensions/teams-hooks/settings/problems.js";
import { REPO_ROOT, runBin, useLeaderRig } from "../helpers/leader-rig.js";

const outerRig = useLeaderRig();

interface Problem {
  kind: string;
  path: string;
  message: string;
}

const CAPPED = "hooks.limits.maxHooksPerEvent";
const MODE_VAR = "PI_TEAMS_HOOKS_FAILURE_MODE";
const problemsOf = (stdout: string): Problem[] => (JSON.parse(stdout) as { problems: Problem[] }).problems;

describe("problems as data", () => {
  it("docs/cli.md documents every kind, and nothing else", ({ expect }) => {
    const doc = readFileSync(path.join(REPO_ROOT, "docs", "cli.md"), "utf8");
    const section = doc.slice(doc.indexOf("### Problems as data"));
    const table = section.slice(0, section.indexOf("\n## "));
    const documented = [...table.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]);
    expect(documented).toEqual([...PROBLEM_KINDS]);
  });

  it("a capped limit, a field never writable, a bad variable, a changed gate, a bad settings line: kind and path", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const hooks = { limits: { maxHooksPerEvent: 500 }, writableFields: ["metadata", "status"] };
    const team = await rig.team({ config: { hooks } });
    const gate = await rig.hook(team, "on_task_completed.sh", "exit 0");
    const idle = await rig.hook(team, "on_idle.sh", "# pi-teams-hooks: mode=dry\nexit 0");
    expect((await runBin(["trust", "--team-dir", team.teamDir, "--all", "--yes"])).code).toBe(0);
    await writeFile(gate, "#!/usr/bin/env bash\nexit 1\n");
    const env = { PI_TEAMS_HOOKS_FAILURE_MODE: "ajar" };

    const config = await runBin(["config", "--team-dir", team.teamDir, "--json"], { env });
    const fromConfig = problemsOf(config.stdout);
    expect(fromConfig).toEqual(
      expect.arrayContaining([
        {
          kind: "setting_capped",
          path: CAPPED,
          message: expect.stringContaining("500 is above its ceiling of 64 — capped to 64"),
        },
        {
          kind: "setting_ignored",
          path: "hooks.writableFields",
          message: expect.stringContaining("status is never writable"),
        },
        { kind: "env_ignored", path: MODE_VAR, message: expect.stringContaining('"ajar" is not valid') },
        { kind: "gate_untrusted", path: gate, message: expect.stringContaining("changed since it was trusted") },
        {
          kind: "gate_settings",
          path: idle,
          message: expect.stringContaining("mode=dry: expected enforce or shadow"),
        },
      ]),
    );
    // The fields readers used before stay.
    const view = JSON.parse(config.stdout) as Record<string, unknown>;
    expect(view).toHaveProperty("warnings");
    expect(view).toHaveProperty("block.problems");

    const doctor = await runBin(["doctor", "--team-dir", team.teamDir, "--json"], { env });
    const report = JSON.parse(doctor.stdout) as { problems: Problem[]; errors: number; warnings: number };
    expect(report.problems).toEqual(
      expect.arrayContaining([
        { kind: "setting_capped", path: CAPPED, message: expect.stringContaining("capped to 64") },
        { kind: "env_ignored", path: MODE_VAR, message: expect.stringContaining("ajar") },
        { kind: "gate_settings", path: idle, message: expect.stringContaining("mode=dry") },
      ]),
    );
    expect(report.problems).toHaveLength(report.errors + report.warnings);
    for (const p of [...fromConfig, ...report.problems]) expect(PROBLEM_KINDS).toContain(p.kind);
  });

  it("a refused block names each field; an unreadable config.json is config_unreadable", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const bad = await rig.team({ config: { hooks: { failureAction: "rework", limits: { chainDeadlineMs: "soon" } } } });
    const refused = problemsOf((await runBin(["config", "--team-dir", bad.teamDir, "--json"])).stdout);
    const fields = ["hooks.failureAction", "hooks.limits.chainDeadlineMs"];
    expect(refused.filter((p) => p.kind === "setting_invalid").map((p) => p.path)).toEqual(fields);
    const doctor = problemsOf((await runBin(["doctor", "--team-dir", bad.teamDir, "--json"])).stdout);
    expect(doctor.filter((p) => p.kind === "setting_invalid").map((p) => p.path)).toEqual(fields);

    const broken = await rig.team({ config: "{ not json" });
    const unreadable = problemsOf((await runBin(["config", "--team-dir", broken.teamDir, "--json"])).stdout);
    expect(unreadable).toEqual([expect.objectContaining({ kind: "config_unreadable", path: "" })]);
    const doctorBroken = problemsOf((await runBin(["doctor", "--team-dir", broken.teamDir, "--json"])).stdout);
    expect(doctorBroken.filter((p) => p.kind === "config_unreadable")).toHaveLength(1);
  });
});
