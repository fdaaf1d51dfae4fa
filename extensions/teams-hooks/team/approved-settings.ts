/**
 * The settings the team lead approved (settings/weakening.ts), kept beside the approved trust record
 * in the leader's user state dir: `<state dir>/trust/<team id>.settings.json` (0600, in a 0700
 * folder), never in the team dir, which the agents can write. Written by the leader at its first start
 * (what config.json says then is taken as approved, as the gates are) and by `trust` when the lead
 * approves a change.
 */
import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { settingsView, type SettingsView } from "../settings/weakening.js";
import { readRegularFile, writeJsonAtomic } from "./json-file.js";
import { userStateDir } from "./paths.js";

type Env = Readonly<Record<string, string | undefined>>;

export function approvedSettingsFile(teamDir: string, env: Env = process.env): string {
  const id = createHash("sha256").update(path.resolve(teamDir)).digest("hex").slice(0, 32);
  return path.join(userStateDir(env), "trust", `${id}.settings.json`);
}

/** The approved view of the team's weakening settings; null when none was recorded yet (or it is unreadable). */
export function readApprovedSettings(teamDir: string, env: Env = process.env): SettingsView | null {
  const text = readRegularFile(approvedSettingsFile(teamDir, env), { maxBytes: 1024 * 1024 });
  if (!text.ok) return null;
  let read: unknown;
  try {
    read = JSON.parse(text.text);
  } catch {
    return null; // not JSON: as if none were recorded (the leader's next start records it again)
  }
  if (read === null || typeof read !== "object") return null;
  const kept = read as { teamDir?: unknown; settings?: unknown };
  if (kept.teamDir !== path.resolve(teamDir) || kept.settings === null || typeof kept.settings !== "object")
    return null;
  return settingsView(kept.settings);
}

/** Records `hooks` (its weakening keys) as what the lead approved for the team. */
export async function writeApprovedSettings(teamDir: string, hooks: unknown, by: string, env: Env = process.env) {
  const file = approvedSettingsFile(teamDir, env);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  await writeJsonAtomic(
    file,
    {
      version: 1,
      teamDir: path.resolve(teamDir),
      settings: settingsView(hooks),
      updatedAt: new Date().toISOString(),
      by,
    },
    { mode: 0o600 },
  );
}
