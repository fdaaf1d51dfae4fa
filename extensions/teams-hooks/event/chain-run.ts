/**
 * Running an event's chain (event/invoke.ts calls it): the hooks in order under the chain's limits
 * (hooks per event, payload size, the chain's deadline), task events stopping at the first run that
 * counts as neither a pass nor a defer; a patch verdict's kept part laid over the task the later hooks
 * see (event/patches.ts); a chain refused by trust as one closed error naming every problem; and
 * the gate's hash (and the trusted one, when they differ) on each result. A file runs through
 * runner/run-hook.ts under the run's timeout, an HTTP handler through runner/http.ts under its own
 * `timeoutMs`; both under the same deadline, failure mode and run ids (`<runId>.N`).
 */
import { createHash, randomUUID } from "node:crypto";
import path from "node:path";
import { type HookInvocation, stopsAtDenial } from "../contract/contract.js";
import { HooksError } from "../contract/errors.js";
import { type PreparedContext, type RunResult, blankResult, prepareContext, utf8Length } from "../contract/hook-run.js";
import {
  type ContextView,
  confidentialInvocation,
  isFullView,
  shownEventKey,
  viewKey,
} from "../contract/projection.js";
import { countsAsPass } from "../policy/decide.js";
import {
  gateKey,
  gateName,
  isBindingGate,
  isHandlerGate,
  type ChainDiscovery,
  type ChainHook,
} from "../gates/chain.js";
import { launcherFor, readHookSettings, settingsOfBytes } from "../gates/discover.js";
import { runHandler } from "../runner/http.js";
import { notRunResult, runHook, type RunHookOptions } from "../runner/run-hook.js";
import { userStateDir } from "../trust/trust-store.js";
import { teamRedactor } from "../runner/redact.js";
import {
  gateFingerprint,
  type ChainTrust,
  type GateSnapshot,
  type TrustProblem,
  type TrustRecord,
} from "../trust/trust.js";
import { type FailureMode, type TeamSettings, pointCanDefer, settingValues } from "../settings/team-settings.js";
import { handlerEnabled, type HandlerDef } from "../settings/handlers.js";
import { describeSettings, unmatched, type HookSettings } from "../settings/hook-line.js";
import { projectionFor, secretEnvNames, type PrivacySettings } from "../settings/privacy.js";
import type { HookRun, InvokeRequest } from "./invoke.js";
import { takePatch } from "./patches.js";
import { APPROVAL_HINT } from "../text/messages.js";
import { allHandlers, readGlobalHandlers } from "../gates/global-handlers.js";

/**
 * The run of an event whose chain was refused before anything started: a closed error of the first
 * problem's kind, naming every problem and how to approve the change.
 */
export function refusedRun(
  req: InvokeRequest,
  chain: ChainDiscovery,
  layers: { global: string; team: string | null },
  problems: TrustProblem[],
  now: () => Date,
): HookRun {
  const [first] = problems;
  if (!first) throw new HooksError("E_INTERNAL", "refusedRun without a problem");
  const hook = chain.hooks.find((h) => gateKey(h) === first.path) ?? hookAt(first.path, layers);
  const approvable = problems.some((p) => p.kind !== "insecure_hook");
  const how = approvable
    ? `${APPROVAL_HINT}pi-teams-hooks trust --team-dir ${req.setup.identity.teamDir} ${problems
        .filter((p) => p.kind !== "insecure_hook")
        .map((p) => p.path)
        .join(" ")}`
    : "";
  const message = `${first.kind}: ${problems.map((p) => p.reason).join("; ")}${how}`;
  const result: RunResult = {
    ...notRunResult(hook.hook, req.runId ?? randomUUID(), first.kind, message),
    trustProblems: problems.map((p) => ({ ...p })),
  };
  return { hook, result, startedAt: now().toISOString(), logFile: null };
}

/** A chain hook for a gate path that is not in the chain (a trusted gate that no longer runs). */
function hookAt(file: string, layers: { global: string; team: string | null }): ChainHook {
  // A trusted handler no longer declared: named, never run.
  if (isHandlerGate(file))
    return {
      name: file,
      layer: "team",
      kind: "http",
      handler: null,
      hook: { hookPath: file, command: "POST", args: [] },
    };
  // A trusted file binding removed, or its file gone: named, never run.
  if (isBindingGate(file))
    return { name: file, layer: "team", kind: "binding", hook: { hookPath: file, command: file, args: [] } };
  const dir = path.dirname(file);
  const inDotD = dir.endsWith(".d");
  const root = inDotD ? path.dirname(dir) : dir;
  const how = launcherFor(file).launch(file);
  return {
    name: path.basename(file), // as gates/chain.ts names its hooks; gateName() gives the `on_<event>.d/NAME` form
    layer: layers.team !== null && root === layers.team ? "team" : "global",
    // A gate that cannot start here (a .ts without tsx) is named as node would start it: it never runs.
    hook: { hookPath: file, ...("unavailable" in how ? { command: process.execPath, args: [file] } : how) },
    kind: inDotD ? "chain" : "v1",
  };
}

/**
 * What a chain did: its runs, and `interrupted` when the caller began to stop (`req.stopping`) before
 * a later hook started: that hook and the rest did not start, and the event is not settled (no
 * policy, no log): the leader leaves it in flight, and its next start runs the chain again.
 */
interface ChainRun {
  runs: HookRun[];
  interrupted: string | null;
}

/**
 * Runs the chain under its limits; task events stop at the first run that does not count as a pass,
 * but go on past a defer, so that a later denial wins (deny > defer > patch > allow). A patch verdict
 * passes: its kept part is laid over the task the later hooks see (event/patches.ts).
 */
export async function runChain(
  req: InvokeRequest,
  chainHooks: readonly ChainHook[],
  invocation: HookInvocation,
  ctx: { mode: FailureMode; now: () => Date; trust: ChainTrust | null; snapshots?: ReadonlyMap<string, GateSnapshot> },
): Promise<ChainRun> {
  const teamSettings = req.setup.settings;
  const limits = settingValues(teamSettings.limits);
  const runTimeoutMs = teamSettings.timeoutMs.value;
  // Each file gate's settings line, read once, from the bytes that run (its snapshot). Shadow gates
  // run after the enforced ones: a gate on trial can then neither delay them nor spend their
  // deadline, and it still runs after a denial.
  const owns = new Map(
    chainHooks.map(
      (h) => [h, h.kind === "http" ? null : ownSettings(h, req.event, ctx.snapshots?.get(h.hook.hookPath))] as const,
    ),
  );
  const settingsOf = (h: ChainHook): HookSettings | null => {
    const own = owns.get(h);
    return own && "settings" in own ? own.settings : null;
  };
  const isShadow = (h: ChainHook): boolean => settingsOf(h)?.mode === "shadow";
  const hooks = [...chainHooks.filter((h) => !isShadow(h)), ...chainHooks.filter(isShadow)];
  const refused = (hook: ChainHook, message: string): ChainRun => ({
    runs: [
      {
        hook,
        result: notRunResult(hook.hook, req.runId ?? randomUUID(), "limit", message),
        startedAt: ctx.now().toISOString(),
        logFile: null,
      },
    ],
    interrupted: null,
  });
  const [head] = hooks;
  if (!head) return { runs: [], interrupted: null };
  if (hooks.length > limits.maxHooksPerEvent) {
    return refused(
      head,
      `${hooks.length} hooks for ${req.event}; the limit is ${limits.maxHooksPerEvent} (${limitField(teamSettings, "maxHooksPerEvent")}) — none ran`,
    );
  }
  // One document per distinct view (a projection, a confidential handler), built before anything runs
  // (again after a patch): the payload check here, then every hook's stdin, file and variables, or a
  // handler's body.
  const { privacy } = teamSettings;
  let seen = invocation;
  let shown = documentsShown(hooks, req.event, seen, privacy, limits.maxPayloadBytes);
  if (typeof shown === "number") {
    return refused(
      head,
      `the context document is ${shown} bytes; the limit is ${limits.maxPayloadBytes} (${limitField(teamSettings, "maxPayloadBytes")}) — none ran`,
    );
  }
  // What every hook says goes through it before it is kept: the team's secrets and the credential shapes.
  const redact = teamRedactor(
    req.env,
    secretEnvNames(allHandlers(req.setup.hooksDir, teamSettings.handlers), privacy.redactEnv),
  );

  const runs: HookRun[] = [];
  const deadline = performance.now() + limits.chainDeadlineMs;
  let denied = false;
  for (const [index, hook] of hooks.entries()) {
    // After a denial only the gates on trial still run (see above).
    if (denied && !isShadow(hook)) continue;
    // A stop lets the hook under way finish, but starts no other: a handler's request could add its whole timeout.
    if (index > 0 && req.stopping?.()) {
      return {
        runs,
        interrupted: `the leader is stopping: ${hook.name} (hook ${index + 1} of ${hooks.length}) and the hooks after it did not start`,
      };
    }
    // A handler has a timeout of its own (hooks.handlers[].timeoutMs); a file its settings line's, else the run's.
    const own = owns.get(hook) ?? null;
    const settings = settingsOf(hook);
    // Matchers first: a gate that would be skipped is skipped, never refused for a deadline it would not use.
    const skip =
      hook.kind === "binding" && hook.bound?.settings?.enabled === false
        ? `disabled: binding ${hook.bound.name} (its settings.enabled is false)`
        : settings
          ? unmatched(settings.match, { member: seen.memberName ?? null, task: seen.completedTask ?? null })
          : hook.kind === "http" && hook.handler && !handlerEnabled(hook.handler)
            ? hook.binding
              ? `disabled: binding ${hook.handler.name} (its settings.enabled is false)`
              : hook.layer === "global"
                ? globalHandlerDisabledReason(hook.handler, req.setup.hooksDir)
                : handlerDisabledReason(hook.handler, teamSettings.handlers)
            : null;
    const left = Math.floor(deadline - performance.now());
    if (left <= 0 && skip === null) {
      const late = refused(
        hook,
        `the chain of ${req.event} ran past its deadline of ${limits.chainDeadlineMs}ms (${limitField(teamSettings, "chainDeadlineMs")}); ${hook.name} and later hooks did not run`,
      ).runs;
      runs.push(...late.map((run) => (isShadow(hook) ? { ...run, result: shadowed(run.result, ctx.mode) } : run)));
      break;
    }
    const ownTimeoutMs =
      hook.kind === "http"
        ? (hook.handler?.timeoutMs ?? runTimeoutMs)
        : ((hook.kind === "binding" ? hook.bound?.settings?.timeoutMs : undefined) ??
          settings?.timeoutMs ??
          runTimeoutMs);
    const timeoutMs = Math.min(ownTimeoutMs, Math.max(left, 1));
    const startedAt = ctx.now().toISOString();
    // The chain's later hooks run as `<runId>.2`, `<runId>.3`…: a restarted leader finds them all.
    const runId = req.runId ? (index === 0 ? req.runId : `${req.runId}.${index + 1}`) : randomUUID();
    // Never a fallback to the whole document: a hook without its own would see what it may not.
    const context = shown[index];
    if (!context) throw new HooksError("E_INTERNAL", `no context document prepared for ${hook.name}`);
    let result =
      own && "error" in own
        ? notRunResult(hook.hook, runId, "hook_settings", `${own.error}: the gate did not run`)
        : skip !== null
          ? {
              ...blankResult({
                hookPath: hook.hook.hookPath,
                command: [hook.hook.command, ...hook.hook.args],
                runId,
                ran: false,
              }),
              skipped: skip,
            }
          : hook.kind === "http"
            ? hook.handler
              ? await runHandler(hook.handler, seen, {
                  runId,
                  timeoutMs,
                  env: req.env,
                  context,
                  redact,
                  eventKey: shownEventKey(req.key, context.view),
                  attempt: req.attempt ?? 1,
                  notBefore: req.notBefore,
                  canDefer: pointCanDefer(teamSettings, req.event),
                  now: req.runtime?.now,
                })
              : notRunResult(hook.hook, runId, "internal", `${hook.name} is not declared in config.json hooks.handlers`)
            : await runHook(hook.hook, seen, {
                cwd: req.setup.cwd,
                timeoutMs,
                baseEnv: req.env,
                escapeeScan: teamSettings.sweep.value,
                exitCodes: teamSettings.exitCodes.value,
                canDefer: pointCanDefer(teamSettings, req.event),
                sandbox: sandboxOptions(settings, req, seen.teamDir),
                runAs: settings?.runAs,
                verdict: settings?.verdict,
                format: settings?.format,
                runId,
                eventKey: shownEventKey(req.key, context.view),
                attempt: req.attempt ?? 1,
                context,
                redact,
                runtime: req.runtime,
                ...(req.runtime?.onSpawn
                  ? {
                      onSpawn: (info: { pid: number; runId: string }) =>
                        req.runtime?.onSpawn?.({ ...info, hook: hook.name, key: req.key }),
                    }
                  : {}),
                notBefore: req.notBefore,
                standby: req.standby,
                ...snapshotOption(ctx.snapshots?.get(hook.hook.hookPath)),
              });
    if (result.timedOut && timeoutMs < ownTimeoutMs) {
      // Cut short by the chain's deadline, not by its own timeout: the limit is what failed.
      result = {
        ...result,
        errorKind: "limit",
        error: `stopped at the chain deadline of ${limits.chainDeadlineMs}ms (${limitField(teamSettings, "chainDeadlineMs")})`,
      };
    } else if (result.timedOut && settings?.timeoutMs !== undefined) {
      result = { ...result, error: `timeout after ${timeoutMs}ms (the gate's own timeout, line ${settings.line})` };
    }
    if (settings) result = { ...result, hookSettings: describeSettings(settings) };
    if (settings?.mode === "shadow" && result.skipped === undefined) result = shadowed(result, ctx.mode);
    const taken = takePatch(result, seen.completedTask ?? null, {
      event: req.event,
      writableFields: teamSettings.writableFields.value,
    });
    result = withHashes(taken.result, hook, ctx.trust, req.trust?.record ?? null);
    runs.push({
      hook,
      result,
      startedAt,
      logFile: null,
      ...(taken.kept ? { patch: taken.kept } : {}),
      ...(isFullView(context.view) ? {} : { shown: shownRecord(context) }),
    });
    if (stopsAtDenial(req.event) && !countsAsPass(result, ctx.mode) && result.outcome !== "deferred") denied = true;
    const next = hooks[index + 1];
    if (taken.kept && next) {
      // The later hooks see the patched task, each through its own view.
      seen = { ...seen, completedTask: taken.task };
      const later = documentsShown(hooks.slice(index + 1), req.event, seen, privacy, limits.maxPayloadBytes);
      if (typeof later === "number") {
        runs.push(
          ...refused(
            next,
            `the context document, patched by the hooks before, is ${later} bytes; the limit is ${limits.maxPayloadBytes} (${limitField(teamSettings, "maxPayloadBytes")}); ${next.name} and later hooks did not run`,
          ).runs,
        );
        break;
      }
      shown = [...shown.slice(0, index + 1), ...later];
    }
  }
  return { runs, interrupted: null };
}

/**
 * A file gate's sandbox: its own `sandbox=` over the team's `hooks.sandbox`; its `sandbox-write=`
 * paths resolved (`~/…` in the leader's home, `$PI_TEAMS_TEAM_DIR/…` in the team dir); and the
 * leader's own folders, kept read-only inside any writable path.
 */
function sandboxOptions(
  settings: HookSettings | null,
  req: InvokeRequest,
  teamDir: string,
): NonNullable<RunHookOptions["sandbox"]> {
  const home = req.env.HOME ?? "/";
  const write = (settings?.sandboxWrite ?? []).map((p) =>
    p.startsWith("~/")
      ? path.join(home, p.slice(2))
      : p.startsWith("$PI_TEAMS_TEAM_DIR")
        ? path.join(teamDir, p.slice("$PI_TEAMS_TEAM_DIR".length))
        : p,
  );
  return {
    mode: settings?.sandbox ?? req.setup.settings.sandbox.value,
    write,
    env: settings?.env ?? [],
    protect: [
      userStateDir(req.env),
      path.join(teamDir, "hook-state"),
      path.join(teamDir, "hook-logs"),
      req.setup.hooksDir,
      ...(req.setup.teamHooksDir ? [req.setup.teamHooksDir] : []),
      path.join(path.dirname(teamDir), ".pi-teams-hooks"),
    ],
  };
}

/** The field a limit in force comes from: the event's own (`hooks.events.<event>.limits.<name>`) or the team's. */
function limitField(settings: TeamSettings, name: keyof TeamSettings["limits"]): string {
  return /hooks\.events\.\w+\.limits\.\w+/.exec(settings.limits[name].origin)?.[0] ?? `hooks.limits.${name}`;
}

/** Why a global handler switched off is skipped: `disabled: /…/_hooks/handlers.json handlers[0].enabled is false`. */
function globalHandlerDisabledReason(handler: HandlerDef, hooksDir: string): string {
  const { file, handlers } = readGlobalHandlers(hooksDir);
  const index = handlers.findIndex((h) => h.name === handler.name);
  return `disabled: ${file} handlers[${index < 0 ? "?" : index}].enabled is false`;
}

/** Why a handler switched off is skipped, naming where: `disabled: config.json hooks.handlers[0].enabled is false`. */
function handlerDisabledReason(handler: HandlerDef, declared: readonly HandlerDef[]): string {
  const index = declared.findIndex((h) => h.name === handler.name);
  return `disabled: config.json hooks.handlers[${index < 0 ? "?" : index}].enabled is false`;
}

/**
 * A file gate's settings line (from its snapshot's bytes when there is one): its settings (null: none), or why it
 * cannot be read whole.
 */
function ownSettings(
  hook: ChainHook,
  event: InvokeRequest["event"],
  snapshot: GateSnapshot | undefined,
): { settings: HookSettings | null } | { error: string } {
  const read =
    snapshot && !("problem" in snapshot)
      ? settingsOfBytes(snapshot.content, event, path.basename(hook.hook.hookPath))
      : readHookSettings(hook.hook.hookPath, event);
  return read.ok ? { settings: read.settings } : { error: read.error };
}

/** The gate's bytes to run (runner/run-hook.ts starts a private copy of them), when it was read. */
function snapshotOption(snapshot: GateSnapshot | undefined): { snapshot?: { content: Buffer; sha256: string } } {
  return snapshot && !("problem" in snapshot)
    ? { snapshot: { content: snapshot.content, sha256: snapshot.sha256 } }
    : {};
}

/**
 * A `mode=shadow` gate's run: what it said is kept in `shadow`, and the run counts as passed, so
 * nothing is enforced (no policy, no patch, no hold); the event's settling writes only the
 * `qualityGateShadow*` metadata of a shadow gate that would have denied.
 */
function shadowed(result: RunResult, mode: FailureMode): RunResult {
  const { errorKind, error, ...rest } = result;
  const wouldDeny = result.outcome === "deferred" || !countsAsPass(result, mode);
  const ignored =
    result.verdict?.decision === "patch" ? { patchIgnored: "a shadow gate's patch is never written" } : {};
  return {
    ...rest,
    ...ignored,
    outcome: "passed",
    shadow: { outcome: result.outcome, ...(errorKind ? { errorKind } : {}), ...(error ? { error } : {}), wouldDeny },
  };
}

/**
 * The document each hook of the chain is shown, in chain order, one built per distinct view; or the
 * size of the first one over `maxBytes` (then none runs).
 */
function documentsShown(
  hooks: readonly ChainHook[],
  event: InvokeRequest["event"],
  invocation: HookInvocation,
  privacy: PrivacySettings,
  maxBytes: number,
): PreparedContext[] | number {
  const byView = new Map<string, PreparedContext>();
  const out: PreparedContext[] = [];
  for (const hook of hooks) {
    const view = viewOf(hook, event, privacy);
    const key = viewKey(view);
    let context = byView.get(key);
    if (!context) {
      context = prepareContext(invocation, view);
      const bytes = utf8Length(context.json);
      if (bytes > maxBytes) return bytes;
      byView.set(key, context);
    }
    out.push(context);
  }
  return out;
}

/**
 * What `hook` is shown: the fields its gate name is given in `hooks.projection` (every field when
 * none), and, for an HTTP handler of a confidential team, no content.
 */
function viewOf(hook: ChainHook, event: InvokeRequest["event"], privacy: PrivacySettings): ContextView {
  return {
    projection: projectionFor(privacy.projection, gateName(hook, event)),
    confidential: privacy.confidential && hook.kind === "http",
  };
}

/** The invocation a hook log keeps: a confidential team's keeps the task's identity and lifecycle, not its content. */
export function loggedInvocation(
  settings: Pick<TeamSettings, "confidential">,
  invocation: HookInvocation,
): HookInvocation {
  return settings.confidential.value ? confidentialInvocation(invocation) : invocation;
}

/**
 * The log's record of the document a hook was shown when a projection or confidentiality applied
 * (its `shown` block): the fields (as configured), whether content was left out, and the exact
 * document's size and sha256. The document is `viewDocument(buildContextDocument(invocation), view)`
 * (contract/projection.ts) of the invocation as run (a confidential team's log keeps less of it).
 */
export type ShownRecord = {
  projection?: string[];
  confidential?: true;
  bytes: number;
  sha256: string;
};

/** What a log keeps of the document a hook was shown (when it was not the whole one): its view, size and hash. */
function shownRecord(context: PreparedContext): ShownRecord {
  return {
    ...(context.view.projection === null ? {} : { projection: [...new Set(context.view.projection)] }),
    ...(context.view.confidential ? { confidential: true as const } : {}),
    bytes: utf8Length(context.json),
    sha256: createHash("sha256").update(context.json).digest("hex"),
  };
}

/**
 * The gate's hash as it ran (a handler's: of its definition), and the trusted one when they differ (a change run with
 * --trust-changes).
 */
function withHashes(
  result: RunResult,
  hook: ChainHook,
  trust: ChainTrust | null,
  record: TrustRecord | null,
): RunResult {
  const sha = trust?.hashes.get(gateKey(hook)) ?? shaOf(hook);
  if (sha === undefined) return result;
  const trusted = record?.gates[gateKey(hook)]?.sha256;
  return { ...result, hookSha256: sha, ...(trusted && trusted !== sha ? { trustedSha256: trusted } : {}) };
}

function shaOf(hook: ChainHook): string | undefined {
  const fp = gateFingerprint(hook);
  return "problem" in fp ? undefined : fp.sha256;
}
