/**
 * Running an event's chain (invoke/invoke.ts calls it): the hooks in order under the chain's limits
 * (hooks per event, payload size, the chain's deadline), task events stopping at the first run that
 * counts as neither a pass nor a defer; a patch verdict's kept part laid over the task the later hooks
 * see (invoke/patches.ts); a chain refused by trust as one closed error naming every problem; and
 * the gate's hash (and the trusted one, when they differ) on each result. A file runs through
 * runner/run.ts under the run's timeout, an HTTP handler through runner/http.ts under its own
 * `timeoutMs`; both under the same deadline, failure mode and run ids (`<runId>.N`).
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import { type HookInvocation, stopsAtDenial } from "../contract/contract.js";
import { HooksError } from "../contract/errors.js";
import { type RunResult, prepareContext, utf8Length } from "../contract/hook-run.js";
import { countsAsPass } from "../policy/decide.js";
import { isHandlerGate, type ChainDiscovery, type ChainHook } from "../runner/chain.js";
import { launcherFor } from "../runner/discover.js";
import { runHandler } from "../runner/http.js";
import { notRunResult, runHook } from "../runner/run.js";
import { gateFingerprint, type ChainTrust, type TrustProblem, type TrustRecord } from "../runner/trust.js";
import { DEFAULT_SWEEP, type FailureMode, type HookLimits } from "../settings/hooks-config.js";
import type { HookRun, InvokeRequest } from "./invoke.js";
import { takePatch } from "./patches.js";

/**
 * The run of an event whose chain was refused before anything started: a closed error of the first
 * problem's kind, naming every problem and how to approve the change.
 */
export function refusedRun(req: InvokeRequest, chain: ChainDiscovery, layers: { global: string; team: string | null }, problems: TrustProblem[], now: () => Date): HookRun {
  const [first] = problems;
  if (!first) throw new HooksError("E_INTERNAL", "refusedRun without a problem");
  const hook = chain.hooks.find((h) => h.hook.hookPath === first.path) ?? hookAt(first.path, layers);
  const approvable = problems.some((p) => p.kind !== "insecure_hook");
  const how = approvable ? `; the team lead approves a change with: pi-teams-hooks trust --team-dir ${req.identity.teamDir} ${problems.filter((p) => p.kind !== "insecure_hook").map((p) => p.path).join(" ")}` : "";
  const message = `${first.kind}: ${problems.map((p) => p.reason).join("; ")}${how}`;
  const result: RunResult = { ...notRunResult(hook.hook, req.runId ?? randomUUID(), first.kind, message), trustProblems: problems.map((p) => ({ ...p })) };
  return { hook, result, startedAt: now().toISOString(), logFile: null };
}

/** A chain hook for a gate path that is not in the chain (a trusted gate that no longer runs). */
function hookAt(file: string, layers: { global: string; team: string | null }): ChainHook {
  // A trusted handler no longer declared: named, never run.
  if (isHandlerGate(file)) return { name: file, layer: "team", kind: "http", handler: null, hook: { hookPath: file, command: "POST", args: [] } };
  const dir = path.dirname(file);
  const inDotD = dir.endsWith(".d");
  const root = inDotD ? path.dirname(dir) : dir;
  const { launch } = launcherFor(file);
  return {
    name: path.basename(file), // as runner/chain.ts names its hooks; gateName() gives the `on_<event>.d/NAME` form
    layer: layers.team !== null && root === layers.team ? "team" : "global",
    hook: { hookPath: file, ...launch(file) },
    kind: inDotD ? "chain" : "v1",
  };
}

/**
 * What a chain did: its runs, and `interrupted` when the caller began to stop (`req.stopping`) before
 * a later hook started: that hook and the rest did not start, and the event is not settled (no
 * policy, no log): the leader leaves it in flight, and its next start runs the chain again.
 */
export interface ChainRun {
  runs: HookRun[];
  interrupted: string | null;
}

/**
 * Runs the chain under its limits; task events stop at the first run that does not count as a pass,
 * but go on past a defer, so that a later denial wins (deny > defer > patch > allow). A patch verdict
 * passes: its kept part is laid over the task the later hooks see (invoke/patches.ts).
 */
export async function runChain(
  req: InvokeRequest,
  hooks: ChainHook[],
  invocation: HookInvocation,
  ctx: { mode: FailureMode; limits: Readonly<HookLimits>; now: () => Date; trust: ChainTrust | null },
): Promise<ChainRun> {
  const { limits } = ctx;
  const refused = (hook: ChainHook, message: string): ChainRun => ({
    runs: [{ hook, result: notRunResult(hook.hook, req.runId ?? randomUUID(), "limit", message), startedAt: ctx.now().toISOString(), logFile: null }],
    interrupted: null,
  });
  const [head] = hooks;
  if (!head) return { runs: [], interrupted: null };
  if (hooks.length > limits.maxHooksPerEvent) {
    return refused(head, `${hooks.length} hooks for ${req.event}; the limit is ${limits.maxHooksPerEvent} (hooks.limits.maxHooksPerEvent) — none ran`);
  }
  // Built once for the whole chain (again only after a patch): the payload check here, then every
  // hook's stdin, file and variables.
  let context = prepareContext(invocation);
  let seen = invocation;
  const payload = utf8Length(context.json);
  if (payload > limits.maxPayloadBytes) {
    return refused(head, `the context document is ${payload} bytes; the limit is ${limits.maxPayloadBytes} (hooks.limits.maxPayloadBytes) — none ran`);
  }

  const runs: HookRun[] = [];
  const deadline = performance.now() + limits.chainDeadlineMs;
  for (const [index, hook] of hooks.entries()) {
    // A stop lets the hook under way finish, but starts no other: a handler's request could add its whole timeout.
    if (index > 0 && req.stopping?.()) {
      return { runs, interrupted: `the leader is stopping: ${hook.name} (hook ${index + 1} of ${hooks.length}) and the hooks after it did not start` };
    }
    const left = Math.floor(deadline - performance.now());
    if (left <= 0) {
      runs.push(...refused(hook, `the chain of ${req.event} ran past its deadline of ${limits.chainDeadlineMs}ms (hooks.limits.chainDeadlineMs); ${hook.name} and later hooks did not run`).runs);
      break;
    }
    // A handler has a timeout of its own (hooks.handlers[].timeoutMs); a file the run's timeout.
    const ownTimeoutMs = hook.kind === "http" ? (hook.handler?.timeoutMs ?? req.timeoutMs) : req.timeoutMs;
    const timeoutMs = Math.min(ownTimeoutMs, left);
    const startedAt = ctx.now().toISOString();
    // The chain's later hooks run as `<runId>.2`, `<runId>.3`…: a restarted leader finds them all.
    const runId = req.runId ? (index === 0 ? req.runId : `${req.runId}.${index + 1}`) : randomUUID();
    let result =
      hook.kind === "http"
        ? hook.handler
          ? await runHandler(hook.handler, seen, {
              runId,
              timeoutMs,
              env: req.env,
              context,
              eventKey: req.key,
              attempt: req.attempt ?? 1,
              ...(req.notBefore ? { notBefore: req.notBefore } : {}),
            })
          : notRunResult(hook.hook, runId, "internal", `${hook.name} is not declared in config.json hooks.handlers`)
        : await runHook(hook.hook, seen, {
            cwd: req.cwd,
            timeoutMs,
            baseEnv: req.env,
            escapeeScan: req.sweep ?? DEFAULT_SWEEP,
            ...(req.exitCodes ? { exitCodes: req.exitCodes } : {}),
            runId,
            eventKey: req.key,
            attempt: req.attempt ?? 1,
            context,
            ...(req.onSpawn ? { onSpawn: (info: { pid: number; runId: string }) => req.onSpawn?.({ ...info, hook: hook.name }) } : {}),
            ...(req.notBefore ? { notBefore: req.notBefore } : {}),
          });
    if (result.timedOut && timeoutMs < ownTimeoutMs) {
      // Cut short by the chain's deadline, not by its own timeout: the limit is what failed.
      result = { ...result, errorKind: "limit", error: `stopped at the chain deadline of ${limits.chainDeadlineMs}ms (hooks.limits.chainDeadlineMs)` };
    }
    const taken = takePatch(result, seen.completedTask ?? null, { event: req.event, writableFields: req.writableFields ?? null });
    if (taken.kept) {
      seen = { ...seen, completedTask: taken.task };
      context = prepareContext(seen);
    }
    result = withHashes(taken.result, hook, ctx.trust, req.trust?.record ?? null);
    runs.push({ hook, result, startedAt, logFile: null, ...(taken.kept ? { patch: taken.kept } : {}) });
    if (stopsAtDenial(req.event) && !countsAsPass(result, ctx.mode) && result.outcome !== "deferred") break;
    const next = hooks[index + 1];
    const grown = taken.kept && next ? utf8Length(context.json) : 0;
    if (next && grown > limits.maxPayloadBytes) {
      runs.push(...refused(next, `the context document, patched by the hooks before, is ${grown} bytes; the limit is ${limits.maxPayloadBytes} (hooks.limits.maxPayloadBytes); ${next.name} and later hooks did not run`).runs);
      break;
    }
  }
  return { runs, interrupted: null };
}


/** The gate's hash as it ran (a handler's: of its definition), and the trusted one when they differ (a change run with --trust-changes). */
function withHashes(result: RunResult, hook: ChainHook, trust: ChainTrust | null, record: TrustRecord | null): RunResult {
  const sha = trust?.hashes.get(hook.hook.hookPath) ?? shaOf(hook);
  if (sha === undefined) return result;
  const trusted = record?.gates[hook.hook.hookPath]?.sha256;
  return { ...result, hookSha256: sha, ...(trusted && trusted !== sha ? { trustedSha256: trusted } : {}) };
}

function shaOf(hook: ChainHook): string | undefined {
  const fp = gateFingerprint(hook);
  return "problem" in fp ? undefined : fp.sha256;
}

