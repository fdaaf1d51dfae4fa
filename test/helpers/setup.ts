// Process warnings are bugs: fail the test that caused one.
import { spawnSync } from "node:child_process";
import { afterEach } from "vitest";

/**
 * Leaders started by the tests run their spawn helper with the interpreter itself, not through a
 * version manager's `python3` shim (pyenv's costs ~250 ms of CPU per start, and the suite starts
 * hundreds of leaders). Resolved once per process; the helper's own tests of `python3` on PATH clear it.
 */
if (process.env.PI_TEAMS_HOOKS_PYTHON === undefined) {
  const found = spawnSync("python3", ["-I", "-S", "-c", "import sys; print(sys.executable)"], { encoding: "utf8" });
  if (found.status === 0 && found.stdout.trim()) process.env.PI_TEAMS_HOOKS_PYTHON = found.stdout.trim();
}

/**
 * The warnings seen since the last test ended. One listener per process: this file runs before every
 * test file, and a worker runs many files in one process (`isolate: false` in vitest.config.ts).
 */
function warningList(): string[] {
  const key = Symbol.for("pi-teams-hooks.test-warnings");
  const shared = globalThis as unknown as Record<symbol, string[] | undefined>;
  const existing = shared[key];
  if (existing) return existing;
  const list: string[] = [];
  shared[key] = list;
  process.on("warning", (w) => {
    list.push(`${w.name}: ${w.message}`);
  });
  return list;
}

const warnings = warningList();

afterEach(() => {
  if (warnings.length > 0) {
    const seen = warnings.splice(0);
    throw new Error(`process warning during test: ${seen.join("; ")}`);
  }
});
