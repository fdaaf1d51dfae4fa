/**
 * A leader's sandboxed gate starts from a process that waited for its run inside the gate's view
 * (runner/standby.ts): the gate is the same as without it (what it can write, its environment, its
 * stdin), a view that changed since is built again, and nothing of it outlives the leader.
 */
import { mkdir, open, readFile, rename, rm, symlink, utimes, writeFile } from "node:fs/promises";
import { existsSync, mkdtempSync, readFileSync, readdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, it, type TestContext } from "vitest";
import {
  completeTasks,
  readLogs,
  useLeaderRig,
  waitUntil,
  type LeaderProcess,
  saidLines,
} from "../helpers/leader-rig.js";
import { standbysOf, aStandby } from "../helpers/standbys.js";
import { makeTask } from "../helpers/temp-team.js";
import { runsRoot } from "../../extensions/teams-hooks/runner/run-dir.js";

const outerRig = useLeaderRig();

/**
 * A process as `pid start-time` (/proc/<pid>/stat's 22nd field): pids come round again quickly under a
 * whole suite (pid_max 32768 here), a pid and its start time do not.
 */
const PROCESS_ID_SH = `$$ $(cut -d')' -f2- /proc/$$/stat | cut -d' ' -f21)`;

/** A folder of links to every command of the system's folders but `name`: a PATH that lacks it. */
async function binWithout(name: string, context: { onTestFinished(fn: () => unknown): void }): Promise<string> {
  const bin = mkdtempSync(path.join(os.tmpdir(), "standby-bin-"));
  context.onTestFinished(() => rm(bin, { recursive: true, force: true }));
  for (const dir of ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]) {
    for (const entry of existsSync(dir) ? readdirSync(dir) : []) {
      if (entry !== name && !existsSync(path.join(bin, entry)))
        await symlink(path.join(dir, entry), path.join(bin, entry));
    }
  }
  return bin;
}

const GATE = [
  "# pi-teams-hooks: env=SANDBOX_DECLARED_VAR",
  `try() { if ( eval "$2" ) >/dev/null 2>&1; then echo "$1=written"; else echo "$1=refused"; fi; }`,
  `try hook-state 'echo x > "$PI_TEAMS_TEAM_DIR/hook-state/planted"'`,
  `try gate 'echo "exit 0" >> "$PI_TEAMS_HOOK_PATH"'`,
  `try own-copy 'echo "exit 0" >> "$0"'`,
  `try remount 'mount -o remount,rw /'`,
  `try userns 'unshare --user true'`,
  `try cwd 'echo x > "./written-in-cwd-$PI_TEAMS_TASK_ID"'`,
  `try tmp 'echo x > /tmp/written-in-tmp'`,
  `echo "pid=$$"`,
  // Every variable's name, and the values that are not the event's own.
  `echo "names=$(env | grep -o '^[A-Za-z_][A-Za-z0-9_]*=' | tr -d '=' | sort | tr '\\n' ' ')"`,
  `echo "path=$PATH" && echo "home=$HOME" && echo "tmpdir=$TMPDIR" && echo "declared=\${SANDBOX_DECLARED_VAR:-unset}"`,
  `echo "leader-var=\${SANDBOX_LEADER_VAR:-unset}"`,
  // coreutils only (no cmp, no sed): what a minimal PATH has.
  `[ "$(sha256sum | cut -d' ' -f1)" = "$(sha256sum < "$PI_TEAMS_HOOK_CONTEXT_FILE" | cut -d' ' -f1)" ] && same=the-context || same=other`,
  `echo "stdin=$same $(wc -c < "$PI_TEAMS_HOOK_CONTEXT_FILE")"`,
  `echo "capabilities=$(grep CapEff /proc/self/status | tr -d ' \\t')"`,
  `echo "no-new-privs=$(grep NoNewPrivs /proc/self/status | tr -d ' \\t')"`,
  `echo "fd3=$( [ -e /proc/self/fd/3 ] && echo open || echo closed)"`,
  `echo "runs-seen=$(ls -A "$(dirname "$(dirname "$PI_TEAMS_HOOK_CONTEXT_FILE")")" | wc -l)"`,
].join("\n");

/** What a process of a gate's, left behind, writes into the result file of the gate's next run. */
const PLANTED = `{"decision":"allow","reason":"planted by an earlier run"}`;

/**
 * Processes a run's end cannot see in /proc, each started by a run's gate with the run's result file (`$1`), its
 * environment file (`$2`: there while a run of the view is under way) and a file that ends it (`$3`). Each waits
 * for the run's files to go (the run is over) and for the next run's, then writes that run's verdict.
 */
const HIDERS = {
  // A chain of processes each of which forks the next and exits (dash subshells): the process a look lists is gone
  // at its turn, and its child is not listed. `$5` is its folder (the gate's working directory); it hops from the
  // moment the gate is about to exit (`hop-now` there) until the run's files are gone.
  "forks on and on": `
h() {
  [ -e "$3" ] && exit 0
  n=$((n+1)); [ "$n" -gt 1500 ] && exit 0
  if [ -e "$2" ]; then
    if [ $((n % 200)) = 0 ]; then ( exec /bin/sh -c "$0" "$0" "$1" "$2" "$3" "$n" "$5" pi-teams-test-hider ) & exit 0; fi
    ( h "$@" ) & exit 0
  fi
  i=0
  while [ ! -e "$3" ] && [ "$i" -lt 2000 ]; do
    i=$((i+1))
    if [ -e "$2" ] && [ ! -s "$1" ]; then printf '%s' '${PLANTED}' > "$1"; exit 0; fi
    sleep 0.005
  done
}
n=$4
if [ "$n" = 0 ]; then while [ ! -e "$5/hop-now" ] && [ ! -e "$3" ]; do sleep 0.01; done; fi
h "$@"`,
  // A process whose first thread ends (the raw exit call) while another goes on: /proc/<pid>/root then reads
  // nothing. It says it is there with `hidden` in the working directory.
  "lost its first thread": `
import ctypes, os, sys, threading, time
result, env, stop = sys.argv[1:4]
if os.fork():
    os._exit(0)
os.setsid()
def plant():
    time.sleep(0.2)
    open("hidden", "w").close()
    over, deadline = False, time.time() + 20
    while time.time() < deadline and not os.path.exists(stop):
        if not over:
            over = not os.path.exists(env)
        elif os.path.exists(env) and os.path.getsize(result) == 0:
            open(result, "w").write('${PLANTED}')
            break
        time.sleep(0.002)
    os._exit(0)
threading.Thread(target=plant).start()
ctypes.CDLL(None).syscall(60, 0)
`,
};

/**
 * A process of a run's whose pid lies before every pid the run's standby was given, with the kernel's turn of pids
 * back after them by the run's end, and the kernel's count of processes made (`processes` in /proc/stat) moved by
 * a handful: a `clone` asking for a pidfd (CLONE_PIDFD) with the descriptor table full takes a pid from the turn and
 * fails (EMFILE), and no process is counted. Started by the gate as `perl hider <result> <env> <stop> <gate pid>`
 * with a small descriptor limit (`ulimit -n`), and PLANTED in its environment; writes the verdict of the next run.
 */
const TURN_HIDER = `
use POSIX ();
my ($result, $env, $stop, $gate) = @ARGV;
my $max = do { open(my $f, "<", "/proc/sys/kernel/pid_max") or die; my $l = <$f>; $l + 0 };
my @fh;
while (open(my $f, "<", "/dev/null")) { push @fh, $f }
sub last_pid {
  close(pop @fh);
  open(my $f, "<", "/proc/sys/kernel/ns_last_pid") or die "ns_last_pid: $!";
  my $l = <$f>; close $f;
  open(my $g, "<", "/dev/null") or die; push @fh, $g;
  $l + 0;
}
my $buf = pack("i", -1);
# clone(CLONE_PIDFD | SIGCHLD): x86_64's syscall 56, arm64's 220.
my $clone = (POSIX::uname())[4] eq "aarch64" ? 220 : 56;
sub spin {
  for (1 .. shift) {
    my $r = syscall($clone, 0x1000 | 17, 0, $buf, 0, 0);
    exit 0 if $r == 0;
    waitpid($r, 0) if $r > 0;
  }
}
# How many steps of the turn from pid $a to pid $b (past pid_max it goes on at 300).
sub steps { my ($a, $b) = @_; $b >= $a ? $b - $a : ($max - $a) + ($b - 300) }
sub go_to {
  my ($lo, $hi) = @_;
  for (1 .. 1000) {
    my $now = last_pid();
    return $now if steps($lo, $now) <= steps($lo, $hi);
    # Half the way at a time: processes made meanwhile move the turn on too.
    my $d = steps($now, $lo);
    spin($d > 40 ? int($d / 2) : 1);
  }
  die "the turn did not come to $lo..$hi";
}
# The pid $n steps of the turn from pid $p ($n < 0: before it).
sub at { my ($p, $n) = @_; 300 + ($p - 300 + $n) % ($max - 300) }
go_to(at($gate, -120), at($gate, -60));
my $pid = fork();
if ($pid == 0) {
  close $_ for @fh;
  POSIX::setsid();
  open(my $said, ">", "pid-of-turn-hider"); print $said "$$"; close $said;
  my ($over, $deadline) = (0, time + 20);
  while (time < $deadline && !-e $stop) {
    if (!$over) { $over = !-e $env }
    elsif (-e $env && -z $result) { open(my $f, ">", $result) or exit 0; print $f $ENV{PLANTED}; close $f; exit 0 }
    select(undef, undef, undef, 0.002);
  }
  exit 0;
}
go_to(at($gate, 1), at($gate, 100));
`;

/** Whether the kernel's turn of pids is short enough (pid_max) for TURN_HIDER to bring it round within a test. */
function shortPidTurn(): boolean {
  return Number(readFileSync("/proc/sys/kernel/pid_max", "utf8")) <= 65_536;
}

/** The command line of a gate that starts a hider of HIDERS, from its file in the working directory. */
const START_HIDER = {
  "forks on and on": `setsid -f env -i /bin/sh -c "$(cat hider)" "$(cat hider)" "$r" "$e" "$PWD/stop" 0 "$PWD" pi-teams-test-hider </dev/null >/dev/null 2>&1; sleep 0.2; touch hop-now; sleep 0.05`,
  "lost its first thread": `setsid -f env -i /usr/bin/python3 hider "$r" "$e" "$PWD/stop" pi-teams-test-hider </dev/null >/dev/null 2>&1; while [ ! -e hidden ]; do sleep 0.02; done; sleep 0.1`,
};

/** Pids of the live processes whose command line holds `marker`. */
function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, "utf8").includes(marker)) found.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/**
 * Four runs of one gate, each from its last run's standby but the first: the third starts `hider` (its file in
 * the working directory) with `startLine` and passes, leaving it behind with `r` (the result file) and `e` (the
 * run's env.sh) to watch; the fourth fails (its tests do), so a verdict the hider plants would pass it. The hider
 * is stopped (a `stop` file), or killed by `marker` in its command line, when the test ends.
 */
async function aHiderRun(
  context: TestContext,
  hider: string,
  marker: string,
  startLine: string,
): Promise<{ runs: Awaited<ReturnType<typeof readLogs>>; leader: LeaderProcess; cwd: string }> {
  const rig = outerRig.scoped(context);
  const ids = ["1", "2", "3", "4"];
  const team = await rig.team({ tasks: ids.map((id) => makeTask({ id, owner: "alice", status: "in_progress" })) });
  const cwd = team.teamsRoot;
  await writeFile(path.join(cwd, "hider"), hider);
  // Whatever happens, the hider ends with the test (it ends by itself too, within 20 s).
  context.onTestFinished(async () => {
    await writeFile(path.join(cwd, "stop"), "");
    await waitUntil("the hider's end", () => processesWith(marker).length === 0, { timeoutMs: 5_000 }).catch(() => {
      for (const pid of processesWith(marker)) process.kill(pid, "SIGKILL");
    });
  });
  await rig.hook(
    team,
    "on_task_completed.sh",
    [
      // A standby's result file is in its own folder (out/), the run's files (env.sh) in the one above it.
      `r=$PI_TEAMS_HOOK_RESULT_FILE; e=$(dirname "$(dirname "$r")")/env.sh`,
      `if [ "$PI_TEAMS_TASK_ID" = 3 ]; then ${startLine}; exit 0; fi`,
      `if [ "$PI_TEAMS_TASK_ID" = 4 ]; then sleep 1; echo "the tests fail" >&2; exit 1; fi`,
    ].join("\n"),
  );
  const leader = await rig.leader(team);
  for (const [n, id] of ids.entries()) {
    // From the second on, each run starts from the standby its gate's last run left (in the view it kept).
    if (n >= 1) await aStandby(leader);
    await completeTasks(team, [id]);
    await leader.waitForEvents(n + 1);
  }
  const runs = (await readLogs(team.teamDir)).sort((a, b) => a.startedAt.localeCompare(b.startedAt));
  return { runs, leader, cwd };
}

describe.concurrent("a sandboxed gate started from its standby", () => {
  it("is the gate a run without one starts (what it may write, its environment, its stdin), and nothing of it outlives the leader", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: ["1", "2", "3"].map((id) => makeTask({ id, owner: "alice", status: "in_progress" })),
    });
    await mkdir(path.join(team.teamDir, "hook-state"), { recursive: true });
    const gate = await rig.hook(team, "on_task_completed.sh", GATE);
    const gateText = await readFile(gate, "utf8");
    const leader = await rig.leader(team, [], { env: { SANDBOX_LEADER_VAR: "leaked", SANDBOX_DECLARED_VAR: "given" } });

    // The first run's standby was built before its log made hook-logs/ (a view that protects it now): not used.
    for (const [n, id] of ["1", "2"].entries()) {
      await completeTasks(team, [id]);
      await leader.waitForEvents(n + 1);
    }
    // The next run's process waits already, a child of the leader's, before the next completion is written.
    const [waiting] = await aStandby(leader);
    await completeTasks(team, ["3"]);
    await leader.waitForEvents(3);

    const runs = (await readLogs(team.teamDir)).sort((a, b) => a.startedAt.localeCompare(b.startedAt));
    expect(runs.map((r) => r.result.outcome)).toEqual(["passed", "passed", "passed"]);
    const [first, , second] = runs.map((r) => saidLines(r.result.stdout));
    if (!first || !second || !waiting) throw new Error("two runs and a standby expected");
    expect(second.get("pid")).toBe(String(waiting.pid));
    expect(first.get("pid")).not.toBe(String(waiting.pid));
    const same = {
      "hook-state": "refused",
      gate: "refused",
      "own-copy": "refused",
      remount: "refused",
      userns: "refused",
      cwd: "written",
      tmp: "written",
      declared: "given",
      "leader-var": "unset",
      tmpdir: "/tmp",
      capabilities: "CapEff:0000000000000000",
      // Every gate starts through setpriv --no-new-privs: a program's file capabilities give it none.
      "no-new-privs": "NoNewPrivs:1",
      fd3: "closed",
      "runs-seen": "1",
    };
    expect(Object.fromEntries(first)).toMatchObject(same);
    expect(Object.fromEntries(second)).toMatchObject(same);
    for (const run of [first, second]) expect(run.get("stdin")).toMatch(/^the-context [1-9]\d{2,}$/);
    for (const name of ["names", "path", "home"]) expect(second.get(name), name).toBe(first.get(name));
    expect(await readFile(gate, "utf8")).toBe(gateText);
    expect(existsSync(path.join(team.teamsRoot, "written-in-cwd-3"))).toBe(true);
    expect(existsSync(path.join(team.teamDir, "hook-state", "planted"))).toBe(false);

    // The one left for a third run ends with the leader, its folder with it.
    const [left] = await waitUntil("the standby left for a next run", () => {
      const found = standbysOf(leader);
      return found.length > 0 ? found : false;
    });
    if (!left) throw new Error("a standby expected");
    expect(existsSync(left.runDir)).toBe(true);
    await leader.stop();
    expect(existsSync(`/proc/${left.pid}`)).toBe(false);
    expect(existsSync(left.runDir)).toBe(false);
  });

  it("keeps its view for the gate's next run when a run left nothing in it, and builds a new one after a run that did", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const ids = ["1", "2", "3", "4", "5", "6"];
    const team = await rig.team({ tasks: ids.map((id) => makeTask({ id, owner: "alice", status: "in_progress" })) });
    await mkdir(path.join(team.teamDir, "hook-state"), { recursive: true });
    await rig.hook(
      team,
      "on_task_completed.sh",
      [
        `try() { if ( eval "$2" ) >/dev/null 2>&1; then echo "$1=written"; else echo "$1=refused"; fi; }`,
        `echo "result-at-start=$(wc -c < "$PI_TEAMS_HOOK_RESULT_FILE")"`,
        `try hook-state 'echo x > "$PI_TEAMS_TEAM_DIR/hook-state/planted"'`,
        `try remount 'mount -o remount,rw /'`,
        `try userns 'unshare --user true'`,
        `echo "pid=$$"`,
        // The view's own /tmp, by the time its tmpfs was made: a namespace's number is reused once it ends, this is not.
        `echo "view=$(stat -c %w /tmp)"`,
        `echo "tmp=$(ls -A /tmp /dev/shm | tr '\\n' ' ')"`,
        `echo "tmp-modes=$(stat -c %a /tmp /dev/shm | tr '\\n' ' ')"`,
        `echo "no-new-privs=$(grep NoNewPrivs /proc/self/status | tr -d ' \\t')"`,
        `echo "run-files=$(ls -A "$(dirname "$PI_TEAMS_HOOK_CONTEXT_FILE")" | tr '\\n' ' ')"`,
        `echo "capabilities=$(grep CapEff /proc/self/status | tr -d ' \\t')"`,
        `for fd in 3 4 5 6; do [ -e "/proc/$$/fd/$fd" ] && echo "open-fd=$fd"; done`,
        // The fourth leaves a file in /tmp, and a process that would write a result into the next runs' file.
        `if [ "$PI_TEAMS_TASK_ID" = 4 ]; then echo x > /tmp/left-by-4; (setsid sh -c 'sleep 0.3; while :; do echo x > "$PI_TEAMS_HOOK_RESULT_FILE"; sleep 0.01; done' >/dev/null 2>&1 &); fi`,
        "exit 0",
      ].join("\n"),
    );
    const leader = await rig.leader(team);
    const pids: string[] = [];
    for (const [n, id] of ids.entries()) {
      // From the second on, each run starts from the standby its gate's last run left.
      if (n >= 1) {
        const [waiting] = await aStandby(leader);
        pids.push(String(waiting?.pid));
      }
      await completeTasks(team, [id]);
      await leader.waitForEvents(n + 1);
    }
    const runs = (await readLogs(team.teamDir)).sort((a, b) => a.startedAt.localeCompare(b.startedAt));
    expect(runs.map((r) => r.result.outcome)).toEqual(ids.map(() => "passed"));
    const told = runs.map((r) => saidLines(r.result.stdout));
    expect(told.slice(1).map((run) => run.get("pid"))).toEqual(pids);
    const view = told.map((run) => run.get("view"));
    // The first standby's view serves the second, third and fourth runs (each left it clean); the fifth has a new
    // one (the fourth left a file), which serves the sixth.
    expect(view.slice(1, 4)).toEqual([view[1], view[1], view[1]]);
    expect(view[0]).not.toBe(view[1]);
    expect(view[4]).not.toBe(view[3]);
    expect(view[5]).toBe(view[4]);
    for (const [n, run] of told.entries()) {
      expect(Object.fromEntries(run)).toMatchObject({
        "result-at-start": "0",
        "hook-state": "refused",
        remount: "refused",
        userns: "refused",
        capabilities: "CapEff:0000000000000000",
        // The gate's own: a folder of them handed to another user's process lets it make nothing there.
        "tmp-modes": "700 700 ",
        "no-new-privs": "NoNewPrivs:1",
      });
      expect(run.has("open-fd")).toBe(false);
      expect(run.get("tmp")).not.toContain("left-by-4");
      // Only the run's own files, the same in each run from a standby: nothing of a run before it.
      if (n > 0) expect(run.get("run-files")).toBe(told[1]?.get("run-files"));
    }
    expect(told[1]?.get("run-files")).toMatch(
      /^context\.json env\.sh fstab fstab\.after fstab\.failed fstab\.ro fstab\.rw on_task_completed\.sh out root $/,
    );
    expect(existsSync(path.join(team.teamDir, "hook-state", "planted"))).toBe(false);
    // The fourth's process was ended with its run, not left to write.
    expect(runs[3]?.result.leftoverProcesses).toBeGreaterThan(0);
    await leader.stop();
  });

  it("gives each run of a view a result file of its own: one kept open by a process outside writes no later run's verdict", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: ["1", "2", "3"].map((id) => makeTask({ id, owner: "alice", status: "in_progress" })),
      config: { hooks: { failureAction: "warn" } },
    });
    // Each run says where its result file is, then fails once the test lets it end (a file in its working directory).
    await rig.hook(
      team,
      "on_task_completed.sh",
      [
        `echo "$PI_TEAMS_HOOK_RESULT_FILE" > "result-path-$PI_TEAMS_TASK_ID"`,
        `echo "view=$(stat -c %w /tmp)"`,
        `while [ ! -e "release-$PI_TEAMS_TASK_ID" ]; do sleep 0.05; done`,
        `echo "FAIL: not done"`,
        "exit 1",
      ].join("\n"),
    );
    const cwd = team.teamsRoot;
    await writeFile(path.join(cwd, "release-1"), "");
    const leader = await rig.leader(team);
    const startedWith = (id: string): Promise<string> =>
      waitUntil(`run ${id} started`, () => {
        const file = path.join(cwd, `result-path-${id}`);
        const said = existsSync(file) ? readFileSync(file, "utf8").trim() : "";
        return said === "" ? false : said;
      });
    await completeTasks(team, ["1"]);
    await leader.waitForEvents(1);
    await aStandby(leader);
    await completeTasks(team, ["2"]);
    // Another process of the leader's user (or one a gate handed the open file to) keeps the second run's file open.
    const kept = await open(await startedWith("2"), "r+");
    try {
      await writeFile(path.join(cwd, "release-2"), "");
      await leader.waitForEvents(2);
      await aStandby(leader);
      await completeTasks(team, ["3"]);
      await startedWith("3");
      await kept.write('{"decision":"allow"}', 0);
      await writeFile(path.join(cwd, "release-3"), "");
      await leader.waitForEvents(3);
    } finally {
      await kept.close();
    }
    const runs = (await readLogs(team.teamDir)).sort((a, b) => a.startedAt.localeCompare(b.startedAt));
    expect(runs.map((r) => r.result.outcome)).toEqual(["failed", "failed", "failed"]);
    // The third ran in the second's view, at the same path: a new file there, not the one kept open.
    const [, second, third] = runs.map((r) => saidLines(r.result.stdout).get("view"));
    expect(third).toBe(second);
    expect(readFileSync(path.join(cwd, "result-path-3"), "utf8")).toBe(
      readFileSync(path.join(cwd, "result-path-2"), "utf8"),
    );
    await leader.stop();
  });

  it("is not used when the view it built is no longer the gate's: a sandbox-write= folder replaced since is the one written", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: ["1", "2", "3"].map((id) => makeTask({ id, owner: "alice", status: "in_progress" })),
    });
    const reports = path.join(team.teamDir, "reports");
    await mkdir(reports);
    await rig.hook(
      team,
      "on_task_completed.sh",
      [
        "# pi-teams-hooks: sandbox-write=$PI_TEAMS_TEAM_DIR/reports",
        `echo "${PROCESS_ID_SH}" > "$PI_TEAMS_TEAM_DIR/reports/$PI_TEAMS_TASK_ID"`,
      ].join("\n"),
    );
    const leader = await rig.leader(team);
    for (const [n, id] of ["1", "2"].entries()) {
      await completeTasks(team, [id]);
      await leader.waitForEvents(n + 1);
    }
    const [waiting] = await aStandby(leader);
    if (!waiting) throw new Error("a standby expected");
    // The folder replaced by another in one step (a rename over it), as a checkout or a tool replaces one.
    await mkdir(`${reports}.new`);
    await rename(reports, `${reports}.old`);
    await rename(`${reports}.new`, reports);
    await completeTasks(team, ["3"]);
    const [, , third] = await leader.waitForEvents(3);
    expect(third?.outcome).toBe("passed");
    expect((await readFile(path.join(reports, "3"), "utf8")).trim()).not.toBe(waiting.id);
    expect(existsSync(path.join(`${reports}.old`, "3"))).toBe(false);
    // The standby that no longer fitted was ended, its folder removed.
    await waitUntil(
      "the unfit standby ended",
      () => !existsSync(`/proc/${waiting.pid}`) && !existsSync(waiting.runDir),
    );
  });

  it("is started for the next run while a gate still runs once an event waits, and that run starts from it", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({
      tasks: ["1", "2", "3"].map((id) => makeTask({ id, owner: "alice", status: "in_progress" })),
    });
    // Each run says which process it is, then waits until the test lets it end (a file in its working directory).
    await rig.hook(
      team,
      "on_task_completed.sh",
      [
        `echo "${PROCESS_ID_SH}" > "started-$PI_TEAMS_TASK_ID"`,
        `while [ ! -e "release-$PI_TEAMS_TASK_ID" ]; do sleep 0.05; done`,
      ].join("\n"),
    );
    const cwd = team.teamsRoot;
    await writeFile(path.join(cwd, "release-1"), "");
    const leader = await rig.leader(team);
    // A first run, so that the views built after it are the gate's for good (hook-logs/ is there).
    await completeTasks(team, ["1"]);
    await leader.waitForEvents(1);
    await completeTasks(team, ["2"]);
    let waiting: { pid: number; id: string } | undefined;
    try {
      await waitUntil("the second gate running", () => existsSync(path.join(cwd, "started-2")));
      // Nothing waited as it started: no standby yet.
      expect(standbysOf(leader)).toEqual([]);
      // An event queued while it runs: the next run's view is built meanwhile.
      await completeTasks(team, ["3"]);
      [waiting] = await waitUntil("a standby started while the second gate runs", () => {
        const found = standbysOf(leader);
        return found.length > 0 ? found : false;
      });
      expect(existsSync(path.join(cwd, "started-3"))).toBe(false);
    } finally {
      // The gates end whatever was found.
      await writeFile(path.join(cwd, "release-3"), "");
      await writeFile(path.join(cwd, "release-2"), "");
    }
    if (!waiting) throw new Error("a standby expected");
    const events = await leader.waitForEvents(3);
    expect(events.map((e) => e.outcome)).toEqual(["passed", "passed", "passed"]);
    expect((await readFile(path.join(cwd, "started-3"), "utf8")).trim()).toBe(waiting.id);
    await leader.stop();
  });

  for (const [way, hider] of Object.entries(HIDERS) as Array<[keyof typeof HIDERS, string]>) {
    it.skipIf(way === "lost its first thread" && !existsSync("/usr/bin/python3"))(
      `keeps no view with a process of a run's left in it that a look at /proc misses (one that ${way}): it cannot write the verdict of the gate's next run`,
      async (context) => {
        const { expect } = context;
        const { runs, leader } = await aHiderRun(context, hider, "pi-teams-test-hider", START_HIDER[way]);
        expect(runs.map((r) => r.result.outcome)).toEqual(["passed", "passed", "passed", "failed"]);
        expect(runs[3]?.result.verdict).toBeUndefined();
        expect(runs[3]?.result.stderr).toContain("the tests fail");
        await leader.stop();
      },
    );
  }

  // The hider brings the turn of pids round once, about 10,000 steps a second here: a kernel with a pid_max of
  // millions (systemd sets 4,194,304) would take minutes, so the test runs where the turn is short.
  it.skipIf(!existsSync("/usr/bin/perl") || !["x64", "arm64"].includes(process.arch) || !shortPidTurn())(
    "keeps no view with a process of a run's left in it whose pid lies before the run's first, the pid turn having come round by pids given to no process: it cannot write the verdict of the gate's next run",
    async (context) => {
      const { expect } = context;
      const { runs, leader, cwd } = await aHiderRun(
        context,
        TURN_HIDER,
        "pi-teams-test-turn-hider",
        `echo "gate=$$"; ( ulimit -n 64; PLANTED='${PLANTED}' exec /usr/bin/perl hider "$r" "$e" "$PWD/stop" $$ pi-teams-test-turn-hider </dev/null >/dev/null 2>&1 )`,
      );
      // The hider was there, with a pid a few steps of the turn before the third gate's (its standby's).
      const hider = Number(readFileSync(path.join(cwd, "pid-of-turn-hider"), "utf8"));
      const gatePid = Number(saidLines(runs[2]?.result.stdout ?? "").get("gate"));
      const pidMax = Number(readFileSync("/proc/sys/kernel/pid_max", "utf8"));
      expect((gatePid - hider + pidMax - 300) % (pidMax - 300)).toBeGreaterThan(50);
      expect((gatePid - hider + pidMax - 300) % (pidMax - 300)).toBeLessThan(200);
      expect(runs.map((r) => r.result.outcome)).toEqual(["passed", "passed", "passed", "failed"]);
      expect(runs[3]?.result.verdict).toBeUndefined();
      expect(runs[3]?.result.stderr).toContain("the tests fail");
      // It was found at the third run's end, and ended.
      expect(runs[2]?.result.leftoverProcesses).toBeGreaterThan(0);
      await leader.stop();
    },
  );

  it.for([
    ["unshare", "util-linux's"],
    ["mount", "util-linux's"],
    ["setpriv", "util-linux's"],
    ["stat", "coreutils'"],
    ["readlink", "coreutils'"],
    ["mkdir", "coreutils'"],
  ] as const)(
    "never looks for %s from the gate's working directory: a leader whose PATH has none but ends with ':' says its gates are not sandboxed, and a file of that name there never runs",
    async ([tool, source], context) => {
      const { expect } = context;
      const rig = outerRig.scoped(context);
      const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
      const bin = await binWithout(tool, context);
      const ran = path.join(team.teamDir, `${tool}-ran`);
      await writeFile(path.join(team.teamsRoot, tool), `#!/bin/sh\necho "$(id -u)" > "${ran}"\n`, { mode: 0o755 });
      await rig.hook(team, "on_task_completed.sh", "exit 0");
      const leader = await rig.leader(team, [], { env: { PATH: `${bin}:` } });
      await completeTasks(team, ["1"]);
      await leader.waitForEvents(1);
      const [log] = await readLogs(team.teamDir);
      expect(log?.result).toMatchObject({ outcome: "passed", sandbox: "unavailable" });
      await leader.stop();
      expect(leader.stderr).toContain(`gates are NOT sandboxed on this machine: ${source} ${tool} is not installed`);
      expect(existsSync(ran)).toBe(false);
    },
  );

  it("never looks for nsenter from the gate's working directory: a leader with no nsenter in PATH, whose PATH ends with ':' (the working directory), builds each view, and a file of that name there never runs", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const ids = ["1", "2", "3"];
    const team = await rig.team({ tasks: ids.map((id) => makeTask({ id, owner: "alice", status: "in_progress" })) });
    // A PATH with every command of the system's folders but nsenter, and an empty folder at its end.
    const bin = await binWithout("nsenter", context);
    // What an agent may write into the working directory: an `nsenter` that says it ran.
    const ran = path.join(team.teamDir, "nsenter-ran");
    // It goes on as the real one (where there is one), so that a leader that ran it would go on as if nothing happened.
    const real = ["/usr/bin/nsenter", "/bin/nsenter", "/usr/sbin/nsenter"].find((file) => existsSync(file));
    const then = real ? `exec ${real} "$@"` : "exit 1";
    await writeFile(path.join(team.teamsRoot, "nsenter"), `#!/bin/sh\necho "$(id -u)" > "${ran}"\n${then}\n`, {
      mode: 0o755,
    });
    await rig.hook(team, "on_task_completed.sh", `echo "view=$(stat -c %w /tmp)"`);
    const leader = await rig.leader(team, [], { env: { PATH: `${bin}:` } });
    for (const [n, id] of ids.entries()) {
      if (n >= 1) await aStandby(leader);
      await completeTasks(team, [id]);
      await leader.waitForEvents(n + 1);
    }
    const runs = (await readLogs(team.teamDir)).sort((a, b) => a.startedAt.localeCompare(b.startedAt));
    expect(runs.map((r) => r.result.outcome)).toEqual(["passed", "passed", "passed"]);
    // Each run in a view of its own: none was kept, since none could be entered safely.
    expect(new Set(runs.map((r) => saidLines(r.result.stdout).get("view"))).size).toBe(3);
    expect(existsSync(ran)).toBe(false);
    await leader.stop();
  });

  it("of a leader that ran many gates leaves no run's folder behind, while it runs and once stopped", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const ids = Array.from({ length: 24 }, (_, i) => String(i + 1));
    const team = await rig.team({ tasks: ids.map((id) => makeTask({ id, owner: "alice", status: "in_progress" })) });
    await rig.hook(team, "on_task_completed.sh", "exit 0");
    // A runs folder of this leader's own: the other tests of this file run at the same time, each leader with
    // a standby of its own in the shared one.
    const runtime = mkdtempSync(path.join(os.tmpdir(), "standby-runs-"));
    context.onTestFinished(() => rm(runtime, { recursive: true, force: true }));
    const env = { XDG_RUNTIME_DIR: runtime };
    const standbyFolders = (): string[] =>
      readdirSync(runsRoot({ ...process.env, ...env })).filter((name) => name.startsWith("standby."));
    const leader = await rig.leader(team, [], { env });
    // One at a time: each run after the first starts from a standby, whose folder is removed once the run ends
    // (past the first few, on a thread of the leader's own).
    for (const [i, id] of ids.entries()) {
      await completeTasks(team, [id]);
      await leader.waitForEvents(i + 1);
    }
    expect(leader.events().map((e) => e.outcome)).toEqual(ids.map(() => "passed"));
    // The folder of the standby that waits for a next run is the one left while the leader runs.
    await waitUntil("the folders of the runs that ended removed", () => standbyFolders().length === 1);
    expect(await leader.stop()).toMatchObject({ code: 0 });
    expect(standbyFolders()).toEqual([]);
  });

  // A chain's later gates run as `<run id>.2`, `<run id>.3`…: their standby's environment file names that id.
  it.for([
    { gate: "on_task_completed.sh", standbys: 1 },
    { gate: "on_task_completed.d/10-second.sh", standbys: 2 },
  ])(
    "of a leader killed while its gate runs: what the gate left with its environment cleared is ended at the next leader's start ($gate)",
    async ({ gate, standbys }, context) => {
      const { expect } = context;
      const rig = outerRig.scoped(context);
      const team = await rig.team({
        tasks: ["1", "2"].map((id) => makeTask({ id, owner: "alice", status: "in_progress" })),
      });
      // Named by the team's own folder: every test's team is `test-team`, and tests of this file run at once.
      const marker = `pi-teams-test-escapee-${path.basename(team.teamsRoot)}`;
      context.onTestFinished(() => {
        for (const pid of processesWith(marker)) process.kill(pid, "SIGKILL");
      });
      // The second run (from its standby) leaves a process of its own session with nothing of the run's environment,
      // then runs on until its leader is killed; the next leader runs that event again, which then passes.
      if (gate !== "on_task_completed.sh") {
        await rig.hook(team, "on_task_completed.sh", "exit 0");
        await mkdir(path.join(team.teamsRoot, "_hooks", path.dirname(gate)), { recursive: true });
      }
      await rig.hook(
        team,
        gate,
        [
          `if [ "$PI_TEAMS_TASK_ID" = 2 ] && mkdir "left-$PI_TEAMS_TASK_ID" 2>/dev/null; then`,
          `  setsid -f env -i /bin/sh -c 'sleep 600; :' ${marker} </dev/null >/dev/null 2>&1; sleep 600`,
          "fi",
          "exit 0",
        ].join("\n"),
      );
      const leader = await rig.leader(team);
      await completeTasks(team, ["1"]);
      await leader.waitForEvents(1);
      await waitUntil("a standby for each gate", () => standbysOf(leader).length >= standbys);
      await completeTasks(team, ["2"]);
      await waitUntil("the gate's process left behind", () => processesWith(marker).length > 0);
      await leader.kill();
      const next = await rig.leader(team);
      await next.waitFor("what the killed leader's gate left, ended", () => processesWith(marker).length === 0);
      expect(next.warnings().join("\n")).toMatch(
        /ended [1-9]\d* process\(es\) left by an interrupted run of task_completed:2:/,
      );
      await next.waitForEvents(1);
      expect((await readLogs(team.teamDir)).map((log) => log.result.outcome)).toContain("passed");
      await next.stop();
    },
  );

  it("of a leader killed while it waits ends by itself without starting anything, and the next leader removes its folder", async (context) => {
    const { expect } = context;
    const rig = outerRig.scoped(context);
    const team = await rig.team({ tasks: [makeTask({ id: "1", owner: "alice", status: "in_progress" })] });
    await rig.hook(team, "on_task_completed.sh", `echo ran >> "$PI_TEAMS_TEAM_ID.runs"`);
    const leader = await rig.leader(team);
    await completeTasks(team, ["1"]);
    await leader.waitForEvents(1);
    const [waiting] = await aStandby(leader);
    if (!waiting) throw new Error("a standby expected");
    await leader.kill();
    // The end of its pipe: it exits, and the gate never starts.
    await waitUntil("the standby's exit", () => !existsSync(`/proc/${waiting.pid}`));
    expect((await readFile(path.join(team.teamsRoot, `${team.teamId}.runs`), "utf8")).trim().split("\n")).toHaveLength(
      1,
    );
    expect(existsSync(waiting.runDir)).toBe(true);
    // Left long enough ago (a live leader's standby always has its process in it): the next start removes it.
    const old = new Date(Date.now() - 60_000);
    await utimes(waiting.runDir, old, old);
    const next = await rig.leader(team);
    await next.waitFor("the folder removed", () => !existsSync(waiting.runDir));
    await next.stop();
  });
});
