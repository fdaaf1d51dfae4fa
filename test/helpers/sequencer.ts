/**
 * The order test files start in: the slowest first, so that the workers finish together instead of
 * one running a long file alone at the end while the others sit idle (vitest's own order runs project
 * after project, by name, in no order of length).
 *
 * A file's duration is the one measured on a quiet machine and kept in file-durations.json (the same
 * on every clone, CI's too: vitest's own cache of the last run is empty on a fresh clone, and noisy on
 * a busy machine); a file not listed there takes its last run's duration from that cache, or a guess
 * by project. A worker goes on with the next file in the same process only when that file is of the
 * same project (`isolate: false`), and a new worker process costs a second or more of CPU: so the files
 * run project by project, the project of the longest file first, and within a project the slowest
 * first. How to measure and refresh the list: docs/performance.md, "The test suite".
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { BaseSequencer, type TestSpecification } from "vitest/node";

const DURATIONS_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), "file-durations.json");

/** Seconds, by `<project>:<path from the repo root>`. */
function listedDurations(): Map<string, number> {
  const list = JSON.parse(readFileSync(DURATIONS_FILE, "utf8")) as { seconds: Record<string, number> };
  return new Map(Object.entries(list.seconds));
}

/** A file not measured yet, by project (seconds): about the median of the project's listed files. */
const GUESS: Record<string, number> = { slow: 30, e2e: 5, integration: 1, unit: 0.2 };

export default class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const listed = listedDurations();
    const root = this.ctx.config.root;
    const seconds = new Map<TestSpecification, number>();
    for (const spec of files) {
      const key = `${spec.project.name}:${path.relative(root, spec.moduleId).split(path.sep).join("/")}`;
      const cached = this.ctx.cache.getFileTestResults(key)?.duration;
      const last = cached === undefined ? undefined : cached / 1000;
      seconds.set(spec, listed.get(key) ?? last ?? GUESS[spec.project.name] ?? 1);
    }
    const time = (spec: TestSpecification): number => seconds.get(spec) ?? 0;
    /** The longest file of each project: the projects start in that order. */
    const longest = new Map<string, number>();
    for (const spec of files) {
      const name = spec.project.name;
      longest.set(name, Math.max(longest.get(name) ?? 0, time(spec)));
    }
    const byProject = (a: TestSpecification, b: TestSpecification): number =>
      (longest.get(b.project.name) ?? 0) - (longest.get(a.project.name) ?? 0) ||
      a.project.name.localeCompare(b.project.name);
    return [...files].sort((a, b) => byProject(a, b) || time(b) - time(a));
  }
}
