/**
 * Where each gate runs, as `doctor` says it: sandboxed, not isolated on this machine (and why), held
 * because it requires a sandbox this machine cannot give, or switched off; and, for a JavaScript or
 * TypeScript gate, what its imports and module type would otherwise take from a folder another user
 * can write (runner/gate-modules.ts).
 */
import path from "node:path";
import type { ChainDiscovery } from "../gates/chain.js";
import { readHookSettings } from "../gates/discover.js";
import type { HookEventName } from "../contract/contract.js";
import type { SandboxMode } from "../settings/hook-line.js";
import { gateModules } from "../runner/gate-modules.js";
import { sandboxSupport } from "../runner/sandbox.js";
import type { Check } from "./gate-checks.js";

/** The checks of every file gate of `chain`, under the team's `hooks.sandbox`. */
export function sandboxChecks(event: HookEventName, chain: ChainDiscovery, team: SandboxMode): Check[] {
  const checks: Check[] = [];
  const support = sandboxSupport();
  for (const h of chain.hooks) {
    if (h.kind === "http") continue;
    const file = h.hook.hookPath;
    const name = path.basename(file);
    const read = readHookSettings(file, event);
    const own = read.ok ? read.settings?.sandbox : undefined;
    const mode = own ?? team;
    const where = own ? `its settings line says sandbox=${own}` : `hooks.sandbox ${team}`;
    if (mode === "off") {
      checks.push({ level: "warn", message: `${name} runs unsandboxed, with the leader's authority (${where})`, file });
    } else if (!support.ok && mode === "required") {
      checks.push({
        level: "error",
        message: `${name} will not run: it requires the sandbox (${where}), and ${support.reason}; its events are held`,
        file,
      });
    } else if (!support.ok) {
      checks.push({
        level: "warn",
        message: `${name} is not isolated: ${support.reason}; it runs with the leader's authority (${where})`,
        file,
      });
    }
  }
  return checks;
}

/**
 * Where each JavaScript or TypeScript gate's imports and module type would otherwise come from a folder
 * another user can write: what the runner ignores, said (doctor's Access section).
 */
export function importChecks(chain: ChainDiscovery): Check[] {
  const checks: Check[] = [];
  for (const h of chain.hooks) {
    if (h.kind === "http" || h.hook.command !== process.execPath) continue;
    const file = h.hook.hookPath;
    for (const note of gateModules(file).notes)
      checks.push({ level: "warn", message: `${path.basename(file)}: ${note}`, file });
  }
  return checks;
}
