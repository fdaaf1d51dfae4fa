/**
 * Patch verdicts across a chain (docs/hook-contract.md, "Patch verdicts"). A run that answers `patch`
 * passes; its patch is cut to the writable fields at once (what falls outside is named in the run's
 * `patchRejected`), and the rest is laid over the task the later hooks of the chain see. The chain's
 * outcome folds deny > defer > patch > allow:
 *
 *   a denial (or a closed error)  → no patch is written: each run with one says why (`patchIgnored`)
 *   a defer (a held gate)         → the patches are kept with the deferral and written only if the
 *                                   decision is allow (event/deferral-decision.ts)
 *   passed                        → the patches, in chain order, are written under the task lock with
 *                                   the gate's metadata (event/remediate.ts), and each run names the
 *                                   paths written (`patchApplied`)
 *
 * An event without a task (`idle`, a task file gone) ignores a patch, and says so; so does a start
 * gate (`task_started`), which judges a claim and leaves the task as the worker wrote it.
 */
import { type HookEventName, policyApplies } from "../contract/contract.js";
import type { RunResult } from "../contract/hook-run.js";
import type { FailureMode } from "../settings/team-settings.js";
import { countsAsPass } from "../policy/decide.js";
import { type GatePlace, heldFor } from "../policy/gate-life.js";
import type { AfterGate } from "./after-gate.js";
import { filterPatch, patchTask, type JsonObject } from "../contract/merge-patch.js";
import type { Task } from "../contract/team-files.js";

/** The part of one run's patch inside the writable fields, and the dotted paths it writes. */
export interface KeptPatch {
  patch: JsonObject;
  paths: string[];
}

/**
 * One run of a chain, its patch verdict taken in: the run's result (with `patchRejected`, or made an
 * invalid verdict when the patch would leave no valid task), the kept part of its patch, and the task
 * the next hook sees. A run that did not answer `patch` comes back as it was.
 */
export function takePatch(
  result: RunResult,
  task: Task | null,
  ctx: { event: HookEventName; writableFields: readonly string[] | null },
): { result: RunResult; kept: KeptPatch | null; task: Task | null } {
  // A shadow gate's patch is never taken (event/chain-run.ts shadowed says so on its run).
  const patch =
    result.outcome === "passed" && !result.shadow && result.verdict?.decision === "patch"
      ? result.verdict.patch
      : undefined;
  if (patch === undefined) return { result, kept: null, task };
  // A start gate judges a claim; it does not change the task (nor does idle, which has none).
  if (!policyApplies(ctx.event)) {
    const why =
      ctx.event === "idle"
        ? "idle has no task to patch: the patch was ignored"
        : `${ctx.event} does not take patches: the patch was ignored`;
    return { result: { ...result, patchIgnored: why }, kept: null, task };
  }
  if (task === null)
    return {
      result: { ...result, patchIgnored: "the task could not be read: the patch was ignored" },
      kept: null,
      task,
    };
  const filtered = filterPatch(patch, ctx.writableFields);
  const noted: RunResult = filtered.rejected.length > 0 ? { ...result, patchRejected: filtered.rejected } : result;
  if (filtered.applied.length === 0)
    return {
      result: { ...noted, patchIgnored: "nothing of the patch is inside the writable fields" },
      kept: null,
      task,
    };
  const next = patchTask(task, filtered.patch);
  if (!next.ok)
    return {
      result: { ...noted, outcome: "error", errorKind: "invalid_verdict", error: `invalid patch: ${next.problem}` },
      kept: null,
      task,
    };
  return { result: noted, kept: { patch: filtered.patch, paths: filtered.applied }, task: next.task };
}

/** A chain's run as far as patches go (event/invoke.ts `HookRun`). */
interface PatchedRun {
  result: RunResult;
  patch?: KeptPatch;
}

/**
 * The run that decides a chain (deny > defer > patch > allow): the first that counts as neither a pass
 * nor a defer (a denial, a closed error), else the first defer, else the last run; undefined: none ran.
 */
export function decidingRun<R extends PatchedRun>(runs: readonly R[], mode: FailureMode): R | undefined {
  return (
    runs.find((r) => !countsAsPass(r.result, mode) && r.result.outcome !== "deferred") ??
    runs.find((r) => r.result.outcome === "deferred") ??
    runs[runs.length - 1]
  );
}

/** What became of a settled chain's patches (see the header). */
export function patchFate(s: {
  /** Where the gate's run put the event (event/invoke.ts InvokeOutcome.counted). */
  counted: GatePlace;
  held: boolean;
  policy: boolean;
  remediation: AfterGate | null;
}): { applied: true } | { applied: false; ignored: string } {
  if (s.counted.state === "failed") return { applied: false, ignored: "the chain was denied: the patch was discarded" };
  if (heldFor(s.counted) !== null)
    return { applied: false, ignored: "the gate could not judge the work (held): the patch was not written" };
  if (s.counted.state === "held") {
    return {
      applied: false,
      ignored: s.held
        ? "the gate is held: the patch is kept with the deferral and written only if the decision is allow"
        : "the gate deferred with no policy to hold it: the patch was not written",
    };
  }
  if (!s.policy || s.remediation === null)
    return {
      applied: false,
      ignored: "no failure policy applied (run without --apply-policy): the patch was not written",
    };
  const patch = s.remediation.patch;
  if (patch?.written) return { applied: true };
  return { applied: false, ignored: patch?.why ?? "the patch was not written" };
}

/** The kept patches of a chain's runs, in chain order. */
export function chainPatches(runs: readonly PatchedRun[]): JsonObject[] {
  return runs.flatMap((run) => (run.patch ? [run.patch.patch] : []));
}

/**
 * The runs, each with a kept patch saying what became of it: the paths written (`applied: true`), or
 * why nothing was (`ignored`). New runs; those given are left as they are (a settle tried again says it again).
 */
export function notePatches<R extends PatchedRun>(
  runs: readonly R[],
  fate: { applied: true } | { applied: false; ignored: string },
): R[] {
  return runs.map((run) => {
    if (!run.patch) return run;
    const { patchApplied: _applied, patchIgnored: _ignored, ...rest } = run.result;
    return {
      ...run,
      result: fate.applied ? { ...rest, patchApplied: run.patch.paths } : { ...rest, patchIgnored: fate.ignored },
    };
  });
}
