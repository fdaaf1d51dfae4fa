/**
 * The order test files start in: the slow project's files first (one of them takes two minutes),
 * then vitest's own order. Vitest orders projects by name, which started `slow` after every e2e and
 * integration file, so its longest file ran alone at the end while the other worker sat idle; started
 * first, it runs beside the rest. On a clean clone vitest has no timings to order by.
 */
import { BaseSequencer, type TestSpecification } from "vitest/node";

export default class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const slow = (spec: TestSpecification): number => (spec.project.name === "slow" ? 0 : 1);
    return [...sorted].sort((a, b) => slow(a) - slow(b));
  }
}
