/**
 * The chain of hooks for one event (docs/hook-contract.md, "Several hooks per event"): the v1 single
 * file, then every file of `on_<event>.d/`, each looked up in two layers — the global hooks dir and the
 * team's own `<teamDir>/hooks`. The team layer wins by name: its v1 file replaces the global v1 file,
 * its `on_<event>.d/NAME` replaces the global `NAME`, and its `NAME.disabled` switches the global
 * `NAME` off (for the v1 file, NAME is the v1 file's base name, e.g. `on_task_completed.sh.disabled`).
 *
 * Like gates/discover.ts, the answer is data and never an exception: every file that exists and does
 * not run is in `skipped` with why, so that `doctor` and the logs can explain a gate that "did not
 * run". Limits (how many hooks, deadlines) are the caller's business.
 *
 * Decisions worth knowing:
 * - Replacement is by name (by slot for v1), not by usability: a team file that cannot run (no exec
 *   bit, a directory…) still replaces the global one, and is itself reported as skipped. A team that
 *   overrides a gate never silently gets the global one back.
 * - A team layer that exists but cannot be read is a skip, and the global hooks still run: we cannot
 *   see its `.disabled` files, and running the global gates is the safe side.
 * - The same dir given as both layers is one layer, the global one (`v1.team` is then null).
 * - HTTP handlers come last, after every file, in the order they are declared: a remote gate (a CI
 *   run, a review) is the slowest and the dearest, so it only runs once the local gates have had their
 *   say. The global layer's (`handlers.json` in the global hooks dir, gates/global-handlers.ts) come
 *   first, then the team's (config.json `hooks.handlers`, settings/handlers.ts). A team handler of the
 *   same name replaces the global one (skipped as `replaced`), as a team file replaces a global file.
 * - The team's bindings (gates/bindings.ts, added over the task API) take their places by kind: a bound
 *   gate file (`binding:<name>`) after the `.d` files and before every handler, a bound handler after
 *   the team's handlers, each in the bindings file's order.
 */
// Synchronous, as in gates/discover.ts: a chain is looked up before every event.
import { lstatSync, readdirSync, readlinkSync, realpathSync } from "node:fs";
import { isRunCopyName } from "../contract/contract.js";
import path from "node:path";
import { HOOK_BASE_NAMES, HOOK_EVENTS } from "../contract/contract.js";
import type { HookCommand } from "../contract/hook-run.js";
import type { HookEventName } from "../contract/contract.js";
import { findHook, hookCandidatePaths, inspectCandidate, launcherFor } from "./discover.js";
import type { HookDiscovery } from "./discover.js";
import { errnoCode } from "../contract/errors.js";
import { handlerGateName, type HandlerDef } from "../settings/handlers.js";
import { readGlobalHandlers } from "./global-handlers.js";
import { type Binding, bindingGateName, readBindings, resolveBindings } from "./bindings.js";

export type ChainLayer = "global" | "team";

/** One hook that runs, in chain order: a file, or an HTTP handler. */
export type ChainHook = FileChainHook | HttpChainHook;

/**
 * A gate file. `name`: the file name (`on_idle.sh`, `10-lint`), or for a file bound by a binding
 * (kind `binding`, gates/bindings.ts) its gate name `binding:<name>`; `hook.hookPath` is the file.
 */
export interface FileChainHook {
  name: string;
  layer: ChainLayer;
  hook: HookCommand;
  kind: "v1" | "chain" | "binding";
  /** Set for kind `binding`: the binding, whose record is trusted together with the file's bytes. */
  bound?: Binding;
}

/**
 * An HTTP handler of config.json `hooks.handlers` (layer `team`) or of the global hooks dir's
 * `handlers.json` (layer `global`): `name` and `hook.hookPath` are its gate name
 * (`http:ci`), `hook.command` and `hook.args` say `POST <url>` (its method; what the log's `command` shows).
 * `handler` is null only for a trusted handler that is no longer declared, named in a trust refusal
 * (event/chain-run.ts `refusedRun`): such a hook never runs.
 */
interface HttpChainHook {
  name: string;
  layer: ChainLayer;
  hook: HookCommand;
  kind: "http";
  handler: HandlerDef | null;
  /** Set for a binding added through the task API (gates/bindings.ts): the handler it names. */
  binding?: { handler: string };
}

/**
 * Why a file does not run, as data (the `reason` says it for people):
 * `bad_name` (characters outside `[A-Za-z0-9_.-]`), `ignored_name` (`~`, `.bak`, `.swp`),
 * `switched_off` (a global-layer `NAME.disabled`), `replaced` / `disabled` (by the team layer),
 * `disables_nothing` (a team `NAME.disabled` with no global `NAME` to switch off), `runs_already` (a file
 * binding for an event whose chain runs that file already: it runs once, as the file it is),
 * `unusable` (not executable, a directory, a broken symlink, a fifo…), `dir_unusable` (a layer or
 * `.d` dir that exists but cannot be read or is not a directory).
 */
export const CHAIN_SKIP_CODES = [
  "bad_name",
  "ignored_name",
  "switched_off",
  "replaced",
  "disabled",
  "disables_nothing",
  "runs_already",
  "unusable",
  "dir_unusable",
] as const;
export type ChainSkipCode = (typeof CHAIN_SKIP_CODES)[number];

export interface ChainSkip {
  path: string;
  layer: ChainLayer;
  reason: string;
  code: ChainSkipCode;
}

export interface ChainDiscovery {
  /** What runs, in order: the v1 file (if any), then the `.d` files by byte-wise name, then the handlers. */
  hooks: ChainHook[];
  /** Every file looked at that does not run, v1 candidates first, then `.d` entries by name. */
  skipped: ChainSkip[];
  /** v1 lookups for each layer, as findHook returns them. */
  v1: { global: HookDiscovery; team: HookDiscovery | null };
}

interface ChainInput {
  globalDir: string;
  /** The team's hooks layer, `<teamDir>/hooks` (see teamHooksDir); null: no team layer. */
  teamDir: string | null;
  event: HookEventName;
  /** config.json `hooks.handlers`: those whose `events` hold `event` run after the files, in this order. */
  handlers?: readonly HandlerDef[];
}

/** The team's own hooks layer inside a team dir. */
export function teamHooksDir(teamDir: string): string {
  return path.join(teamDir, "hooks");
}

/** The name of an event's chain dir, `on_<event>.d`. */
export function chainDirName(event: HookEventName): string {
  return `${HOOK_BASE_NAMES[event]}.d`;
}

/**
 * The gate's name in what the policy writes and says (task metadata, the follow-up's subject, the
 * nudge): the v1 file by its base name whatever its extension (`on_task_completed`, as pi-agent-teams
 * names it), a chain file by its place (`on_task_completed.d/10-lint.sh`), a handler as `http:<name>`.
 */
export function gateName(hook: Pick<ChainHook, "name" | "kind">, event: HookEventName): string {
  if (hook.kind === "http" || hook.kind === "binding") return hook.name;
  return hook.kind === "v1" ? HOOK_BASE_NAMES[event] : `${chainDirName(event)}/${hook.name}`;
}

/**
 * A gate's name as doctor and `config` print it: the v1 file's own name (`on_idle.sh`), a chain file by its place, a
 * handler as `http:<name>`.
 */
export function gateDisplayName(hook: Pick<ChainHook, "name" | "kind">, event: HookEventName): string {
  return hook.kind === "chain" ? `${chainDirName(event)}/${hook.name}` : hook.name;
}

/** The chain hook of a declared handler: `http:<name>`, `POST <url>` (or the method it declares). */
function handlerHook(handler: HandlerDef, layer: ChainLayer = "team"): HttpChainHook {
  const name = handlerGateName(handler.name);
  return {
    name,
    layer,
    kind: "http",
    handler,
    hook: { hookPath: name, command: handler.method ?? "POST", args: [handler.url] },
  };
}

/** Whether a gate path (a trust record key, a log's `hookPath`) names a handler rather than a file. */
export function isHandlerGate(gate: string): boolean {
  return gate.startsWith(handlerGateName(""));
}

/** Whether a trust record key names a file binding (`binding:<name>`) rather than a file. */
export function isBindingGate(gate: string): boolean {
  return gate.startsWith(bindingGateName(""));
}

/**
 * A gate's key in the trust record: a file's path, a handler's gate name (`http:ci`), a file binding's
 * (`binding:lint`: its record and its file's bytes are trusted together, trust/trust.ts).
 */
export function gateKey(hook: ChainHook): string {
  return hook.kind === "binding" ? hook.name : hook.hook.hookPath;
}

const NAME_CHARS = /^[A-Za-z0-9_.-]+$/;
const IGNORED_SUFFIXES = ["~", ".bak", ".swp"] as const;
const DISABLED = ".disabled";

/** Byte-wise order of UTF-8 names (`10-a` < `2-b`, `B` < `a`), whatever the locale. */
export function compareNames(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** Finds the chain of `event` in both layers. Never throws for anything on disk. */
export async function discoverChain(input: ChainInput): Promise<ChainDiscovery> {
  const globalDir = path.resolve(input.globalDir);
  const teamDir =
    input.teamDir === null || path.resolve(input.teamDir) === globalDir ? null : path.resolve(input.teamDir);
  const global = await findHook(globalDir, input.event);
  const team = teamDir === null ? null : await findHook(teamDir, input.event);

  const hooks: ChainHook[] = [];
  const skipped: ChainSkip[] = [
    ...layerSkips(global, globalDir, "global"),
    ...(team && teamDir ? layerSkips(team, teamDir, "team") : []),
  ];
  const teamUsable = teamDir !== null && team !== null && !team.dirProblem;

  // v1: the team's file (chosen or not) takes the slot; else the global one, unless switched off.
  const teamFile = teamUsable ? team.candidates.find((c) => c.status !== "absent") : undefined;
  const markers = teamUsable ? existing(hookCandidatePaths(teamDir, input.event).map((p) => p + DISABLED)) : [];
  const globalHook = global.hook;
  const globalMarker = globalHook
    ? markers.find((m) => path.basename(m) === path.basename(globalHook.hookPath) + DISABLED)
    : undefined;
  if (teamFile) {
    if (team?.hook) hooks.push({ name: path.basename(team.hook.hookPath), layer: "team", hook: team.hook, kind: "v1" });
    if (globalHook)
      skipped.push({
        path: globalHook.hookPath,
        layer: "global",
        code: "replaced",
        reason: `replaced by ${teamFile.path}`,
      });
  } else if (globalHook && globalMarker) {
    skipped.push({
      path: globalHook.hookPath,
      layer: "global",
      code: "disabled",
      reason: `disabled by ${globalMarker}`,
    });
  } else if (globalHook) {
    hooks.push({ name: path.basename(globalHook.hookPath), layer: "global", hook: globalHook, kind: "v1" });
  }
  for (const marker of markers) {
    if (marker === globalMarker) continue;
    const runs = globalHook ? `the global v1 hook is ${path.basename(globalHook.hookPath)}` : "no global v1 hook runs";
    skipped.push({ path: marker, layer: "team", code: "disables_nothing", reason: `switches off nothing: ${runs}` });
  }

  const chain = chainFiles(input.event, global.dirProblem ? null : globalDir, teamUsable ? teamDir : null);
  hooks.push(...chain.hooks);
  skipped.push(...chain.skipped);
  // The team's bindings (gates/bindings.ts), `<teamDir>/hook-state/bindings.json` beside its layer: the files
  // bound run here, after the `.d` files; the handlers bound after the team's handlers.
  const globalHandlers = readGlobalHandlers(globalDir);
  const boundHandlers: ChainHook[] = [];
  if (input.teamDir !== null) {
    const read = readBindings(path.dirname(path.resolve(input.teamDir)));
    if (read.problem !== null) skipped.push({ path: read.file, layer: "team", code: "unusable", reason: read.problem });
    const declared = [...(input.handlers ?? []), ...globalHandlers.handlers];
    for (const resolved of resolveBindings(read.bindings, declared, { team: teamDir, global: globalDir })) {
      const { binding } = resolved;
      if (!binding.events.includes(input.event)) continue;
      const gate = binding.file === undefined ? handlerGateName(binding.name) : bindingGateName(binding.name);
      if ("problem" in resolved) {
        const reason = `binding ${binding.name}: ${resolved.problem}`;
        skipped.push({ path: gate, layer: "team", code: "unusable", reason });
      } else if ("handler" in resolved)
        boundHandlers.push({ ...handlerHook(resolved.handler), binding: { handler: binding.handler ?? "" } });
      else {
        const launch = inspectFile(resolved.file.path);
        const layer = resolved.file.layer;
        const bound = realOrResolved(resolved.file.path);
        const already = hooks.find((h) => h.hook && realOrResolved(h.hook.hookPath) === bound);
        if (launch === null || "reason" in launch) {
          const why = launch === null ? "deleted" : launch.reason;
          const reason = `binding ${binding.name}: ${resolved.file.path}: ${why}`;
          skipped.push({ path: gate, layer, code: "unusable", reason });
        } else if (already) {
          // The same file twice in one chain would run twice on one completion: it runs once, as the file it is.
          const reason = `binding ${binding.name}: ${resolved.file.path} runs in this chain already, as ${already.name}`;
          skipped.push({ path: gate, layer, code: "runs_already", reason });
        } else hooks.push({ name: gate, layer, hook: launch, kind: "binding", bound: binding });
      }
    }
  }
  // The global layer's handlers, then the team's; a team handler of the same name takes the global one's place.
  const own = new Map((input.handlers ?? []).map((h) => [h.name.toLowerCase(), h]));
  if (globalHandlers.problem !== null)
    skipped.push({ path: globalHandlers.file, layer: "global", code: "unusable", reason: globalHandlers.problem });
  for (const handler of globalHandlers.handlers) {
    if (!handler.events.includes(input.event)) continue;
    const replacing = own.get(handler.name.toLowerCase());
    if (replacing === undefined) hooks.push(handlerHook(handler, "global"));
    else {
      const reason = `replaced by the team's handler ${handlerGateName(replacing.name)} (config.json hooks.handlers)`;
      skipped.push({ path: `${globalHandlers.file}#${handler.name}`, layer: "global", code: "replaced", reason });
    }
  }
  for (const handler of input.handlers ?? [])
    if (handler.events.includes(input.event)) hooks.push(handlerHook(handler));
  hooks.push(...boundHandlers);
  return { hooks, skipped, v1: { global, team } };
}

/** The chain of every event (in `HOOK_EVENTS` order), for whatever looks at all the gates at once. */
export async function discoverChains(
  globalDir: string,
  teamDir: string | null,
  handlers: readonly HandlerDef[] = [],
): Promise<Array<{ event: HookEventName; chain: ChainDiscovery }>> {
  const out: Array<{ event: HookEventName; chain: ChainDiscovery }> = [];
  for (const event of HOOK_EVENTS)
    out.push({ event, chain: await discoverChain({ globalDir, teamDir, event, handlers }) });
  return out;
}

/** A layer that exists but cannot be searched is one skip; the v1 candidates it rejected are more. */
function layerSkips(found: HookDiscovery, dir: string, layer: ChainLayer): ChainSkip[] {
  if (found.dirProblem === "missing") return [];
  if (found.dirProblem) {
    const reason = found.candidates[0]?.reason ?? `hooks dir ${found.dirProblem.replaceAll("_", " ")}`;
    return [{ path: dir, layer, code: "dir_unusable", reason }];
  }
  return found.candidates
    .filter((c) => c.status === "skipped")
    .map((c) => ({ path: c.path, layer, code: "unusable", reason: c.reason ?? "unusable" }));
}

interface Listed {
  /** Name-valid files, by name. */
  files: Map<string, string>;
  skipped: Array<ChainSkip & { name: string }>;
}

/** The `.d` files of both layers merged by name, in byte-wise name order. */
function chainFiles(
  event: HookEventName,
  globalDir: string | null,
  teamDir: string | null,
): { hooks: ChainHook[]; skipped: ChainSkip[] } {
  const global = globalDir === null ? null : listChainDir(path.join(globalDir, chainDirName(event)), "global");
  const team = teamDir === null ? null : listChainDir(path.join(teamDir, chainDirName(event)), "team");
  const markers = team?.markers ?? new Map<string, string>();
  const skipped = [...(global?.skipped ?? []), ...(team?.skipped ?? [])];
  const globalFiles = global?.files ?? new Map<string, string>();
  const teamFiles = team?.files ?? new Map<string, string>();

  for (const [name, marker] of markers) {
    if (!globalFiles.has(name))
      skipped.push({
        name: path.basename(marker),
        path: marker,
        layer: "team",
        code: "disables_nothing",
        reason: `switches off nothing: no global ${chainDirName(event)}/${name}`,
      });
  }
  const hooks: ChainHook[] = [];
  for (const name of [...new Set([...globalFiles.keys(), ...teamFiles.keys()])].sort(compareNames)) {
    const teamFile = teamFiles.get(name);
    const globalFile = globalFiles.get(name);
    const marker = markers.get(name);
    let file: { path: string; layer: ChainLayer } | null = null;
    if (teamFile !== undefined) {
      if (globalFile !== undefined)
        skipped.push({ name, path: globalFile, layer: "global", code: "replaced", reason: `replaced by ${teamFile}` });
      file = { path: teamFile, layer: "team" };
    } else if (globalFile !== undefined && marker !== undefined) {
      skipped.push({ name, path: globalFile, layer: "global", code: "disabled", reason: `disabled by ${marker}` });
    } else if (globalFile !== undefined) {
      file = { path: globalFile, layer: "global" };
    }
    if (!file) continue;
    const launch = inspectFile(file.path);
    if (launch === null) continue; // removed since the listing: not there, so nothing to run or explain
    if ("reason" in launch)
      skipped.push({ name, path: file.path, layer: file.layer, code: "unusable", reason: launch.reason });
    else hooks.push({ name, layer: file.layer, hook: launch, kind: "chain" });
  }
  // One order for people and tests: by name, the global layer before the team's.
  skipped.sort((a, b) => compareNames(a.name, b.name) || (a.layer === b.layer ? 0 : a.layer === "global" ? -1 : 1));
  return { hooks, skipped: skipped.map(({ name: _name, ...skip }) => skip) };
}

/** One layer's `.d` dir: name-valid files, the team's `.disabled` markers, and names skipped. */
function listChainDir(dir: string, layer: ChainLayer): Listed & { markers: Map<string, string> } {
  const files = new Map<string, string>();
  const markers = new Map<string, string>();
  const skipped: Listed["skipped"] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    const code = errnoCode(error);
    const link = code === "ENOENT" ? linkTarget(dir) : null;
    if (code === "ENOENT" && link === null) return { files, markers, skipped }; // no .d dir: nothing to add
    const reason =
      link !== null
        ? `broken symlink (to ${link})`
        : code === "ENOTDIR"
          ? "not a directory"
          : `cannot be read (${code ?? "error"})`;
    return { files, markers, skipped: [{ name: "", path: dir, layer, code: "dir_unusable", reason }] };
  }
  for (const name of names.sort(compareNames)) {
    const file = path.join(dir, name);
    const skip = (code: ChainSkipCode, reason: string): void =>
      void skipped.push({ name, path: file, layer, code, reason });
    // A run's private copy of its gate as a release before this one wrote it: the leader's, never a gate.
    if (isRunCopyName(name)) continue;
    // The chain's packages (a .ts gate's tsx, a gate's imports: runner/gate-modules.ts), never a gate.
    if (name === "node_modules" || name === "package.json" || name === "package-lock.json") continue;
    const ignored = IGNORED_SUFFIXES.find((suffix) => name.endsWith(suffix));
    // The suffix rule first: `name~` is an editor's backup, skipped on purpose, not a badly named gate.
    if (ignored) skip("ignored_name", `name ends in ${ignored} (a backup or editor file)`);
    else if (!NAME_CHARS.test(name))
      skip("bad_name", "name has characters outside [A-Za-z0-9_.-] (rename it to run it)");
    else if (name.endsWith(DISABLED) && layer === "team") markers.set(name.slice(0, -DISABLED.length), file);
    else if (name.endsWith(DISABLED)) skip("switched_off", `switched off (name ends in ${DISABLED})`);
    else files.set(name, file);
  }
  return { files, markers, skipped };
}

/** How a chain file starts, by the v1 rules of gates/discover.ts; `{ reason }`: it cannot; null: the file is gone. */
function inspectFile(file: string): HookCommand | { reason: string } | null {
  const { launch, needsExecBit } = launcherFor(file);
  const verdict = inspectCandidate(file, needsExecBit);
  if (verdict.status === "absent") return null;
  if (verdict.status === "skipped") return { reason: verdict.reason ?? "unusable" };
  const how = launch(file);
  return "unavailable" in how ? { reason: how.unavailable } : { hookPath: file, ...how };
}

/** The target of a symlink whose target is gone; null when `file` is not a symlink (or not there). */
function linkTarget(file: string): string | null {
  try {
    const info = lstatSync(file);
    return info.isSymbolicLink() ? readlinkSync(file) : null;
  } catch {
    return null; // ENOENT: really nothing of that name
  }
}

/** The paths among `files` that exist (as anything, dangling links included). */
function existing(files: string[]): string[] {
  const found: string[] = [];
  for (const file of files) {
    try {
      lstatSync(file);
      found.push(file);
    } catch {
      // ENOENT (or the layer became unreadable since findHook): no marker of that name
    }
  }
  return found;
}

/** The file a path names, through any link (a link in `on_<event>.d/` to a bound file is that file); as given when gone. */
function realOrResolved(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return path.resolve(file);
  }
}
