/**
 * The request a test hands `invokeEvent` (event/invoke.ts) when it fires one event of a temp team without a leader:
 * a `task_completed` of task 1 by alice, reported only (no policy), the hooks started with this process's
 * environment; each test names what it is about and `over` replaces any field of the request.
 *
 *   const request = eventRequest({ team, hooksDir, settings: { hooks: POLICY } }, { applyPolicy: true });
 *   const outcome = await invokeEvent(request);
 */
import type { TeamIdentity } from "../../extensions/teams-hooks/contract/team-files.js";
import type { InvokeRequest } from "../../extensions/teams-hooks/event/invoke.js";
import { type SettingsFor, teamSettings } from "./team-settings.js";
import type { TempTeam } from "./temp-team.js";

type TeamPlace = Pick<TempTeam, "teamId" | "teamDir" | "taskListId">;

/** The identity of a temp team as a command resolves it: its id, dir and task list, lead `lead`, normal style. */
export function teamIdentity(team: TeamPlace): TeamIdentity {
  return { teamId: team.teamId, teamDir: team.teamDir, taskListId: team.taskListId, leadName: "lead", style: "normal" };
}

export interface EventRequestBase {
  team: TeamPlace & Pick<TempTeam, "teamsRoot">;
  /** The global hooks layer. */
  hooksDir: string;
  /** The team's own layer; default none. */
  teamHooksDir?: string | null;
  /** Where the hooks start; default the teams root. */
  cwd?: string;
  /** The team's settings, as config.json's `hooks` block and `--timeout-ms` give them. */
  settings?: SettingsFor;
  /** Default `"1"`. */
  taskId?: string;
  /** Default `task_completed:<task id>:x`. */
  key?: string;
  /** Default `alice`. */
  member?: string;
  /** Default `null`. */
  timestamp?: string | null;
  /** Default false: report only. */
  applyPolicy?: boolean;
  /** Default this process's environment. */
  env?: InvokeRequest["env"];
}

export function eventRequest(base: EventRequestBase, over: Partial<InvokeRequest> = {}): InvokeRequest {
  const taskId = base.taskId ?? "1";
  return {
    setup: {
      identity: teamIdentity(base.team),
      hooksDir: base.hooksDir,
      teamHooksDir: base.teamHooksDir ?? null,
      cwd: base.cwd ?? base.team.teamsRoot,
      settings: teamSettings(base.settings),
    },
    event: "task_completed",
    key: base.key ?? `task_completed:${taskId}:x`,
    taskId,
    member: base.member ?? "alice",
    timestamp: base.timestamp ?? null,
    applyPolicy: base.applyPolicy ?? false,
    env: base.env ?? process.env,
    ...over,
  };
}
