/**
 * The pi extension: in a pi leader session, run the quality-gate leader for the session's team.
 * pi loads this file (and only this file) from `extensions/teams-hooks/`. The API is typed here by
 * the little we use, so the package does not depend on pi itself.
 *
 * It starts when `PI_TEAMS_HOOKS_ENABLED=1` and the team dir is known (`PI_TEAMS_HOOKS_TEAM_DIR`, or
 * `PI_TEAMS_ROOT_DIR` + `PI_TEAMS_TEAM_ID`), never in a worker (`PI_TEAMS_WORKER=1`), and stops with
 * the session. `/gates` shows its state. Everything else (flags, policy) comes from the environment
 * and config.json, exactly as for `pi-teams-hooks watch`.
 */
import path from "node:path";
import { describeError } from "./contract/errors.js";
import { Leader } from "./leader/leader.js";
import type { LeaderNotice } from "./leader/notices.js";
import { resolveTeamSetup } from "./team/setup.js";

interface PiContext {
  ui?: { notify?: (message: string, level: "info" | "warning" | "error") => void };
}
interface PiApi {
  on(event: "session_start" | "session_shutdown", handler: (event: unknown, ctx: PiContext) => Promise<void> | void): void;
  registerCommand?(name: string, options: { description: string; handler: (args: string, ctx: PiContext) => Promise<void> | void }): void;
}

export function teamDirFromEnv(env: Readonly<Record<string, string | undefined>>): string | null {
  if (env.PI_TEAMS_HOOKS_TEAM_DIR) return path.resolve(env.PI_TEAMS_HOOKS_TEAM_DIR);
  if (env.PI_TEAMS_ROOT_DIR && env.PI_TEAMS_TEAM_ID) return path.join(env.PI_TEAMS_ROOT_DIR, env.PI_TEAMS_TEAM_ID);
  return null;
}

export default function teamsHooksExtension(pi: PiApi): void {
  let leader: Leader | null = null;
  let last = "not started";

  pi.on("session_start", async (_event, ctx) => {
    const env = process.env;
    const teamDir = teamDirFromEnv(env);
    if (env.PI_TEAMS_WORKER === "1" || env.PI_TEAMS_HOOKS_ENABLED !== "1" || !teamDir || leader) return;
    const notify = (message: string, level: "info" | "warning" | "error"): void => ctx.ui?.notify?.(message, level);
    try {
      const setup = await resolveTeamSetup({ teamDir, env, processCwd: process.cwd() });
      setup.warnings.forEach((w) => notify(`quality gates: ${w}`, "warning"));
      leader = new Leader({
        setup,
        env,
        concurrency: 1,
        inbox: "observe",
        reconcileMs: 5000,
        poll: false,
        pollIntervalMs: 250,
        catchUp: false,
        report: (notice: LeaderNotice) => {
          if (notice.kind === "warning") notify(`quality gates: ${notice.message}`, "warning");
          if (notice.kind === "info") notify(`quality gates: ${notice.message}`, "info");
          if (notice.kind === "event" && notice.report.outcome !== "passed" && notice.report.outcome !== "no_hook") {
            last = `${notice.report.event} #${notice.report.taskId ?? "-"}: ${notice.report.summary}`;
            notify(`quality gate ${last}`, "warning");
          }
        },
      });
      await leader.start();
      last = `watching ${teamDir}`;
    } catch (error) {
      leader = null;
      last = `not running: ${describeError(error)}`;
      notify(`quality gates ${last}`, "error");
    }
  });

  pi.on("session_shutdown", async () => {
    const running = leader;
    leader = null;
    await running?.stop();
  });

  pi.registerCommand?.("gates", {
    description: "Show the quality-gate leader's state",
    handler: (_args, ctx) => ctx.ui?.notify?.(`quality gates: ${leader ? leader.state : "off"} — ${last}`, "info"),
  });
}
