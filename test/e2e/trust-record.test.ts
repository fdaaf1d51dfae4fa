/**
 * The trust record cannot be changed behind the leader's back unnoticed, and an approval is a
 * person's, end to end (the built CLI): `trust.json` written by an agent (a gate's new hash, a forged
 * `trustedBy`) while the leader runs or while it is stopped is said on the leader's output and in the
 * lead's inbox, not trusted, and written back; `hook-state/` deleted before a restart trusts nothing
 * anew, and with its approved copy removed too, what the file says is taken but said loudly; `trust`
 * records only what a person approves — asked at a terminal, or with `--yes` (said so) —
 * and every approval reaches the lead's inbox.
 */
import { execFile as execFileCb } from "node:child_process";
import { createHash } from "node:crypto";
import { readFile, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { describe, it } from "vitest";
import { approvedFile } from "../../extensions/teams-hooks/trust/trust-store.js";
import { BIN, type LeaderRig, readInboxFile, runBin, useLeaderRig } from "../helpers/leader-rig.js";
import { makeTask, type TempTeam, runs } from "../helpers/temp-team.js";

const execFile = promisify(execFileCb);
const outerRig = useLeaderRig();
const GATE = "on_task_completed.sh";
const recording = (label: string): string =>
  `echo "${label} $PI_TEAMS_TASK_ID" >> "$PI_TEAMS_TEAM_DIR/runs.txt"\nexit 0`;

async function leadMessages(team: TempTeam): Promise<string[]> {
  return (await readInboxFile(team, "team", team.leadName)).map((m) => m.text);
}

async function gateTeam(rig: LeaderRig): Promise<TempTeam> {
  return rig.team({ tasks: ["1", "2"].map((id) => makeTask({ id, owner: "alice", status: "in_progress" })) });
}

/** What an agent writes: the edited gate's hash into trust.json, as if approved, with a forged name. */
async function forgeApproval(team: TempTeam, gate: string): Promise<void> {
  const file = path.join(team.teamDir, "hook-state", "trust.json");
  const record = JSON.parse(await readFile(file, "utf8")) as { gates: Record<string, Record<string, unknown>> };
  const bytes = await readFile(gate);
  record.gates[gate] = {
    ...record.gates[gate],
    sha256: createHash("sha256").update(bytes).digest("hex"),
    size: bytes.length,
    trustedBy: "team-lead@host (pi-teams-hooks trust)",
  };
  await writeFile(`${file}.tmp`, `${JSON.stringify(record, null, 2)}\n`);
  await rename(`${file}.tmp`, file);
}

describe.concurrent("trust.json changed behind the leader's back", () => {
  it("while the leader runs: said on its output and to the lead, not trusted, written back", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await gateTeam(rig);
    const gate = await rig.hook(team, GATE, recording("v1"));
    const leader = await rig.leader(team, ["--reconcile-ms", "200"]);
    const approved = await readFile(path.join(team.teamDir, "hook-state", "trust.json"), "utf8");
    await writeFile(gate, `#!/usr/bin/env bash\n${recording("v2")}\n`);
    await forgeApproval(team, gate);
    await leader.waitFor("the edit said", () =>
      leader
        .warnings()
        .some((w) => w.includes("trust.json was changed while the leader ran, not through pi-teams-hooks trust")),
    );
    expect(leader.warnings().join("\n")).toContain(`${gate}: written as trusted`);
    await leader.waitFor("the lead told", async () =>
      (await leadMessages(team)).some((t) => t.includes("was changed while the leader ran") && t.includes(gate)),
    );
    await leader.waitFor(
      "trust.json written back",
      async () => (await readFile(path.join(team.teamDir, "hook-state", "trust.json"), "utf8")) === approved,
    );
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    const [event] = await leader.waitForEvents(1);
    expect(event).toMatchObject({ outcome: "error", held: "approval" });
    expect(await runs(team)).toEqual([]);
    // `trust` says the same: the edit is not an approval.
    const shown = await runBin(["trust", "--team-dir", team.teamDir]);
    expect(shown.stdout).toContain(`changed  ${gate}`);
  });

  it("while the leader is stopped: said at its start, not trusted; and after hook-state/ is deleted, nothing is trusted anew", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await gateTeam(rig);
    const gate = await rig.hook(team, GATE, recording("v1"));
    const first = await rig.leader(team);
    await first.stop();
    await writeFile(gate, `#!/usr/bin/env bash\n${recording("v2")}\n`);
    await forgeApproval(team, gate);

    const second = await rig.leader(team, ["--reconcile-ms", "200"]);
    // Warnings come on stderr, `watching` on stdout: waited for, not read at once.
    await second.waitFor("the change said", () =>
      second
        .warnings()
        .some(
          (w) =>
            w.includes("trust.json was changed while no leader ran, not through pi-teams-hooks trust") &&
            w.includes(gate),
        ),
    );
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["1"] });
    expect((await second.waitForEvents(1))[0]).toMatchObject({ outcome: "error", held: "approval" });
    await second.stop();

    // The whole state deleted: the approved copy outside the team dir still says what was approved.
    await rm(path.join(team.teamDir, "hook-state"), { recursive: true, force: true });
    const third = await rig.leader(team, ["--reconcile-ms", "200"]);
    await third.waitFor("the removal said", () =>
      third.warnings().some((w) => w.includes("trust.json was removed while no leader ran: written back as approved")),
    );
    expect(third.linesOf("info").some((l) => String(l.message).includes("on first use"))).toBe(false);
    await rig.worker("complete", { tasksDir: team.tasksDir, ids: ["2"] });
    const events = await third.waitForEvents(1, (e) => e.taskId === "2");
    expect(events[0]).toMatchObject({ outcome: "error", held: "approval" });
    expect(await runs(team)).toEqual([]);
  });

  it("with the approved copy rewritten to match (the same user can): each gate changed is said at the start and to the lead, an optional one too", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await gateTeam(rig);
    const gate = await rig.hook(team, GATE, recording("v1"));
    const other = await rig.hook(team, "on_idle.sh", "exit 0");
    const first = await rig.leader(team);
    await first.stop();
    await writeFile(gate, `#!/usr/bin/env bash\n${recording("v2")}\n`);
    await forgeApproval(team, gate);
    // Both copies alike: the approved copy outside the team dir says what trust.json says, and the idle
    // gate is made optional in both.
    const trustJson = path.join(team.teamDir, "hook-state", "trust.json");
    const record = JSON.parse(await readFile(trustJson, "utf8")) as { gates: Record<string, Record<string, unknown>> };
    record.gates[other] = { ...record.gates[other], required: false };
    await writeFile(trustJson, `${JSON.stringify(record, null, 2)}\n`);
    const copyFile = approvedFile(team.teamDir, process.env);
    const copy = JSON.parse(await readFile(copyFile, "utf8")) as Record<string, unknown>;
    await writeFile(copyFile, `${JSON.stringify({ ...copy, record }, null, 2)}\n`);

    const second = await rig.leader(team, ["--reconcile-ms", "200"]);
    const said = await second.waitFor("the approval said", () =>
      second.warnings().find((w) => w.includes("trust record approved while no leader ran")),
    );
    expect(said).toBeDefined();
    expect(said).toMatch(
      new RegExp(`${gate.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: sha256 [0-9a-f]{12}… → [0-9a-f]{12}…`),
    );
    expect(said).toContain(`${other}: required → optional`);
    expect(said).toContain("by team-lead@host (pi-teams-hooks trust)");
    await second.waitFor("the lead told", async () =>
      (await leadMessages(team)).some(
        (t) => t.includes("approved while no leader ran") && t.includes(gate) && t.includes("required → optional"),
      ),
    );
    await second.stop();
    // Said once: the next start has nothing new to say.
    const third = await rig.leader(team);
    expect(third.warnings().some((w) => w.includes("approved while no leader ran"))).toBe(false);
    await third.stop();
  });

  it("with the approved copy removed as well (the same user can): what trust.json says is taken, said loudly and to the lead", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await gateTeam(rig);
    const gate = await rig.hook(team, GATE, recording("v1"));
    const first = await rig.leader(team);
    await first.stop();
    await writeFile(gate, `#!/usr/bin/env bash\n${recording("v2")}\n`);
    await forgeApproval(team, gate);
    await rm(approvedFile(team.teamDir, process.env));

    const second = await rig.leader(team, ["--reconcile-ms", "200"]);
    const said = await second.waitFor("the record taken said", () =>
      second.warnings().find((w) => w.includes("taken as it is")),
    );
    expect(said).toContain("the ledger shows a leader took the record before: its approved copy is gone");
    expect(said).toContain(`${gate}: sha256 `);
    // the forged name, shown as what it is: a claim
    expect(said).toContain("by team-lead@host (pi-teams-hooks trust)");
    await second.waitFor("the lead told", async () =>
      (await leadMessages(team)).some((t) => t.includes("its approved copy is gone") && t.includes(gate)),
    );
    await second.stop();
  });
});

describe.concurrent("an approval is a person's", () => {
  it("without a terminal, `trust --all` records nothing unless --yes, which it says, and the lead is told", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await gateTeam(rig);
    const gate = await rig.hook(team, GATE, recording("v1"));
    const leader = await rig.leader(team);
    await writeFile(gate, `#!/usr/bin/env bash\n${recording("v2")}\n`);
    const refused = await runBin(["trust", "--team-dir", team.teamDir, "--all"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("approving a gate is a person's act");
    expect(refused.stdout).toContain("not recorded: 1 change(s) not approved");
    expect((await runBin(["trust", "--team-dir", team.teamDir])).code).toBe(1); // still listed

    const yes = await runBin(["trust", "--team-dir", team.teamDir, "--all", "--yes"]);
    expect(yes.code, yes.stderr).toBe(0);
    expect(yes.stdout).toContain("approved without a terminal (--yes)");
    const notes = await leader.waitFor("the lead told", async () => {
      const found = (await leadMessages(team)).filter((t) => t.includes(`trust record: ${gate} approved`));
      return found.length > 0 ? found : false;
    });
    expect(notes).toHaveLength(1); // `trust` told it; the leader, seeing the same approval, did not again
    expect(notes[0]).toContain("without a terminal (--yes)");
    expect(leader.warnings().some((w) => w.includes(`trust record: ${gate} approved`))).toBe(true);
  });

  it.for([
    ["y", 0, "at a terminal"],
    ["n", 1, null],
  ] as const)("at a terminal, asked: %s", async ([answer, code, said], context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await gateTeam(rig);
    const gate = await rig.hook(team, GATE, recording("v1"));
    const first = await rig.leader(team);
    await first.stop();
    await writeFile(gate, `#!/usr/bin/env bash\n${recording("v2")}\n`);
    // util-linux `script` gives the command a terminal; the answer is typed on it.
    const command = `${process.execPath} ${BIN} trust --team-dir ${team.teamDir} --all`;
    const out = await execFile(
      "bash",
      ["-c", `printf '${answer}\\n' | script -qec '${command}' /dev/null; echo "exit=$?"`],
      { env: { ...process.env, NO_COLOR: "1" } },
    );
    expect(out.stdout).toContain("Approve 1 change(s) as trusted? [y/N]");
    expect(out.stdout).toContain(`exit=${code}`);
    if (said) expect(out.stdout).toContain(`approved ${said}`);
    else expect(out.stdout).toContain("not recorded");
    const listed = await runBin(["trust", "--team-dir", team.teamDir]);
    expect(listed.code).toBe(code === 0 ? 0 : 1);
  });
});
