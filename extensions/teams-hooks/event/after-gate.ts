/**
 * What follows an event's gate, once its hooks have run (event/invoke.ts settles it, as often as it
 * takes): the failure policy of a task's completion or failure (policy/decide.ts, remediate.ts; a
 * held gate's `deferred` record), or a start gate's answer to a claim (event/start-gate.ts). Each
 * gives what the settling, the outcome and the logs need, in one shape.
 */
import { type PolicyEventName, policyApplies as eventHasPolicy } from "../contract/contract.js";
import { HooksError } from "../contract/errors.js";
import type { RunResult } from "../contract/hook-run.js";
import { countsAsPass, decide, deferPlan, holdPlan } from "../policy/decide.js";
import { policyRecordOf, remediate, type RemediationDone } from "./remediate.js";
import { applyStartGate, startGateRecord } from "./start-gate.js";
import { gateName } from "../gates/chain.js";
import type { FailureMode } from "../settings/team-settings.js";
import { deferredSummary, describeFailure, forTheTeam, gatePassedSummary } from "../text/messages.js";
import type { InvokeRequest, Ran } from "./invoke.js";
import { chainPatches } from "./patches.js";
import type { RemediationPlan } from "../policy/plan.js";
import { heldFor } from "../policy/gate-life.js";
import { actionsText } from "../text/actions.js";

/** Whether the request asks for something after the gate: the failure policy, or a start gate's answer. */
export function afterGateApplies(req: InvokeRequest): boolean {
  return policyApplies(req) || startApplies(req);
}

/** The failure policy applies (`applyPolicy`, a task's completion or failure): also what a held gate needs. */
export function policyApplies(req: InvokeRequest): req is InvokeRequest & { taskId: string; event: PolicyEventName } {
  return req.applyPolicy && eventHasPolicy(req.event) && req.taskId !== null;
}

/** A claim judged with its answer applied (`applyPolicy`): a denial puts it back (event/start-gate.ts). */
function startApplies(req: InvokeRequest): req is InvokeRequest & { taskId: string; event: "task_started" } {
  return req.applyPolicy && req.event === "task_started" && req.taskId !== null;
}

/** What the step after the gate did, as settle and the logs need it: the failure policy's, or a start gate's. */
export interface AfterGate {
  summary: string;
  actions: string[];
  refused: string[];
  errors: string[];
  complete: boolean;
  /** The log's `policy` block. */
  record: Record<string, unknown>;
  /** What became of the chain's patches (event/remediate.ts), when it had any. */
  patch?: RemediationDone["patch"];
  /** What the leader should remember of the task's gate life (event/remediate.ts). */
  remembered?: RemediationDone["remembered"];
  /** The follow-up task the policy made (or found made by an earlier attempt); absent when none. */
  followupTaskId?: string;
  /** Where the policy moved the event's gate life (policy/gate-life.ts next); absent for a start gate. */
  gate?: RemediationPlan["gate"];
}

/**
 * Applies what follows the gate of `ran`: the policy, or a start gate's answer. Never throws for what it finds on disk.
 */
export function applyAfterGate(ran: Ran): Promise<AfterGate> {
  return policyApplies(ran.req) ? applyPolicy(ran) : applyStart(ran);
}

async function applyStart(ran: Ran): Promise<AfterGate> {
  const { req, deciding } = ran;
  const { identity, settings } = req.setup;
  if (!startApplies(req)) throw new HooksError("E_INTERNAL", "applyStart without a claim");
  const input = {
    teamDir: identity.teamDir,
    taskListId: identity.taskListId,
    taskId: req.taskId,
    key: req.key,
    leadName: identity.leadName,
    now: ran.now().toISOString(),
    sent: ran.sent,
    lockTimeoutMs: req.runtime?.lockTimeoutMs,
    passed: ran.counted.state === "passed",
    failureMode: ran.mode,
    summary: summarize(deciding.result, ran.mode, settings.timeoutMs.value),
    hookName: gateName(deciding.hook, req.event),
    code: deciding.result.verdict?.code,
    member: req.member,
    logFile: ran.decidingLog,
    round: req.memory?.round(req.taskId),
  };
  const done = await applyStartGate(input);
  // A denial put the claim back into the next gate round: the leader remembers it.
  const round = done.plan.kind === "revert" ? done.plan.next.metadata?.qualityGateRound : undefined;
  return {
    ...done,
    record: startGateRecord(input, done),
    ...(typeof round === "number" ? { remembered: { round: { taskId: req.taskId, round } } } : {}),
  };
}

async function applyPolicy(ran: Ran): Promise<AfterGate> {
  const { req, deciding } = ran;
  const { identity, settings } = req.setup;
  if (!policyApplies(req)) throw new HooksError("E_INTERNAL", "applyPolicy without a policy");
  const { taskId, event } = req;
  const policy = settings.values;
  const decidedAt = ran.now().toISOString();
  const held = ran.held;
  const hold = heldFor(ran.counted);
  const hookName = gateName(deciding.hook, event);
  const done = await remediate(
    {
      teamDir: identity.teamDir,
      taskListId: identity.taskListId,
      taskId,
      key: req.key,
      leadName: identity.leadName,
      now: decidedAt,
      sent: ran.sent,
      lockTimeoutMs: req.runtime?.lockTimeoutMs,
      // A chain that passed writes its patches with the gate's metadata; a denial or a hold none.
      ...(ran.counted.state === "passed" ? { taskPatches: chainPatches(ran.runs) } : {}),
      memory: req.memory,
      // Only a judgement spends the tree's budget: a hold (deferral, approval, fault) never does.
      ...(held || hold ? {} : { maxBudget: policy.maxReopensPerTask }),
    },
    (fresh, tree) =>
      held
        ? deferPlan({
            event,
            key: req.key,
            taskId,
            result: deciding.result,
            task: fresh,
            hookName: held.hook.gate,
            now: decidedAt,
            deferredRunId: held.runId,
            expiresAt: held.expiresAt,
          })
        : hold
          ? holdPlan({
              event,
              key: req.key,
              result: deciding.result,
              task: fresh,
              hookName,
              member: req.member,
              leadName: identity.leadName,
              now: decidedAt,
              cause: hold,
              summary: forTheTeam(describeFailure(deciding.result, settings.timeoutMs.value)),
              logFile: ran.decidingLog,
            })
          : decide({
              event,
              key: req.key,
              taskId,
              result: deciding.result,
              task: fresh,
              policy,
              hookName,
              member: req.member,
              leadName: identity.leadName,
              now: decidedAt,
              timeoutMs: settings.timeoutMs.value,
              failureMode: ran.mode,
              logFile: ran.decidingLog,
              budget: tree.budget,
              round: req.memory?.round(taskId),
              reassign: settings.reassignOnReopen.value,
            }),
  );
  return {
    summary: done.plan.summary,
    actions: actionsText(done.actions),
    refused: done.refused,
    errors: done.errors,
    complete: done.complete,
    record: policyRecordOf(policy, ran.mode, done),
    remembered: done.remembered,
    patch: done.patch,
    followupTaskId: done.followupTaskId ?? undefined,
    gate: done.plan.gate,
  };
}

/** The summary of the deciding run when no policy wrote one (and a start gate's reason). */
export function summarize(result: RunResult, mode: FailureMode, timeoutMs: number): string {
  if (result.outcome === "passed") return gatePassedSummary(result.durationMs);
  if (result.outcome === "deferred") return deferredSummary(result.verdict);
  if (countsAsPass(result, mode)) return `allowed (failure mode open): ${describeFailure(result, timeoutMs)}`;
  return describeFailure(result, timeoutMs);
}
