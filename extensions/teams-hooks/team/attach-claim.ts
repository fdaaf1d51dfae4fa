/**
 * Which team a pi leader session works on. pi-agent-teams names a leader's team after its pi session
 * (`<teams root>/<session id>`), and `/team attach` moves the session to another team for a while: it
 * then holds `<teams root>/<team>/.attach-claim.json` (`holderSessionId`, `pid`, `heartbeatAt`,
 * refreshed every few seconds; a claim not refreshed for 30 s is stale) until it detaches. The facts
 * are in docs/decisions/team-dir-facts.md.
 */
import { readdir } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { readJsonValue } from "./json-file.js";

const ATTACH_CLAIM_FILE = ".attach-claim.json";
/** pi-agent-teams treats a claim whose heartbeat is older than this as abandoned. */
const ATTACH_CLAIM_STALE_MS = 30_000;
/** A claim file is a few hundred bytes; anything far larger is not one. */
const MAX_CLAIM_BYTES = 64 * 1024;

/** The teams root of a pi leader: `PI_TEAMS_ROOT_DIR`, else `~/.pi/agent/teams` (as pi-agent-teams has it). */
export function piTeamsRoot(env: Readonly<Record<string, string | undefined>>, home = os.homedir()): string {
  const root = env.PI_TEAMS_ROOT_DIR?.trim();
  return root ? path.resolve(root) : path.join(home, ".pi", "agent", "teams");
}

interface AttachClaim {
  holderSessionId: string;
  pid: number;
  heartbeatAtMs: number;
}

/** Reads one team's claim; null when there is none or it is not a claim (never throws). */
async function readAttachClaim(teamDir: string): Promise<AttachClaim | null> {
  const read = await readJsonValue(path.join(teamDir, ATTACH_CLAIM_FILE), { maxBytes: MAX_CLAIM_BYTES });
  if (!read.ok || typeof read.value !== "object" || read.value === null) return null;
  const value = read.value as Record<string, unknown>;
  const heartbeatAtMs = typeof value.heartbeatAt === "string" ? Date.parse(value.heartbeatAt) : Number.NaN;
  if (typeof value.holderSessionId !== "string" || typeof value.pid !== "number" || Number.isNaN(heartbeatAtMs))
    return null;
  return { holderSessionId: value.holderSessionId, pid: value.pid, heartbeatAtMs };
}

/**
 * The team this process's session has attached to, if any: the folder under `root` whose claim names
 * `sessionId` and `pid` with a heartbeat younger than the stale age. Its own session team never
 * counts (a session does not claim its own team). One readdir and one small read per team folder.
 */
export async function attachedTeam(
  root: string,
  sessionId: string,
  pid: number,
  nowMs: number,
): Promise<string | null> {
  let names: string[];
  try {
    names = (await readdir(root, { withFileTypes: true }))
      .filter((d) => d.isDirectory() && !d.name.startsWith("_") && !d.name.startsWith("."))
      .map((d) => d.name);
  } catch {
    return null; // no teams root (yet): no claim either
  }
  let best: { name: string; at: number } | null = null;
  for (const name of names.sort()) {
    if (name === sessionId) continue;
    const claim = await readAttachClaim(path.join(root, name));
    if (
      !claim ||
      claim.holderSessionId !== sessionId ||
      claim.pid !== pid ||
      nowMs - claim.heartbeatAtMs > ATTACH_CLAIM_STALE_MS
    )
      continue;
    // Two live claims would be a bug of the holder; the freshest is the one it works on.
    if (!best || claim.heartbeatAtMs > best.at) best = { name, at: claim.heartbeatAtMs };
  }
  return best ? path.join(root, best.name) : null;
}
