// Process warnings are bugs: fail the test that caused one.
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach } from "vitest";

/**
 * The leader keeps the trust record it approved in the user's state directory (trust/trust-store.ts
 * approvedFile): the tests', and the leaders' and commands' they start, is a temp folder of this
 * process, never the account's own. Set once per process; a test may give its own.
 */
if (process.env.XDG_STATE_HOME === undefined || !process.env.XDG_STATE_HOME.includes("pi-teams-state-")) {
  process.env.XDG_STATE_HOME = mkdtempSync(path.join(os.tmpdir(), "pi-teams-state-"));
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
