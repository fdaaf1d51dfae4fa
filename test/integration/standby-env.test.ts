/**
 * A standby is made in the runs folder of the environment its runs are given (`baseEnv`, an embedder's), where a
 * leader's start looks for what a dead predecessor left and where the runs' own sandbox plans hide the runs
 * folder: never in the runs folder of the process's own environment, when the two differ.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { runHook, startStandbys } from "../../extensions/teams-hooks/runner/run-hook.js";
import { runsRoot } from "../../extensions/teams-hooks/runner/run-dir.js";
import { endStandbys } from "../../extensions/teams-hooks/runner/standby.js";
import { waitUntil } from "../helpers/leader-rig.js";
import { makeInvocation } from "../helpers/invocation.js";
import { fileTempDir } from "../helpers/temp-team.js";

const FIXTURES = path.resolve(import.meta.dirname, "../fixtures/hooks");
const tmp = fileTempDir("standby-env-");
// An embedder's runtime folder (0700, its own): its runs folder is not the one of this process's environment.
const runtime = mkdtempSync(path.join(os.tmpdir(), "standby-env-runtime-"));
afterAll(async () => {
  await endStandbys(); // one left by a failed check
  rmSync(runtime, { recursive: true, force: true });
});

const standbyFolders = (root: string): string[] => readdirSync(root).filter((name) => name.startsWith("standby."));

it("is made in the runs folder of the runs' environment, and ends there with the others", async () => {
  const baseEnv = { ...process.env, XDG_RUNTIME_DIR: runtime };
  const theirs = runsRoot(baseEnv);
  const ours = runsRoot(process.env);
  expect(theirs).not.toBe(ours);
  const oursBefore = standbyFolders(ours);
  const file = path.join(FIXTURES, "pass.sh");

  const result = await runHook({ hookPath: file, command: "bash", args: [file] }, makeInvocation(), {
    cwd: tmp,
    timeoutMs: 10_000,
    baseEnv,
    sandbox: { mode: "required" },
    standby: true,
  });
  expect(result).toMatchObject({ outcome: "passed", sandbox: "on" });
  startStandbys();
  const [made] = await waitUntil("the run's standby", () => {
    const found = standbyFolders(theirs);
    return found.length > 0 ? found : false;
  });
  expect(made).toMatch(/^standby\.[A-Za-z0-9]{6}$/);
  expect(standbyFolders(ours)).toEqual(oursBefore);

  await endStandbys();
  expect(standbyFolders(theirs)).toEqual([]);
});
