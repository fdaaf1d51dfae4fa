/**
 * The privacy half of doctor: what hooks are shown and what is redacted from what they say
 * (config.json `hooks.projection`, `hooks.confidential`, `hooks.redactEnv`, and the handlers'
 * secrets, which are redacted too). Each projection named against the gates that run, each variable
 * to redact against this environment — whether it is set and long enough to be looked for, never
 * its value. Data only; doctor/diagnose.ts assembles the report.
 */
import type { HookEventName } from "../contract/contract.js";
import { gateName, type ChainDiscovery } from "../gates/chain.js";
import { MIN_TEAM_SECRET_CHARS } from "../runner/redact.js";
import type { SettingsReport } from "../settings/team-settings.js";
import { secretEnvNames } from "../settings/privacy.js";
import type { Check } from "./gate-checks.js";

type Env = Readonly<Record<string, string | undefined>>;

export function diagnosePrivacy(
  settings: Pick<SettingsReport, "projection" | "confidential" | "redactEnv" | "handlers">,
  env: Env,
  chains: ReadonlyArray<{ event: HookEventName; chain: ChainDiscovery }>,
): Check[] {
  const checks: Check[] = [];
  if (settings.confidential.value) {
    checks.push({
      level: "info",
      message:
        "hooks.confidential: HTTP handlers are sent, and hook logs keep, no task description or metadata, the subject replaced by the task id (file hooks on this machine still get the whole document)",
    });
  }
  const gates = new Set(chains.flatMap(({ event, chain }) => chain.hooks.map((hook) => gateName(hook, event))));
  for (const [gate, fields] of Object.entries(settings.projection.value)) {
    const shown = fields.length > 0 ? fields.join(", ") : "identity fields only";
    if (gates.has(gate)) checks.push({ level: "ok", message: `${gate} is shown ${shown} (hooks.projection)` });
    else
      checks.push({
        level: "warn",
        message: `hooks.projection names ${gate}, which runs for no event: the projection applies to nothing (gates: ${[...gates].join(", ") || "none"})`,
        field: `hooks.projection.${gate}`,
        kind: "setting_ignored",
        path: `hooks.projection.${gate}`,
      });
  }
  const redactEnv = new Set(settings.redactEnv.value);
  for (const variable of secretEnvNames(settings.handlers, settings.redactEnv.value)) {
    const value = env[variable] ?? "";
    const field = redactEnv.has(variable) ? "hooks.redactEnv" : "hooks.handlers";
    if (value === "") {
      if (redactEnv.has(variable))
        checks.push({
          level: "info",
          message: `${variable} (hooks.redactEnv) is not set in this environment: nothing to redact for it`,
          field,
        });
    } else if (value.length < MIN_TEAM_SECRET_CHARS) {
      checks.push({
        level: "warn",
        message: `${variable}'s value is ${value.length} character(s): too short to be redacted from hook output (under ${MIN_TEAM_SECRET_CHARS}; it would replace ordinary words)`,
        field,
        kind: "setting_ignored",
        path: variable,
      });
    }
  }
  if (redactEnv.size > 0 || settings.handlers.length > 0) {
    checks.push({
      level: "ok",
      message: `redacted from hook output: the values of ${secretEnvNames(settings.handlers, settings.redactEnv.value).join(", ")}, and credential shapes (private keys, GitHub tokens, sk- keys, AWS key ids, JWTs, task API keys, Authorization headers)`,
    });
  }
  return checks;
}
