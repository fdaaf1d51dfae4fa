/**
 * The checks of a team's gates that start nothing: each chain's files that do not run (the v1
 * lookup's, the `on_<event>.d/` files' of both layers), each gate's settings line (one that stops the
 * gate, a line that looks meant as one and is not read), stray `on_*` names, gates refused as
 * insecure. doctor prints them with the rest of its report (doctor/hooks.ts); `run` and `watch` warn
 * with the same checks, in the same words, before anything runs (`gateWarnings`). Data only.
 */
import { existsSync, readFileSync, type Stats } from "node:fs";
import { stat } from "node:fs/promises";
import path from "node:path";
import { chainDirName, discoverChains, gateName } from "../gates/chain.js";
import type { ChainDiscovery, ChainHook, ChainLayer, ChainSkipCode } from "../gates/chain.js";
import type { HookEventName } from "../contract/contract.js";
import { findStrayHookFiles, insecurity, readHookSettings, type StrayHookFile } from "../gates/discover.js";
import type { HandlerDef } from "../settings/handlers.js";
import { describeSettings, type HookSettingsRead } from "../settings/hook-line.js";
import type { Projection } from "../settings/privacy.js";
import type { ProblemKind } from "../settings/problems.js";

export type CheckLevel = "ok" | "info" | "warn" | "error";

/**
 * One finding. `file` and `field` name what is wrong, when a file is. `kind` and `path`: what a
 * warning or an error is as data (settings/problems.ts); absent, the report's section decides
 * (doctor/diagnose.ts `problemsOf`).
 */
export interface Check {
  level: CheckLevel;
  message: string;
  file?: string;
  field?: string;
  kind?: ProblemKind;
  path?: string;
}

/** A file skipped on purpose (by its name) says so quietly; one that looks like a gate and cannot run does not. */
export const SKIP_LEVEL: Readonly<Record<ChainSkipCode, CheckLevel>> = {
  bad_name: "warn",
  ignored_name: "info",
  switched_off: "info",
  replaced: "info",
  disabled: "info",
  disables_nothing: "warn",
  runs_already: "warn",
  unusable: "error",
  dir_unusable: "error",
};

/**
 * The global v1 candidates the lookup skipped (`on_idle` without an execute bit…), as checks: a warning
 * when some v1 file runs (or the team layer took the slot), an error when none does. None when the
 * hooks dir itself is unusable (said once for the dir).
 */
export function v1SkipChecks(event: HookEventName, chain: ChainDiscovery): Check[] {
  const found = chain.v1.global;
  if (found.dirProblem) return [];
  const v1 = chain.hooks.find((h) => h.kind === "v1");
  return found.candidates
    .filter((c) => c.status === "skipped")
    .map((c) => {
      const [level, instead] = skippedV1Outcome(event, chain, v1, found.hook !== null);
      const message = `skipped ${path.basename(c.path)}: ${c.reason ?? "unusable"}${instead}`;
      return { level, message, file: c.path };
    });
}

/** A skipped global v1 candidate's level and what follows its reason (what runs instead, or that nothing does). */
function skippedV1Outcome(
  event: HookEventName,
  chain: ChainDiscovery,
  v1: ChainHook | undefined,
  globalChosen: boolean,
): [CheckLevel, string] {
  if (v1) return ["warn", `; ${v1.layer === "global" ? v1.name : `the team's ${v1.name}`} runs instead`];
  if (globalChosen) return ["warn", "; the team layer switched the v1 hook off"];
  const others = chain.hooks.length;
  if (others > 0) return ["error", `: no v1 hook runs (the ${others} hook(s) of ${chainDirName(event)} still run)`];
  return ["error", ": no gate runs for this event"];
}

/** The two layers of a chain: the global hooks dir and the team's (null: none). */
export interface ChainDirs {
  global: string;
  team: string | null;
}

/** A file of a chain as checks name it: its layer and its path in the layer (`global on_idle.d/10-lint.sh`). */
export function layerLabel(dirs: ChainDirs): (layer: ChainLayer, file: string) => string {
  const layerDir = (layer: ChainLayer): string =>
    layer === "team" && dirs.team !== null ? path.resolve(dirs.team) : path.resolve(dirs.global);
  // A gate that is not a file (`http:ci`, `binding:lint`: a binding that cannot run) is named as it is.
  return (layer, file) => `${layer} ${path.isAbsolute(file) ? path.relative(layerDir(layer), file) : file}`;
}

/**
 * Every file of the chain that does not run, as a check (`skipped global on_idle.d/20-lint: not
 * executable (chmod +x …)`), at its SKIP_LEVEL. Not the global v1 candidates (v1SkipChecks) nor a
 * layer dir that cannot be read (said once for all events, by diagnoseHooksDir and diagnoseTeamLayer).
 */
export function chainSkipChecks(chain: ChainDiscovery, dirs: ChainDirs): Check[] {
  const label = layerLabel(dirs);
  const globalDir = path.resolve(dirs.global);
  const teamDir = dirs.team === null ? null : path.resolve(dirs.team);
  const globalV1 = new Set(chain.v1.global.candidates.map((c) => c.path));
  const teamV1 = new Set(chain.v1.team?.candidates.map((c) => c.path) ?? []);
  const teamV1Runs = chain.hooks.some((h) => h.kind === "v1" && h.layer === "team");
  const checks: Check[] = [];
  for (const skip of chain.skipped) {
    if (skip.layer === "global" && (globalV1.has(skip.path) || skip.path === globalDir)) continue;
    if (skip.layer === "team" && skip.path === (teamDir ?? globalDir)) continue;
    // A team v1 candidate skipped while another team v1 file runs: a warning, as in the global lookup.
    const level = skip.code === "unusable" && teamV1Runs && teamV1.has(skip.path) ? "warn" : SKIP_LEVEL[skip.code];
    checks.push({ level, message: `skipped ${label(skip.layer, skip.path)}: ${skip.reason}`, file: skip.path });
  }
  return checks;
}

/**
 * What doctor finds in an event's chain without starting anything, as `run` and `watch` say it before
 * anything runs: each file gate's settings line (one that stops the gate, a line that looks meant as
 * one and is not read), and every file that looks like a gate and does not run (the v1 lookup's,
 * the `on_<event>.d/` files', of both layers). The same checks doctor prints, in its words.
 */
function chainChecks(event: HookEventName, chain: ChainDiscovery, dirs: ChainDirs): Check[] {
  const label = layerLabel(dirs);
  const settings = chain.hooks.flatMap((h) => {
    if (h.kind === "http") return []; // not a file: no settings line
    const file = h.hook.hookPath;
    return settingsChecks(readHookSettings(file, event), file, label(h.layer, file), event);
  });
  return [...v1SkipChecks(event, chain), ...settings, ...chainSkipChecks(chain, dirs)];
}

/** A gate's settings line, as doctor shows it: what it sets, or the error that stops the gate. */
export function settingsChecks(
  read: HookSettingsRead | null,
  file: string,
  name: string,
  event: HookEventName,
): Check[] {
  if (!read) return [];
  if (!read.ok) {
    const message = `${read.error}: the gate does not run, and its ${event} events are held (hook_settings)`;
    return [{ level: "error", message, file, kind: "gate_settings" }];
  }
  const notes: Check[] = (read.notes ?? []).map((note) => ({
    level: "warn",
    message: note,
    file,
    kind: "gate_settings",
  }));
  if (!read.settings) return notes;
  const message = `${name} settings (line ${read.settings.line}): ${describeSettings(read.settings) || "none"}`;
  return [{ level: "info", message, file }, ...notes];
}

/** Files that look like gates and never run, as `doctor` warnings. */
export function strayChecks(dir: string): Check[] {
  return findStrayHookFiles(dir).map((stray) => ({
    level: "warn",
    message: strayMessage(stray),
    file: stray.path,
    kind: "gate_unusable",
  }));
}

function strayMessage(stray: StrayHookFile): string {
  const meant = stray.suggestion ? `; did you mean ${stray.suggestion}?` : "";
  return `${stray.path} never runs: ${stray.reason}${meant}`;
}

interface GateWarningsInput {
  hooksDir: string;
  teamHooksDir: string;
  allowInsecure: boolean;
  /** Also warn when no event has a gate at all (`watch`: a leader with nothing to run). */
  noGate: boolean;
  handlers?: readonly HandlerDef[];
  projection?: Projection;
  /** Where the gates run and with what environment: checked against what the example gate needs. */
  project?: { cwd: string; env: Readonly<Record<string, string | undefined>> };
}

/**
 * What `watch` and `run` say before anything runs: files that look like gates but never run (stray
 * `on_*` names; each chain's files that do not run, and its settings lines that stop a gate or are
 * not read: `chainChecks`, doctor's own checks), gates the leader refuses as insecure, and (`noGate`)
 * a hooks dir in which no event has a gate at all.
 */
export async function gateWarnings(input: GateWarningsInput): Promise<string[]> {
  const oneLayer = path.resolve(input.teamHooksDir) === path.resolve(input.hooksDir);
  const layers = oneLayer ? [input.hooksDir] : [input.hooksDir, input.teamHooksDir];
  const out = layers.flatMap((dir) => strayChecks(dir).map((check) => check.message));
  let gates = 0;
  const names = new Set<string>();
  const dirs = { global: input.hooksDir, team: input.teamHooksDir };
  for (const { event, chain } of await discoverChains(input.hooksDir, input.teamHooksDir, input.handlers ?? [])) {
    gates += chain.hooks.length;
    for (const hook of chain.hooks) names.add(gateName(hook, event));
    for (const check of chainChecks(event, chain, dirs)) {
      if (check.level === "warn" || check.level === "error") out.push(check.message);
    }
    for (const hook of chain.hooks) {
      if (hook.kind === "http") continue; // not a file: nothing others could rewrite on disk
      const needs = input.project ? exampleGateNeeds(hook.hook.hookPath, input.project.cwd, input.project.env) : null;
      if (needs) out.push(needs);
      if (input.allowInsecure) continue;
      const info = await statOrNull(hook.hook.hookPath);
      const insecure = info ? insecurity(info, process.getuid?.() ?? null) : null;
      const unless = "unless the leader runs with --allow-insecure-hooks";
      if (insecure) out.push(`${hook.hook.hookPath} is ${insecure}: its events are held (insecure_hook) ${unless}`);
    }
  }
  // A projection naming no gate (a typo) leaves the gate meant showing everything: said before anything runs.
  const known = [...names].join(", ") || "none";
  for (const gate of Object.keys(input.projection ?? {})) {
    if (names.has(gate)) continue;
    const nothing = "the projection applies to nothing, and the gates see the whole document";
    out.push(`hooks.projection names ${gate}, which runs for no event: ${nothing} (gates: ${known})`);
  }
  if (input.noGate && gates === 0) {
    const where = `no hook in ${input.hooksDir} (nor in the team layer ${input.teamHooksDir})`;
    out.push(`no gate runs for any event: ${where}; pi-teams-hooks init copies the example gates`);
  }
  return out;
}

/** The line of the example gate (hooks/on_task_completed.sh) that picks its check command: bash, not a template. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: the text of a bash line, compared with the gate's own
const EXAMPLE_GATE_DEFAULT = "cmd=${PI_TEAMS_GATE_CMD:-npm test --silent}";

/**
 * A gate that keeps the example gate's default command (`npm test --silent` unless PI_TEAMS_GATE_CMD
 * is set and not empty, as bash's `:-` reads it) in a working folder with no package.json in it or
 * above it (where npm looks): npm fails every run there, and prints nothing under --silent. So does
 * one whose package.json has no test script, or npm's placeholder (`npm init -y` writes
 * `echo "Error: no test specified" && exit 1`): `npmTestProblem`. Null when the gate is not that one
 * or it can run.
 */
export function exampleGateNeeds(
  file: string,
  cwd: string,
  env: Readonly<Record<string, string | undefined>>,
): string | null {
  if ((env.PI_TEAMS_GATE_CMD ?? "") !== "") return null;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return null; // unreadable or gone: the other checks name that
  }
  if (!text.split("\n").some((line) => line.trim() === EXAMPLE_GATE_DEFAULT)) return null;
  const found = npmTestProblem(cwd);
  if (found === null) return null;
  if (found.kind === "placeholder" || found.kind === "no_script")
    return `${file} runs \`npm test --silent\` in ${cwd}: ${found.message}`;
  const fix = "start the leader in your project (or with --cwd DIR), or set PI_TEAMS_GATE_CMD to the check to run";
  const none = "which has no package.json (nor a folder above it): every completion it checks fails";
  return `${file} runs \`npm test --silent\` in ${cwd}, ${none}; ${fix}`;
}

/** What `npm init -y` writes as the test script: it fails, saying there are no tests. */
const NPM_PLACEHOLDER_TEST = /^echo "Error: no test specified" && exit 1$/;

/**
 * Why `npm test` in `cwd` fails whatever the work is, or null when it may pass: no package.json there or above
 * (`no_package`), or the nearest one (the one npm runs) has no `scripts.test` (`no_script`) or npm's placeholder
 * (`placeholder`). `message` says so, and the fix. A package.json that cannot be read or parsed is npm's to say.
 */
export function npmTestProblem(
  cwd: string,
): { kind: "no_package" | "no_script" | "placeholder"; packageJson: string | null; message: string } | null {
  let packageJson: string | null = null;
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, "package.json"))) {
      packageJson = path.join(dir, "package.json");
      break;
    }
    if (path.dirname(dir) === dir) break;
  }
  if (packageJson === null) {
    const message = `no package.json in ${cwd} or above: \`npm test\` fails every task`;
    return { kind: "no_package", packageJson, message };
  }
  let test: unknown;
  try {
    const manifest = JSON.parse(readFileSync(packageJson, "utf8")) as { scripts?: Record<string, unknown> } | null;
    test = manifest?.scripts?.test;
  } catch {
    return null;
  }
  const fix = `give ${packageJson} a test script that runs the project's tests (e.g. "test": "node --test"), or set PI_TEAMS_GATE_CMD to the check to run`;
  if (typeof test === "string" && NPM_PLACEHOLDER_TEST.test(test.trim())) {
    const what = `${packageJson} has npm's placeholder test script (echo "Error: no test specified" && exit 1)`;
    return {
      kind: "placeholder",
      packageJson,
      message: `${what}: the default gate would fail every task until the project has tests; ${fix}`,
    };
  }
  if (test === undefined) {
    const what = `${packageJson} has no test script (npm test: Missing script: "test")`;
    return {
      kind: "no_script",
      packageJson,
      message: `${what}: the default gate would fail every task until the project has tests; ${fix}`,
    };
  }
  return null;
}

/** The file's stat (symlinks followed), or null when there is none to be had. */
export async function statOrNull(file: string): Promise<Stats | null> {
  try {
    return await stat(file);
  } catch {
    return null; // ENOENT, ENOTDIR, EACCES: for these checks, "not there" either way; callers say what they needed
  }
}
