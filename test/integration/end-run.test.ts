/**
 * A run's end (runner/sandbox.ts endRun) ends the processes whose root is the run folder's own `root/`: a
 * `root` that is a link (which the user of a `run-as=` gate, who owns its run's folder, can put there) leads to
 * no other folder's processes.
 */
import { spawn } from "node:child_process";
import { readdirSync, readlinkSync, realpathSync, statSync, symlinkSync } from "node:fs";
import path from "node:path";
import { describe, it } from "vitest";
import { makeRunDir, removeRunDir, runsRoot } from "../../extensions/teams-hooks/runner/run-dir.js";
import { endRun, sandboxed, sandboxSupport } from "../../extensions/teams-hooks/runner/sandbox.js";
import { fileId } from "../../extensions/teams-hooks/runner/writable-path.js";
import { waitUntil } from "../helpers/leader-rig.js";
import { testTempDir } from "../helpers/temp-team.js";

/** The processes whose root is `root`. */
function processesIn(root: string): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        return readlinkSync(`/proc/${name}/root`) === root;
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe("a run's end", () => {
  it.skipIf(!sandboxSupport().ok)(
    "of a run folder whose root is a link to another run's view ends nothing of that view's",
    async (context) => {
      const { expect, onTestFinished } = context;
      // A sandboxed process of another run, in its view.
      const other = makeRunDir("end-run-other");
      onTestFinished(() => {
        endRun(other.dir);
        removeRunDir(other.dir);
      });
      const cwd = realpathSync(await testTempDir(context, "end-run-"));
      const start = sandboxed("/bin/sleep", ["60"], {
        runDir: other.dir,
        cwd,
        bound: [{ path: cwd, id: fileId(statSync(cwd, { bigint: true })) }],
        visible: [],
        protect: [],
        hide: [path.dirname(runsRoot())],
        resultFile: other.resultFile,
      });
      const child = spawn(start.command, start.args, { cwd, stdio: "ignore" });
      onTestFinished(() => {
        child.kill("SIGKILL");
      });
      const view = realpathSync(other.root);
      const [victim] = await waitUntil("the other run's process in its view", () => {
        const found = processesIn(view);
        return found.length > 0 ? found : false;
      });

      // A run folder whose `root` is a link to that view.
      const linked = makeRunDir("end-run-linked");
      onTestFinished(() => removeRunDir(linked.dir));
      removeRunDir(linked.root);
      symlinkSync(other.root, linked.root);

      expect(endRun(linked.dir).killed).toEqual([]);
      expect(processesIn(view)).toContain(victim);
      // Its own run's end still ends it.
      expect(endRun(other.dir).killed).toContain(victim);
    },
  );
});
