/**
 * Gates on trial (`mode=shadow` on a gate's settings line; docs/writing-hooks.md, "Shadow mode"):
 * they run and are logged, and their verdict is never enforced. What a shadow gate would have denied
 * is the one thing written to the task, in `qualityGateShadow*` metadata under the task lock, so
 * the team sees what the gate would have done before it bites; no policy, no patch, no message.
 * Likewise an error that was not enforced (`nonBlockingError`): the event passed, and says why not
 * plainly.
 */
import { type HookEventName, isTaskEvent } from "../contract/contract.js";
import { describeError } from "../contract/errors.js";
import type { RunResult } from "../contract/hook-run.js";
import { gateName } from "../gates/chain.js";
import { updateTask } from "../team/tasks.js";
import { deferredSummary, describeFailure, forTheTeam } from "../text/messages.js";
import type { HookRun, InvokeRequest } from "./invoke.js";
import { countsAsPass } from "../policy/decide.js";
import type { FailureMode } from "../settings/team-settings.js";
import type { GatePlace } from "../policy/gate-life.js";

/** A run that is not enforced: skipped by its matchers, or a shadow gate's. */
export function observes(result: RunResult): boolean {
  return result.skipped !== undefined || result.shadow !== undefined;
}

/**
 * Whether no run of the chain was enforced (every gate skipped by its matchers, or in shadow mode): then nothing
 * follows the gate.
 */
export function noGateInForce(runs: readonly HookRun[]): boolean {
  return runs.every((run) => observes(run.result));
}

/**
 * The first error of a passed event's chain that did not block it: a Claude Code gate's non-blocking
 * error (`result.nonBlocking`), or an error under failure mode `open`. What the event's "passed" would
 * hide, as its summary says a failure (`exit code 1 • linter crashed`), after the gate's name when
 * another run decided (`on_idle.d/10-lint: …`). Null when there is none, or when the event is not
 * shown as a pass (an error that decided under `open` says so itself).
 */
export function nonBlockingError(
  runs: readonly HookRun[],
  deciding: HookRun,
  ctx: {
    counted: GatePlace;
    mode: FailureMode;
    event: HookEventName;
    timeoutMs: number;
  },
): string | null {
  if (ctx.counted.state !== "passed" || deciding.result.outcome !== "passed") return null;
  const letThrough = (r: RunResult): boolean =>
    r.nonBlocking !== undefined || (r.outcome === "error" && countsAsPass(r, ctx.mode));
  const run = runs.find((r) => !observes(r.result) && letThrough(r.result));
  if (!run) return null;
  const what = describeFailure(run.result, ctx.timeoutMs);
  return run === deciding ? what : `${gateName(run.hook, ctx.event)}: ${what}`;
}

/** The shadow runs that would have denied, in chain order. */
function shadowDenials(runs: readonly HookRun[]): HookRun[] {
  return runs.filter((run) => run.result.shadow?.wouldDeny === true);
}

/**
 * Writes the first shadow denial of the chain to the task's `qualityGateShadow*` metadata, when the
 * event has a task and the request applies the policy (the leader, `run --apply-policy`); a count that
 * grows once per event key. Returns the action taken, or a problem; never throws.
 */
export async function noteShadowDenial(
  req: InvokeRequest,
  runs: readonly HookRun[],
  now: () => Date,
): Promise<{ action: string | null; problem: string | null }> {
  const [first] = shadowDenials(runs);
  if (!first || !req.applyPolicy || req.taskId === null || !isTaskEvent(req.event))
    return { action: null, problem: null };
  const shadow = first.result.shadow;
  const hook = gateName(first.hook, req.event);
  // What it said, as the gate's summary would have said it: a defer by its reason, anything else as a failure.
  const said =
    shadow?.outcome === "deferred"
      ? deferredSummary(first.result.verdict)
      : describeFailure(
          { ...first.result, ...(shadow?.error ? { error: shadow.error } : {}) },
          req.setup.settings.timeoutMs.value,
        );
  const summary = forTheTeam(said);
  try {
    const updated = await updateTask(
      req.setup.identity.teamDir,
      req.setup.identity.taskListId,
      req.taskId,
      (task) => {
        const metadata = task.metadata ?? {};
        if (metadata.qualityGateShadowKey === req.key) return undefined; // this event's denial is written already
        const count = typeof metadata.qualityGateShadowCount === "number" ? metadata.qualityGateShadowCount + 1 : 1;
        return {
          ...task,
          metadata: {
            ...metadata,
            qualityGateShadowHook: hook,
            qualityGateShadowOutcome: shadow?.outcome ?? "failed",
            qualityGateShadowSummary: summary,
            qualityGateShadowAt: now().toISOString(),
            qualityGateShadowKey: req.key,
            qualityGateShadowCount: count,
          },
        };
      },
      { label: `shadow gate ${req.key}`, timeoutMs: req.runtime?.lockTimeoutMs },
    );
    if (!updated.ok)
      return {
        action: null,
        problem:
          updated.problem.kind === "missing"
            ? null
            : `shadow verdict of ${hook} not written: ${updated.problem.message}`,
      };
    return { action: `shadow: ${hook} would have denied`, problem: null };
  } catch (error) {
    return { action: null, problem: `shadow verdict of ${hook} not written: ${describeError(error)}` };
  }
}
