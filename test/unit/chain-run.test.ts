/**
 * `runChain` (event/chain-run.ts) over real gates in a real temp team: each gate a bash file that appends its name to
 * `ran.txt` when it starts, run as a real child process. What a team lead checks of a chain: which gates ran and
 * in what order, where a task event stops, what the limits refuse, what a patch shows the gates after it, and what a
 * stopping leader leaves unstarted.
 */
import { existsSync, readFileSync } from "node:fs";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { HookInvocation } from "../../extensions/teams-hooks/contract/contract.js";
import { runChain } from "../../extensions/teams-hooks/event/chain-run.js";
import type { InvokeRequest } from "../../extensions/teams-hooks/event/invoke.js";
import { discoverChain } from "../../extensions/teams-hooks/gates/chain.js";
import { makeInvocation } from "../helpers/invocation.js";
import { eventRequest } from "../helpers/invoke-request.js";
import type { SettingsFor } from "../helpers/team-settings.js";
import { tempTeams, type TempTeam } from "../helpers/temp-team.js";

const team = tempTeams({ teamId: "chain-unit" });
const D = "on_task_completed.d";
/** Real processes: a few gates of bash each, some of them sleeping on purpose. */
const TIMEOUT = 20_000;

interface Rig {
  team: TempTeam;
  hooksDir: string;
  /** Writes `<hooks>/on_task_completed.d/<name>` (bash): it notes its name in ran.txt, then runs `body`. */
  gate(name: string, body: string, settings?: string): Promise<void>;
  /** The names of the gates that started, in order. */
  ran(): string[];
  run(settings?: SettingsFor, over?: Partial<InvokeRequest>, invocation?: HookInvocation): ReturnType<typeof runChain>;
}

async function rig(): Promise<Rig> {
  const made = await team();
  const hooksDir = path.join(made.teamsRoot, "_hooks");
  const marks = path.join(made.teamsRoot, "ran.txt");
  await mkdir(path.join(hooksDir, D), { recursive: true });
  return {
    team: made,
    hooksDir,
    async gate(name, body, settings) {
      const file = path.join(hooksDir, D, name);
      const line = settings ? `# pi-teams-hooks: ${settings}\n` : "";
      await writeFile(file, `#!/usr/bin/env bash\n${line}echo ${name} >> ${JSON.stringify(marks)}\n${body}\n`);
      await chmod(file, 0o755);
    },
    ran: () => (existsSync(marks) ? readFileSync(marks, "utf8").split("\n").filter(Boolean) : []),
    async run(settings = {}, over = {}, invocation = makeInvocation({ teamDir: made.teamDir })) {
      const req = eventRequest(
        { team: made, hooksDir, settings: { timeoutMs: 10_000, ...settings } },
        { runId: "0b0e5c1e-0000-4000-8000-00000000c4a1", ...over },
      );
      const chain = await discoverChain({ globalDir: hooksDir, teamDir: null, event: "task_completed", handlers: [] });
      return runChain(req, chain.hooks, invocation, { mode: "closed", now: () => new Date(), trust: null });
    },
  };
}

const says = (verdict: unknown): string => `cat > /dev/null\necho '${JSON.stringify(verdict)}'`;

describe("runChain: the order and the stop", () => {
  it(
    "runs the gates by name, each under its own run id, and stops a task event at the first failure",
    async () => {
      const r = await rig();
      await r.gate("10-lint.sh", "exit 0");
      await r.gate("20-tests.sh", "echo '2 tests fail' >&2; exit 1");
      await r.gate("30-docs.sh", "exit 0");
      const { runs, interrupted } = await r.run();
      expect(r.ran()).toEqual(["10-lint.sh", "20-tests.sh"]);
      expect(runs.map((x) => [x.hook.name, x.result.outcome])).toEqual([
        ["10-lint.sh", "passed"],
        ["20-tests.sh", "failed"],
      ]);
      expect(runs.map((x) => x.result.runId)).toEqual([
        "0b0e5c1e-0000-4000-8000-00000000c4a1",
        "0b0e5c1e-0000-4000-8000-00000000c4a1.2",
      ]);
      expect(runs[1]?.result.stderr).toContain("2 tests fail");
      expect(interrupted).toBeNull();
    },
    TIMEOUT,
  );

  it(
    "goes on past a defer, so that a later denial still runs and is seen",
    async () => {
      const r = await rig();
      await r.gate("10-ci.sh", says({ decision: "defer", reason: "waiting for CI" }));
      await r.gate("20-review.sh", says({ decision: "deny", code: "review.missing", reason: "no review" }));
      const { runs } = await r.run();
      expect(r.ran()).toEqual(["10-ci.sh", "20-review.sh"]);
      expect(runs.map((x) => x.result.outcome)).toEqual(["deferred", "failed"]);
      expect(runs[1]?.result.verdict).toMatchObject({ decision: "deny", code: "review.missing" });
    },
    TIMEOUT,
  );

  it(
    "runs a gate on trial (mode=shadow) after the enforced ones, even after a denial, and counts it as passed",
    async () => {
      const r = await rig();
      await r.gate("10-trial.sh", "exit 1", "mode=shadow");
      await r.gate("20-tests.sh", "exit 1");
      await r.gate("30-docs.sh", "exit 0");
      const { runs } = await r.run();
      expect(r.ran()).toEqual(["20-tests.sh", "10-trial.sh"]);
      expect(runs.map((x) => [x.hook.name, x.result.outcome])).toEqual([
        ["20-tests.sh", "failed"],
        ["10-trial.sh", "passed"],
      ]);
      expect(runs[1]?.result.shadow).toMatchObject({ outcome: "failed", wouldDeny: true });
    },
    TIMEOUT,
  );

  it(
    "skips a gate whose matchers do not match the member, says why, and runs the rest",
    async () => {
      const r = await rig();
      await r.gate("10-backend.sh", "exit 1", "members=bob");
      await r.gate("20-tests.sh", "exit 0");
      const { runs } = await r.run();
      expect(r.ran()).toEqual(["20-tests.sh"]);
      expect(runs.map((x) => [x.hook.name, x.result.ran, x.result.skipped ?? null])).toEqual([
        ["10-backend.sh", false, "members=bob: member alice does not match"],
        ["20-tests.sh", true, null],
      ]);
    },
    TIMEOUT,
  );
});

describe("runChain: the limits", () => {
  it(
    "refuses a chain of more hooks than maxHooksPerEvent before any starts, naming the setting",
    async () => {
      const r = await rig();
      for (const name of ["10-a.sh", "20-b.sh", "30-c.sh"]) await r.gate(name, "exit 0");
      const { runs } = await r.run({ hooks: { limits: { maxHooksPerEvent: 2 } } });
      expect(r.ran()).toEqual([]);
      expect(runs).toHaveLength(1);
      expect(runs[0]?.result).toMatchObject({ ran: false, outcome: "error", errorKind: "limit" });
      expect(runs[0]?.result.error).toBe(
        "3 hooks for task_completed; the limit is 2 (hooks.limits.maxHooksPerEvent) — none ran",
      );
    },
    TIMEOUT,
  );

  it(
    "refuses a chain whose context document is over maxPayloadBytes before any starts",
    async () => {
      const r = await rig();
      await r.gate("10-a.sh", "exit 0");
      const invocation = makeInvocation({ teamDir: r.team.teamDir, task: { description: "x".repeat(4096) } });
      const { runs } = await r.run({ hooks: { limits: { maxPayloadBytes: 1024 } } }, {}, invocation);
      expect(r.ran()).toEqual([]);
      expect(runs[0]?.result).toMatchObject({ ran: false, errorKind: "limit" });
      expect(runs[0]?.result.error).toMatch(
        /^the context document is \d+ bytes; the limit is 1024 \(hooks\.limits\.maxPayloadBytes\) — none ran$/,
      );
    },
    TIMEOUT,
  );

  it(
    "cuts a gate short at the chain's deadline, as a limit, and starts none after it",
    async () => {
      const r = await rig();
      await r.gate("10-slow.sh", "sleep 10");
      await r.gate("20-after.sh", "exit 0");
      const { runs } = await r.run({ hooks: { limits: { chainDeadlineMs: 1_000 } } });
      expect(r.ran()).toEqual(["10-slow.sh"]);
      expect(runs.map((x) => x.hook.name)).toEqual(["10-slow.sh"]);
      expect(runs[0]?.result).toMatchObject({ timedOut: true, errorKind: "limit" });
      expect(runs[0]?.result.error).toBe("stopped at the chain deadline of 1000ms (hooks.limits.chainDeadlineMs)");
    },
    TIMEOUT,
  );
});

describe("runChain: what the later gates see, and a stop", () => {
  it(
    "shows the gates after a patch the patched task, and keeps the patch on that gate's run",
    async () => {
      const r = await rig();
      const patch = { metadata: { reviewedBy: "qa-bot" } };
      await r.gate("10-patch.sh", says({ decision: "patch", patch }));
      const seen = path.join(r.team.teamsRoot, "seen.json");
      await r.gate("20-look.sh", `cat > ${JSON.stringify(seen)}`);
      const { runs } = await r.run({ hooks: { writableFields: ["metadata.reviewedBy"] } });
      expect(r.ran()).toEqual(["10-patch.sh", "20-look.sh"]);
      expect(runs[0]?.patch).toEqual({ patch, paths: ["metadata.reviewedBy"] });
      const document = JSON.parse(readFileSync(seen, "utf8")) as { task: { metadata: Record<string, unknown> } };
      expect(document.task.metadata.reviewedBy).toBe("qa-bot");
    },
    TIMEOUT,
  );

  it(
    "lets the gate under way finish when the leader begins to stop, and starts no other: the event is interrupted",
    async () => {
      const r = await rig();
      await r.gate("10-a.sh", "exit 0");
      await r.gate("20-b.sh", "exit 0");
      await r.gate("30-c.sh", "exit 0");
      const { runs, interrupted } = await r.run(
        {},
        { stopping: () => existsSync(path.join(r.team.teamsRoot, "ran.txt")) },
      );
      expect(r.ran()).toEqual(["10-a.sh"]);
      expect(runs.map((x) => [x.hook.name, x.result.outcome])).toEqual([["10-a.sh", "passed"]]);
      expect(interrupted).toBe("the leader is stopping: 20-b.sh (hook 2 of 3) and the hooks after it did not start");
    },
    TIMEOUT,
  );
});
