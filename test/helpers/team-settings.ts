/**
 * A team's settings for tests that fire an event (invokeEvent) or apply a decision (applyDecision)
 * without a command: resolved by the one resolver every command uses (settings/team-settings.ts
 * `resolveSettings`) from a `hooks` block as config.json would hold it, so a test cannot hand the
 * pipeline a setting config.json could not say. A block the resolver refuses fails the test.
 *
 *   teamSettings({ hooks: { failureAction: "reopen", limits: { chainDeadlineMs: 1_500 } }, timeoutMs: 5_000 })
 */
import {
  resolveSettings,
  type TeamSettings,
  type TrustFlags,
} from "../../extensions/teams-hooks/settings/team-settings.js";

export interface SettingsFor extends TrustFlags {
  /** config.json's `hooks` block. */
  hooks?: Record<string, unknown>;
  /** As `--timeout-ms` gives it. */
  timeoutMs?: number;
}

export function teamSettings({ hooks = {}, timeoutMs, ...trustFlags }: SettingsFor = {}): TeamSettings {
  // No environment: a PI_TEAMS_HOOKS_* variable of whoever runs the tests must not change them.
  const settings = resolveSettings({
    hooks,
    noBlock: null,
    file: "config.json",
    env: {},
    timeoutFlag: timeoutMs,
    trustFlags,
  });
  if (!settings.block.valid)
    throw new Error(`the test's hooks block is refused: ${settings.block.problems.join("; ")}`);
  return settings;
}
