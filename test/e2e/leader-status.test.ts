/**
 * Whether a leader holds a team, where a lead looks: `doctor`, pi's `/gates status` and the
 * dashboard, read from the leader lock and its heartbeat (the lock's mtime, moved by the leader while
 * it lives): `running` while a real leader (the built CLI) watches, `none` once it stopped, `stale`
 * for a lock whose process is gone or whose heartbeat stopped. A second leader refused by the lock
 * never says it stopped.
 */
import { spawn } from "node:child_process";
import { mkdir, stat, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runBin, useLeaderRig, waitUntil } from "../helpers/leader-rig.js";
import { startServe } from "../helpers/serve-rig.js";
import type { TempTeam } from "../helpers/temp-team.js";
import { statusText } from "../../extensions/teams-hooks/pi/report.js";
import type { GateStatus } from "../../extensions/teams-hooks/pi/gates.js";

const rig = useLeaderRig();

const lockOf = (t: TempTeam): string => path.join(t.teamDir, "hook-state", "leader.lock");

async function doctorLeaderLine(t: TempTeam): Promise<string> {
  const out = await runBin(["doctor", "--team-dir", t.teamDir]);
  return out.stdout.split("\n").find((line) => line.includes("leader: ")) ?? `(no leader line in)\n${out.stdout}`;
}

async function gatesStatus(t: TempTeam): Promise<string> {
  const text = await statusText(
    { phase: "off", detail: "test" } as GateStatus,
    t.teamDir,
    { PI_TEAMS_ROOT_DIR: t.teamsRoot },
    t.teamsRoot,
  );
  return text.split("\n").find((line) => line.startsWith("leader: ")) ?? text;
}

async function dashboardLeader(t: TempTeam): Promise<string> {
  const serve = await startServe(t.teamsRoot);
  try {
    const page = await (await fetch(`${serve.url}/`)).text();
    return /<p class="[^"]*leader" data-leader="(\w+)">([^<]*)<\/p>/.exec(page)?.slice(1).join(" | ") ?? page;
  } finally {
    await serve.stop();
  }
}

/** A pid that was alive a moment ago and is not now. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await new Promise((resolve) => child.on("close", resolve));
  if (child.pid === undefined) throw new Error("no pid");
  return child.pid;
}

describe("whether a leader holds the team", () => {
  it("none, running with a heartbeat while a leader watches, none again: doctor, /gates, the dashboard", async () => {
    const t = await rig.team({
      config: { version: 1, teamId: "test-team", taskListId: "test-team", leadName: "team-lead", members: [] },
    });
    const none = "leader: none: no leader watches this team, so no gate runs (pi-teams-hooks watch)";
    expect(await doctorLeaderLine(t)).toBe(`  --   ${none}`);
    expect(await gatesStatus(t)).toBe(none);
    expect(await dashboardLeader(t)).toBe(`none | Leader: ${none.slice("leader: ".length)}`);

    const leader = await rig.leader(t);
    const running = new RegExp(
      `^running \\(pid ${leader.pid}, pi-teams-hooks watch, since \\S+, heartbeat \\d+ s ago\\)$`,
    );
    expect((await doctorLeaderLine(t)).replace(/^ {2}ok {3}leader: /, "")).toMatch(running);
    expect((await gatesStatus(t)).replace(/^leader: /, "")).toMatch(running);
    expect((await dashboardLeader(t)).replace(/^running \| Leader: /, "")).toMatch(running);
    // The heartbeat: the lock's mtime moves while the leader lives.
    const first = (await stat(lockOf(t))).mtimeMs;
    await waitUntil("a heartbeat", async () => (await stat(lockOf(t))).mtimeMs > first, {
      timeoutMs: 15_000,
      intervalMs: 200,
    });

    await leader.stop();
    expect(await doctorLeaderLine(t)).toBe(`  --   ${none}`);
  });

  it("a second watch, refused by the first, says why and never that it stopped (it never started)", async () => {
    const t = await rig.team();
    const first = await rig.leader(t);
    for (const json of [false, true]) {
      const second = await runBin(["watch", "--team-dir", t.teamDir, ...(json ? ["--json"] : [])]);
      expect(second.code).toBe(2);
      expect(second.stderr).toContain(`another leader (pid ${first.pid}) is already watching ${t.teamDir}`);
      expect(second.stdout).not.toMatch(/stopped/);
      expect(second.stdout).not.toMatch(/watching/);
    }
    expect(first.exit).toBeNull();
  });

  it("stale: a lock whose process is gone, or whose heartbeat stopped", async () => {
    const t = await rig.team();
    const pid = await deadPid();
    await mkdir(path.dirname(lockOf(t)), { recursive: true });
    await writeFile(
      lockOf(t),
      JSON.stringify({ pid, createdAt: "2026-12-06T06:00:00.000Z", label: "pi-teams-hooks watch" }),
    );
    expect(await doctorLeaderLine(t)).toMatch(
      new RegExp(
        `^ {2}warn leader: stale \\(pid ${pid}, pi-teams-hooks watch, since 2026-12-06T06:00:00.000Z, heartbeat \\d+ s ago\\): process ${pid} is gone; no leader runs the gates`,
      ),
    );

    // A live process (this one) whose heartbeat stopped a minute ago: hung, or not a leader any more.
    await writeFile(
      lockOf(t),
      JSON.stringify({ pid: process.pid, createdAt: "2026-12-06T06:00:00.000Z", label: "pi-teams-hooks watch" }),
    );
    const minuteAgo = new Date(Date.now() - 60_000);
    await utimes(lockOf(t), minuteAgo, minuteAgo);
    expect(await gatesStatus(t)).toMatch(
      /^leader: stale \(pid \d+, .*heartbeat 60 s ago\): no heartbeat for 60 s; no leader runs the gates/,
    );
  });
});
