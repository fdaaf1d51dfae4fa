/**
 * A run's folder handed to another user (a `run-as=` gate's, by a leader running as root) is removed without
 * following a link that user put in it: coreutils' `rm -r` walks it by open folders, so a folder swapped for a
 * link to the leader's files between a listing and the removal under it leads nowhere.
 */
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "vitest";
import { removeRunDir, removeRunDirLater } from "../../extensions/teams-hooks/runner/run-dir.js";
import { fileTempDir } from "../helpers/temp-team.js";

const base = fileTempDir("handed-over-");

const root = process.getuid?.() === 0;

/** A folder of the leader's that must survive, and a run folder of user 65534 with links to it among its files. */
function handedOverRun(): { run: string; kept: string } {
  const dir = mkdtempSync(path.join(base, "run-"));
  const kept = path.join(dir, "leader");
  mkdirSync(kept);
  writeFileSync(path.join(kept, "state.json"), "{}");
  const run = path.join(dir, "run");
  mkdirSync(path.join(run, "sub"), { recursive: true });
  writeFileSync(path.join(run, "sub", "a"), "x");
  symlinkSync(kept, path.join(run, "link"));
  symlinkSync(kept, path.join(run, "sub", "link"));
  for (const p of [run, path.join(run, "sub"), path.join(run, "sub", "a")]) chownSync(p, 65534, 65534);
  return { run, kept };
}

describe("a run folder handed to another user", () => {
  it.skipIf(!root)(
    "is removed whole, and what its links lead to is left (needs root to hand a folder over)",
    async ({ expect }) => {
      for (const remove of [removeRunDir, removeRunDirLater]) {
        const { run, kept } = handedOverRun();
        await remove(run);
        expect(existsSync(run)).toBe(false);
        expect(readFileSync(path.join(kept, "state.json"), "utf8")).toBe("{}");
      }
    },
  );
});
