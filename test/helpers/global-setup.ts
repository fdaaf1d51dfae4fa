/**
 * Before any test file starts, once per run: builds `dist/` if it is not current (build.ts). The
 * leader, the CLI and the pi extension under test are that build; test files take it as it is
 * (`ensureBuilt` in leader-rig.ts) instead of each checking it again. A build that fails stops the run
 * here, with the compiler's output, before a test times out waiting for it.
 */
import type { TestProject } from "vitest/node";
import { buildIfStale } from "./build.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The hash of the sources `dist/` was built from in this run's global set-up. */
    distBuiltFrom: string;
  }
}

export default async function setup(project: TestProject): Promise<void> {
  project.provide("distBuiltFrom", await buildIfStale());
  // `vitest` in watch mode runs the set-up once: a rerun after an edit builds again first.
  project.onTestsRerun(async () => project.provide("distBuiltFrom", await buildIfStale({ again: true })));
}
