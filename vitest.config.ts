import { defineConfig } from "vitest/config";
import SlowFirst from "./test/helpers/sequencer.js";

export default defineConfig({
  test: {
    // Plain, and in one zone, whatever the machine: times shown to people are local (docs/cli.md "Output").
    env: { NO_COLOR: "1", TZ: "UTC" },
    // Four test files at a time, also on a 2-CPU machine (vitest's default there is one): most tests
    // wait on child processes (a leader's scan, a hook, a server); with two the CPUs sat idle a third of
    // the run, with three 191 s, four 183 s, five no better (docs/performance.md, "The test suite").
    maxWorkers: 4,
    // Each worker process runs its files one after another, without a fresh process and module graph
    // per file: ~0.6 s of CPU saved per file (~60 s for the suite). Safe because no test file changes
    // process-wide state for the next one: tests run real processes in their own temp dirs, and the
    // setup file adds its warning listener once per process.
    isolate: false,
    setupFiles: ["test/helpers/setup.ts"],
    // Builds dist/ once, before the first test file (the e2e and slow tests run the build).
    globalSetup: ["test/helpers/global-setup.ts"],
    sequence: { sequencer: SlowFirst },
    projects: [
      { extends: true, test: { name: "unit", include: ["test/unit/**/*.test.ts"] } },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          testTimeout: 30_000,
          hookTimeout: 30_000,
        },
      },
      {
        extends: true,
        test: { name: "e2e", include: ["test/e2e/**/*.test.ts"], testTimeout: 60_000, hookTimeout: 60_000 },
      },
      // Thousands of events through the real leader (burst, overflow, crash, concurrent writers).
      {
        extends: true,
        test: { name: "slow", include: ["test/slow/**/*.test.ts"], testTimeout: 180_000, hookTimeout: 240_000 },
      },
    ],
  },
});
