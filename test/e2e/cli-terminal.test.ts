/**
 * Output that fits the terminal, through the built bin: the logs table at 80 and 120 columns (every
 * line fits by display width, the cut column ends in `…`, the others whole, a CJK member name keeps
 * the columns aligned), 80 columns through a pipe without COLUMNS, `--json` never cut; FORCE_COLOR and
 * NO_COLOR through a pipe; watch's times on the local clock of TZ=Asia/Tokyo and the zone named;
 * `run`'s "still running" line on a pseudo-terminal (util-linux `script`) and nothing through a pipe.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { BIN, readLogs, runBin, useLeaderRig, waitUntil } from "../helpers/leader-rig.js";
import { makeTask } from "../helpers/temp-team.js";
import { blankResult } from "../../extensions/teams-hooks/contract/hook-run.js";
import { type HookLogRecordInput, writeHookLog } from "../../extensions/teams-hooks/logs/hook-log.js";
import { displayWidth } from "../../extensions/teams-hooks/text/width.js";

const rig = useLeaderRig();

/**
 * The bin through pipes, with nothing set that shapes its output (COLUMNS, NO_COLOR, FORCE_COLOR) but `env`; TZ is UTC
 * (vitest.config.ts) unless `env` says otherwise.
 */
function bin(args: string[], env: Record<string, string> = {}): ReturnType<typeof runBin> {
  return runBin(args, { env: { COLUMNS: undefined, NO_COLOR: undefined, FORCE_COLOR: undefined, ...env } });
}

const LONG_STDERR = `FAIL: ${"the integration suite found a problem in module farewell; ".repeat(3)}`.trim();

function record(
  teamDir: string,
  at: string,
  taskId: string,
  member: string,
  outcome: "passed" | "failed",
): HookLogRecordInput {
  const failed = outcome === "failed";
  const run = {
    ran: true,
    hookPath: "/hooks/on_task_completed.sh",
    command: ["bash", "/hooks/on_task_completed.sh"],
    runId: randomUUID(),
  };
  return {
    invocation: {
      event: "task_completed",
      teamId: "alpha",
      teamDir,
      taskListId: "alpha",
      style: "normal",
      memberName: member,
      completedTask: makeTask({ id: taskId, status: "completed", owner: member }),
    },
    result: {
      ...blankResult(run),
      outcome,
      exitCode: failed ? 1 : 0,
      durationMs: 1234,
      stderr: failed ? `${LONG_STDERR}\n` : "",
    },
    key: `task_completed:${taskId}:${at}`,
    startedAt: at,
    policy: {
      failureAction: "reopen_followup",
      actions: failed ? ["reopened (1/3)", `follow-up #9 for ${member}`, `nudge ${member}`] : ["none"],
    },
  };
}

/** A team with three logs: ada passed, 张伟 failed (long stderr, long actions), brian passed. */
async function teamWithLogs(): Promise<string> {
  const team = await rig.team({ teamId: "alpha" });
  await writeHookLog(team.teamDir, record(team.teamDir, "2026-03-01T09:12:44.046Z", "1", "ada", "passed"));
  await writeHookLog(team.teamDir, record(team.teamDir, "2026-03-01T09:13:02.500Z", "2", "张伟", "failed"));
  await writeHookLog(team.teamDir, record(team.teamDir, "2026-03-01T09:14:10.000Z", "3", "brian", "passed"));
  return team.teamDir;
}

/** The display column where `cell` starts on `line`. */
function columnOf(line: string, cell: string): number {
  const at = line.indexOf(cell);
  expect(at, `${JSON.stringify(cell)} in ${JSON.stringify(line)}`).toBeGreaterThanOrEqual(0);
  return displayWidth(line.slice(0, at));
}

describe("the logs table fits the terminal", () => {
  it.each([
    [80, /^\(event, hook and duration left out to fit 80 columns; COLUMNS=\d+ or --json shows everything\)\n$/],
    [120, /^\(hook left out to fit 120 columns; COLUMNS=\d+ or --json shows everything\)\n$/],
  ])(
    "COLUMNS=%d: every line fits, the cut column ends in …, the rest whole, 张伟 shifts nothing",
    async (width, note) => {
      const teamDir = await teamWithLogs();
      const { code, stdout, stderr } = await bin(["logs", "--team-dir", teamDir], { COLUMNS: String(width) });
      expect(code).toBe(0);
      const lines = stdout.trimEnd().split("\n");
      expect(lines).toHaveLength(4);
      for (const line of lines) expect(displayWidth(line)).toBeLessThanOrEqual(width);
      const [header = "", ada = "", zhang = "", brian = ""] = lines;
      // Id, time, task, member, outcome whole on every row.
      expect(ada).toMatch(/^[0-9a-f]{8} {2}2026-03-01 09:12:44 {2}.*#1 +ada +(\S+ +)?passed/);
      expect(zhang).toMatch(/^[0-9a-f]{8} {2}2026-03-01 09:13:02 {2}.*#2 +张伟 +(\S+ +)?failed/);
      expect(brian).toMatch(/^[0-9a-f]{8} {2}2026-03-01 09:14:10 {2}.*#3 +brian +(\S+ +)?passed/);
      // The failed row's free text is cut, and says so.
      expect(zhang.endsWith("…")).toBe(true);
      expect(zhang).toContain(width === 80 ? "FAIL: the i" : "FAIL: the integrat");
      expect(zhang).not.toContain(LONG_STDERR);
      // Aligned by display width: each column starts at the same place on every line.
      for (const [head, cells] of [
        ["member", ["ada", "张伟", "brian"]],
        ["outcome", ["passed", "failed", "passed"]],
        ["action", ["-", "reopened", "-"]],
      ] as const) {
        const columns = [
          columnOf(header, head),
          ...cells.map((cell, i) => columnOf(lines[i + 1] ?? "", ` ${cell}`) + 1),
        ];
        expect(new Set(columns).size, `${head}: ${columns.join(", ")}`).toBe(1);
      }
      expect(stderr).toMatch(note);
    },
  );

  it("through a pipe without COLUMNS: 80 columns; wide enough: nothing cut or left out; --json: never cut", async () => {
    const teamDir = await teamWithLogs();
    const piped = await bin(["logs", "--team-dir", teamDir]);
    expect(Math.max(...piped.stdout.trimEnd().split("\n").map(displayWidth))).toBeLessThanOrEqual(80);
    expect(piped.stderr).toContain("left out to fit 80 columns");

    const needed = Number(/COLUMNS=(\d+)/.exec(piped.stderr)?.[1]);
    const wide = await bin(["logs", "--team-dir", teamDir], { COLUMNS: String(needed) });
    expect(wide.stderr).toBe("");
    expect(wide.stdout.split("\n")[0]?.split(/ {2,}/)).toEqual([
      "id",
      "time (UTC)",
      "event",
      "task",
      "member",
      "hook",
      "outcome",
      "duration",
      "action",
      "first stderr line",
    ]);
    expect(wide.stdout).toContain(`reopened (1/3), follow-up #9 for 张伟, nudge 张伟  ${LONG_STDERR.slice(0, 99)}…`);
    expect(wide.stdout).not.toMatch(/… {2}/); // no cell cut: only the stderr line's own 100-character cut

    const json = await bin(["logs", "--team-dir", teamDir, "--json"], { COLUMNS: "40" });
    const failed = json.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { result: { stderr: string } })[1];
    expect(failed?.result.stderr).toBe(`${LONG_STDERR}\n`);
  });

  it("logs stats fits too, leaving out the columns 0 on every row first, then p50, p95 and the tasks", async () => {
    const teamDir = await teamWithLogs();
    const narrow = await bin(["logs", "stats", "--team-dir", teamDir], { COLUMNS: "80" });
    for (const line of narrow.stdout.trimEnd().split("\n")) expect(displayWidth(line)).toBeLessThanOrEqual(80);
    // No run timed out or erred: those columns go, and p50, p95 and the most-failed tasks stay.
    expect(narrow.stdout.split("\n")[0]?.split(/ {2,}/)).toEqual([
      "hook",
      "event",
      "runs",
      "pass rate",
      "failed",
      "p50",
      "p95",
      "most-failed…",
    ]);
    expect(narrow.stdout).toContain("#2 (1)");
    expect(narrow.stderr).toContain("(timed out and error left out to fit 80 columns");
    const narrower = await bin(["logs", "stats", "--team-dir", teamDir], { COLUMNS: "60" });
    for (const line of narrower.stdout.trimEnd().split("\n")) expect(displayWidth(line)).toBeLessThanOrEqual(60);
    expect(narrower.stdout.split("\n")[0]?.split(/ {2,}/)).toEqual(["hook", "event", "runs", "pass rate", "failed"]);
    expect(narrower.stderr).toContain("(timed out, error, p50, p95 and most-failed tasks left out to fit 60 columns");
    const wide = await bin(["logs", "stats", "--team-dir", teamDir], { COLUMNS: "200" });
    expect(wide.stdout).toContain("#2 (1)");
    expect(wide.stderr).toBe("");
  });

  it("TZ=Asia/Tokyo: the table shows +09:00 and says so; --since is read at that offset", async () => {
    const teamDir = await teamWithLogs();
    const tokyo = await bin(["logs", "--team-dir", teamDir, "--since", "2026-03-01 18:13"], {
      TZ: "Asia/Tokyo",
      COLUMNS: "200",
    });
    expect(tokyo.code).toBe(0);
    const lines = tokyo.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^id {8}time \(UTC\+09:00\) /);
    expect(lines.slice(1).map((l) => l.slice(10, 29))).toEqual(["2026-03-01 18:13:02", "2026-03-01 18:14:10"]);
    // A time as the table shows it picks that run.
    const shown = await bin(["logs", "show", "2026-03-01", "18:13:02", "--team-dir", teamDir], { TZ: "Asia/Tokyo" });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("started:      2026-03-01T09:13:02.500Z");
  });
});

describe("colour through a pipe", () => {
  it("FORCE_COLOR=1 colours doctor's marks, NO_COLOR=1 does not (and wins over FORCE_COLOR)", async () => {
    const team = await rig.team({ tasks: [makeTask({ id: "1", status: "completed", owner: "ada" })] });
    await rig.hook(team, "on_task_completed.sh", "exit 0");
    const forced = await bin(["doctor", "--team-dir", team.teamDir], { FORCE_COLOR: "1" });
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain("\u001b[32m✓\u001b[0m");
    const plain = await bin(["doctor", "--team-dir", team.teamDir], { NO_COLOR: "1" });
    expect(plain.stdout).not.toContain("\u001b[");
    expect(plain.stdout).toContain("  ok   ");
    const both = await bin(["doctor", "--team-dir", team.teamDir], { NO_COLOR: "1", FORCE_COLOR: "1" });
    expect(both.stdout).not.toContain("\u001b[");
    const neither = await bin(["doctor", "--team-dir", team.teamDir]);
    expect(neither.stdout).not.toContain("\u001b[");
  });
});

describe("watch shows local time", () => {
  it("TZ=Asia/Tokyo: the watching line names the zone; an event line's time is its log's UTC time + 9 h", async () => {
    const team = await rig.team({ tasks: [makeTask({ id: "1", status: "completed", owner: "ada" })] });
    await rig.hook(team, "on_task_completed.sh", "exit 0");
    const { code, stdout } = await bin(["watch", "--team-dir", team.teamDir, "--once", "--catch-up"], {
      TZ: "Asia/Tokyo",
      FORCE_COLOR: "1",
    });
    expect(code).toBe(0);
    expect(stdout).toMatch(/^watching .* once; times are local \(Asia\/Tokyo, UTC\+09:00\)$/m);
    const event =
      /^\u001b\[2m(\d{2}):(\d{2}):(\d{2})\u001b\[0m task_completed #1 ada on_task_completed\.sh \u001b\[32mpassed\u001b\[0m/m.exec(
        stdout,
      );
    expect(event, stdout).not.toBeNull();
    // FORCE_COLOR through a pipe colours; it never draws the "still running" line there.
    expect(stdout).not.toContain("\r");
    const [log] = await readLogs(team.teamDir);
    const shown = Number(event?.[1]) * 3600 + Number(event?.[2]) * 60 + Number(event?.[3]);
    const utc = new Date(log?.startedAt ?? "");
    const expected = ((utc.getUTCHours() + 9) % 24) * 3600 + utc.getUTCMinutes() * 60 + utc.getUTCSeconds();
    // The line says when the event was handled, the log when its hook started: the same moment, give or take the run.
    const apart = Math.min(Math.abs(shown - expected), 86_400 - Math.abs(shown - expected));
    expect(apart).toBeLessThan(60);
  });
});

describe("run: a hook still running", () => {
  /** A hook that waits for `go` to appear beside it, so that the test decides when it ends. */
  async function waitingTeam(): Promise<{ teamDir: string; go: string }> {
    const team = await rig.team();
    // In the team dir, which the sandboxed gate sees (read-only) as it is: the teams root around it, in the
    // test's temp dir, is hidden under the gate's private /dev/shm and /tmp.
    const go = path.join(team.teamDir, "go");
    await rig.hook(team, "on_idle.sh", `for i in $(seq 1 300); do [ -e "${go}" ] && exit 0; sleep 0.1; done; exit 1`);
    return { teamDir: team.teamDir, go };
  }

  it("through a pipe: nothing but the report", async () => {
    const team = await rig.team();
    // Runs past the second after which a terminal would show the line.
    await rig.hook(team, "on_idle.sh", "sleep 1.5");
    const { code, stdout, stderr } = await bin(["run", "idle", "--team-dir", team.teamDir]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^idle on_idle\.sh passed in \d+\.\ds \(run [0-9a-f]{8}\)\n$/);
    expect(stderr).toBe("");
  });

  const hasScript = ((): boolean => {
    try {
      execFileSync("script", ["--version"], { stdio: "ignore" });
      return true;
    } catch {
      return false;
    }
  })();

  it.skipIf(!hasScript)(
    "on a terminal (util-linux script): `running on_idle.sh… Ns` redrawn with \\r, cleared before the report",
    async () => {
      const { teamDir, go } = await waitingTeam();
      const quote = (word: string): string => `'${word.replaceAll("'", "'\\''")}'`;
      const command = [process.execPath, BIN, "run", "idle", "--team-dir", teamDir].map(quote).join(" ");
      const env = Object.fromEntries(
        Object.entries(process.env).filter(([key]) => !key.startsWith("PI_TEAMS_") && key !== "COLUMNS"),
      );
      const child: ChildProcess = spawn("script", ["-qfec", command, "/dev/null"], {
        env: { ...env, TERM: "xterm", NO_COLOR: "1", SHELL: "/bin/sh" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let output = "";
      child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
      const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
      try {
        await waitUntil("the running line", () => /running on_idle\.sh… [12]s/.test(output), {
          timeoutMs: 20_000,
          context: () => JSON.stringify(output),
        });
        await writeFile(go, "");
        expect(await closed).toBe(0);
      } finally {
        if (child.exitCode === null) child.kill("SIGKILL");
      }
      expect(output.startsWith("\r\u001b[2Krunning on_idle.sh… 1s")).toBe(true);
      // Cleared, then the report alone on its line.
      expect(output).toMatch(/\r\u001b\[2Kidle on_idle\.sh passed in \d+\.\ds \(run [0-9a-f]{8}\)\r\n$/);
    },
  );
});

describe("a hook's output cannot drive the terminal", () => {
  it("C1 controls (U+009B, a one-character CSI) and whole OSC sequences are dropped from run, logs and logs show", async () => {
    const team = await rig.team({ tasks: [makeTask({ id: "1", status: "completed", owner: "ada" })] });
    // stderr: A, an OSC title, B, a C1 CSI that clears the screen, C; stdout: the same C1 CSI.
    await rig.hook(
      team,
      "on_task_completed.sh",
      `printf 'A\\033]0;pwned\\007B\\302\\2332JC\\n' >&2; printf 'out\\302\\2332J\\n'; exit 1`,
    );
    const run = await bin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1"]);
    expect(run.code).toBe(1);
    const list = await bin(["logs", "--team-dir", team.teamDir], { COLUMNS: "200" });
    const show = await bin(["logs", "show", "last", "--team-dir", team.teamDir]);
    for (const out of [run.stdout, list.stdout, show.stdout]) {
      expect(out).toContain("ABC");
      expect(out).not.toMatch(/[\u0080-\u009f\u001b]|pwned/);
    }
    expect(show.stdout).toMatch(/out$/m);
  });
});
