/**
 * The order test files start in: the slowest first, whatever their project, so that the two workers
 * finish together instead of one running a long file alone at the end while the other sits idle
 * (vitest's own order runs project after project, by name).
 *
 * A file's duration is the one measured on a quiet machine and kept in file-durations.json (the same
 * on every clone, CI's too: vitest's own cache of the last run is empty on a fresh clone, and noisy on
 * a busy machine); a file not listed there takes its last run's duration from that cache, or a guess
 * by project. A worker goes on with the next file in the same process only when that file is of the
 * same project (`isolate: false`), and a new worker process costs about a second: so files of about
 * the same length (within a factor of two) run project by project, the project of the longest of them
 * first, as do all the short ones. How to measure and refresh the list: docs/performance.md, "The test
 * suite".
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

/** Files shorter than this (seconds) are all of one band. */
const SHORT = 2;

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
    /** Longer files have higher bands; all short files share the lowest. */
    const band = (spec: TestSpecification): number => (time(spec) < SHORT ? 0 : 1 + Math.floor(Math.log2(time(spec))));
    /** The longest file of each band and project: the band's projects start in that order. */
    const longest = new Map<string, number>();
    const group = (spec: TestSpecification): string => `${band(spec)} ${spec.project.name}`;
    for (const spec of files) longest.set(group(spec), Math.max(longest.get(group(spec)) ?? 0, time(spec)));
    const byProject = (a: TestSpecification, b: TestSpecification): number =>
      (longest.get(group(b)) ?? 0) - (longest.get(group(a)) ?? 0) || a.project.name.localeCompare(b.project.name);
    return [...files].sort((a, b) => band(b) - band(a) || byProject(a, b) || time(b) - time(a));
  }
}
