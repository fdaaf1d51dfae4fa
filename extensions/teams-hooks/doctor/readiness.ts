/**
 * A team's gate readiness: would every gate run as it stands, if its event came now? Each event's
 * chain as `config` sees it (doctor/config-view.ts: trust state, settings line, insecure files, gates
 * trusted and gone, files that look like gates and do not run), each file gate checked the way
 * `doctor` checks it can start (doctor/hooks.ts `checkRunnable`), and one `ready` per gate, per event
 * and for the team. Read-only, data only: the task API's `GET …/gates` answers it
 * (docs/remote-gates.md, "Gate readiness and runs").
 *
 * A gate is ready when its trust is `trusted` (or there is no record yet: the leader's first start
 * trusts what is there), its settings line is read whole, it can start, and it is not refused as
 * insecure. An event is ready when each of its gates is, no trusted gate is gone from it, and no file
 * of it is unusable (doctor's errors). The team is ready when every event is and its `hooks` block
 * is valid. An event with no gate is ready: nothing would hold it. Readiness is as a leader started
 * without `--trust-changes` or `--allow-insecure-hooks` would see it.
 */
import path from "node:path";
import { HOOK_EVENTS, type HookEventName } from "../contract/contract.js";
import type { ChainSkip } from "../gates/chain.js";
import type { TeamSetup } from "../team/setup.js";
import { type GateView, type TrustState, inspectConfig } from "./config-view.js";
import { SKIP_LEVEL } from "./gate-checks.js";
import { checkRunnable } from "./hooks.js";

interface GateReadiness {
  /** Relative to its layer: `on_task_completed.sh`, `on_task_completed.d/10-lint.sh`, `http:ci`. */
  name: string;
  /** As the policy and the logs name it. */
  gate: string;
  kind: GateView["kind"];
  layer: GateView["layer"];
  trust: TrustState;
  /** What changed since it was approved (`changed`, `missing`), else null. */
  trustDetail: string | null;
  /** Whether the file can start as the leader starts it; null for an HTTP handler (not a file). */
  executable: boolean | null;
  /** Its settings line is read whole (or it has none). */
  settingsValid: boolean;
  /** The settings line as applied (`timeout=30s mode=shadow`), else null. */
  settings: string | null;
  /** Why others could rewrite it (refused as insecure_hook), else null. */
  insecure: string | null;
  ready: boolean;
  /** One line per reason it is not ready, and per warning worth knowing (empty: nothing to say). */
  problems: string[];
}

interface EventReadiness {
  ready: boolean;
  /** What runs, in order. */
  gates: GateReadiness[];
  /** Gates trusted before that no longer run: the event is held (gate_missing) until the lead approves. */
  missing: Array<{ gate: string; trustDetail: string | null }>;
  /** Files that look like gates and do not run (`unusable` ones make the event not ready). */
  skipped: Array<{ name: string; layer: ChainSkip["layer"]; code: ChainSkip["code"]; reason: string }>;
}

export interface TeamReadiness {
  ready: boolean;
  /** config.json's `hooks` block: `valid` false when it is refused whole (its problems listed). */
  settings: { valid: boolean; problems: string[] };
  /** The trust record: `ok`, `none` (no record yet), `invalid` (every gate is untrusted). */
  trustRecord: "ok" | "none" | "invalid";
  events: Record<HookEventName, EventReadiness>;
}

/** The readiness of the team `setup` describes. Never writes; never throws for what it finds on disk. */
export async function teamReadiness(setup: TeamSetup, env: Env): Promise<TeamReadiness> {
  const view = await inspectConfig(setup);
  const events = {} as Record<HookEventName, EventReadiness>;
  for (const event of HOOK_EVENTS) {
    const ev = view.events[event];
    const gates: GateReadiness[] = [];
    for (const g of ev.gates) gates.push(await gateReadiness(g, env, setup.cwd));
    const missing = ev.missing.map((g) => ({ gate: g.gate, trustDetail: g.trustDetail }));
    const skipped = ev.skipped.map((s) => {
      const name = skippedName(s, view.teamHooksDir, view.hooksDir.value);
      return { name, layer: s.layer, code: s.code, reason: s.reason };
    });
    const unusable = ev.skipped.some((s) => SKIP_LEVEL[s.code] === "error");
    const ready = gates.every((g) => g.ready) && missing.length === 0 && !unusable;
    events[event] = { ready, gates, missing, skipped };
  }
  const settings = { valid: view.block.valid, problems: [...view.block.problems] };
  const ready = settings.valid && HOOK_EVENTS.every((event) => events[event].ready);
  return { ready, settings, trustRecord: view.trustRecord.state, events };
}

type Env = Readonly<Record<string, string | undefined>>;

async function gateReadiness(g: GateView, env: Env, cwd: string): Promise<GateReadiness> {
  const problems: string[] = [];
  let executable: boolean | null = null;
  if (g.kind !== "http") {
    const [command = "", ...args] = g.command;
    const checks = await checkRunnable({ hookPath: g.file ?? g.path, command, args }, env, cwd, g.name);
    executable = checks[0]?.level !== "error";
    for (const check of checks) if (check.level === "error" || check.level === "warn") problems.push(check.message);
  }
  const trusted = g.trust === "trusted" || g.trust === "no_record";
  if (!trusted) {
    const detail = g.trustDetail ? ` (${g.trustDetail})` : "";
    const held = "its events are held until the lead approves it (pi-teams-hooks trust)";
    problems.push(`${g.name}: ${trustWords(g.trust)}${detail}: ${held}`);
  }
  if (g.settingsError !== null) {
    const held = "the gate does not run; its events are held: hook_settings";
    problems.push(`${g.name}: settings line refused: ${g.settingsError} (${held})`);
  }
  // checkRunnable says it for file gates; a handler's insecurity would be said here only.
  const insecure = g.insecure;
  if (insecure !== null && !problems.some((p) => p.includes(insecure))) {
    problems.push(`${g.name} is ${insecure}: refused as insecure_hook`);
  }
  return {
    name: g.name,
    gate: g.gate,
    kind: g.kind,
    layer: g.layer,
    trust: g.trust,
    trustDetail: g.trustDetail,
    executable,
    settingsValid: g.settingsError === null,
    settings: g.settings,
    insecure: g.insecure,
    ready: trusted && g.settingsError === null && executable !== false && g.insecure === null,
    problems,
  };
}

function trustWords(trust: TrustState): string {
  if (trust === "new") return "new since the gates were approved";
  return trust === "changed" ? "changed since it was approved" : "no longer runs";
}

/** A skipped file as `config` prints it: relative to its layer's dir. */
function skippedName(skip: ChainSkip, teamHooksDir: string, hooksDir: string): string {
  if (!path.isAbsolute(skip.path)) return skip.path; // a binding that cannot run: `http:ci`, `binding:lint`
  return path.relative(skip.layer === "team" ? teamHooksDir : hooksDir, skip.path) || skip.path;
}
