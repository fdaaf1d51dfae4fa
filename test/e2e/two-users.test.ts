/**
 * A leader under its own Unix user, with real users (docs/security.md, "A leader under its own
 * user"): as root, the test creates a group and two users named for this run, lays out a teams root
 * with the recipe's script (examples/leader-user/setup.sh init and team), starts the built leader as the leader's user and the plain-JS worker
 * (test/fixtures/workers/team-worker.mjs) as the agents' user, with umask 0002. The team works as
 * under one user (a failing gate reopens the task and makes a follow-up the agent claims and
 * completes; inboxes and the task list are written by both, the watermark in place as pi-agent-teams
 * writes it), and every attempt of the agents' user on a gate, the leader's state or the approved
 * trust record fails with EACCES or EPERM. The example test gate then runs the agents' hostile tests:
 * they reach nothing of the leader's and forge no verdict, nor does one planted in the shared temp dir;
 * and the script's `start` runs the leader in a session of its own, with an environment of its own.
 * Both run from a copy of the build and the worker in the test's temp dir, so that the test passes
 * wherever the repository is cloned (a 0700 folder too).
 *
 * Not root, or no useradd and groupadd on this system: skipped, with the reason in the test's name and on the
 * output.
 * The users, the group and the temp dir are removed after, even when the test fails.
 */
import { type SpawnOptions, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, chown, cp, mkdtemp, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DoctorReport } from "../../extensions/teams-hooks/doctor/diagnose.js";
import { approvedFile } from "../../extensions/teams-hooks/trust/trust-store.js";
import { REPO_ROOT, readLogs, useLeaderRig, waitUntil } from "../helpers/leader-rig.js";
import { reachableTempDir } from "../helpers/reachable-tmp.js";
import type { TempTeam } from "../helpers/temp-team.js";
import { TEST_RUN_ACCOUNTS } from "../helpers/global-setup.js";

const PATH = process.env.PATH ?? "/usr/bin:/bin";
/** The system's user tools, from PATH or where root's PATH has them (a PATH without sbin still finds them). */
const USER_TOOLS = ["groupadd", "useradd", "userdel", "groupdel", "runuser"];
const TOOL_DIRS = [...PATH.split(":"), "/usr/sbin", "/sbin"];
const toolPath = (name: string): string | undefined =>
  TOOL_DIRS.map((dir) => path.join(dir, name)).find((file) => existsSync(file));
const missingTools = USER_TOOLS.filter((name) => toolPath(name) === undefined);

const CAN_MAKE_USERS = process.getuid?.() === 0 && missingTools.length === 0;
const CANNOT_MAKE_USERS =
  process.getuid?.() !== 0
    ? "needs root to create the two users (useradd): skipped, not root"
    : `needs ${missingTools.join(", ")} to create the two users: skipped, not on PATH, /usr/sbin or /sbin`;
if (!CAN_MAKE_USERS) console.log(`test/e2e/two-users.test.ts: ${CANNOT_MAKE_USERS}`);
/**
 * Of this run: two runs on one machine never share a user. The suite's global set-up names it (and checks at the
 * end that no account of that name is left).
 */
const SUFFIX = process.env[TEST_RUN_ACCOUNTS] ?? randomBytes(3).toString("hex");
const NAMES = { group: `ptg${SUFFIX}`, leader: `ptl${SUFFIX}`, agent: `pta${SUFFIX}` };

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (never rejects for its exit code). */
function run(argv: readonly string[], options: SpawnOptions = {}): Promise<Result> {
  const [name = "false", ...args] = argv;
  const command = name.includes("/") ? name : (toolPath(name) ?? name);
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], ...options });
    let stdout = "";
    let stderr = "";
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

async function must(...argv: string[]): Promise<string> {
  const result = await run(argv);
  if (result.code !== 0) throw new Error(`${argv.join(" ")}: exit ${result.code}: ${result.stderr}`);
  return result.stdout;
}

/** `setpriv` runs the command as `user` (its groups from /etc/group) and execs it: the pid stays the command's. */
function asUser(user: string): string[] {
  return ["setpriv", `--reuid=${user}`, `--regid=${user}`, "--init-groups", "--"];
}

/** The same, with a umask: bash sets it and execs the command. */
function asUserWithUmask(user: string, umask: string): string[] {
  return [...asUser(user), "bash", "-c", `umask ${umask} && exec "$@"`, "as-user"];
}

const uidOf = async (user: string): Promise<number> => Number((await must("id", "-u", user)).trim());
/** The line of `name` in /etc/group or /etc/passwd, split at ":" (read there: no `getent` needed). */
async function accountEntry(file: "/etc/group" | "/etc/passwd", name: string): Promise<string[] | undefined> {
  const text = await readFile(file, "utf8");
  return text
    .split("\n")
    .map((line) => line.split(":"))
    .find((fields) => fields[0] === name);
}
const gidOf = async (group: string): Promise<number> => {
  const entry = await accountEntry("/etc/group", group);
  if (entry === undefined) throw new Error(`no group ${group} in /etc/group`);
  return Number(entry[2]);
};
/** The users and groups of this run still in /etc/passwd and /etc/group. */
async function accountsLeft(): Promise<string[]> {
  const left: string[] = [];
  for (const name of Object.values(NAMES)) {
    if (await accountEntry("/etc/passwd", name)) left.push(`user ${name}`);
    if (await accountEntry("/etc/group", name)) left.push(`group ${name}`);
  }
  return left;
}
const sha = async (file: string): Promise<string> =>
  createHash("sha256")
    .update(await readFile(file))
    .digest("hex");
/** A path quoted for bash. */
const q = (file: string): string => `'${file}'`;

// ---------------------------------------------------------------------------------------------
// The users and the layout

interface Setup {
  base: string;
  homes: { leader: string; agent: string };
  teamsRoot: string;
  teamDir: string;
  tasksDir: string;
  globalGate: string;
  teamGate: string;
  /** What the leader's user runs with, besides `asUser`: its home, where the approved trust record goes. */
  leaderEnv: Record<string, string>;
  /** The built bin and the plain-JS worker, copied where both users can read them (`copyBuild`). */
  bin: string;
  worker: string;
  /** The recipe's script, in the copy of the package. */
  recipe: string;
  /** The project the agents write and the gates test: the leader's working directory (group-writable). */
  project: string;
}

let setup: Setup | null = null;
/** The test's temp dir, removed after (also when the set-up failed before `setup` was made). */
let baseDir: string | null = null;
const created = { group: false, leader: false, agent: false };

async function createUsers(homes: { leader: string; agent: string }): Promise<void> {
  await must("groupadd", NAMES.group);
  created.group = true;
  for (const role of ["leader", "agent"] as const) {
    // -U: a group of its own; -G: and the team's; -M: no home made here (the recipe's script makes the leader's).
    await must("useradd", "-M", "-d", homes[role], "-s", "/bin/bash", "-U", "-G", NAMES.group, NAMES[role]);
    created[role] = true;
  }
}

/** Every process of a user of this run (to end before userdel; none should be left). */
async function processesOf(user: string): Promise<number[]> {
  const uid = await uidOf(user);
  const pids: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const status = await readFile(`/proc/${name}/status`, "utf8").catch(() => "");
    const real = /^Uid:\s+(\d+)/m.exec(status)?.[1];
    if (real !== undefined && Number(real) === uid) pids.push(Number(name));
  }
  return pids;
}

/**
 * Removes the users and groups of this run, every step tried whatever the one before did (a step that fails is
 * said after all were tried); returns the processes of theirs it had to kill first, and what it could not do.
 */
async function removeUsers(): Promise<{ killed: string[]; failed: string[] }> {
  const killed: string[] = [];
  const failed: string[] = [];
  const attempt = async (what: string, step: () => Promise<unknown>): Promise<void> => {
    try {
      await step();
    } catch (error) {
      failed.push(`${what}: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  for (const role of ["leader", "agent"] as const) {
    if (!created[role]) continue;
    const user = NAMES[role];
    await attempt(`end the processes of ${user}`, async () => {
      const pids = await processesOf(user);
      for (const pid of pids) {
        killed.push(`${user}: pid ${pid}`);
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          /* gone meanwhile */
        }
      }
      if (pids.length > 0) {
        await waitUntil(`the processes of ${user} to end`, async () => (await processesOf(user)).length === 0);
      }
    });
    await attempt(`userdel ${user}`, () => must("userdel", user));
    created[role] = false;
    // userdel removes the user's own group when no one else is in it; make sure.
    await attempt(`groupdel ${user}`, async () => {
      if (await accountEntry("/etc/group", user)) await must("groupdel", user);
    });
  }
  if (created.group) {
    await attempt(`groupdel ${NAMES.group}`, () => must("groupdel", NAMES.group));
    created.group = false;
  }
  return { killed, failed };
}

const GLOBAL_GATE = `#!/usr/bin/env bash
# Accepts a task whose result says ok.
grep -q '"result": *"ok' || { echo "the result is not ok" >&2; exit 1; }
`;
const TEAM_GATE = "#!/usr/bin/env bash\nexit 0\n";

/** `install -d -o OWNER -g GROUP -m MODE DIR…`, as the recipe says it. */
function installDir(owner: string, group: string, mode: string, ...dirs: string[]): Promise<string> {
  return must("install", "-d", "-o", owner, "-g", group, "-m", mode, ...dirs);
}

/**
 * The build and the worker, copied into `dir` for both users: the clone may sit in a folder that only
 * its owner can enter (`mktemp -d` makes it 0700), and what another user runs must not read from it.
 * The leader's one package, chokidar, is loaded only under --poll (copied all the same); zod is in dist/.
 */
async function copyBuild(dir: string): Promise<{ bin: string; worker: string; recipe: string }> {
  const runnable = (source: string): boolean => !source.endsWith(".map") && !/\.d\.[cm]?ts$/.test(source);
  await cp(path.join(REPO_ROOT, "dist"), path.join(dir, "dist"), { recursive: true, filter: runnable });
  await cp(path.join(REPO_ROOT, "package.json"), path.join(dir, "package.json")); // "type": "module", the version
  for (const name of ["chokidar", "readdirp"]) {
    const to = path.join(dir, "node_modules", name);
    await cp(path.join(REPO_ROOT, "node_modules", name), to, { recursive: true, filter: runnable });
  }
  for (const name of ["team-worker.mjs", "protocol.mjs"]) {
    await cp(path.join(REPO_ROOT, "test", "fixtures", "workers", name), path.join(dir, "workers", name));
  }
  // The recipe's script and the example gates, as the package ships them (the script finds dist/ beside it).
  await cp(path.join(REPO_ROOT, "examples", "leader-user"), path.join(dir, "examples", "leader-user"), {
    recursive: true,
  });
  await cp(path.join(REPO_ROOT, "hooks"), path.join(dir, "hooks"), { recursive: true });
  await must("chmod", "-R", "a+rX", dir);
  return {
    bin: path.join(dir, "dist", "teams-hooks", "bin.js"),
    worker: path.join(dir, "workers", "team-worker.mjs"),
    recipe: path.join(dir, "examples", "leader-user", "setup.sh"),
  };
}

/** A temp dir both users can get through, with their homes named (made by the recipe and here). */
async function makeBase(): Promise<{ base: string; homes: { leader: string; agent: string } }> {
  const base = await mkdtemp(path.join(await reachableTempDir(), "pi-two-users-"));
  await chmod(base, 0o755); // mkdtemp makes it 0700
  return { base, homes: { leader: path.join(base, "home-leader"), agent: path.join(base, "home-agent") } };
}

/** The recipe of docs/security.md, laid out by its script (examples/leader-user/setup.sh) as a person runs it. */
async function layOut(base: string, homes: { leader: string; agent: string }): Promise<Setup> {
  const { bin, worker, recipe } = await copyBuild(path.join(base, "build"));
  await installDir(NAMES.agent, NAMES.agent, "0700", homes.agent);
  const teamsRoot = path.join(base, "teams");
  const teamDir = path.join(teamsRoot, "alpha");
  const project = path.join(base, "project");
  const who = ["--teams-root", teamsRoot, "--leader", NAMES.leader, "--group", NAMES.group];
  await must("bash", recipe, "init", ...who, "--agent", NAMES.agent, "--project", project);
  await must("bash", recipe, "team", ...who, "alpha");
  // The example gates the script wrote are replaced by this test's own.
  for (const name of await readdir(path.join(teamsRoot, "_hooks"))) await rm(path.join(teamsRoot, "_hooks", name));

  const globalGate = path.join(teamsRoot, "_hooks", "on_task_completed.sh");
  const teamGate = path.join(teamDir, "hooks", "on_idle.sh");
  for (const [file, body] of [
    [globalGate, GLOBAL_GATE],
    [teamGate, TEAM_GATE],
  ] as const) {
    await writeFile(file, body, { mode: 0o755 });
    await must("chown", `${NAMES.leader}:${NAMES.leader}`, file);
  }
  // A temp dir of the leader's user in reach of it (the test's own may sit in a folder only root can enter).
  const tmp = path.join(base, "tmp");
  await installDir(NAMES.leader, NAMES.leader, "0700", tmp);
  const leaderEnv = {
    TMPDIR: tmp,
    HOME: homes.leader,
    USER: NAMES.leader,
    LOGNAME: NAMES.leader,
    XDG_STATE_HOME: path.join(homes.leader, ".local", "state"),
  };
  const tasksDir = path.join(teamDir, "tasks", "alpha");
  return { base, homes, teamsRoot, teamDir, tasksDir, globalGate, teamGate, leaderEnv, bin, worker, recipe, project };
}

// ---------------------------------------------------------------------------------------------
// The agents' user at work, and the leader's commands

/** Runs one op of the plain-JS worker as the agents' user, with umask 0002, and returns its result. */
async function agent<T = unknown>(s: Setup, op: string, args: Record<string, unknown>): Promise<T> {
  const argv = [...asUserWithUmask(NAMES.agent, "0002"), process.execPath, s.worker, op, JSON.stringify(args)];
  const result = await run(argv, { cwd: s.homes.agent, env: { PATH, HOME: s.homes.agent } });
  if (result.code !== 0) throw new Error(`worker ${op} as ${NAMES.agent}: exit ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout.trim().split("\n").pop() ?? "null") as T;
}

/** A shell command as the agents' user (runuser, as a person would type it). */
function agentShell(script: string): Promise<Result> {
  return run(["runuser", "-u", NAMES.agent, "--", "bash", "-c", script]);
}

/** `pi-teams-hooks <args>` (the build's copy) as `user`, with `env`. */
function bin(s: Setup, user: string, args: string[], env: Record<string, string>): Promise<Result> {
  return run([...asUser(user), process.execPath, s.bin, ...args], { env: { PATH, NO_COLOR: "1", ...env } });
}

function teamOf(s: Setup): TempTeam {
  return {
    teamsRoot: s.teamsRoot,
    teamDir: s.teamDir,
    teamId: "alpha",
    taskListId: "alpha",
    leadName: "team-lead",
    tasksDir: s.tasksDir,
    taskFile: (id) => path.join(s.tasksDir, `${id}.json`),
    inboxFile: (namespace, member) => path.join(s.teamDir, "mailboxes", namespace, "inboxes", `${member}.json`),
    cleanup: async () => undefined, // the whole base goes in afterAll
  };
}

interface Entry {
  file: string;
  uid: number;
  mode: number;
}

/** Every file and folder under `dir`, with its owner and mode. */
async function tree(dir: string): Promise<Entry[]> {
  const out: Entry[] = [];
  for (const name of await readdir(dir, { recursive: true })) {
    const file = path.join(dir, name);
    const info = await stat(file);
    out.push({ file, uid: info.uid, mode: info.mode & 0o7777 });
  }
  return out;
}

/** What the agents' user tries, and must not do: each a bash line. */
function attempts(s: Setup, approved: string): Array<[string, string]> {
  const state = (name: string): string => q(path.join(s.teamDir, "hook-state", name));
  const inTeam = (name: string): string => q(path.join(s.teamDir, name));
  const inRoot = (name: string): string => q(path.join(s.teamsRoot, name));
  const tmp = q(path.join(s.homes.agent, "x"));
  return [
    ["write the global gate", `echo 'exit 0' > ${q(s.globalGate)}`],
    ["replace the global gate by rename", `echo 'exit 0' > ${tmp} && mv -f ${tmp} ${q(s.globalGate)}`],
    ["add a global gate", `echo 'exit 0' > ${inRoot("_hooks/on_task_failed.sh")}`],
    ["write the team layer's gate", `echo 'exit 0' > ${q(s.teamGate)}`],
    ["shadow a gate in the team layer", `echo 'exit 0' > ${inTeam("hooks/on_task_completed.sh")}`],
    ["disable a gate in the team layer", `touch ${inTeam("hooks/on_task_completed.sh.disabled")}`],
    ["write hook-state/trust.json", `echo '{}' > ${state("trust.json")}`],
    ["replace hook-state/trust.json by rename", `echo '{}' > ${tmp} && mv -f ${tmp} ${state("trust.json")}`],
    ["append to the ledger", `echo '{}' >> ${state("ledger.jsonl")}`],
    ["add a file to hook-state/", `touch ${state("holds.json.tmp")}`],
    ["decide a held gate by hand", `echo '{}' > ${state("deferrals/run.json")}`],
    ["rename hook-state/", `mv ${inTeam("hook-state")} ${inTeam("hook-state.old")}`],
    ["remove hook-state/", `rm -rf ${inTeam("hook-state")}`],
    ["rename the team layer", `mv ${inTeam("hooks")} ${inTeam("hooks.old")}`],
    ["remove the team layer", `rm -rf ${inTeam("hooks")}`],
    ["rename the global hooks dir", `mv ${inRoot("_hooks")} ${inRoot("_hooks.old")}`],
    ["remove hook-logs/", `rm -rf ${inTeam("hook-logs")}`],
    ["write the approved trust record", `echo '{}' > ${q(approved)}`],
    ["plant a package where gates could resolve it", `mkdir -p ${inRoot("node_modules/pi-teams-hooks")}`],
    ["plant a package.json above the hooks dirs", `echo '{"type":"module"}' > ${inRoot("package.json")}`],
    ["read the leader's home", `ls ${q(s.homes.leader)}`],
  ];
}

// ---------------------------------------------------------------------------------------------

describe("a leader under its own Unix user (docs/security.md)", () => {
  const rig = useLeaderRig();

  beforeAll(async () => {
    if (!CAN_MAKE_USERS) return;
    try {
      const { base, homes } = await makeBase();
      baseDir = base;
      await createUsers(homes);
      setup = await layOut(base, homes);
    } catch (error) {
      const { failed } = await removeUsers();
      if (failed.length > 0) throw new Error(`${String(error)}; and then, removing the users: ${failed.join("; ")}`);
      throw error;
    }
  }, 60_000);

  afterAll(async () => {
    if (!CAN_MAKE_USERS) return;
    // The rig stopped the leader after the test (afterEach): a process of these users still alive is a leak.
    const { killed, failed } = await removeUsers();
    if (baseDir) await rm(baseDir, { recursive: true, force: true });
    expect({ killed, failed }).toEqual({ killed: [], failed: [] });
    // Nothing of this run is left in /etc/passwd or /etc/group (the suite's global teardown checks every run's too).
    expect(await accountsLeft()).toEqual([]);
  }, 60_000);

  const asRoot = it.skipIf(!CAN_MAKE_USERS);
  const ifCannot = CAN_MAKE_USERS ? "" : ` (${CANNOT_MAKE_USERS})`;

  const works = "the team works as the agents' user, who cannot change a gate, hook-state/ or the approved record";
  asRoot(`${works}${ifCannot}`, async () => {
    if (!setup) throw new Error("no setup");
    const s = setup;
    const team = teamOf(s);
    const leaderUid = await uidOf(NAMES.leader);
    const teamGid = await gidOf(NAMES.group);

    // The lead's pi, as the agents' user, makes the task list (the folder too) and two tasks for bob.
    const seeded = { tasksDir: s.tasksDir, count: 2, owner: "bob", watermark: "in-place" };
    expect(await agent<{ ids: string[] }>(s, "create-plain", seeded)).toEqual({ ids: ["1", "2"] });

    const policy = ["--failure-action", "reopen_followup", "--followup-owner", "none"];
    const asLeader = asUserWithUmask(NAMES.leader, "0022");
    const leader = await rig.leader(team, policy, { wrap: asLeader, env: s.leaderEnv, bin: s.bin });
    const approved = approvedFile(s.teamDir, s.leaderEnv);
    await leader.waitFor("the approved trust record", () =>
      stat(approved).then(
        () => true,
        () => false,
      ),
    );

    // A failing gate: the task is reopened, a follow-up made (by the leader's user) and bob nudged.
    await agent(s, "claim", { tasksDir: s.tasksDir, ids: ["1"], by: "bob" });
    await agent(s, "complete", { tasksDir: s.tasksDir, ids: ["1"], result: "draft" });
    const [failed] = await leader.waitForEvents(1, (e) => e.event === "task_completed" && e.taskId === "1");
    expect(failed).toMatchObject({ outcome: "failed", hook: "on_task_completed.sh", policyApplied: true });
    expect(failed?.actions).toEqual(expect.arrayContaining(["reopened (1/3)", "follow-up #3", "nudge bob"]));
    expect(JSON.parse(await readFile(team.taskFile("1"), "utf8"))).toMatchObject({ status: "pending", owner: "bob" });

    // bob reads the nudge from an inbox (and folders) the leader's user made, and marks it read.
    const inbox = team.inboxFile("alpha", "bob");
    const read = await agent<{ texts: string[] }>(s, "read-inbox", { inboxFile: inbox });
    expect(read.texts.length).toBeGreaterThan(0);

    // The follow-up: claimed and completed by the agents' user, and its gate passes; then task 1's too.
    await agent(s, "claim", { tasksDir: s.tasksDir, ids: ["3"], by: "bob" });
    await agent(s, "complete", { tasksDir: s.tasksDir, ids: ["3"], result: "ok" });
    await agent(s, "complete", { tasksDir: s.tasksDir, ids: ["1"], result: "ok" });
    const passed = await leader.waitForEvents(2, (e) => e.event === "task_completed" && e.outcome === "passed");
    expect(passed.map((e) => e.taskId).sort()).toEqual(["1", "3"]);

    // An idle notification in the lead's inbox (its folder made by the leader): the team layer's gate runs.
    await agent(s, "idle", { inboxFile: team.inboxFile("team", "team-lead"), from: "bob" });
    const [idle] = await leader.waitForEvents(1, (e) => e.event === "idle");
    expect(idle).toMatchObject({ outcome: "passed", hook: "on_idle.sh" });

    // A task made by the agents' user after the leader's follow-up, the watermark written in place.
    const more = { tasksDir: s.tasksDir, count: 1, watermark: "in-place" };
    expect(await agent<{ ids: string[] }>(s, "create-plain", more)).toEqual({ ids: ["4"] });

    // What the leader's user wrote: the team's files in the group and writable by it; its own state not.
    for (const file of [team.taskFile("3"), path.join(s.tasksDir, ".highwatermark"), inbox, path.dirname(inbox)]) {
      const info = await stat(file);
      expect({ file, gid: info.gid, groupRw: info.mode & 0o060 }).toEqual({ file, gid: teamGid, groupRw: 0o060 });
    }
    const own = (await Promise.all(["hook-state", "hook-logs"].map((d) => tree(path.join(s.teamDir, d))))).flat();
    expect(own.length).toBeGreaterThan(5);
    for (const { file, uid, mode } of own) {
      expect({ file, uid, othersWrite: mode & 0o022 }).toEqual({ file, uid: leaderUid, othersWrite: 0 });
    }
    expect(await readLogs(s.teamDir)).toHaveLength(4);

    // The agents' user cannot change a gate, the state or the approved record: each attempt is refused.
    const trustJson = path.join(s.teamDir, "hook-state", "trust.json");
    const guarded = [s.globalGate, s.teamGate, trustJson, approved];
    const before = new Map(await Promise.all(guarded.map(async (file) => [file, await sha(file)] as const)));
    for (const [what, script] of attempts(s, approved)) {
      const result = await agentShell(script);
      const why = /Permission denied|Operation not permitted/.test(result.stderr);
      expect({ what, refused: result.code !== 0, why }).toEqual({ what, refused: true, why: true });
    }
    for (const file of guarded) expect({ file, sha256: await sha(file) }).toEqual({ file, sha256: before.get(file) });
    expect(leader.warnings().filter((w) => /trust|untrusted|changed since/.test(w))).toEqual([]);

    // doctor, as the leader's user: no one else can change the gates or the state; the agents write the team's.
    const doctor = await bin(s, NAMES.leader, ["doctor", "--team-dir", s.teamDir, "--json"], s.leaderEnv);
    const report = JSON.parse(doctor.stdout) as DoctorReport;
    expect(report.access?.teamWriters).toEqual([NAMES.agent]);
    expect(report.access?.entries.filter((e) => e.others.length > 0)).toEqual([]);
    expect(report.access?.checks).toEqual([expect.objectContaining({ level: "ok" })]);

    // config.json is the team's: the agents' user adds an HTTP handler there, and cannot approve it:
    // `trust` as that user cannot write the record, and the handler stays untrusted.
    const configs = leader.linesOf("config").length;
    const handler = { name: "ci", events: ["task_completed"], url: "http://127.0.0.1:9/gate" };
    const config = JSON.stringify({ version: 1, teamId: "alpha", taskListId: "alpha", hooks: { handlers: [handler] } });
    const written = await agentShell(`umask 0002 && echo ${q(config)} > ${q(path.join(s.teamDir, "config.json"))}`);
    expect(written.code).toBe(0);
    await leader.waitFor("the new config", () => leader.linesOf("config").length > configs);
    const trustArgs = ["trust", "--team-dir", s.teamDir, "--all", "--yes"];
    const trust = await bin(s, NAMES.agent, trustArgs, { HOME: s.homes.agent });
    expect(trust.stdout).toContain("new      http:ci (task_completed)");
    expect(trust.code).not.toBe(0);
    expect(trust.stderr).toContain(`cannot create lock ${trustJson}.lock: EACCES`);
    for (const file of [trustJson, approved]) {
      expect({ file, sha256: await sha(file) }).toEqual({ file, sha256: before.get(file) });
    }

    expect(await leader.stop()).toMatchObject({ code: 0 });
  });

  const attacked =
    "the agents' tests run by the example gate, and verdicts planted in the shared temp dir, pass nothing and write nothing of the leader's";
  asRoot(`${attacked}${ifCannot}`, async () => {
    if (!setup) throw new Error("no setup");
    const s = setup;
    const who = ["--teams-root", s.teamsRoot, "--leader", NAMES.leader, "--group", NAMES.group];
    await must("bash", s.recipe, "team", ...who, "beta");
    const betaDir = path.join(s.teamsRoot, "beta");
    const beta: TempTeam = {
      ...teamOf(s),
      teamDir: betaDir,
      teamId: "beta",
      taskListId: "beta",
      tasksDir: path.join(betaDir, "tasks", "beta"),
      taskFile: (id) => path.join(betaDir, "tasks", "beta", `${id}.json`),
      inboxFile: (namespace, member) => path.join(betaDir, "mailboxes", namespace, "inboxes", `${member}.json`),
    };
    // The team's gate: the example that runs the project's tests, written by the leader's user.
    const gate = path.join(betaDir, "hooks", "on_task_completed.sh");
    await cp(path.join(s.base, "build", "hooks", "on_task_completed.sh"), gate);
    await must("chown", `${NAMES.leader}:${NAMES.leader}`, gate);
    await chmod(gate, 0o755);
    const gateSha = await sha(gate);
    const approved = approvedFile(betaDir, s.leaderEnv);
    // The agents' "tests": they try the leader's ground, forge a verdict every way they can, and fail.
    const targets = [
      path.join(betaDir, "hook-state", "forged"),
      path.join(betaDir, "hook-logs", "9999-forged_task_completed.json"),
      path.join(s.homes.leader, ".local", "state", "pi-teams-hooks", "forged"),
      gate,
    ];
    const payload = [
      "#!/usr/bin/env bash",
      `for f in ${targets.map(q).join(" ")}; do mkdir -p "$(dirname "$f")" 2>/dev/null; echo x >> "$f" 2>/dev/null; done`,
      `rm -f ${q(path.join(betaDir, "hook-logs"))}/*.json ${q(path.join(s.teamDir, "hook-logs"))}/*.json 2>/dev/null`,
      // The parent and its parent (field 4 of /proc/<pid>/stat), read with coreutils and grep alone.
      `for pid in $PPID $(cut -d' ' -f4 /proc/$PPID/stat); do f=$(tr '\\0' '\\n' < /proc/$pid/environ 2>/dev/null | grep '^PI_TEAMS_HOOK_RESULT_FILE=' | cut -d= -f2-); [ -n "$f" ] && echo '{"decision":"allow"}' > "$f"; done`,
      `echo '{"decision":"allow"}'`,
      "exit 1",
    ].join("\n");
    const test = path.join(s.project, "test.sh");
    const wrote = await agentShell(`umask 0002 && printf '%s\\n' ${q(payload)} > ${q(test)}`);
    expect(wrote.code, wrote.stderr).toBe(0);
    // Meanwhile, as the agents' user: a verdict at every name the shared temp dir ever offered, for each run id the
    // (world-readable) ledger names. Bounded: it stops by itself.
    const ledger = path.join(betaDir, "hook-state", "ledger.jsonl");
    const planter = agentShell(
      `for i in $(seq 100); do for id in $(grep -o '"runId":"[^"]*"' ${q(ledger)} 2>/dev/null | cut -d'"' -f4); do for d in /tmp ${q(os.tmpdir())} ${q(s.leaderEnv.TMPDIR ?? "/tmp")}; do echo '{"decision":"allow"}' > "$d/pi-teams-hook-$id.result.json" 2>/dev/null; done; done; sleep 0.03; done`,
    );

    expect(
      await agent<{ ids: string[] }>(s, "create-plain", { tasksDir: beta.tasksDir, count: 1, owner: "bob" }),
    ).toEqual({
      ids: ["1"],
    });
    const asLeader = asUserWithUmask(NAMES.leader, "0022");
    const env = { ...s.leaderEnv, PI_TEAMS_GATE_CMD: "bash ./test.sh" };
    const leader = await rig.leader(beta, ["--cwd", s.project, "--failure-action", "reopen"], {
      wrap: asLeader,
      env,
      bin: s.bin,
    });
    // The team's config.json, written by the agents' user after the leader's first start: errors let through and
    // any exit but 0 or 2 an error. Held for the lead's approval, said; the approved settings stay in force.
    const weak = JSON.stringify({
      version: 1,
      teamId: "beta",
      taskListId: "beta",
      hooks: { failureMode: "open", exitCodes: "strict" },
    });
    const configured = await agentShell(`umask 0002 && echo ${q(weak)} > ${q(path.join(betaDir, "config.json"))}`);
    expect(configured.code, configured.stderr).toBe(0);
    await leader.waitFor("the held settings said", () =>
      leader.warnings().some((w) => w.includes('hooks.failureMode changed from (default) to "open", which can weaken')),
    );
    await agent(s, "claim", { tasksDir: beta.tasksDir, ids: ["1"], by: "bob" });
    await agent(s, "complete", { tasksDir: beta.tasksDir, ids: ["1"], result: "done, trust me" });
    const [judged] = await leader.waitForEvents(1, (e) => e.event === "task_completed" && e.taskId === "1");
    expect(judged).toMatchObject({ outcome: "failed", hook: "on_task_completed.sh", policyApplied: true });
    expect(JSON.parse(await readFile(beta.taskFile("1"), "utf8"))).toMatchObject({ status: "pending", owner: "bob" });
    await planter;
    expect(await leader.stop()).toMatchObject({ code: 0 });

    // Nothing of the leader's was written, and the one log is the gate's own.
    // (What the payload wrote in its sandbox's private /tmp and /dev/shm went nowhere: the files are checked.)
    for (const file of targets.slice(0, 3)) expect({ file, exists: existsSync(file) }).toEqual({ file, exists: false });
    expect(await sha(gate)).toBe(gateSha);
    expect(existsSync(approved)).toBe(true);
    expect(await readLogs(s.teamDir)).toHaveLength(4); // alpha's, from the first test, all still there
    const logs = await readLogs(betaDir);
    expect(logs).toHaveLength(1);
    expect(logs[0]?.result).toMatchObject({ outcome: "failed", sandbox: "on" });
    expect(logs[0]?.result.verdict).toBeUndefined();

    // The recipe's start: the leader as its user, in a session of its own, its output in a log of its user's.
    const started = await run(["bash", s.recipe, "start", ...who, "--project", s.project, "beta", "--once"], {
      env: { PATH, TMPDIR: "/root-only-tmp", NODE_OPTIONS: "--no-such-option-of-root" },
    });
    expect(started.code, started.stderr).toBe(0);
    const log = path.join(s.homes.leader, "pi-teams-hooks-beta.log");
    await waitUntil("the leader's log to say it watched", async () =>
      (await readFile(log, "utf8").catch(() => "")).includes("watching "),
    );
    const info = await stat(log);
    expect({ uid: info.uid, mode: info.mode & 0o777 }).toEqual({ uid: await uidOf(NAMES.leader), mode: 0o600 });
    expect(await readFile(log, "utf8")).toContain("sandbox: gates run sandboxed");
    await waitUntil(
      "the leader the recipe started to end (--once)",
      async () => (await processesOf(NAMES.leader)).length === 0,
    );
  });

  asRoot(
    `a gate with run-as= runs as that user, sandboxed, and its verdict counts; unreachable, it is held${ifCannot}`,
    async () => {
      if (!setup) throw new Error("no setup");
      const s = setup;
      // The leader here is root (as this test is): it switches to the gate's user itself (setpriv).
      const teamsRoot = await mkdtemp(path.join(s.base, "run-as-"));
      await chmod(teamsRoot, 0o755);
      const teamDir = path.join(teamsRoot, "gamma");
      const tasks = path.join(teamDir, "tasks", "gamma");
      await must("mkdir", "-p", tasks, path.join(teamsRoot, "_hooks"));
      const task = {
        id: "1",
        subject: "s",
        description: "d",
        owner: "bob",
        status: "completed",
        blocks: [],
        blockedBy: [],
      };
      const at = "2026-12-01T09:00:00.000Z";
      await writeFile(path.join(tasks, "1.json"), JSON.stringify({ ...task, createdAt: at, updatedAt: at }));
      const gate = path.join(teamsRoot, "_hooks", "on_task_completed.sh");
      await writeFile(
        gate,
        [
          "#!/usr/bin/env bash",
          `# pi-teams-hooks: run-as=${NAMES.agent}`,
          `echo "uid=$(id -u)"`,
          `echo x > ${q(path.join(teamDir, "planted"))} 2>/dev/null && echo "wrote the team dir"`,
          `echo '{"decision":"deny","reason":"judged as the gate user"}' > "$PI_TEAMS_HOOK_RESULT_FILE"`,
        ].join("\n"),
        { mode: 0o755 },
      );
      const state = path.join(s.base, "root-state");
      await must("install", "-d", "-m", "0711", state, path.join(state, "pi-teams-hooks"));
      const env = { PATH, NO_COLOR: "1", HOME: s.base, XDG_STATE_HOME: state };
      const args = ["run", "task_completed", "--team-dir", teamDir, "--task", "1", "--cwd", s.project, "--json"];
      const ran = await run([process.execPath, s.bin, ...args], { env });
      const record = JSON.parse(ran.stdout) as { result: { stdout: string; outcome: string; sandbox?: string } };
      expect(record.result, ran.stderr).toMatchObject({ outcome: "failed", sandbox: "on" });
      expect(record.result.stdout).toBe(`uid=${await uidOf(NAMES.agent)}\n`);
      expect(existsSync(path.join(teamDir, "planted"))).toBe(false);

      // A view the gate's user cannot build (a sandbox-write= folder only root can reach): the set-up, run as that
      // user, says so in the run's folder, and the run is a set-up failure, held, not the gate failing.
      const rootOnly = path.join(s.base, "root-only");
      await must("install", "-d", "-m", "0700", rootOnly, path.join(rootOnly, "out"));
      await writeFile(
        gate,
        [
          "#!/usr/bin/env bash",
          `# pi-teams-hooks: run-as=${NAMES.agent} sandbox-write=${path.join(rootOnly, "out")}`,
          "echo the gate ran",
          "exit 1",
        ].join("\n"),
        { mode: 0o755 },
      );
      const unbuilt = await run([process.execPath, s.bin, ...args], { env });
      const setupFailed = (JSON.parse(unbuilt.stdout) as { result: Record<string, unknown> }).result;
      expect(setupFailed, unbuilt.stderr).toMatchObject({ ran: false, outcome: "error", errorCode: "E_SANDBOX_SETUP" });
      expect(setupFailed.stdout).toBe("");

      // The leader's state dir closed to other users: the gate's user cannot reach its run; said, and held.
      const closed = path.join(s.base, "root-state-closed");
      await must("install", "-d", "-m", "0700", closed);
      const held = await run([process.execPath, s.bin, ...args], { env: { ...env, XDG_STATE_HOME: closed } });
      const result = (JSON.parse(held.stdout) as { result: { ran: boolean; errorCode?: string; error?: string } })
        .result;
      expect(result).toMatchObject({ ran: false, errorCode: "E_RUN_AS" });
      expect(result.error).toContain(`run-as=${NAMES.agent}: ${closed} (mode 700) does not let another user reach`);
    },
  );

  asRoot(`doctor names the agents' user where the recipe is not followed${ifCannot}`, async () => {
    if (!setup) throw new Error("no setup");
    const s = setup;
    // The leader's state folder handed to the team's group, and an inbox folder made by the agents under umask 0022.
    await chown(path.join(s.teamDir, "hook-state"), await uidOf(NAMES.leader), await gidOf(NAMES.group));
    await chmod(path.join(s.teamDir, "hook-state"), 0o2775);
    const made = await agentShell(`umask 0022 && mkdir -p ${q(path.join(s.teamDir, "mailboxes/beta/inboxes"))}`);
    expect(made.code).toBe(0);
    const doctor = await bin(s, NAMES.leader, ["doctor", "--team-dir", s.teamDir], s.leaderEnv);
    const access = doctor.stdout.slice(doctor.stdout.indexOf("\nAccess ("), doctor.stdout.indexOf("\nPolicy ("));
    expect(access).toContain(
      `warn ${s.teamDir}/hook-state (leader state) can be written or replaced by group ${NAMES.group} (${NAMES.agent}): another user can change the leader's state`,
    );
    expect(access).toContain(
      `warn ${s.teamDir}/mailboxes/beta/inboxes (${NAMES.agent}:${NAMES.group}, mode 2755) cannot be written by the leader's user`,
    );
  });
});
