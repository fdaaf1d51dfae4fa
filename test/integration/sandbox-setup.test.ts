/**
 * A sandbox whose view cannot be built says so where the gate cannot: its set-up writes the reason into
 * `<run folder>/fstab.failed` (made empty by the leader, read-only inside the view) besides its line on stderr,
 * and exits 125 before the gate starts. A view that was built leaves the file empty, whatever the gate prints.
 * A writable path is bound from a descriptor the set-up opened and checked to be the folder the leader resolved:
 * `mount` would resolve the path again, and the agents' folder swapped for a link meanwhile would have the
 * leader's folder bound writable.
 */
import { spawnSync } from "node:child_process";
import {
  appendFileSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { makeRunDir, removeRunDir, runsRoot, type RunDir } from "../../extensions/teams-hooks/runner/run-dir.js";
import {
  SANDBOX_SETUP_FAILED,
  SANDBOX_SETUP_MARK,
  sandboxed,
  type SandboxPlan,
} from "../../extensions/teams-hooks/runner/sandbox.js";
import { fileId } from "../../extensions/teams-hooks/runner/writable-path.js";
import { fileTempDir } from "../helpers/temp-team.js";

const work = realpathSync(fileTempDir("sandbox-setup-"));
const runs: RunDir[] = [];
afterAll(() => {
  for (const run of runs) removeRunDir(run.dir);
});

/** A writable path as the leader resolved it: its path and the file there now. */
function boundAt(dir: string): { path: string; id: string } {
  return { path: dir, id: fileId(statSync(dir, { bigint: true })) };
}

/** The plan of a run in `work`, writable; with `alsoWritable`, that folder too, as it is now. */
function planIn(run: RunDir, alsoWritable?: string): SandboxPlan {
  return {
    runDir: run.dir,
    cwd: work,
    bound: [boundAt(work), ...(alsoWritable ? [boundAt(alsoWritable)] : [])],
    visible: [work, path.dirname(path.dirname(process.execPath))],
    protect: [],
    hide: [path.dirname(runsRoot())],
    resultFile: run.resultFile,
  };
}

/** A gate that prints the sandbox's own mark and exits as a failed set-up does. */
const FORGER = path.join(work, "forger.sh");
writeFileSync(
  FORGER,
  `echo "${SANDBOX_SETUP_MARK} the gate's view could not be built" >&2\nexit ${SANDBOX_SETUP_FAILED}\n`,
);

describe("the sandbox's set-up", () => {
  it("that cannot build the view exits 125 before the gate, and says why in fstab.failed as on stderr", () => {
    const run = makeRunDir("setup-test");
    runs.push(run);
    const chain = sandboxed("bash", ["-c", "echo the gate ran"], planIn(run));
    // A bind of a source that is not there: mount -a fails, and with it the whole view.
    appendFileSync(
      path.join(run.dir, "fstab"),
      `${path.join(work, "not-there")} ${path.join(run.dir, "root", "tmp")} none bind 0 0\n`,
    );
    const ran = spawnSync(chain.command, chain.args, { encoding: "utf8", cwd: work });
    expect(ran.status).toBe(SANDBOX_SETUP_FAILED);
    expect(ran.stdout).not.toContain("the gate ran");
    expect(ran.stderr).toContain(`${SANDBOX_SETUP_MARK} the gate's view could not be built`);
    expect(readFileSync(path.join(run.dir, "fstab.failed"), "utf8")).toMatch(
      /^the gate's view could not be built \(mount -a -T .*fstab\)\n$/,
    );
  });

  it("that built the view leaves fstab.failed empty, and a gate cannot write it, whatever it prints", () => {
    const run = makeRunDir("setup-test");
    runs.push(run);
    const failed = path.join(run.dir, "fstab.failed");
    const chain = sandboxed(
      "bash",
      ["-c", `echo forged > '${failed}' || echo refused >&2; exec bash '${FORGER}'`],
      planIn(run),
    );
    const ran = spawnSync(chain.command, chain.args, { encoding: "utf8", cwd: work });
    expect(ran.status).toBe(SANDBOX_SETUP_FAILED);
    expect(ran.stderr).toContain("refused");
    expect(ran.stderr).toContain(SANDBOX_SETUP_MARK);
    expect(readFileSync(failed, "utf8")).toBe("");
  });

  it("refuses a view whose writable folder was swapped for a link after the leader resolved it, before the gate", () => {
    const run = makeRunDir("setup-test");
    runs.push(run);
    // The agents' folder, as the leader resolved it, and a folder of the leader's own beside it.
    const agents = path.join(work, "agents-project");
    const leaders = path.join(work, "leader-state");
    mkdirSync(agents);
    mkdirSync(leaders);
    writeFileSync(path.join(leaders, "ledger"), "the leader's\n");
    const plan: SandboxPlan = { ...planIn(run), cwd: agents, bound: [boundAt(agents)] };
    const chain = sandboxed("bash", ["-c", "echo forged > ledger && echo the gate wrote"], plan);
    // Between the plan and the mount: the folder moved away, a relative link to the leader's in its place
    // (resolved inside the view, it leads to the leader's folder, bound writable there).
    renameSync(agents, `${agents}.moved`);
    symlinkSync("leader-state", agents);
    const ran = spawnSync(chain.command, chain.args, { encoding: "utf8", cwd: work });
    expect(ran.stdout).not.toContain("the gate wrote");
    expect(readFileSync(path.join(leaders, "ledger"), "utf8")).toBe("the leader's\n");
    expect(ran.status).toBe(SANDBOX_SETUP_FAILED);
    expect(readFileSync(path.join(run.dir, "fstab.failed"), "utf8")).toBe(
      `${agents} is not the folder the leader checked: it was replaced while the view was built\n`,
    );
  });

  it("fails when the list of writable paths to check cannot be read: no check is skipped in silence", () => {
    const run = makeRunDir("setup-test");
    runs.push(run);
    const chain = sandboxed("bash", ["-c", "echo the gate ran"], planIn(run));
    rmSync(path.join(run.dir, "fstab.rw"));
    const ran = spawnSync(chain.command, chain.args, { encoding: "utf8", cwd: work });
    expect(ran.stdout).not.toContain("the gate ran");
    expect(ran.status).toBe(SANDBOX_SETUP_FAILED);
    expect(readFileSync(path.join(run.dir, "fstab.failed"), "utf8")).toMatch(
      /^the list of its writable paths could not be read \(.*fstab\.rw\)\n$/,
    );
  });

  it("leaves the gate none of the descriptors it bound writable paths from, its working directory writable", () => {
    const run = makeRunDir("setup-test");
    runs.push(run);
    const gate = `for n in 3 4 5 6 7 8 9; do [ -e /proc/$$/fd/$n ] && echo "descriptor $n open"; done; echo ok > written`;
    const chain = sandboxed("bash", ["-c", gate], planIn(run));
    const ran = spawnSync(chain.command, chain.args, { encoding: "utf8", cwd: work });
    expect(ran.stderr).toBe("");
    expect(ran.stdout).toBe("");
    expect(ran.status).toBe(0);
    expect(readFileSync(path.join(work, "written"), "utf8")).toBe("ok\n");
  });

  it("refuses a view whose writable folder's place in it leads elsewhere by a link, though the folder is the one checked", () => {
    const run = makeRunDir("setup-test");
    runs.push(run);
    // Planned as the agents' folder; then moved, a link to it in its place: opened by its path, the folder is
    // still the one checked, but its place in the view leads out of the view (where mount would have bound it).
    const agents = path.join(work, "agents-moved");
    mkdirSync(agents);
    const chain = sandboxed("bash", ["-c", "echo the gate ran"], planIn(run, agents));
    renameSync(agents, `${agents}.real`);
    symlinkSync(`${agents}.real`, agents);
    const ran = spawnSync(chain.command, chain.args, { encoding: "utf8", cwd: work });
    expect(ran.stdout).not.toContain("the gate ran");
    expect(ran.status).toBe(SANDBOX_SETUP_FAILED);
    expect(readFileSync(path.join(run.dir, "fstab.failed"), "utf8")).toBe(
      `${agents} is not, in the gate's view, where the leader checked it: a link was swapped in on its way while the view was built\n`,
    );
  });

  it("binds the leader's folder inside a writable path read-only again, the rest of that path writable", () => {
    const run = makeRunDir("setup-test");
    runs.push(run);
    const state = path.join(work, "hook-state-of-the-leader");
    mkdirSync(state);
    const plan: SandboxPlan = { ...planIn(run), protect: [state] };
    const gate = `{ echo x > '${path.join(state, "planted")}'; } 2>/dev/null || echo refused; echo y > beside && echo wrote`;
    const chain = sandboxed("bash", ["-c", gate], plan);
    const ran = spawnSync(chain.command, chain.args, { encoding: "utf8", cwd: work });
    expect(ran.stderr).toBe("");
    expect(ran.stdout).toBe("refused\nwrote\n");
    expect(ran.status).toBe(0);
    expect(readFileSync(path.join(work, "beside"), "utf8")).toBe("y\n");
  });

  it("opens nothing but a folder or a regular file: a FIFO swapped in for a writable folder fails the set-up at once", () => {
    const run = makeRunDir("setup-test");
    runs.push(run);
    const reports = path.join(work, "reports-then-fifo");
    mkdirSync(reports);
    const chain = sandboxed("bash", ["-c", "echo the gate ran"], planIn(run, reports));
    rmSync(reports, { recursive: true });
    expect(spawnSync("mkfifo", [reports]).status).toBe(0);
    // Opened for reading, a FIFO with no writer would hold the set-up until the gate's time-out.
    const ran = spawnSync(chain.command, chain.args, { encoding: "utf8", cwd: work, timeout: 20_000 });
    expect(ran.signal).toBeNull();
    expect(ran.stdout).not.toContain("the gate ran");
    expect(ran.status).toBe(SANDBOX_SETUP_FAILED);
    expect(readFileSync(path.join(run.dir, "fstab.failed"), "utf8")).toBe(`${reports} could not be opened\n`);
  });
});
