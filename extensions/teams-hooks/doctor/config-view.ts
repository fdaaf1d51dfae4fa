/**
 * `config` as a library: the settings a leader would apply for a given command line, in one view —
 * each event's whole chain in run order (the v1 file and the `on_<event>.d/` files of both layers, then
 * the HTTP handlers), each gate with its own settings line and its trust state, then every setting of
 * the `hooks` block with where it came from. Read-only: the trust record is compared, never written.
 * Data only; the CLI prints it. `chainSummary` is the short form the `watch` banner prints.
 */
import { type BindingsView, bindingsView } from "./bindings-view.js";
import path from "node:path";
import type { HookEventName } from "../contract/contract.js";
import {
  CHAIN_SKIP_CODES,
  chainDirName,
  discoverChains,
  gateDisplayName,
  gateKey,
  gateName,
  isBindingGate,
  type ChainDiscovery,
  type ChainHook,
  type ChainLayer,
  type ChainSkip,
} from "../gates/chain.js";
import { SKIP_LEVEL } from "./gate-checks.js";
import { insecurity, readHookSettings } from "../gates/discover.js";
import { checkChainTrust, fingerprint, type ChainTrust } from "../trust/trust.js";
import { readTrustInForce, trustFile } from "../trust/trust-store.js";
import { describeSettings } from "../settings/hook-line.js";
import { handlerEnabled } from "../settings/handlers.js";
import {
  settingsReport,
  type Effective,
  type SettingsInForce,
  type SettingsReport,
  type TeamSettings,
} from "../settings/team-settings.js";
import type { TeamSetup } from "../team/setup.js";
import type { Problem } from "../settings/problems.js";

/**
 * A gate's trust, as `pi-teams-hooks trust` compares it: `trusted` as recorded; `changed` (content or
 * mode) or `new` since: its events are held until approved; `missing`: a trusted gate that no longer runs;
 * `no_record`: no record yet, so the leader's first start trusts what is there.
 */
export type TrustState = "trusted" | "changed" | "new" | "missing" | "no_record";

/** One gate of an event's chain. */
export interface GateView {
  /** The gate's name relative to its layer: `on_idle.sh`, `on_idle.d/10-lint.sh`, `http:ci`. */
  name: string;
  /** What the policy and the logs call it (`on_idle`, `on_idle.d/10-lint.sh`, `http:ci`). */
  gate: string;
  kind: ChainHook["kind"];
  layer: ChainLayer;
  /** The file, or a handler's or file binding's gate name (`http:ci`, `binding:lint`): the trust record's key. */
  path: string;
  /** A file binding's file (its `path` is its gate name); absent for every other gate. */
  file?: string;
  /** How it starts: `bash FILE`, `POST <url>`. */
  command: string[];
  /** The settings line as applied (`timeout=30s mode=shadow`); null when there is none (or for a handler). */
  settings: string | null;
  /** A settings line the runner refuses: the gate does not run, and its events are held (hook_settings). */
  settingsError: string | null;
  trust: TrustState;
  /** What changed, for `changed` and `missing` (`sha256 1a2b… → 3c4d…`, `deleted`). */
  trustDetail: string | null;
  /** Why others could rewrite the file (refused as insecure_hook unless --allow-insecure-hooks); null when not. */
  insecure: string | null;
  /**
   * False for a handler switched off (`hooks.handlers[].enabled: false`) or a binding (`settings.enabled: false`):
   * skipped at every event, and logged.
   */
  enabled: boolean;
}

interface EventView {
  failureMode: SettingsReport["failureModes"][HookEventName];
  /** What runs, in order. */
  gates: GateView[];
  /** Trusted gates that no longer run for the event (its events are held as gate_missing until approved). */
  missing: GateView[];
  /** Trusted optional global gates (`required=false`) the team dropped: no approval needed, each with why. */
  dropped: Array<{ path: string; detail: string }>;
  /** Files that look like gates and do not run, for reasons worth fixing (not the ones switched off on purpose). */
  skipped: ChainSkip[];
}

type FlagOr<T> = Effective<T, "flag" | "default">;

export interface ConfigView {
  teamDir: string;
  configFile: string;
  taskListId: string;
  leadName: string;
  /** The hooks' working directory. */
  cwd: string;
  hooksDir: Effective<string, "flag" | "env" | "default">;
  teamHooksDir: string;
  trustRecord: { file: string; state: "ok" | "none" | "invalid"; gates: number; problem: string | null };
  events: Record<HookEventName, EventView>;
  /** Every setting with its value, source and origin (`flag`, `config`, `env`, `default`). */
  settings: SettingsView;
  block: SettingsReport["block"];
  /** The bindings added over the task API (`<teamDir>/hook-state/bindings.json`), beside the files, with their trust. */
  bindings: BindingsView;
  /**
   * Every problem of the settings and the gates as data, `{ kind, path, message }` (settings/problems.ts):
   * the settings' (the block's, limits capped, environment values ignored, config.json's other fields),
   * then each event's gates (untrusted, missing, settings lines refused, insecure, files that do not run).
   */
  problems: Problem[];
}

/** Every setting in force but the handlers and templates (the gates show them), with the trust flags. */
interface SettingsView extends Omit<SettingsInForce, "handlers" | "templates" | "block"> {
  trustChanges: FlagOr<boolean>;
  allowInsecureHooks: FlagOr<boolean>;
}

/** The settings part of the view: every setting in force, each `{ value, source, origin }`, as the resolver gave it. */
function settingsView(s: TeamSettings): SettingsView {
  return {
    failureAction: s.failureAction,
    maxReopensPerTask: s.maxReopensPerTask,
    followupOwner: s.followupOwner,
    timeoutMs: s.timeoutMs,
    failureModes: s.failureModes,
    limits: s.limits,
    sweep: s.sweep,
    exitCodes: s.exitCodes,
    sandbox: s.sandbox,
    deferTimeoutMs: s.deferTimeoutMs,
    writableFields: s.writableFields,
    projection: s.projection,
    confidential: s.confidential,
    redactEnv: s.redactEnv,
    reassignOnReopen: s.reassignOnReopen,
    events: s.events,
    trustChanges: s.trustChanges,
    allowInsecureHooks: s.allowInsecureHooks,
  };
}

/** Skips that say a gate meant to run does not (a bad name, no execute bit, an unreadable dir…). */
const PROBLEM_SKIPS: ReadonlySet<ChainSkip["code"]> = new Set(
  CHAIN_SKIP_CODES.filter((code) => SKIP_LEVEL[code] !== "info"),
);

function problemSkips(chain: ChainDiscovery): ChainSkip[] {
  return chain.skipped.filter((s) => PROBLEM_SKIPS.has(s.code));
}

/**
 * The whole view for `setup` (resolved from the command line as `watch` resolves it, its trust flags too). Never
 * writes.
 */
export async function inspectConfig(setup: TeamSetup): Promise<ConfigView> {
  const { teamDir } = setup.identity;
  const read = readTrustInForce(teamDir);
  // As `trust` and doctor read it: an unreadable record trusts nothing; no record compares nothing.
  const record =
    read.state === "ok" ? read.record : read.state === "invalid" ? { version: 1 as const, gates: {} } : null;
  const layers = { global: path.resolve(setup.hooksDir), team: path.resolve(setup.teamHooksDir) };
  const report = settingsReport(setup.settings);
  const uid = process.getuid?.() ?? null;
  const events = {} as Record<HookEventName, EventView>;
  for (const { event, chain } of await discoverChains(setup.hooksDir, setup.teamHooksDir, setup.settings.handlers)) {
    const participation = setup.settings.events[event].participation.value;
    const checked = checkChainTrust(chain, event, layers, { record, allowInsecure: true, uid: null, participation });
    const gates = chain.hooks.map((hook) => gateView(hook, event, checked, record !== null, uid));
    const missing = checked.changes
      .filter((c) => c.change === "removed")
      .map((c) => missingView(c.path, c.detail, event, layers));
    events[event] = {
      failureMode: report.failureModes[event],
      gates,
      missing,
      dropped: checked.dropped.map((d) => ({ ...d })),
      skipped: problemSkips(chain),
    };
  }
  const hooksDirOrigin =
    setup.hooksDirSource === "flag" ? "--hooks-dir" : setup.hooksDirSource === "env" ? "PI_TEAMS_HOOKS_DIR" : "default";
  return {
    teamDir,
    configFile: setup.configFile,
    taskListId: setup.identity.taskListId,
    leadName: setup.identity.leadName,
    cwd: setup.cwd,
    hooksDir: { value: setup.hooksDir, source: setup.hooksDirSource, origin: hooksDirOrigin },
    teamHooksDir: setup.teamHooksDir,
    trustRecord: {
      file: trustFile(teamDir),
      state: read.state,
      gates: read.state === "ok" ? Object.keys(read.record.gates).length : 0,
      problem: read.state === "invalid" ? read.problem : null,
    },
    events,
    settings: settingsView(setup.settings),
    block: report.block,
    bindings: bindingsView(teamDir, setup.hooksDir, setup.settings.handlers, process.env),
    problems: configProblems(setup, events),
  };
}

/** The problems `config --json` gives: the settings', then the gates' of each event (a gate of several events once). */
function configProblems(setup: TeamSetup, events: Readonly<Record<HookEventName, EventView>>): Problem[] {
  const { teamDir } = setup.identity;
  const approve = (gate: string): string => `pi-teams-hooks trust --team-dir ${teamDir} ${gate}`;
  const settings = setup.settings.problems.map((p) => ({ ...p }));
  const said = new Set(settings.map((p) => p.message));
  // config.json's fields outside `hooks` (team/setup.ts puts their warnings before the settings').
  const fields = setup.warnings
    .filter((w) => !said.has(w))
    .map((message): Problem => ({ kind: "config_field", path: setup.configFile, message }));
  const gates: Problem[] = [];
  const seen = new Set<string>();
  const add = (p: Problem): void => {
    const key = `${p.kind}\0${p.path}\0${p.message}`;
    if (seen.has(key)) return;
    seen.add(key);
    gates.push(p);
  };
  for (const event of Object.keys(events) as HookEventName[]) {
    const { gates: running, missing, skipped } = events[event];
    for (const g of running) {
      const held = `its events are held (untrusted_hook) until the team lead approves it: ${approve(g.path)}`;
      if (g.trust === "new")
        add({ kind: "gate_untrusted", path: g.path, message: `${g.path} is new, not trusted yet: ${held}` });
      if (g.trust === "changed") {
        const what = `${g.path} changed since it was trusted (${g.trustDetail ?? "its content"})`;
        add({ kind: "gate_untrusted", path: g.path, message: `${what}: ${held}` });
      }
      if (g.settingsError) {
        const message = `${g.settingsError}: the gate does not run, and its events are held (hook_settings)`;
        add({ kind: "gate_settings", path: g.path, message });
      }
      if (g.insecure && !setup.settings.allowInsecureHooks.value) {
        const message = `${g.path} is ${g.insecure}: refused (insecure_hook) unless the leader runs with --allow-insecure-hooks`;
        add({ kind: "gate_insecure", path: g.path, message });
      }
    }
    for (const g of missing) {
      const what = `trusted gate ${g.path} no longer runs for ${event} (${g.trustDetail ?? "gone"})`;
      const message = `${what}: its events are held (gate_missing) until the team lead approves: ${approve(g.path)}`;
      add({ kind: "gate_missing", path: g.path, message });
    }
    for (const s of skipped) add({ kind: "gate_unusable", path: s.path, message: `${s.path}: ${s.reason}` });
  }
  return [...fields, ...settings, ...gates];
}

function gateView(
  hook: ChainHook,
  event: HookEventName,
  checked: ChainTrust,
  hasRecord: boolean,
  uid: number | null,
): GateView {
  const key = gateKey(hook);
  const file = hook.hook.hookPath;
  const change = checked.changes.find((c) => c.path === key);
  const trust: TrustState = !hasRecord
    ? "no_record"
    : change?.change === "new"
      ? "new"
      : change?.change === "changed"
        ? "changed"
        : "trusted";
  let settings: string | null = null;
  let settingsError: string | null = null;
  let insecure: string | null = null;
  if (hook.kind !== "http") {
    const read = readHookSettings(file, event);
    if (!read.ok) settingsError = read.error;
    else if (read.settings) settings = describeSettings(read.settings) || null;
    const fp = fingerprint(file);
    insecure = "problem" in fp ? null : insecurity(fp, uid);
  }
  return {
    name: gateDisplayName(hook, event),
    gate: gateName(hook, event),
    kind: hook.kind,
    layer: hook.layer,
    path: key,
    ...(hook.kind === "binding" ? { file } : {}),
    command: [hook.hook.command, ...hook.hook.args],
    settings,
    settingsError,
    trust,
    trustDetail: trust === "changed" ? (change?.detail ?? null) : null,
    insecure,
    enabled:
      hook.kind === "binding"
        ? hook.bound?.settings?.enabled !== false
        : hook.kind !== "http" || !hook.handler || handlerEnabled(hook.handler),
  };
}

/** A trusted gate no longer in the chain: named by its place in its layer when it is a file of one. */
function missingView(
  gatePath: string,
  detail: string,
  event: HookEventName,
  layers: { global: string; team: string },
): GateView {
  const http = !path.isAbsolute(gatePath);
  const bound = isBindingGate(gatePath);
  const inChainDir = path.basename(path.dirname(gatePath)) === chainDirName(event);
  const layerDir = inChainDir ? path.dirname(path.dirname(gatePath)) : path.dirname(gatePath);
  const layer: ChainLayer = http || layerDir === layers.team ? "team" : "global";
  const name = http
    ? gatePath
    : inChainDir
      ? `${chainDirName(event)}/${path.basename(gatePath)}`
      : path.basename(gatePath);
  const kind: ChainHook["kind"] = bound ? "binding" : http ? "http" : inChainDir ? "chain" : "v1";
  return {
    name,
    gate: name,
    kind,
    layer,
    path: gatePath,
    command: [],
    settings: null,
    settingsError: null,
    trust: "missing",
    trustDetail: detail,
    insecure: null,
    enabled: true,
  };
}

/** One gate of a chain as the `watch` banner names it. */
interface ChainEntry {
  name: string;
  layer: ChainLayer;
  kind: ChainHook["kind"];
  path: string;
  /** Its settings line says `mode=shadow`: it runs and is logged, and decides nothing. */
  shadow: boolean;
  /** A handler switched off (`enabled: false`): skipped, and logged. Absent otherwise. */
  disabled?: true;
}

/** An event's chain, in run order, as the `watch` banner names it. */
export function chainEntries(chain: ChainDiscovery, event: HookEventName): ChainEntry[] {
  return chain.hooks.map((hook) => {
    const read = hook.kind === "http" ? null : readHookSettings(hook.hook.hookPath, event);
    const disabled =
      hook.kind === "binding"
        ? hook.bound?.settings?.enabled === false
        : hook.kind === "http" && hook.handler !== null && !handlerEnabled(hook.handler);
    const shadow = read?.ok === true && read.settings?.mode === "shadow";
    return {
      name: gateDisplayName(hook, event),
      layer: hook.layer,
      kind: hook.kind,
      path: hook.hook.hookPath,
      shadow,
      ...(disabled ? { disabled } : {}),
    };
  });
}

/**
 * An event's chain in one short line, in run order: `on_task_completed.sh, on_task_completed.d/10-lint.sh
 * (team), http:ci`; a file of the team layer or in shadow mode says so; `none` when nothing runs.
 */
export function chainSummary(entries: readonly ChainEntry[]): string {
  if (entries.length === 0) return "none";
  const notes = (e: ChainEntry): string[] => [
    ...(e.kind !== "http" && e.layer === "team" ? ["team"] : []),
    ...(e.shadow ? ["shadow"] : []),
    ...(e.disabled ? ["disabled"] : []),
  ];
  return entries.map((e) => `${e.name}${notes(e).length > 0 ? ` (${notes(e).join(", ")})` : ""}`).join(", ");
}

/** Skipped files worth a word at start (`path: reason`), as `chainSummary`'s companion. */
export function chainProblems(chain: ChainDiscovery): string[] {
  return problemSkips(chain).map((s) => `${s.path}: ${s.reason}`);
}
