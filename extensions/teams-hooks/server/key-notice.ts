/**
 * A key that may use every template of its teams (`serve keys create --all-templates`) is said to
 * each team's lead: one message in its inbox of the team namespace
 * (`mailboxes/team/inboxes/<lead>.json`), as the leader tells the lead of a spent budget. Whoever
 * made the key knows; the lead of a team it reaches may not, and a key for every template is the one
 * to look at twice (docs/security.md, "The task API's keys").
 */
import { statSync } from "node:fs";
import path from "node:path";
import { describeError } from "../contract/errors.js";
import { loadTeamConfig } from "../team/config-file.js";
import { appendMessage } from "../team/mailbox.js";
import { isTeamName } from "../team/paths.js";
import type { KeyInfo } from "./keys.js";

/** What became of the message to one team's lead: the inbox it went to, or why it was not sent. */
type LeadNotice = { team: string; lead: string; inbox: string } | { team: string; notSent: string };

/** The `qualityGateMessage` of the note, so that a reader of the inbox can tell it from the rest. */
const ALL_TEMPLATES_NOTE = "api-key-all-templates";

/** Tells the lead of each of the key's teams that it may use every template; never throws for a team's files. */
export async function tellLeadsOfAllTemplates(
  teamsRoot: string,
  info: KeyInfo,
  now: Date = new Date(),
): Promise<LeadNotice[]> {
  const notices: LeadNotice[] = [];
  for (const team of info.teams) {
    const teamDir = path.join(teamsRoot, team);
    if (!isTeamName(team) || !isDirectory(teamDir)) {
      notices.push({ team, notSent: `${teamDir} is not a team folder yet` });
      continue;
    }
    try {
      const { leadName } = (await loadTeamConfig(teamDir)).identity;
      const at = now.toISOString();
      const text = `API key "${info.name}" (${info.prefix}) may use every template of team ${team}, now and any added later (scopes ${info.scopes.join(", ")}): made with pi-teams-hooks serve keys create --all-templates at ${at}. To limit it: pi-teams-hooks serve keys revoke ${info.name}, then create it again with --templates SLUG,…`;
      const note = { qualityGateMessage: ALL_TEMPLATES_NOTE };
      const message = { from: "pi-teams-hooks", text, timestamp: at, read: false, ...note };
      const sent = await appendMessage(teamDir, "team", leadName, message);
      notices.push(sent.ok ? { team, lead: leadName, inbox: sent.file } : { team, notSent: sent.problem.message });
    } catch (error) {
      notices.push({ team, notSent: describeError(error) });
    }
  }
  return notices;
}

function isDirectory(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false; // missing or unreadable: not a team to tell
  }
}
